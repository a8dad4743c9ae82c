/* jsonpos.c: where a value sits in a JSON text, for error messages that name a line.
 *
 * jansson reports the line of a syntax error but keeps no positions in the values it builds, so
 * a scenario that parses but says something impossible ("gpus": -4) would get an error with no
 * line. This walks the already-valid text once along a path such as "regions[2].gpus", skipping
 * every value off the path, and counts newlines on the way. Valid input is assumed (jansson has
 * accepted it); on anything unexpected it returns 0, "no line", never reads past the end.
 */
#include "plan/plan.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

typedef struct cursor {
  const char *s;
  size_t len, i;
  int line;
} cursor;

static void skip_ws(cursor *c) {
  while (c->i < c->len && isspace((unsigned char)c->s[c->i])) {
    if (c->s[c->i] == '\n') c->line++;
    c->i++;
  }
}

/* Skips a string starting at its quote; copies up to cap-1 raw bytes into out when given. */
static bool skip_string(cursor *c, char *out, size_t cap) {
  size_t n = 0;
  if (c->i >= c->len || c->s[c->i] != '"') return false;
  for (c->i++; c->i < c->len; c->i++) {
    char ch = c->s[c->i];
    if (ch == '"') {
      c->i++;
      if (out) out[n] = '\0';
      return true;
    }
    if (ch == '\\')
      c->i++;
    else if (out && n + 1 < cap)
      out[n++] = ch;
  }
  return false;
}

static bool skip_value(cursor *c) {
  skip_ws(c);
  if (c->i >= c->len) return false;
  char ch = c->s[c->i];
  if (ch == '"') return skip_string(c, NULL, 0);
  if (ch != '{' && ch != '[') {
    while (c->i < c->len && !strchr(",]} \t\r\n", c->s[c->i]))
      c->i++;
    return true;
  }
  int depth = 0;
  while (c->i < c->len) {
    ch = c->s[c->i];
    if (ch == '"') {
      if (!skip_string(c, NULL, 0)) return false;
      continue;
    }
    if (ch == '\n') c->line++;
    if (ch == '{' || ch == '[') depth++;
    if (ch == '}' || ch == ']') depth--;
    c->i++;
    if (depth == 0) return true;
  }
  return false;
}

/* Skips white space, a comma between members or elements, and the white space after it. */
static void skip_comma(cursor *c) {
  skip_ws(c);
  if (c->i < c->len && c->s[c->i] == ',') c->i++;
  skip_ws(c);
}

/* Moves the cursor onto the member `key` of the object it is on. */
static bool enter_key(cursor *c, const char *key) {
  skip_ws(c);
  if (c->i >= c->len || c->s[c->i] != '{') return false;
  c->i++;
  for (;;) {
    char name[128];
    skip_comma(c);
    if (c->i >= c->len || c->s[c->i] == '}') return false;
    if (!skip_string(c, name, sizeof name)) return false;
    skip_ws(c);
    if (c->i >= c->len || c->s[c->i] != ':') return false;
    c->i++;
    if (strcmp(name, key) == 0) {
      skip_ws(c);
      return true;
    }
    if (!skip_value(c)) return false;
  }
}

/* Moves the cursor onto element `index` of the array it is on. */
static bool enter_index(cursor *c, long index) {
  skip_ws(c);
  if (c->i >= c->len || c->s[c->i] != '[') return false;
  c->i++;
  for (long k = 0;; k++) {
    skip_comma(c);
    if (c->i >= c->len || c->s[c->i] == ']') return false;
    if (k == index) return true;
    if (!skip_value(c)) return false;
  }
}

int plan_json_line(const char *text, size_t len, const char *path) {
  cursor c = {text, len, 0, 1};
  const char *p = path;
  while (*p) {
    if (*p == '.') p++;
    if (*p == '[') {
      char *end;
      long index = strtol(p + 1, &end, 10);
      if (*end != ']' || !enter_index(&c, index)) return 0;
      p = end + 1;
      continue;
    }
    char key[128];
    size_t n = strcspn(p, ".[");
    if (n == 0 || n >= sizeof key) return 0;
    memcpy(key, p, n);
    key[n] = '\0';
    if (!enter_key(&c, key)) return 0;
    p += n;
  }
  skip_ws(&c);
  return c.line;
}
