/*
** pf_proto.c: the layout as a native Perfetto trace (protobuf `Trace` of `TracePacket`s),
** the format ui.perfetto.dev and trace_processor read fastest.
**
**   SELECT traceloom_export_perfetto('timeline.perfetto-trace');   -- or .pftrace, + .gz
**
** Packets:
**   1. one TrackDescriptor per track: boxes (device, host, ranks, context) as parents with
**      child_ordering EXPLICIT, their lanes under them, sibling_order_rank = display order;
**   2. each lane's slices on a sequence of its own (trusted_packet_sequence_id = track index
**      + 1), opened by a packet that clears the incremental state, sets the lane as the
**      default track (TrackEventDefaults) and an incremental clock (ClockSnapshot clock 64,
**      TracePacketDefaults.timestamp_clock_id): each event then carries only the time since
**      the previous one. The slices are TrackEvent TYPE_SLICE_BEGIN / TYPE_SLICE_END pairs
**      in import order, an END written when the next slice starts outside it, so the nesting
**      is exactly the layout's (a sequence keeps its order at equal timestamps). Names,
**      categories, arg keys and repeated string values are interned on first use in each
**      sequence (iid = strpool id + 1, category + 1, key + 1); args are debug annotations:
**      durations as integer ns (compute_ns, ...), ids as their integer keys (event_n,
**      call_n), without the keys proto_skips lists; flows are flow_ids on the source BEGIN
**      and terminating_flow_ids on the target BEGIN;
**   3. the metadata as ChromeEventBundle.metadata (trace processor's `metadata` table).
** Timestamps are ns since the layout's origin (>= 0) on the trace clock (BOOTTIME).
**
** The wire format is written by hand: a handful of messages (their field numbers below,
** from Perfetto's protos under protos/perfetto/trace/), encoded straight into the output
** buffer with no per-event allocation. A generated library (protobuf-c) would build a
** message struct per event and pack it generically, for no gain in a write-only stream;
** the test suite decodes the output with the official perfetto Python protos and loads it
** in the trace processor.
*/
#include "export/pf.h"
#include "util/timing.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Field numbers (Perfetto protos/perfetto/trace/...). */
enum {
  F_TRACE_PACKET = 1,
  /* TracePacket */
  F_PKT_TIMESTAMP = 8, F_PKT_SEQ_ID = 10, F_PKT_TRACK_EVENT = 11, F_PKT_INTERNED = 12,
  F_PKT_SEQ_FLAGS = 13, F_PKT_TRACK_DESCRIPTOR = 60, F_PKT_CHROME_EVENTS = 5,
  F_PKT_CLOCK_SNAPSHOT = 6, F_PKT_DEFAULTS = 59,
  /* ClockSnapshot, ClockSnapshot.Clock */
  F_CS_CLOCKS = 1, F_CLK_ID = 1, F_CLK_TIMESTAMP = 2, F_CLK_INCREMENTAL = 3,
  /* TracePacketDefaults, TrackEventDefaults */
  F_TPD_TIMESTAMP_CLOCK_ID = 58, F_TPD_TRACK_EVENT_DEFAULTS = 11, F_TED_TRACK_UUID = 11,
  /* TrackEvent */
  F_TE_CATEGORY_IIDS = 3, F_TE_DEBUG_ANNOTATIONS = 4, F_TE_TYPE = 9, F_TE_NAME_IID = 10,
  F_TE_TRACK_UUID = 11, F_TE_FLOW_IDS = 47, F_TE_TERMINATING_FLOW_IDS = 48,
  /* TrackDescriptor */
  F_TD_UUID = 1, F_TD_NAME = 2, F_TD_PARENT_UUID = 5, F_TD_CHILD_ORDERING = 11,
  F_TD_SIBLING_ORDER_RANK = 12,
  /* InternedData */
  F_ID_EVENT_CATEGORIES = 1, F_ID_EVENT_NAMES = 2, F_ID_DEBUG_ANNOTATION_NAMES = 3,
  F_ID_DEBUG_ANNOTATION_STRING_VALUES = 29,
  /* EventCategory, EventName, DebugAnnotationName, InternedString: iid = 1, name/str = 2 */
  F_IID = 1, F_INAME = 2,
  /* DebugAnnotation */
  F_DA_NAME_IID = 1, F_DA_BOOL = 2, F_DA_INT = 4, F_DA_DOUBLE = 5, F_DA_STRING = 6,
  F_DA_STRING_IID = 17,
  /* ChromeEventBundle, ChromeMetadata */
  F_CEB_METADATA = 2, F_CM_NAME = 1, F_CM_STRING = 2, F_CM_INT = 4
};
enum { WT_VARINT = 0, WT_FIXED64 = 1, WT_LEN = 2 };
enum { TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 2 };
enum { SEQ_INCREMENTAL_STATE_CLEARED = 1, SEQ_NEEDS_INCREMENTAL_STATE = 2 };
enum { CHILD_ORDERING_EXPLICIT = 3 };
enum { PB_CLOCK_BOOTTIME = 6, PB_CLOCK_INCREMENTAL = 64 /* the first sequence-scoped clock id */ };

