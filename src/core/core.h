/* core.h: the layer every other layer stands on. It knows no sockets.
 *
 *  - error text: a tern_status plus a message that says what, where and which peer;
 *  - logging: TERN_DEBUG levels, lines to stderr carrying rank, host, pid and time;
 *  - configuration: every TERN_* variable, read once;
 *  - clocks and deadlines;
 *  - dtypes (sizes, names, f16/bf16 conversion) and the reduction kernels.
 */
#ifndef TERN_CORE_H
#define TERN_CORE_H

#include "tern.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CORE_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define CORE_MIN(a, b) ((a) < (b) ? (a) : (b))
#define CORE_MAX(a, b) ((a) > (b) ? (a) : (b))
#define CORE_PRINTF(f, a) __attribute__((format(printf, f, a)))

/* ---- error text (error.c) ---------------------------------------------------------------- */

#define CORE_ERR_LEN 512

typedef struct core_err {
  tern_status status;
  char msg[CORE_ERR_LEN];
} core_err;

/* Records status and a formatted message in err (when err is not NULL) and returns status, so
 * that `return core_err_set(err, TERN_ERR_INVALID_ARG, "count %zu", n);` reads as one step.
 * Does not overwrite an earlier error unless the earlier status is TERN_OK. */
tern_status core_err_set(core_err *err, tern_status status, const char *fmt, ...) CORE_PRINTF(3, 4);
tern_status core_err_vset(core_err *err, tern_status status, const char *fmt, va_list ap);
/* Same, with ": strerror(errno)" appended; status is TERN_ERR_SYSTEM. */
tern_status core_err_errno(core_err *err, int errnum, const char *fmt, ...) CORE_PRINTF(3, 4);
void core_err_clear(core_err *err);

/* ---- logging (log.c) --------------------------------------------------------------------- */

typedef enum core_log_level {
  CORE_LOG_NONE = 0,
  CORE_LOG_WARN,
  CORE_LOG_INFO,
  CORE_LOG_DEBUG,
  CORE_LOG_TRACE
} core_log_level;

/* The level from TERN_DEBUG (WARN when unset). */
core_log_level core_log_level_get(void);
/* Whether level l is logged; inline, below the configuration it reads. */
static inline bool core_log_on(core_log_level l);
/* The rank printed on this process's log lines; -1 (the default) prints "-". */
void core_log_set_rank(int rank);
void core_log(core_log_level level, const char *fmt, ...) CORE_PRINTF(2, 3);

#define CORE_WARN(...) core_log(CORE_LOG_WARN, __VA_ARGS__)
#define CORE_INFO(...)                                                                             \
  do {                                                                                             \
    if (core_log_on(CORE_LOG_INFO)) core_log(CORE_LOG_INFO, __VA_ARGS__);                          \
  } while (0)
#define CORE_DEBUG(...)                                                                            \
  do {                                                                                             \
    if (core_log_on(CORE_LOG_DEBUG)) core_log(CORE_LOG_DEBUG, __VA_ARGS__);                        \
  } while (0)
#define CORE_TRACE(...)                                                                            \
  do {                                                                                             \
    if (core_log_on(CORE_LOG_TRACE)) core_log(CORE_LOG_TRACE, __VA_ARGS__);                        \
  } while (0)

/* ---- configuration (config.c) ------------------------------------------------------------ */

typedef enum core_transport {
  CORE_TRANSPORT_AUTO,
  CORE_TRANSPORT_SHM,
  CORE_TRANSPORT_TCP
} core_transport;

