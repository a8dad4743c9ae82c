/* config.c: every TERN_* variable, read once into one struct.
 *
 * This is the only global mutable state of the library besides the log rank. A variable that is
 * set but cannot be parsed is not ignored: its complaint lands in config_error, and
 * communicator init refuses to start with it (a typo in TERN_TIMEOUT must not mean "no timeout").
 */
#include "core.h"

#include <errno.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

core_config core_config_now;
bool core_config_read;
static pthread_once_t config_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t config_lock = PTHREAD_MUTEX_INITIALIZER;

bool core_parse_seconds(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno != 0 || end == s || *end != '\0' || !(v >= 0) || v > 1e9) return false;
  *out = v;
  return true;
}

bool core_parse_int(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool core_parse_size(const char *s, size_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0 || end == s || s[0] == '-') return false;
  unsigned shift = 0;
  switch (*end) {
  case '\0':
    break;
  case 'k':
  case 'K':
    shift = 10;
    end++;
    break;
  case 'm':
  case 'M':
    shift = 20;
    end++;
    break;
  case 'g':
  case 'G':
    shift = 30;
    end++;
    break;
  default:
    return false;
  }
  if (*end == 'B' || *end == 'b') end++;
  if (*end != '\0' || (shift && v > (SIZE_MAX >> shift))) return false;
  *out = (size_t)(v << shift);
  return true;
}

static void complain(const char *fmt, const char *name, const char *value) {
  if (core_config_now.config_error[0] != '\0') return;
  char shown[96]; /* a long value is cut, the message stays readable */
  snprintf(shown, sizeof shown, "%.80s%s", value, strlen(value) > 80 ? "..." : "");
  snprintf(core_config_now.config_error, sizeof core_config_now.config_error, fmt, name, shown);
}

static core_log_level parse_level(const char *s) {
  static const char *names[] = {"NONE", "WARN", "INFO", "DEBUG", "TRACE"};
  for (size_t i = 0; i < CORE_ARRAY_LEN(names); i++)
    if (strcasecmp(s, names[i]) == 0) return (core_log_level)i;
  complain("%s='%s' is not one of NONE, WARN, INFO, DEBUG, TRACE", "TERN_DEBUG", s);
  return CORE_LOG_WARN;
}

/* The secret is hashed to 32 bytes so that any passphrase works as a key. */
static void derive_key(const char *secret, size_t len) {
  crypto_generichash(core_config_now.key, sizeof core_config_now.key, (const unsigned char *)secret,
                     len, (const unsigned char *)"tern-key-v1", 11);
  core_config_now.have_key = true;
}

static void read_key_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    complain("%s='%s' cannot be read", "TERN_KEY_FILE", path);
    return;
  }
  char buf[4096];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
    n--;
  if (n == 0)
    complain("%s='%s' is empty", "TERN_KEY_FILE", path);
  else
    derive_key(buf, n);
  sodium_memzero(buf, sizeof buf);
}

static void load(void) {
  memset(&core_config_now, 0, sizeof core_config_now);
  core_config_now.timeout_s = 300;
  core_config_now.log_level = CORE_LOG_WARN;
  core_config_now.tcp_streams = 4;
  core_config_now.shm_cma = -1; /* comm/shm_setup.c decides: see net/shm.c for why */
  if (sodium_init() < 0) complain("%s%s: libsodium failed to initialise", "", "");

  const char *v;
  if ((v = getenv("TERN_DEBUG")) && *v) core_config_now.log_level = parse_level(v);
  if ((v = getenv("TERN_TIMEOUT")) && *v && !core_parse_seconds(v, &core_config_now.timeout_s))
    complain("%s='%s' is not a number of seconds", "TERN_TIMEOUT", v);
  if ((v = getenv("TERN_ALGO")) && *v) {
    if (strlen(v) >= sizeof core_config_now.algo)
      complain("%s='%s' is too long", "TERN_ALGO", v);
    else
      strcpy(core_config_now.algo, v);
  }
  if ((v = getenv("TERN_TRANSPORT")) && *v) {
    if (strcasecmp(v, "shm") == 0)
      core_config_now.transport = CORE_TRANSPORT_SHM;
    else if (strcasecmp(v, "tcp") == 0)
      core_config_now.transport = CORE_TRANSPORT_TCP;
    else if (strcasecmp(v, "auto") != 0)
      complain("%s='%s' is not shm, tcp or auto", "TERN_TRANSPORT", v);
  }
  long streams;
  if ((v = getenv("TERN_TCP_STREAMS")) && *v) {
    if (core_parse_int(v, 1, 16, &streams))
      core_config_now.tcp_streams = (int)streams;
    else
      complain("%s='%s' is not a count from 1 to 16", "TERN_TCP_STREAMS", v);
  }
  long cma;
  if ((v = getenv("TERN_SHM_CMA")) && *v) {
    if (core_parse_int(v, 0, 1, &cma))
      core_config_now.shm_cma = (int)cma;
    else
      complain("%s='%s' is not 0 or 1", "TERN_SHM_CMA", v);
  }
  long check;
  if ((v = getenv("TERN_CHECK_ROOTS")) && *v) {
    if (core_parse_int(v, 0, 1, &check))
      core_config_now.unchecked_roots = check == 0;
    else
      complain("%s='%s' is not 0 or 1", "TERN_CHECK_ROOTS", v);
  }
  long cpus;
  if ((v = getenv("TERN_HOST_CPUS")) && *v) {
    if (core_parse_int(v, 1, 1 << 20, &cpus))
      core_config_now.host_cpus = (int)cpus;
    else
      complain("%s='%s' is not a number of CPUs", "TERN_HOST_CPUS", v);
  }
  long hosts;
  if ((v = getenv("TERN_HOSTS")) && *v) {
    if (core_parse_int(v, 1, 1 << 20, &hosts))
      core_config_now.pretend_hosts = (int)hosts;
    else
      complain("%s='%s' is not a number of hosts", "TERN_HOSTS", v);
  }
  if ((v = getenv("TERN_SOCKET_IFNAME")) && *v) {
    if (strlen(v) < sizeof core_config_now.socket_ifname)
      strcpy(core_config_now.socket_ifname, v);
    else
      complain("%s='%.40s...' is too long", "TERN_SOCKET_IFNAME", v);
  }
  if ((v = getenv("TERN_KEY")) && *v)
    derive_key(v, strlen(v));
  else if ((v = getenv("TERN_KEY_FILE")) && *v)
    read_key_file(v);
  if ((v = getenv("TERN_TUNING")) && *v) {
    if (strlen(v) < sizeof core_config_now.tuning)
      strcpy(core_config_now.tuning, v);
    else
      complain("%s='%s' is too long", "TERN_TUNING", v);
  }
}

/* The first read, and any before it completes on another thread: pthread_once makes them wait. */
static void load_first(void) {
  load();
  __atomic_store_n(&core_config_read, true, __ATOMIC_RELEASE);
}

const core_config *core_config_first(void) {
  pthread_once(&config_once, load_first);
  return &core_config_now;
}

void core_config_reload(void) {
  pthread_once(&config_once, load_first);
  pthread_mutex_lock(&config_lock);
  load();
  pthread_mutex_unlock(&config_lock);
}