/* ---- Encoding ------------------------------------------------------------------------------ */

/* Where the next (at most) n bytes of b go, NULL once b is out of memory; pb_done(b, end)
** ends them. The encoders write straight into the buffer: an event is a few dozen small
** varints, each a call and a copy through a scratch array otherwise. */
static inline char *pb_room(tl_buf *b, size_t n) {
  if (!b->oom && b->n + n + 1 <= b->cap) return b->p + b->n;
  return tl_buf_reserve(b, n) ? NULL : b->p + b->n;
}

static inline void pb_done(tl_buf *b, char *end) {
  b->n = (size_t)(end - b->p);
  b->p[b->n] = 0;
}

static inline char *put_varint(char *q, uint64_t v) {
  while (v >= 0x80) {
    *q++ = (char)(v | 0x80);
    v >>= 7;
  }
  *q++ = (char)v;
  return q;
}

static inline size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) v >>= 7, n++;
  return n;
}

static inline void pb_varint(tl_buf *b, uint64_t v) {
  char *q = pb_room(b, 10);
  if (q) pb_done(b, put_varint(q, v));
}

static inline void pb_tag(tl_buf *b, unsigned field, unsigned wt) {
  pb_varint(b, (uint64_t)field << 3 | wt);
}

static inline void pb_uint(tl_buf *b, unsigned field, uint64_t v) {
  char *q = pb_room(b, 20);
  if (q) pb_done(b, put_varint(put_varint(q, (uint64_t)field << 3 | WT_VARINT), v));
}

/* int64/int32 fields: two's complement as a varint (negative: 10 bytes). */
static inline void pb_int(tl_buf *b, unsigned field, int64_t v) { pb_uint(b, field, (uint64_t)v); }

static inline void pb_bytes(tl_buf *b, unsigned field, const void *p, size_t n) {
  char *q = pb_room(b, 20 + n);
  if (!q) return;
  q = put_varint(put_varint(q, (uint64_t)field << 3 | WT_LEN), n);
  if (n) memcpy(q, p, n);
  pb_done(b, q + n);
}

static inline void pb_fixed64(tl_buf *b, unsigned field, uint64_t v) {
  char tmp[8];
  for (int i = 0; i < 8; i++) tmp[i] = (char)(v >> (8 * i));
  pb_tag(b, field, WT_FIXED64);
  tl_buf_append(b, tmp, 8);
}

static inline void pb_double(tl_buf *b, unsigned field, double d) {
  uint64_t v;
  memcpy(&v, &d, sizeof v);
  pb_fixed64(b, field, v);
}

/* ---- Writer state ------------------------------------------------------------------------- */

typedef struct proto_w {
  pf_argw w;   /* args into ev */
  pf_ctx *c;
  pf_out *o;
  tl_err *e;   /* this writer's errors (a part writer has its own) */
  tl_buf ev;   /* the TrackEvent being built */
  tl_buf ann;  /* one DebugAnnotation, or one interned entry */
  tl_buf in;   /* the packet's InternedData */
  tl_buf pkt;  /* the TracePacket */
  uint64_t seq;     /* the current sequence; interned entries are per sequence */
  int src;          /* PF_SRC_* of the slice whose args are being written */
  const uint8_t *skip; /* skips[src]: the keys proto_skips leaves out for that source */
  /* Per key, computed once (writer_init): 1 where proto_skips leaves it out, by source; the
  ** *_ns key of a *_us key and the *_n key of an id key (pf_ns_key, pf_n_key). About 14M
  ** args are written at 1M tasks: a table look-up each instead of two calls into switches. */
  uint8_t skips[PF_SRC_ROW + 1][PF_NKEYS];
  uint8_t ns_key[PF_NKEYS], n_key[PF_NKEYS];
  int64_t last_ts;  /* the sequence's previous timestamp (the clock is incremental) */
  /* per strpool id / category / key: the sequence that last interned it */
  uint64_t *name_seq, *str_seq, cat_seq[PF_NCAT], key_seq[PF_NKEYS];
} proto_w;

/* An interned entry {iid, name} of InternedData field f. */
static void intern_entry(proto_w *p, unsigned f, uint64_t iid, const char *s, size_t n) {
  tl_buf *b = &p->ann;
  tl_buf_reset(b);
  pb_uint(b, F_IID, iid);
  pb_bytes(b, F_INAME, s, n);
  pb_bytes(&p->in, f, b->p, b->n);
}

