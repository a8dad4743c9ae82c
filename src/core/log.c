/* log.c: log lines on stderr, filtered by TERN_DEBUG.
 *
 * Each line is written with one write(2) so that lines of ranks sharing a terminal do not
 * interleave mid-line: "tern 12:03:04.123456 r2 host:4711 INFO allreduce ...".
 */
#include "core.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static _Atomic int log_rank = -1;

core_log_level core_log_level_get(void) {
  return core_config_get()->log_level;
}

void core_log_set_rank(int rank) {
  atomic_store(&log_rank, rank);
}

static const char *level_name(core_log_level level) {
  static const char *names[] = {"NONE", "WARN", "INFO", "DEBUG", "TRACE"};
  return level <= CORE_LOG_TRACE ? names[level] : "?";
}

void core_log(core_log_level level, const char *fmt, ...) {
  if (!core_log_on(level)) return;
  static char host[64];
  if (host[0] == '\0' && gethostname(host, sizeof host - 1) != 0) strcpy(host, "?");
  double now = core_wall_s();
  time_t secs = (time_t)now;
  struct tm tm;
  gmtime_r(&secs, &tm);
  char rank[16];
  int r = atomic_load(&log_rank);
  if (r < 0)
    strcpy(rank, "-");
  else
    snprintf(rank, sizeof rank, "%d", r);

  char line[2048];
  int n = snprintf(line, sizeof line, "tern %02d:%02d:%02d.%06ld r%s %s:%d %s ", tm.tm_hour,
                   tm.tm_min, tm.tm_sec, (long)((now - (double)secs) * 1e6), rank, host,
                   (int)getpid(), level_name(level));
  va_list ap;
  va_start(ap, fmt);
  if (n > 0 && (size_t)n < sizeof line) n += vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n >= sizeof line - 1) n = (int)sizeof line - 2;
  line[n++] = '\n';
  ssize_t w = write(STDERR_FILENO, line, (size_t)n);
  (void)w; /* nowhere left to report a failed log write */
}
