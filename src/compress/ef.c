/* ef.c: int8ef, 8-bit codes with error feedback for averaging (docs/SWARM.md, "8-bit with error
 * feedback").
 *
 * Plain 8-bit codes of a value are off by up to its block's max / 254, and averaging never
 * recovers that: on the WAN benchmark's vectors the int8 codec stays 5.7e-3 from the average
 * however many rounds run. int8ef changes two things.
 *  - Codes of a difference. The reducer of a part first sends its members the 8-bit codes of
 *    its own values (the reference, ref); contributions and the result are codes of their
 *    difference to ref, whose scale shrinks as the peers agree: once they are within d of each
 *    other, a code is off by about d / 254, not by the value's size / 254.
 *  - Error feedback. What a contribution's codes miss, w * (x + r - sent), stays with its
 *    sender as a residual mass and is added to its next contribution (r = mass / w); what the
 *    result's codes miss, W * (a - result), stays with the reducer. So the sum of w * x over
 *    the peers plus their residuals is what it was, round after round: the codes delay mass,
 *    they lose none, and each round delivers what earlier ones held back.
 */
#include "compress/compress.h"

#include <math.h>

void compress_ef_reference(const float *x, size_t n, uint8_t *codes, float *ref) {
  compress_encode(TERN_COMPRESS_INT8, x, n, codes);
  compress_decode(TERN_COMPRESS_INT8, codes, compress_size(TERN_COMPRESS_INT8, n), n, ref, NULL);
}

void compress_ef_encode(const float *x, const float *mass, double w, const float *ref, size_t n,
                        uint8_t *out, float *sent, float *tmp) {
  for (size_t i = 0; i < n; i++)
    tmp[i] = (float)((double)x[i] + (mass ? (double)mass[i] / w : 0) - (double)ref[i]);
  compress_encode(TERN_COMPRESS_INT8, tmp, n, out);
  compress_decode(TERN_COMPRESS_INT8, out, compress_size(TERN_COMPRESS_INT8, n), n, sent, NULL);
  for (size_t i = 0; i < n; i++)
    sent[i] += ref[i];
}

void compress_ef_residual(const float *x, const float *mass, double w, const float *sent, size_t n,
                          float *mass_after) {
  for (size_t i = 0; i < n; i++)
    mass_after[i] = (float)(w * (double)x[i] + (mass ? (double)mass[i] : 0) - w * (double)sent[i]);
}

tern_status compress_ef_decode(const uint8_t *in, size_t in_len, const float *ref, size_t n,
                               float *out, core_err *err) {
  tern_status rc = compress_decode(TERN_COMPRESS_INT8, in, in_len, n, out, err);
  for (size_t i = 0; rc == TERN_OK && i < n; i++)
    out[i] += ref[i];
  return rc;
}