/* Interns arg key k in this sequence (once per key and sequence: out of the args' way). */
static __attribute__((noinline)) void intern_key(proto_w *p, int k) {
  intern_entry(p, F_ID_DEBUG_ANNOTATION_NAMES, (uint64_t)k + 1, pf_key_names[k],
               strlen(pf_key_names[k]));
  p->key_seq[k] = p->seq;
}

/* The iid of arg key k in this sequence (interned on first use). */
static inline uint64_t key_iid(proto_w *p, int k) {
  if (p->key_seq[k] != p->seq) intern_key(p, k);
  return (uint64_t)k + 1;
}

/* The iid of strpool id as a string value (debug_annotation_string_values). */
static uint64_t str_iid(proto_w *p, uint32_t id) {
  if (p->str_seq[id] != p->seq) {
    const tl_strpool *pool = p->c->a.pool;
    intern_entry(p, F_ID_DEBUG_ANNOTATION_STRING_VALUES, (uint64_t)id + 1,
                 tl_strpool_str(pool, id), tl_strpool_len(pool, id));
    p->str_seq[id] = p->seq;
  }
  return (uint64_t)id + 1;
}

/* Keys the protobuf trace leaves out: the plane and replay flags are its categories and
** tracks, display_depth is Perfetto's own depth, the node-level facts (view, parent, tree
** depth, topology, symbol = the slice name) are one lookup away by node_id, db_idx and
** device_id are the slice's box (except on rank and context rows, where they are not), and
** an atom's anchor range is its one anchor (anchor_end_idx = anchor_start_idx, count 1).
** The JSON keeps them all (perfetto.md 4.2, 5.1). */
static int proto_skips(const proto_w *p, int key) {
  switch (key) {
  case PF_K_semantic_kind: case PF_K_view_name: case PF_K_database_index:
  case PF_K_projection_plane: case PF_K_display_depth: case PF_K_replay_derived:
  case PF_K_tree_depth: case PF_K_parent_node_id: case PF_K_symbol:
  case PF_K_topology_signature_sha256:
    return 1;
  case PF_K_db_idx: case PF_K_device_id:
    return p->src != PF_SRC_ROW;
  case PF_K_anchor_end_idx: case PF_K_anchor_count:
    return p->src == PF_SRC_ATOM;
  default:
    return 0;
  }
}

/* The slice source whose args are written next (the skips of its keys). */
static inline void set_src(proto_w *p, int src) {
  p->src = src;
  p->skip = p->skips[src >= 0 && src <= PF_SRC_ROW ? src : PF_SRC_OCC];
}

/* Starts annotation key (built in p->ann, which interning also uses: intern first). */
static void ann_start(proto_w *p, int key) {
  uint64_t iid = key_iid(p, key);
  tl_buf_reset(&p->ann);
  pb_uint(&p->ann, F_DA_NAME_IID, iid);
}

static void put_annotation(proto_w *p) {
  pb_bytes(&p->ev, F_TE_DEBUG_ANNOTATIONS, p->ann.p, p->ann.n);
}

/* An integer annotation, written straight into the event: {name_iid, int_value} is at most
** 13 bytes (a key's iid is one byte: PF_NKEYS < 127), so its length is one byte, set once
** the value is written. */
_Static_assert(PF_NKEYS < 127, "an arg key's iid must fit one varint byte");
static void pa_i64(pf_argw *w, int key, int64_t v) {
  proto_w *p = (proto_w *)w;
  if (p->skip[key]) return;
  uint64_t iid = key_iid(p, key);
  char *q = pb_room(&p->ev, 16);
  if (!q) return;
  char *start = q;
  q[0] = (char)(F_TE_DEBUG_ANNOTATIONS << 3 | WT_LEN);
  q[2] = (char)(F_DA_NAME_IID << 3 | WT_VARINT);
  q[3] = (char)iid;
  q[4] = (char)(F_DA_INT << 3 | WT_VARINT);
  q = put_varint(q + 5, (uint64_t)v);
  start[1] = (char)(q - start - 2);
  pb_done(&p->ev, q);
}

static void pa_us(pf_argw *w, int key, int64_t ns) {
  pa_i64(w, ((proto_w *)w)->ns_key[key], ns);
}

static void pa_pool(pf_argw *w, int key, uint32_t id) {
  proto_w *p = (proto_w *)w;
  /* null: no annotation (the JSON import keeps none either) */
  if (id == TL_STR_NONE || p->skip[key]) return;
  uint64_t iid = str_iid(p, id);
  ann_start(p, key);
  pb_uint(&p->ann, F_DA_STRING_IID, iid);
  put_annotation(p);
}

static void pa_text(pf_argw *w, int key, const char *s, size_t n) {
  proto_w *p = (proto_w *)w;
  if (p->skip[key]) return;
  ann_start(p, key);
  pb_bytes(&p->ann, F_DA_STRING, s, n);
  put_annotation(p);
}

