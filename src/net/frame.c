/* frame.c: the identity every message carries, its 48-byte wire form on TCP, and the check
 * that what arrived belongs to the operation this rank is in.
 *
 * Wire form, little-endian:
 *   u32 magic "TRN1" | u8 kind | u8 dtype | u8 op | u8 reserved (0) | u32 seq | i32 root |
 *   u64 count | u64 bytes | u64 stripe_off | u64 stripe_len
 */
#include "net/transport.h"

#include "core/bytes.h"

#include <string.h>

/* The names of the wire's collective kinds, in their order (coll_kind numbers them alike), for
 * the messages that say which operations two ranks disagree on. */
static const char *const kinds[NET_COLL_KINDS] = {
    "allreduce", "reduce_scatter", "allgather", "broadcast", "reduce",
    "alltoall",  "barrier",        "gather",    "scatter",   "alltoallv"};

void net_frame_encode(const net_frame *f, uint8_t out[NET_FRAME_LEN]) {
  core_put32(out, NET_FRAME_MAGIC);
  out[4] = f->msg.kind;
  out[5] = f->msg.dtype;
  out[6] = f->msg.op;
  out[7] = 0;
  core_put32(out + 8, f->msg.seq);
  core_put32(out + 12, (uint32_t)f->msg.root);
  core_put64(out + 16, f->msg.count);
  core_put64(out + 24, f->msg.bytes);
  core_put64(out + 32, f->stripe_off);
  core_put64(out + 40, f->stripe_len);
}

tern_status net_frame_decode(const uint8_t in[NET_FRAME_LEN], net_frame *f, const char *from,
                             core_err *err) {
  uint32_t magic = core_get32(in);
  if (magic != NET_FRAME_MAGIC)
    return core_err_set(err, TERN_ERR_PROTOCOL,
                        "%s sent a frame with magic 0x%08x, not tern's 0x%08x", from, magic,
                        NET_FRAME_MAGIC);
  f->msg.kind = in[4];
  f->msg.dtype = in[5];
  f->msg.op = in[6];
  f->msg.seq = core_get32(in + 8);
  f->msg.root = (int32_t)core_get32(in + 12);
  f->msg.count = core_get64(in + 16);
  f->msg.bytes = core_get64(in + 24);
  f->stripe_off = core_get64(in + 32);
  f->stripe_len = core_get64(in + 40);
  if (in[7] != 0 || (f->msg.kind >= NET_COLL_KINDS && f->msg.kind != NET_KIND_P2P) ||
      !core_dtype_valid(f->msg.dtype) || !core_op_valid(f->msg.op))
    return core_err_set(err, TERN_ERR_PROTOCOL,
                        "%s sent a frame with kind %u, dtype %u, op %u, reserved %u: not valid",
                        from, f->msg.kind, f->msg.dtype, f->msg.op, in[7]);
  if (f->msg.bytes > NET_MAX_MSG_BYTES || f->stripe_off > f->msg.bytes ||
      f->stripe_len > f->msg.bytes - f->stripe_off)
    return core_err_set(err, TERN_ERR_PROTOCOL,
                        "%s sent a frame for bytes [%llu, +%llu) of a %llu-byte message", from,
                        (unsigned long long)f->stripe_off, (unsigned long long)f->stripe_len,
                        (unsigned long long)f->msg.bytes);
  return TERN_OK;
}

const char *net_kind_name(int kind) {
  if (kind == NET_KIND_P2P) return "send/recv";
  if (kind == NET_KIND_CALIBRATE) return "start-up timing";
  return kind >= 0 && kind < (int)CORE_ARRAY_LEN(kinds) ? kinds[kind] : "?";
}

tern_status net_msg_match(const net_msg_hdr *want, const net_msg_hdr *got, int peer,
                          core_err *err) {
  if (got->kind == want->kind && got->seq == want->seq && got->count == want->count &&
      got->dtype == want->dtype && got->op == want->op && got->root == want->root &&
      got->bytes == want->bytes)
    return TERN_OK; /* every message of every operation comes this way: no name looked up */
  const char *wk = net_kind_name(want->kind);
  if (got->seq + 1 == want->seq && got->kind != NET_KIND_P2P && want->kind != NET_KIND_P2P)
    return core_err_set(err, TERN_ERR_INVALID_ARG,
                        "rank %d sent a message of %s #%u (root %d), which this rank finished "
                        "without it: the ranks disagreed on that call's arguments or operation",
                        peer, net_kind_name(got->kind), got->seq, got->root);
  if (got->kind != want->kind || got->seq != want->seq)
    return core_err_set(err, TERN_ERR_INVALID_ARG,
                        "rank %d is in %s #%u while this rank is in %s #%u: the ranks called "
                        "different operations, or in a different order",
                        peer, net_kind_name(got->kind), got->seq, wk, want->seq);
  if (got->count != want->count)
    return core_err_set(err, TERN_ERR_INVALID_ARG,
                        "%s #%u: rank %d passed count %llu, this rank %llu: counts must agree", wk,
                        want->seq, peer, (unsigned long long)got->count,
                        (unsigned long long)want->count);
  if (got->dtype != want->dtype || got->op != want->op)
    return core_err_set(err, TERN_ERR_INVALID_ARG,
                        "%s #%u: rank %d passed %s/%s, this rank %s/%s: dtypes and ops must agree",
                        wk, want->seq, peer, tern_dtype_name(got->dtype), tern_op_name(got->op),
                        tern_dtype_name(want->dtype), tern_op_name(want->op));
  if (got->root != want->root)
    return core_err_set(err, TERN_ERR_INVALID_ARG,
                        "%s #%u: rank %d passed root %d, this rank %d: roots must agree", wk,
                        want->seq, peer, got->root, want->root);
  if (got->bytes != want->bytes)
    return core_err_set(err, TERN_ERR_INVALID_ARG,
                        "%s #%u: rank %d sent a %llu-byte message where this rank expects %llu "
                        "(the two disagree on the counts between them, or chose different "
                        "algorithms: set the same TERN_ALGO and TERN_TUNING on every rank)",
                        wk, want->seq, peer, (unsigned long long)got->bytes,
                        (unsigned long long)want->bytes);
  return TERN_OK;
}
