/* test_env.c: rank, size and store from each launcher's variables (as Open MPI 4.1 and MPICH
 * 4.0's Hydra set them on Debian 12, checked with `mpiexec -n 2 env`), who serves the store,
 * the derived one-host port, and the clear refusal of every bad or missing value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "comm/env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *all_vars[] = {"TERN_RANK",
                                 "TERN_WORLD_SIZE",
                                 "TERN_STORE",
                                 "TERN_LOCAL_RANK",
                                 "TERN_LOCAL_SIZE",
                                 "RANK",
                                 "WORLD_SIZE",
                                 "LOCAL_RANK",
                                 "LOCAL_WORLD_SIZE",
                                 "MASTER_ADDR",
                                 "MASTER_PORT",
                                 "TORCHELASTIC_USE_AGENT_STORE",
                                 "OMPI_COMM_WORLD_RANK",
                                 "OMPI_COMM_WORLD_SIZE",
                                 "OMPI_COMM_WORLD_LOCAL_RANK",
                                 "OMPI_COMM_WORLD_LOCAL_SIZE",
                                 "OMPI_MCA_ess_base_jobid",
                                 "PMIX_NAMESPACE",
                                 "PMI_RANK",
                                 "PMI_SIZE",
                                 "MPI_LOCALRANKID",
                                 "MPI_LOCALNRANKS",
                                 "SLURM_PROCID",
                                 "SLURM_NTASKS",
                                 "SLURM_LOCALID",
                                 "SLURM_NODEID",
                                 "SLURM_JOB_ID",
                                 "SLURM_STEP_ID",
                                 "SLURM_NNODES",
                                 "SLURM_STEP_NUM_NODES",
                                 "SLURM_TASKS_PER_NODE",
                                 "SLURM_STEP_TASKS_PER_NODE"};

static int clear_env(void **state) {
  (void)state;
  for (size_t i = 0; i < CORE_ARRAY_LEN(all_vars); i++)
    unsetenv(all_vars[i]);
  return 0;
}

/* setenv for a NULL-terminated list of name, value pairs */
static void set(const char *first, ...) {
  va_list ap;
  va_start(ap, first);
  for (const char *name = first; name != NULL; name = va_arg(ap, const char *))
    setenv(name, va_arg(ap, const char *), 1);
  va_end(ap);
}

static comm_env read_ok(void) {
  comm_env e;
  core_err err = {0};
  if (comm_env_read(&e, &err) != TERN_OK) fail_msg("comm_env_read: %s", err.msg);
  return e;
}

static void read_fails(const char *says) {
  comm_env e;
  core_err err = {0};
  assert_int_equal(comm_env_read(&e, &err), TERN_ERR_INVALID_ARG);
  if (strstr(err.msg, says) == NULL) fail_msg("'%s' does not say '%s'", err.msg, says);
}

static void tern_run_variables(void **state) {
  (void)state;
  set("TERN_RANK", "2", "TERN_WORLD_SIZE", "4", "TERN_STORE", "127.0.0.1:4000", "TERN_LOCAL_RANK",
      "2", "TERN_LOCAL_SIZE", "4", NULL);
  comm_env e = read_ok();
  assert_int_equal(e.rank, 2);
  assert_int_equal(e.size, 4);
  assert_string_equal(e.store, "127.0.0.1:4000");
  assert_false(e.serve_store);
  assert_int_equal(e.local_rank, 2);
  assert_int_equal(e.local_size, 4);
  assert_string_equal(e.source, "TERN_RANK");
  /* they win over anything else that is set */
  set("RANK", "0", "WORLD_SIZE", "8", "OMPI_COMM_WORLD_RANK", "5", NULL);
  e = read_ok();
  assert_int_equal(e.rank, 2);
  /* without the locals, they are unknown */
  unsetenv("TERN_LOCAL_RANK");
  unsetenv("TERN_LOCAL_SIZE");
  e = read_ok();
  assert_int_equal(e.local_rank, -1);
  assert_int_equal(e.local_size, 0);
}