static void pa_bool(pf_argw *w, int key, int v) {
  proto_w *p = (proto_w *)w;
  if (p->skip[key]) return;
  ann_start(p, key);
  pb_uint(&p->ann, F_DA_BOOL, v ? 1 : 0);
  put_annotation(p);
}

static void pa_null(pf_argw *w, int key) { (void)w, (void)key; }

static void pa_id(pf_argw *w, int key, const char *prefix, int64_t n) {
  (void)prefix;
  pa_i64(w, ((proto_w *)w)->n_key[key], n);
}

static void pa_ref(pf_argw *w, int key, uint32_t text, int64_t n) {
  if (n >= 0) pa_i64(w, ((proto_w *)w)->n_key[key], n);
  else pa_pool(w, key, text);
}

/* Appends the packet in p->pkt to the output as Trace.packet. */
static int emit_packet(proto_w *p) {
  tl_buf *o = &p->o->b;
  pb_bytes(o, F_TRACE_PACKET, p->pkt.p, p->pkt.n);
  tl_buf_reset(&p->pkt);
  if (o->n >= PF_FLUSH_BYTES) return pf_out_flush(p->o, 0);
  return TL_OK;
}

/* A TracePacket around p->ev (and p->in when it holds interned data), at ts: written
** straight to the output (its length is known from the parts). */
static int event_packet(proto_w *p, int64_t ts) {
  if (ts < p->last_ts)
    return tl_fail(p->e, "traceloom_export_perfetto: internal error: a track's events go "
                            "back in time (%lld after %lld)",
                   (long long)ts, (long long)p->last_ts);
  uint64_t dt = (uint64_t)(ts - p->last_ts);
  p->last_ts = ts;
  /* field keys: timestamp (8), sequence id (10), interned data (12), track event (11) are
  ** one byte each */
  size_t len = 1 + varint_size(dt) + 1 + varint_size(p->seq) + 1 + varint_size(p->ev.n) +
               p->ev.n;
  if (p->in.n) len += 1 + varint_size(p->in.n) + p->in.n;
  /* One reservation for the whole packet, its fields written in place. */
  tl_buf *o = &p->o->b;
  char *q = pb_room(o, len + 11);
  if (!q) { /* out of memory: the flush says so */
    tl_buf_reset(&p->in);
    tl_buf_reset(&p->ev);
    return pf_out_flush(p->o, 0);
  }
  *q++ = (char)(F_TRACE_PACKET << 3 | WT_LEN);
  q = put_varint(q, len);
  *q++ = (char)(F_PKT_TIMESTAMP << 3 | WT_VARINT);
  q = put_varint(q, dt);
  *q++ = (char)(F_PKT_SEQ_ID << 3 | WT_VARINT);
  q = put_varint(q, p->seq);
  if (p->in.n) {
    *q++ = (char)(F_PKT_INTERNED << 3 | WT_LEN);
    q = put_varint(q, p->in.n);
    memcpy(q, p->in.p, p->in.n);
    q += p->in.n;
    tl_buf_reset(&p->in);
  }
  *q++ = (char)(F_PKT_TRACK_EVENT << 3 | WT_LEN);
  q = put_varint(q, p->ev.n);
  memcpy(q, p->ev.p, p->ev.n);
  pb_done(o, q + p->ev.n);
  tl_buf_reset(&p->ev);
  if (o->n >= PF_FLUSH_BYTES) return pf_out_flush(p->o, 0);
  return TL_OK;
}

static int track_packets(proto_w *p) {
  const pf_layout *l = &p->c->l;
  const tl_strpool *pool = p->c->a.pool;
  for (size_t i = 0; i < l->tracks.n; i++) {
    const pf_track *t = &l->tracks.v[i];
    tl_buf *d = &p->ev;
    pb_uint(d, F_TD_UUID, (uint64_t)i + 1);
    pb_bytes(d, F_TD_NAME, tl_strpool_str(pool, t->name), tl_strpool_len(pool, t->name));
    if (t->box >= 0) pb_uint(d, F_TD_PARENT_UUID, (uint64_t)t->box + 1);
    if (t->is_box) pb_uint(d, F_TD_CHILD_ORDERING, CHILD_ORDERING_EXPLICIT);
    pb_int(d, F_TD_SIBLING_ORDER_RANK, t->rank);
    pb_bytes(&p->pkt, F_PKT_TRACK_DESCRIPTOR, d->p, d->n);
    tl_buf_reset(d);
    if (emit_packet(p)) return TL_ERROR;
  }
  return TL_OK;
}

