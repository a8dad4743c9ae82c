/* codec.c: the float codecs of compress.h.
 *
 * fp16 and bf16 reuse core's conversions (round to nearest even). The 8-bit codec cuts the
 * vector into blocks of COMPRESS_INT8_BLOCK values and sends, per block, a f32 scale
 * s = max|x| / 127 and the codes q = round(x / s) in [-127, 127]; decoding gives q * s, so each
 * value is off by at most s / 2 = max|x| / 254 of its block. A scale per block (rather than per
 * vector) keeps one large value from flattening the rest of a long vector.
 */
#include "compress/compress.h"

#include "core/bytes.h"

#include <math.h>
#include <string.h>

bool compress_valid(int codec) {
  return codec >= TERN_COMPRESS_NONE && codec <= TERN_COMPRESS_INT8EF;
}

const char *compress_name(tern_compress codec) {
  static const char *names[] = {"none", "fp16", "bf16", "int8", "int8ef"};
  return compress_valid(codec) ? names[codec] : "?";
}

bool compress_parse(const char *s, tern_compress *out) {
  static const struct {
    const char *name;
    tern_compress c;
  } names[] = {{"none", TERN_COMPRESS_NONE}, {"f32", TERN_COMPRESS_NONE},
               {"fp16", TERN_COMPRESS_FP16}, {"f16", TERN_COMPRESS_FP16},
               {"bf16", TERN_COMPRESS_BF16}, {"int8", TERN_COMPRESS_INT8},
               {"8bit", TERN_COMPRESS_INT8}, {"int8ef", TERN_COMPRESS_INT8EF}};
  for (size_t i = 0; i < CORE_ARRAY_LEN(names); i++)
    if (strcmp(s, names[i].name) == 0) {
      *out = names[i].c;
      return true;
    }
  return false;
}

static size_t blocks(size_t n) {
  return (n + COMPRESS_INT8_BLOCK - 1) / COMPRESS_INT8_BLOCK;
}

size_t compress_size(tern_compress codec, size_t n) {
  switch (codec) {
  case TERN_COMPRESS_FP16:
  case TERN_COMPRESS_BF16:
    return 2 * n;
  case TERN_COMPRESS_INT8:
  case TERN_COMPRESS_INT8EF: /* codes of a difference (ef.c) */
    return n + 4 * blocks(n);
  default:
    return 4 * n;
  }
}

/* Layout: all the scales first (4 bytes each), then the codes. */
static void encode_int8(const float *in, size_t n, uint8_t *out) {
  size_t nb = blocks(n);
  int8_t *codes = (int8_t *)(out + 4 * nb);
  for (size_t b = 0; b < nb; b++) {
    size_t lo = b * COMPRESS_INT8_BLOCK, hi = CORE_MIN(n, lo + COMPRESS_INT8_BLOCK);
    float m = 0;
    for (size_t i = lo; i < hi; i++)
      if (isfinite(in[i]) && fabsf(in[i]) > m) m = fabsf(in[i]);
    float scale = m / 127.0f;
    core_put_f32(out + 4 * b, scale);
    float inv = scale > 0 ? 1.0f / scale : 0;
    for (size_t i = lo; i < hi; i++) {
      float q = isfinite(in[i]) ? rintf(in[i] * inv) : 0;
      codes[i] = (int8_t)(q > 127 ? 127 : q < -127 ? -127 : q);
    }
  }
}

static tern_status decode_int8(const uint8_t *in, size_t n, float *out, core_err *err) {
  size_t nb = blocks(n);
  const int8_t *codes = (const int8_t *)(in + 4 * nb);
  for (size_t b = 0; b < nb; b++) {
    float scale = core_get_f32(in + 4 * b);
    if (!isfinite(scale) || scale < 0)
      return core_err_set(err, TERN_ERR_PROTOCOL, "int8 block %zu has scale %g", b, (double)scale);
    size_t lo = b * COMPRESS_INT8_BLOCK, hi = CORE_MIN(n, lo + COMPRESS_INT8_BLOCK);
    for (size_t i = lo; i < hi; i++)
      out[i] = (float)codes[i] * scale;
  }
  return TERN_OK;
}

void compress_encode(tern_compress codec, const float *in, size_t n, uint8_t *out) {
  switch (codec) {
  case TERN_COMPRESS_FP16:
    for (size_t i = 0; i < n; i++)
      core_put16(out + 2 * i, core_f32_to_f16(in[i]));
    break;
  case TERN_COMPRESS_BF16:
    for (size_t i = 0; i < n; i++)
      core_put16(out + 2 * i, core_f32_to_bf16(in[i]));
    break;
  case TERN_COMPRESS_INT8:
  case TERN_COMPRESS_INT8EF:
    encode_int8(in, n, out);
    break;
  default:
    for (size_t i = 0; i < n; i++)
      core_put_f32(out + 4 * i, in[i]);
    break;
  }
}

tern_status compress_decode(tern_compress codec, const uint8_t *in, size_t in_len, size_t n,
                            float *out, core_err *err) {
  if (!compress_valid(codec))
    return core_err_set(err, TERN_ERR_PROTOCOL, "unknown compression %d", (int)codec);
  if (in_len != compress_size(codec, n))
    return core_err_set(err, TERN_ERR_PROTOCOL, "%zu bytes for %zu values in %s (expected %zu)",
                        in_len, n, compress_name(codec), compress_size(codec, n));
  switch (codec) {
  case TERN_COMPRESS_FP16:
    for (size_t i = 0; i < n; i++)
      out[i] = core_f16_to_f32(core_get16(in + 2 * i));
    return TERN_OK;
  case TERN_COMPRESS_BF16:
    for (size_t i = 0; i < n; i++)
      out[i] = core_bf16_to_f32(core_get16(in + 2 * i));
    return TERN_OK;
  case TERN_COMPRESS_INT8:
  case TERN_COMPRESS_INT8EF:
    return decode_int8(in, n, out, err);
  default:
    for (size_t i = 0; i < n; i++)
      out[i] = core_get_f32(in + 4 * i);
    return TERN_OK;
  }
}
