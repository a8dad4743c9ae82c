/* hello.c: the smallest tern program. Every rank contributes its rank number; after the
 * allreduce every rank holds the sum. Build it against an installed tern:
 *   cc hello.c $(pkg-config --cflags --libs tern) -o hello
 * and start four ranks on this host:
 *   tern run -n 4 -- ./hello
 */
#include <tern.h>

#include <stdio.h>

int main(void) {
  tern_comm *comm;
  tern_status rc = tern_comm_init_env(&comm);
  if (rc != TERN_OK) {
    fprintf(stderr, "hello: %s: %s\n", tern_status_str(rc), tern_comm_last_error(NULL));
    return 1;
  }
  int rank = tern_comm_rank(comm), size = tern_comm_size(comm);
  float mine[4] = {(float)rank, (float)rank, (float)rank, (float)rank}, sum[4];
  rc = tern_allreduce(comm, mine, sum, 4, TERN_F32, TERN_SUM);
  if (rc != TERN_OK) {
    fprintf(stderr, "hello: rank %d: %s\n", rank, tern_comm_last_error(comm));
    tern_comm_destroy(comm);
    return 1;
  }
  printf("rank %d of %d: sum of ranks = %g (expected %d)\n", rank, size, sum[0],
         size * (size - 1) / 2);
  tern_comm_destroy(comm);
  return sum[0] == (float)(size * (size - 1) / 2) ? 0 : 1;
}
