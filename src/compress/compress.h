/* compress.h: codecs for float vectors on the wire: fp16, bf16 and blockwise 8-bit.
 *
 * Each codec turns n floats into compress_size(codec, n) bytes and back. Decoding checks the
 * length it is given and the scales it reads (bytes from the network are untrusted).
 */
#ifndef TERN_COMPRESS_H
#define TERN_COMPRESS_H

#include "core/core.h"

/* Values per block of TERN_COMPRESS_INT8: one f32 scale per block of this many codes. */
#define COMPRESS_INT8_BLOCK 256

bool compress_valid(int codec);
const char *compress_name(tern_compress codec);
/* Parses "none"/"f32", "fp16"/"f16", "bf16", "int8"/"8bit". */
bool compress_parse(const char *s, tern_compress *out);
/* Bytes that n floats take on the wire. */
size_t compress_size(tern_compress codec, size_t n);
/* out must hold compress_size(codec, n) bytes. */
void compress_encode(tern_compress codec, const float *in, size_t n, uint8_t *out);
/* in holds in_len bytes; out gets n floats. TERN_ERR_PROTOCOL when in_len is not
 * compress_size(codec, n) or a block scale is not a finite number >= 0. */
tern_status compress_decode(tern_compress codec, const uint8_t *in, size_t in_len, size_t n,
                            float *out, core_err *err);

/* ef.c: TERN_COMPRESS_INT8EF's pieces; its wire form is TERN_COMPRESS_INT8's. The butterfly
 * (src/swarm/butterfly.c) sends the reference first, then contributions and results coded
 * against it. */
/* The reference of a part x: codes (compress_size(INT8, n) bytes) and their values, ref. */
void compress_ef_reference(const float *x, size_t n, uint8_t *codes, float *ref);
/* Codes (out) of x + mass / w - ref (mass NULL: no residual), and in sent the values a decoder
 * gets from them (ref added back); tmp holds n floats of scratch. */
void compress_ef_encode(const float *x, const float *mass, double w, const float *ref, size_t n,
                        uint8_t *out, float *sent, float *tmp);
/* The residual mass once sent is delivered: w * x + mass - w * sent (mass NULL: none). */
void compress_ef_residual(const float *x, const float *mass, double w, const float *sent, size_t n,
                          float *mass_after);
/* ref + the decoded codes; the checks of compress_decode. */
tern_status compress_ef_decode(const uint8_t *in, size_t in_len, const float *ref, size_t n,
                               float *out, core_err *err);

#endif /* TERN_COMPRESS_H */
