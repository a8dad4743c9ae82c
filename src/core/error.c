/* error.c: status names and the error text a failing call leaves behind.
 *
 * A core_err holds the first failure of an operation: later failures in the same operation are
 * usually consequences of the first (a peer lost, then every socket to it failing), so the first
 * one is kept and the rest are dropped.
 */
#include "core.h"

#include <stdio.h>
#include <string.h>

const char *tern_version_str(void) {
#define TERN_STR2(x) #x
#define TERN_STR(x) TERN_STR2(x)
  return TERN_STR(TERN_VERSION_MAJOR) "." TERN_STR(TERN_VERSION_MINOR) "." TERN_STR(
      TERN_VERSION_PATCH);
}

const char *tern_status_str(tern_status s) {
  switch (s) {
  case TERN_OK:
    return "TERN_OK: success";
  case TERN_ERR_INVALID_ARG:
    return "TERN_ERR_INVALID_ARG: invalid argument";
  case TERN_ERR_TIMEOUT:
    return "TERN_ERR_TIMEOUT: a wait passed its deadline";
  case TERN_ERR_PEER_LOST:
    return "TERN_ERR_PEER_LOST: a peer was lost";
  case TERN_ERR_PROTOCOL:
    return "TERN_ERR_PROTOCOL: a peer broke the protocol";
  case TERN_ERR_AUTH:
    return "TERN_ERR_AUTH: authentication failed";
  case TERN_ERR_NOMEM:
    return "TERN_ERR_NOMEM: out of memory";
  case TERN_ERR_SYSTEM:
    return "TERN_ERR_SYSTEM: a system call failed";
  case TERN_ERR_ABORTED:
    return "TERN_ERR_ABORTED: the communicator was aborted";
  case TERN_ERR_UNSUPPORTED:
    return "TERN_ERR_UNSUPPORTED: not supported";
  }
  return "TERN_ERR_?: unknown status";
}

tern_status core_err_vset(core_err *err, tern_status status, const char *fmt, va_list ap) {
  if (err == NULL || (err->status != TERN_OK && status != TERN_OK)) return status;
  err->status = status;
  vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  return status;
}

tern_status core_err_set(core_err *err, tern_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  core_err_vset(err, status, fmt, ap);
  va_end(ap);
  return status;
}

tern_status core_err_errno(core_err *err, int errnum, const char *fmt, ...) {
  if (err == NULL || err->status != TERN_OK) return TERN_ERR_SYSTEM;
  char what[CORE_ERR_LEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return core_err_set(err, TERN_ERR_SYSTEM, "%s: %s", what, strerror(errnum));
}

void core_err_clear(core_err *err) {
  err->status = TERN_OK;
  err->msg[0] = '\0';
}