typedef struct core_config {
  double timeout_s;         /* TERN_TIMEOUT, default 300 */
  char algo[16];            /* TERN_ALGO, "" for the selector */
  core_transport transport; /* TERN_TRANSPORT */
  core_log_level log_level; /* TERN_DEBUG */
  bool have_key;            /* TERN_KEY or TERN_KEY_FILE was given */
  uint8_t key[32];          /* a 32-byte key derived from it (see auth in net/) */
  char tuning[4096];        /* TERN_TUNING, "" for the default path */
  int tcp_streams;          /* TERN_TCP_STREAMS, sockets per peer, default 4 */
  int pretend_hosts;        /* TERN_HOSTS: cut the ranks into this many pretend hosts (0: off) */
  char socket_ifname[256];  /* TERN_SOCKET_IFNAME: interfaces TCP may use (net/ifname.c), "":
                             * the one that reaches the store */
  int host_cpus;            /* TERN_HOST_CPUS: CPUs the ranks of this host share (0: own mask) */
  int shm_cma;              /* TERN_SHM_CMA: 1 single copy, 0 rings only, -1 (unset): single copy,
                             * from 1 MiB a message on an oversubscribed host */
  bool unchecked_roots;     /* TERN_CHECK_ROOTS=0: broadcast and reduce without the root check
                             * (coll/build.c), as MPI and NCCL run them */
  char config_error[256];   /* a variable that could not be parsed, "" when all were fine */
} core_config;

/* The process-wide configuration, read from the environment on first use. Inline, because every
 * collective asks for it (TERN_ALGO, and the log level twice): a call into config.c and
 * pthread_once there cost 3 x 30 of the ~1000 instructions of an 8-byte broadcast (callgrind). */
extern core_config core_config_now; /* config.c; read it through core_config_get */
extern bool core_config_read;       /* set (release) once core_config_now is filled */
const core_config *core_config_first(void);
static inline const core_config *core_config_get(void) {
  if (__atomic_load_n(&core_config_read, __ATOMIC_ACQUIRE)) return &core_config_now;
  return core_config_first();
}
static inline bool core_log_on(core_log_level l) {
  return l <= core_config_get()->log_level;
}
/* Reads the environment again (tests and `tern` set variables after start). */
void core_config_reload(void);

/* Parses "300", "2.5" as seconds >= 0; false on anything else. */
bool core_parse_seconds(const char *s, double *out);
/* Parses "64", "64K", "16M", "1G" (powers of 1024) as bytes; false on anything else. */
bool core_parse_size(const char *s, size_t *out);
/* Parses a decimal int in [lo, hi]; false on anything else. */
bool core_parse_int(const char *s, long lo, long hi, long *out);

/* ---- clocks and deadlines (clock.c) ------------------------------------------------------ */

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t core_now_ns(void);
/* CLOCK_REALTIME in seconds, for log lines. */
double core_wall_s(void);
/* now + seconds, saturating. */
uint64_t core_deadline_after(double seconds);
/* Milliseconds left until deadline for poll(): 0 when passed, capped at cap_ms. */
int core_ms_left(uint64_t deadline_ns, int cap_ms);
/* Sleeps ms milliseconds, resuming after signals. */
void core_sleep_ms(int ms);

/* ---- dtypes (dtype.c) -------------------------------------------------------------------- */

bool core_dtype_valid(int dt);
bool core_op_valid(int op);
/* Parses "f32"/"float", "f16"/"half", "bf16", "f64"/"double", "i8"/"int8", "u8"/"uint8",
 * "i32"/"int32"/"int", "i64"/"int64"; "sum", "prod", "min", "max", "avg". */
bool core_dtype_parse(const char *s, tern_dtype *out);
bool core_op_parse(const char *s, tern_op *out);

float core_f16_to_f32(uint16_t h);
uint16_t core_f32_to_f16(float f); /* round to nearest even; overflow to inf; NaN kept */
float core_bf16_to_f32(uint16_t b);
uint16_t core_f32_to_bf16(float f); /* round to nearest even; NaN kept */

/* ---- reduction kernels (reduce.c) -------------------------------------------------------- */

/* dst[i] = a[i] op b[i] for i < count. dst may equal a or b. AVG reduces as SUM; the division
 * is core_avg_finish's job, done once at the end of a collective. */
void core_reduce(tern_dtype dt, tern_op op, void *dst, const void *a, const void *b, size_t count);
/* buf[i] /= n for AVG's last step (integers truncate toward zero). */
void core_avg_finish(tern_dtype dt, void *buf, size_t count, int n);

#endif /* TERN_CORE_H */