static void torchrun_variables(void **state) {
  (void)state;
  set("RANK", "0", "WORLD_SIZE", "2", "LOCAL_RANK", "0", "LOCAL_WORLD_SIZE", "2", "MASTER_ADDR",
      "node7", "MASTER_PORT", "29500", NULL);
  comm_env e = read_ok();
  assert_string_equal(e.source, "torchrun");
  assert_string_equal(e.store, "node7:29500");
  assert_true(e.serve_store); /* rank 0 serves, as torch's TCPStore does */
  setenv("RANK", "1", 1);
  e = read_ok();
  assert_false(e.serve_store);
  /* under torchrun's agent store the port is taken: tern uses the next one */
  setenv("TORCHELASTIC_USE_AGENT_STORE", "True", 1);
  e = read_ok();
  assert_string_equal(e.store, "node7:29501");
  unsetenv("TORCHELASTIC_USE_AGENT_STORE");
  setenv("MASTER_ADDR", "fe80::1", 1);
  e = read_ok();
  assert_string_equal(e.store, "[fe80::1]:29500");
  /* TERN_STORE wins, and then nobody here serves */
  set("TERN_STORE", "10.0.0.9:7000", "RANK", "0", NULL);
  e = read_ok();
  assert_string_equal(e.store, "10.0.0.9:7000");
  assert_false(e.serve_store);
}

static void open_mpi_on_one_host(void **state) {
  (void)state;
  set("OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "4", "OMPI_COMM_WORLD_LOCAL_RANK", "0",
      "OMPI_COMM_WORLD_LOCAL_SIZE", "4", "OMPI_MCA_ess_base_jobid", "1119551489", NULL);
  comm_env e = read_ok();
  assert_string_equal(e.source, "Open MPI");
  assert_true(e.serve_store);
  char want[64];
  snprintf(want, sizeof want, "127.0.0.1:%d", comm_env_port_for("ompi 1119551489"));
  assert_string_equal(e.store, want);
  assert_int_equal(e.local_size, 4);
  /* every rank of the job derives the same port */
  set("OMPI_COMM_WORLD_RANK", "3", "OMPI_COMM_WORLD_LOCAL_RANK", "3", NULL);
  comm_env e3 = read_ok();
  assert_string_equal(e3.store, e.store);
  assert_false(e3.serve_store);
  /* over two hosts there is no address to guess */
  setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
  read_fails("Open MPI gives rank 3 of 4 but not where the rendezvous store is: set TERN_STORE");
  set("MASTER_ADDR", "head", "MASTER_PORT", "6000", NULL);
  e = read_ok();
  assert_string_equal(e.store, "head:6000");
  assert_false(e.serve_store);
}

static void mpich_and_slurm(void **state) {
  (void)state;
  set("PMI_RANK", "1", "PMI_SIZE", "2", "MPI_LOCALRANKID", "1", "MPI_LOCALNRANKS", "2", NULL);
  comm_env e = read_ok();
  assert_string_equal(e.source, "MPICH");
  char id[64], want[64];
  snprintf(id, sizeof id, "mpich proxy %d", (int)getppid());
  snprintf(want, sizeof want, "127.0.0.1:%d", comm_env_port_for(id));
  assert_string_equal(e.store, want);
  clear_env(NULL);

  set("SLURM_PROCID", "5", "SLURM_NTASKS", "8", "SLURM_LOCALID", "1", "SLURM_NODEID", "2",
      "SLURM_STEP_TASKS_PER_NODE", "3(x2),2", "SLURM_JOB_ID", "77", "SLURM_STEP_ID", "0",
      "SLURM_STEP_NUM_NODES", "3", NULL);
  read_fails("Slurm gives rank 5 of 8");
  setenv("TERN_STORE", "head:9000", 1);
  e = read_ok();
  assert_string_equal(e.source, "Slurm");
  assert_int_equal(e.rank, 5);
  assert_int_equal(e.local_rank, 1);
  assert_int_equal(e.local_size, 2); /* node 2 is the one after "3(x2)" */
  unsetenv("TERN_STORE");
  set("SLURM_PROCID", "0", "SLURM_NTASKS", "4", "SLURM_LOCALID", "0", "SLURM_NODEID", "0",
      "SLURM_STEP_TASKS_PER_NODE", "4", "SLURM_STEP_NUM_NODES", "1", NULL);
  e = read_ok();
  assert_true(e.serve_store);
  snprintf(want, sizeof want, "127.0.0.1:%d", comm_env_port_for("slurm 77.0"));
  assert_string_equal(e.store, want);
  assert_int_equal(e.local_size, 4);
}