/* Opens the sequence of lane ti: cleared state, default track, incremental clock at 0. */
static int sequence_packet(proto_w *p, size_t ti) {
  p->seq = (uint64_t)ti + 1;
  p->last_ts = 0;
  tl_buf *k = &p->pkt, *b = &p->ann, *d = &p->ev;
  pb_uint(k, F_PKT_SEQ_ID, p->seq);
  pb_uint(k, F_PKT_SEQ_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
  tl_buf_reset(b);
  pb_uint(b, F_TED_TRACK_UUID, (uint64_t)ti + 1);
  pb_uint(d, F_TPD_TIMESTAMP_CLOCK_ID, PB_CLOCK_INCREMENTAL);
  pb_bytes(d, F_TPD_TRACK_EVENT_DEFAULTS, b->p, b->n);
  pb_bytes(k, F_PKT_DEFAULTS, d->p, d->n);
  tl_buf_reset(d);
  tl_buf_reset(b);
  pb_uint(b, F_CLK_ID, PB_CLOCK_BOOTTIME);
  pb_uint(b, F_CLK_TIMESTAMP, 0);
  pb_bytes(d, F_CS_CLOCKS, b->p, b->n);
  tl_buf_reset(b);
  pb_uint(b, F_CLK_ID, PB_CLOCK_INCREMENTAL);
  pb_uint(b, F_CLK_TIMESTAMP, 0);
  pb_uint(b, F_CLK_INCREMENTAL, 1);
  pb_bytes(d, F_CS_CLOCKS, b->p, b->n);
  pb_bytes(k, F_PKT_CLOCK_SNAPSHOT, d->p, d->n);
  tl_buf_reset(d);
  return emit_packet(p);
}

static int end_packet(proto_w *p, int64_t ts) {
  pb_uint(&p->ev, F_TE_TYPE, TYPE_SLICE_END);
  return event_packet(p, ts);
}

/* The first index of flows (ordered by emission position of one end, by_to or not) whose
** end is at or after emission position pos. */
static size_t flow_cursor(const pf_layout *l, const uint32_t *order, int to, uint32_t pos) {
  size_t lo = 0, hi = l->flows.n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const pf_flow *f = &l->flows.v[order[mid]];
    if (l->pos[to ? f->to : f->from] < pos) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

typedef TL_VEC(uint32_t) u32stack;

/* Lane ti's sequence as it stands after its slices before emission position at, which the
** other part's writer encodes: the names, categories, arg keys and strings interned so far
** marked as this sequence's, its incremental clock, its open slices. The args are encoded
** as the other writer encodes them, into scratch that is dropped, so the marks are the ones
** it makes. */
static int resume_lane(proto_w *p, size_t ti, int64_t at, u32stack *stack) {
  pf_ctx *c = p->c;
  const pf_layout *l = &c->l;
  p->seq = (uint64_t)ti + 1;
  p->last_ts = 0;
  stack->n = 0;
  for (int64_t k = l->tracks.v[ti].first; k < at; k++) {
    uint32_t si = l->order[k];
    const pf_slice *s = &l->slices.v[si];
    while (stack->n > (size_t)s->depth) p->last_ts = l->slices.v[stack->v[--stack->n]].end - l->origin;
    p->name_seq[s->name] = p->seq;
    p->cat_seq[s->cat] = p->seq;
    set_src(p, s->src);
    pf_slice_args(c, s, &p->w);
    tl_buf_reset(&p->ev);
    tl_buf_reset(&p->ann);
    tl_buf_reset(&p->in);
    p->last_ts = s->start - l->origin;
    if (TL_VEC_PUSH(stack, si)) return tl_nomem(p->e);
  }
  return TL_OK;
}

/* The slices at emission positions [from, until) of lanes [t0, t1): BEGIN with name,
** category, args and flows; END when the next slice starts outside it (the stack of the
** layout's depths). A part that begins inside a lane takes up its sequence where the other
** part leaves it (resume_lane); one that ends inside a lane leaves its open slices to the
** other. */
static int slice_packets(proto_w *p, size_t t0, size_t t1, int64_t from, int64_t until) {
  pf_ctx *c = p->c;
  const pf_layout *l = &c->l;
  const tl_strpool *pool = c->a.pool;
  u32stack stack = {0};
  /* cursors in flows_by_from / flows_by_to, which follow the emission order */
  size_t fo = flow_cursor(l, l->flows_by_from, 0, (uint32_t)from);
  size_t fi = flow_cursor(l, l->flows_by_to, 1, (uint32_t)from);
  int err = TL_OK;
  for (size_t ti = t0; !err && ti < t1; ti++) {
    const pf_track *t = &l->tracks.v[ti];
    int64_t lo = t->first > from ? t->first : from, end = t->first + t->n;
    int64_t hi = end < until ? end : until;
    if (t->is_box || lo >= hi) continue;
    if (lo > t->first) {
      err = resume_lane(p, ti, lo, &stack);
    } else {
      err = sequence_packet(p, ti);
      stack.n = 0;
    }
    for (int64_t k = lo; !err && k < hi; k++) {
      uint32_t si = l->order[k];
      const pf_slice *s = &l->slices.v[si];
      while (!err && stack.n > (size_t)s->depth)
        err = end_packet(p, l->slices.v[stack.v[--stack.n]].end - l->origin);
      if (err) break;
      if (p->name_seq[s->name] != p->seq) {
        intern_entry(p, F_ID_EVENT_NAMES, (uint64_t)s->name + 1, tl_strpool_str(pool, s->name),
                     tl_strpool_len(pool, s->name));
        p->name_seq[s->name] = p->seq;
      }
      if (p->cat_seq[s->cat] != p->seq) {
        intern_entry(p, F_ID_EVENT_CATEGORIES, (uint64_t)s->cat + 1, pf_cat_names[s->cat],
                     strlen(pf_cat_names[s->cat]));
        p->cat_seq[s->cat] = p->seq;
      }
      tl_buf *e = &p->ev;
      char *q = pb_room(e, 16); /* type, name and category: at most 10 bytes */
      if (q) {
        *q++ = (char)(F_TE_TYPE << 3 | WT_VARINT);
        *q++ = TYPE_SLICE_BEGIN;
        *q++ = (char)(F_TE_NAME_IID << 3 | WT_VARINT);
        q = put_varint(q, (uint64_t)s->name + 1);
        *q++ = (char)(F_TE_CATEGORY_IIDS << 3 | WT_VARINT);
        q = put_varint(q, (uint64_t)s->cat + 1);
        pb_done(e, q);
      }
      set_src(p, s->src);
      pf_slice_args(c, s, &p->w);
      for (; fo < l->flows.n && l->pos[l->flows.v[l->flows_by_from[fo]].from] == (uint32_t)k; fo++)
        pb_fixed64(e, F_TE_FLOW_IDS, (uint64_t)l->flows_by_from[fo] + 1);
      for (; fi < l->flows.n && l->pos[l->flows.v[l->flows_by_to[fi]].to] == (uint32_t)k; fi++)
        pb_fixed64(e, F_TE_TERMINATING_FLOW_IDS, (uint64_t)l->flows_by_to[fi] + 1);
      err = event_packet(p, s->start - l->origin);
      if (!err && TL_VEC_PUSH(&stack, si)) err = tl_nomem(p->e);
    }
    while (!err && hi == end && stack.n)
      err = end_packet(p, l->slices.v[stack.v[--stack.n]].end - l->origin);
  }
  TL_VEC_FREE(&stack);
  return err;
}

/* ---- Metadata ------------------------------------------------------------------------------- */

typedef struct proto_meta {
  pf_meta_writer w;
  tl_buf *bundle, *tmp;
} proto_meta;

static void pm_str(pf_meta_writer *w, const char *key, const char *v) {
  proto_meta *m = (proto_meta *)w;
  if (!v) return;
  tl_buf_reset(m->tmp);
  pb_bytes(m->tmp, F_CM_NAME, key, strlen(key));
  pb_bytes(m->tmp, F_CM_STRING, v, strlen(v));
  pb_bytes(m->bundle, F_CEB_METADATA, m->tmp->p, m->tmp->n);
}

static void pm_i64(pf_meta_writer *w, const char *key, int64_t v, int is_null) {
  proto_meta *m = (proto_meta *)w;
  if (is_null) return;
  tl_buf_reset(m->tmp);
  pb_bytes(m->tmp, F_CM_NAME, key, strlen(key));
  pb_int(m->tmp, F_CM_INT, v);
  pb_bytes(m->bundle, F_CEB_METADATA, m->tmp->p, m->tmp->n);
}

static int metadata_packet(proto_w *p) {
  proto_meta m = {{pm_str, pm_i64}, &p->ev, &p->ann};
  pf_metadata(p->c, &m.w);
  pb_uint(&p->pkt, F_PKT_SEQ_ID, (uint64_t)p->c->l.tracks.n + 1);
  pb_bytes(&p->pkt, F_PKT_CHROME_EVENTS, p->ev.p, p->ev.n);
  tl_buf_reset(&p->ev);
  return emit_packet(p);
}

static int writer_init(proto_w *p, pf_ctx *c, pf_out *o, tl_err *e) {
  memset(p, 0, sizeof *p);
  p->w = (pf_argw){pa_i64, pa_us, pa_pool, pa_text, pa_bool, pa_null, pa_id, pa_ref};
  p->c = c, p->o = o, p->e = e;
  for (int src = 0; src <= PF_SRC_ROW; src++) {
    p->src = src;
    for (int k = 0; k < PF_NKEYS; k++) p->skips[src][k] = (uint8_t)proto_skips(p, k);
  }
  p->src = 0, p->skip = p->skips[0];
  for (int k = 0; k < PF_NKEYS; k++)
    p->ns_key[k] = (uint8_t)pf_ns_key(k), p->n_key[k] = (uint8_t)pf_n_key(k);
  size_t nstr = tl_strpool_count(c->a.pool);
  p->name_seq = calloc(nstr + 1, sizeof *p->name_seq);
  p->str_seq = calloc(nstr + 1, sizeof *p->str_seq);
  return p->name_seq && p->str_seq ? TL_OK : tl_nomem(e);
}

static int writer_free(proto_w *p, int err) {
  if (!err && (p->ev.oom || p->ann.oom || p->in.oom || p->pkt.oom)) err = tl_nomem(p->e);
  free(p->name_seq);
  free(p->str_seq);
  tl_buf_free(&p->ev);
  tl_buf_free(&p->ann);
  tl_buf_free(&p->in);
  tl_buf_free(&p->pkt);
  return err;
}

/*
** The lanes in two parts encoded at once, by a worker thread and the calling thread. Lanes
** are independent sequences, so the bytes are those of one thread encoding them in turn.
** The worker reads the layout and the string pool, which nobody writes meanwhile, and
** writes only its own buffers.
**
** Written as it is, the output takes both parts in place (pf_place): the worker encodes the
** first lanes straight into the file after the track packets; the calling thread encodes the
** rest and holds its buffers until the worker's part ends (its length is only known then),
** then writes at the place; the worker, done, writes what was held meanwhile. The worker's
** part is the lighter one (split_point), so that it ends while the calling thread still
** encodes: no copy is left after both. Through gzip (one stream, in order) the worker
** encodes the second part into an unlinked temporary file beside the output, which the
** calling thread reads back after its own.
*/
typedef struct proto_part {
  proto_w p;
  pf_out o;
  tl_err e;
  size_t t0, t1;       /* its lanes */
  int64_t from, until; /* its emission positions */
  pf_place *place; /* the worker writes the first part in place: settles it when done */
  int rc;
  double cpu; /* its thread's CPU seconds (TRACELOOM_TIMING) */
} proto_part;

static void *part_main(void *arg) {
  proto_part *pt = arg;
  pt->rc = slice_packets(&pt->p, pt->t0, pt->t1, pt->from, pt->until);
  if (pt->rc == TL_OK) pt->rc = pf_out_flush(&pt->o, 1);
  if (pt->rc == TL_OK && pt->place) {
    pf_out_kick(&pt->o, 0);
    pt->rc = pf_place_settle(pt->place, pt->o.at + pt->o.written, &pt->o);
  }
  pt->cpu = tl_thread_cpu_s();
  return NULL;
}

/* What a slice of each source costs to encode, roughly (its args): a device slice and a
** seq, repeat or body slice carry twice the bytes of a structure leaf or a host call (the
** 1M-task bench: 109-116 bytes a slice against 48-54). Only the balance of the two parts
** depends on it, never the bytes. */
static const int64_t src_weight[] = {
    [PF_SRC_OCC] = 2, [PF_SRC_BODY] = 2, [PF_SRC_LEAF] = 1, [PF_SRC_ATOM] = 2,
    [PF_SRC_MEMBER] = 2, [PF_SRC_CALL] = 1, [PF_SRC_ROW] = 1};

/* The emission position that splits the slices in two parts, the first of about share_pct
** percent of the weight (src_weight), inside a lane where that falls there (the lanes are
** few and large: the 1M-task bench has four, of 40, 8, 27 and 25% of the weight); 0: one
** thread (asked for with TRACELOOM_EXPORT_THREADS=1, or not worth it below 20k slices
** unless threads are asked for explicitly). */
/* The worker's share of the weight when it writes its part in place: it also writes what the
** calling thread held meanwhile (the held bytes copied in the kernel, the more of them the
** later it ends). On the 1M-task bench (RESULTS.md perf24) the lane boundaries at 40 and
** 48% left one thread 0.08-0.15 s of CPU more than the other; at 43% the calling thread
** (which also replays the start of the split lane) takes 0.01-0.04 s more. */
#define PLACED_SHARE_PCT 43
static int64_t split_point(const pf_layout *l, int64_t share_pct) {
  const char *env = getenv("TRACELOOM_EXPORT_THREADS");
  int asked = env && *env ? atoi(env) : 0;
  if (asked == 1 || (!asked && l->slices.n < 20000)) return 0;
  int64_t *weight = calloc(l->tracks.n + 1, sizeof *weight), total = 0;
  if (!weight) return 0;
  for (size_t i = 0; i < l->slices.n; i++) {
    const pf_slice *s = &l->slices.v[i];
    int64_t w = s->src < sizeof src_weight / sizeof *src_weight ? src_weight[s->src] : 1;
    weight[s->track] += w, total += w;
  }
  int64_t want = total * share_pct / 100, before = 0, at = 0;
  size_t t = 0;
  while (t < l->tracks.n && before + weight[t] <= want) before += weight[t++];
  free(weight);
  if (t == l->tracks.n) return 0;
  const pf_track *lane = &l->tracks.v[t];
  for (at = lane->first; at < lane->first + lane->n && before < want; at++) {
    const pf_slice *s = &l->slices.v[l->order[at]];
    before += s->src < sizeof src_weight / sizeof *src_weight ? src_weight[s->src] : 1;
  }
  return at > 0 && (size_t)at < l->slices.n ? at : 0;
}

/* The lane of emission position at. */
static size_t lane_of(const pf_layout *l, int64_t at) {
  size_t t = 0;
  while (t + 1 < l->tracks.n && (l->tracks.v[t].is_box || at >= l->tracks.v[t].first + l->tracks.v[t].n))
    t++;
  return t;
}

/* Appends the part's file to the output (through gzip), after the calling thread's own. */
static int copy_part(pf_out *o, int fd) {
  if (lseek(fd, 0, SEEK_SET) != 0)
    return tl_fail(o->e, "traceloom_export_perfetto: cannot read back a part of '%s': %s",
                   o->path, strerror(errno));
  int err = pf_out_flush(o, 1);
  char *buf = err ? NULL : malloc(PF_FLUSH_BYTES);
  if (!err && !buf) return tl_nomem(o->e);
  for (ssize_t n; !err && (n = read(fd, buf, PF_FLUSH_BYTES)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      err = tl_fail(o->e, "traceloom_export_perfetto: cannot read back a part of '%s': %s",
                    o->path, strerror(errno));
      break;
    }
    tl_buf_append(&o->b, buf, (size_t)n);
    err = pf_out_flush(o, 1);
  }
  free(buf);
  return err;
}

int pf_write_proto(pf_ctx *c, pf_out *o) {
  const pf_layout *l = &c->l;
  proto_w p;
  int err = writer_init(&p, c, o, c->e);
  if (!err) err = track_packets(&p);
  int placed = !o->gz;
  int64_t at = err ? 0 : split_point(l, placed ? PLACED_SHARE_PCT : 50), all = (int64_t)l->slices.n;
  size_t k = at ? lane_of(l, at) : 0, nt = l->tracks.n;
  proto_part *pt = NULL;
  pf_place place;
  pthread_t th;
  int fd = -1, started = 0, opened = 0;
  if (at && !placed) {
    char *tmp = tl_mprintf("%s.part-XXXXXX", o->path);
    fd = tmp ? mkstemp(tmp) : -1;
    if (fd >= 0) unlink(tmp);
    free(tmp);
  }
  if (at && (placed || fd >= 0)) pt = calloc(1, sizeof *pt);
  if (pt && writer_init(&pt->p, c, &pt->o, &pt->e) == TL_OK) {
    pt->o.path = o->path, pt->o.e = &pt->e;
    if (placed) {
      err = pf_place_open(&place, o);
      opened = !err;
      pt->o.fd = o->fd, pt->o.writeback = o->writeback;
      pt->o.place = pt->place = &place, pt->o.at = o->written, pt->o.from = 0;
      pt->t0 = 0, pt->t1 = k + 1, pt->from = 0, pt->until = at;
    } else {
      pt->o.fd = fd;
      pt->t0 = k, pt->t1 = nt, pt->from = at, pt->until = all;
    }
    started = !err && pthread_create(&th, NULL, part_main, pt) == 0;
  }
  if (opened && !started) { /* one thread after all: in order from where it is */
    o->at = place.at = o->from;
    err = pf_place_close(&place, o, err), opened = 0;
  }
  tl_timer tm;
  tl_timer_start(&tm, "export write");
  double cpu0 = tl_thread_cpu_s();
  size_t t0 = started && placed ? k : 0, t1 = started && !placed ? k + 1 : nt;
  int64_t from = started && placed ? at : 0, until = started && !placed ? at : all;
  if (!err) err = slice_packets(&p, t0, t1, from, until);
  double cpu[2] = {tl_thread_cpu_s() - cpu0, 0};
  if (started) {
    pthread_join(th, NULL);
    cpu[1] = pt->cpu;
    tl_timer_threads(&tm, "slices", cpu, 2);
    if (!err && pt->rc != TL_OK)
      err = tl_fail(c->e, "%s", pt->e.msg ? pt->e.msg : "traceloom_export_perfetto: failed");
    if (opened) err = pf_place_close(&place, o, err);
    else if (!err) err = copy_part(o, fd);
  }
  if (pt) {
    writer_free(&pt->p, 0);
    tl_buf_free(&pt->o.b);
    tl_err_clear(&pt->e);
    free(pt);
  }
  if (fd >= 0) close(fd);
  if (!err) err = metadata_packet(&p);
  err = writer_free(&p, err);
  if (!err) err = pf_out_flush(o, 1);
  return err;
}
