/* bytes.h: little-endian integers in byte buffers, for every wire format tern speaks (frames,
 * the handshake, the store): whatever the host's byte order, the wire's is fixed. */
#ifndef TERN_CORE_BYTES_H
#define TERN_CORE_BYTES_H

#include <stdint.h>
#include <string.h>

static inline void core_put16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}

static inline void core_put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static inline void core_put64(uint8_t *p, uint64_t v) {
  core_put32(p, (uint32_t)v);
  core_put32(p + 4, (uint32_t)(v >> 32));
}

static inline uint16_t core_get16(const uint8_t *p) {
  return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t core_get32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t core_get64(const uint8_t *p) {
  return (uint64_t)core_get32(p) | (uint64_t)core_get32(p + 4) << 32;
}

/* IEEE floats by their bits, in the same byte order. */
static inline void core_put_f32(uint8_t *p, float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  core_put32(p, u);
}

static inline float core_get_f32(const uint8_t *p) {
  uint32_t u = core_get32(p);
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static inline void core_put_f64(uint8_t *p, double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  core_put64(p, u);
}

static inline double core_get_f64(const uint8_t *p) {
  uint64_t u = core_get64(p);
  double d;
  memcpy(&d, &u, 8);
  return d;
}

#endif