static void derived_ports(void **state) {
  (void)state;
  int a = comm_env_port_for("ompi 1"), b = comm_env_port_for("ompi 2");
  assert_int_not_equal(a, b);
  for (int i = 0; i < 1000; i++) {
    char id[32];
    snprintf(id, sizeof id, "slurm %d.0", i);
    int p = comm_env_port_for(id);
    assert_true(p >= COMM_ENV_PORT_BASE && p < COMM_ENV_PORT_BASE + COMM_ENV_PORT_SPAN);
    assert_true(p < 32768);
  }
}

static void bad_values(void **state) {
  (void)state;
  read_fails("no rank in the environment: start the program with `tern run -n N -- PROG`");
  setenv("TERN_RANK", "0", 1);
  read_fails("TERN_RANK is set but TERN_WORLD_SIZE is not");
  setenv("TERN_WORLD_SIZE", "2", 1);
  read_fails("TERN_RANK gives rank 0 of 2 but not where the rendezvous store is");
  static const char *bad_numbers[][2] = {{"TERN_RANK", "2"},
                                         {"TERN_RANK", "-1"},
                                         {"TERN_RANK", "1x"},
                                         {"TERN_RANK", " 1"},
                                         {"TERN_RANK", "+1"},
                                         {"TERN_WORLD_SIZE", "0"},
                                         {"TERN_WORLD_SIZE", "99999999999"},
                                         {"TERN_WORLD_SIZE", "two"},
                                         {"TERN_LOCAL_RANK", "5"}};
  setenv("TERN_STORE", "127.0.0.1:4000", 1);
  for (size_t i = 0; i < CORE_ARRAY_LEN(bad_numbers); i++) {
    set("TERN_RANK", "1", "TERN_WORLD_SIZE", "2", NULL);
    unsetenv("TERN_LOCAL_RANK");
    setenv(bad_numbers[i][0], bad_numbers[i][1], 1);
    char says[96];
    snprintf(says, sizeof says, "%s='%s' is not a whole number", bad_numbers[i][0],
             bad_numbers[i][1]);
    read_fails(says);
  }
  set("TERN_RANK", "1", "TERN_WORLD_SIZE", "4", "TERN_LOCAL_RANK", "3", "TERN_LOCAL_SIZE", "2",
      NULL);
  read_fails("TERN_LOCAL_RANK=3 is not below the 2 ranks on this host");
  clear_env(NULL);
  set("TERN_RANK", "1", "TERN_WORLD_SIZE", "4", "TERN_STORE", "nohost", NULL);
  read_fails("TERN_STORE: address 'nohost' has no port");
  clear_env(NULL);
  set("RANK", "1", "WORLD_SIZE", "4", "MASTER_ADDR", "head", NULL);
  read_fails("MASTER_ADDR is set but MASTER_PORT is not");
  setenv("MASTER_PORT", "70000", 1);
  read_fails("MASTER_PORT='70000' is not a whole number from 1 to 65535");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(tern_run_variables, clear_env),
      cmocka_unit_test_setup(torchrun_variables, clear_env),
      cmocka_unit_test_setup(open_mpi_on_one_host, clear_env),
      cmocka_unit_test_setup(mpich_and_slurm, clear_env),
      cmocka_unit_test_setup(derived_ports, clear_env),
      cmocka_unit_test_setup(bad_values, clear_env),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
