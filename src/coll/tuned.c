/* tuned.c: bringing the tuning file to every rank at start-up (see tuning.h): rank 0 reads it,
 * the store carries its text to the others, each parses the same bytes. */
#include "coll/coll.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Rank 0: the text to share, "" for none. */
static tern_status read_on_rank0(tern_comm *c, char **text, size_t *len) {
  const char *given = core_config_get()->tuning;
  char path[4096];
  if (given[0])
    snprintf(path, sizeof path, "%s", given);
  else
    coll_tuning_default_path(path, sizeof path);
  *text = NULL;
  *len = 0;
  if (!given[0] && access(path, F_OK) != 0) return TERN_OK; /* never tuned: the built-in model */
  coll_tuning t;
  core_err err = {0};
  tern_status rc = coll_tuning_load(&t, path, text, len, &err);
  if (rc != TERN_OK) {
    if (given[0]) return core_err_set(&c->err, rc, "TERN_TUNING: %s", err.msg);
    CORE_WARN("ignoring the tuning file: %s", err.msg);
    return TERN_OK;
  }
  coll_tuning_free(&t);
  CORE_INFO("tuning from %s", path);
  return TERN_OK;
}

tern_status coll_tuning_share(tern_comm *c, coll_tuning *out, bool *tuned) {
  char key[64];
  snprintf(key, sizeof key, "%s/tuning", c->gen);
  char *text = NULL;
  size_t len = 0;
  tern_status rc;
  *tuned = false;
  if (c->rank == 0) {
    rc = read_on_rank0(c, &text, &len);
    if (rc == TERN_OK) rc = store_set(c->store, key, text ? text : "", len, &c->err);
  } else {
    rc = store_get(c->store, key, (void **)&text, &len, core_deadline_after(c->timeout_s), &c->err);
  }
  if (rc == TERN_OK && len > 0) {
    rc = coll_tuning_parse(out, text, len, "rank 0's tuning file", &c->err);
    *tuned = rc == TERN_OK;
  }
  free(text);
  return rc;
}
