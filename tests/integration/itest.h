/* itest.h: what the integration programs run under `tern run` share (any_source.c, swap.c,
 * leave_early.c): starting from the launcher's environment, saying why a call failed, and the
 * bytes a rank sends, so that a receiver can check every one against its sender.
 */
#ifndef TERN_TESTS_ITEST_H
#define TERN_TESTS_ITEST_H

#include "tern.h"

#include <stddef.h>
#include <stdint.h>

/* tern_comm_init_env, or NULL after printing "FAIL: init: STATUS (why)". */
tern_comm *itest_init(void);

/* Prints "FAIL rank R: WHAT: STATUS (the communicator's last error)"; returns 1. */
int itest_fail(tern_comm *c, const char *what, tern_status rc);

/* Byte i of the k-th message rank `from` sends in round `round`. */
uint8_t itest_pattern(int from, int round, int k, size_t i);

/* Fills buf with that message; returns the sum of its bytes. */
double itest_fill(uint8_t *buf, size_t size, int from, int round, int k);

/* 0 when buf holds that message; else prints the first byte that differs, with the receiving
 * rank, and returns 1. */
int itest_check(tern_comm *c, const uint8_t *buf, size_t size, int from, int round, int k);

#endif
