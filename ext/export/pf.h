/*
** pf.h: the inside of traceloom_export_perfetto (perfetto.h is its public face).
**
** The export runs in four steps, one file each, over the structures declared here:
**
**   pf_read.c    THE read API: an analysis into plain arrays (tree nodes, occurrences with
**                their parent occurrence, the event of each atom, exact replay members, host
**                runtime calls and their exact relations, scheduler context), from the
**                stored core by integer keys (the one place outside the views that reads
**                the *_core tables, deriving what the views derive) or from the public views
**                (TRACELOOM_EXPORT_READ=views, analyses of other versions): same bytes.
**   pf_rank.c    distributed ranks: rank databases opened read-only by pf_open_analysis_ro
**                (never the profile readers of ext/source), the clock-model receipt.
**   pf_layout.c  what is drawn where: slices, flows, tracks and lanes (perfetto.md 4).
**   pf_json.c,   the two wire formats of one layout: Chrome JSON trace events, and
**   pf_proto.c   Perfetto's TracePacket protobuf (hand-encoded, see pf_proto.c).
**   pf_args.c    the args of every slice kind, written through pf_argw so both formats
**                carry the same keys and values.
**   perfetto.c   options, the order of the steps, the atomic output file (pf_out).
**
** Times are int64 ns throughout; a slice is [start, end) with end >= start.
*/
#ifndef TL_PF_H
#define TL_PF_H

#include "util/sqlite_api.h"
#include "util/err.h"
#include "util/buf.h"
#include "util/i64map.h"
#include "util/strpool.h"
#include "util/vec.h"
#include "export/gzpar.h"

#include <pthread.h>

#include <stddef.h>
#include <stdint.h>

/* ---- Options (perfetto.c) ------------------------------------------------------------ */

enum { PF_ALIGN_NONE, PF_ALIGN_FIRST_EVENT, PF_ALIGN_PROVIDER, PF_ALIGN_CLOCK };
enum { PF_FORMAT_AUTO, PF_FORMAT_JSON, PF_FORMAT_PROTO };

typedef struct pf_rank {
  int64_t rank;
  char *db;
} pf_rank;

typedef struct pf_opts {
  TL_VEC(pf_rank) ranks;
  int align;
  int format;        /* PF_FORMAT_*: AUTO picks by the output file's extension */
  char *clock_model; /* path of the clock-model JSONL (PF_ALIGN_CLOCK) */
} pf_opts;

/* ---- The read API (pf_read.c) -------------------------------------------------------- */

/* A map from the integer keys of the analysis (occurrence_n, anchor_n, event_n, call_n:
** dense, from 0 or 1) to int64 values: an array while the keys stay dense, a hash map
** otherwise. Lookups of a million keys stay in a few cache lines each. */
typedef struct pf_imap {
  int64_t *v;      /* v[key] (PF_IMAP_NONE: absent) while dense */
  size_t cap;
  size_t n;
  int sparse;      /* 1: everything is in map */
  tl_i64map map;
} pf_imap;
#define PF_IMAP_NONE INT64_MIN
/* Sets key -> val (replacing). 0, or -1 on out-of-memory. A key inside the dense array is
** set inline (the readers and the layout put some five million keys at 1M tasks); the rest,
** growing the array or going sparse, is pf_imap_put_slow's. */
int pf_imap_put_slow(pf_imap *m, int64_t key, int64_t val);
static inline int pf_imap_put(pf_imap *m, int64_t key, int64_t val) {
  if (m->sparse || key < 0 || (uint64_t)key >= m->cap) return pf_imap_put_slow(m, key, val);
  m->n += m->v[key] == PF_IMAP_NONE;
  m->v[key] = val;
  return 0;
}
/* Room for the keys [0, cap) while dense, before they are put (a hint: no doubling). 0, or
** -1 on out-of-memory. */
int pf_imap_reserve(pf_imap *m, size_t cap);
/* The value of key, or NULL. */
static inline int64_t *pf_imap_get(const pf_imap *m, int64_t key) {
  if (m->sparse) return tl_i64map_get(&m->map, key);
  if (key < 0 || (uint64_t)key >= m->cap || m->v[key] == PF_IMAP_NONE) return NULL;
  return &m->v[key];
}
void pf_imap_free(pf_imap *m);

enum { PF_KIND_SEQ, PF_KIND_REPEAT, PF_KIND_ATOM };

/* One row of traceloom_v_tree_node. Strings are strpool ids (TL_STR_NONE: NULL). */
typedef struct pf_node {
  uint32_t node_id, local, label, category, parent, view;
  int64_t db, dev, tree_depth, display_order, repeat_count; /* repeat_count -1: NULL */
  int64_t node_n;                    /* the view's integer key; -1 where it has none */
  int kind;                                                 /* PF_KIND_* */
  int64_t first_child, next_sibling; /* the display tree, -1 terminated, display order */
  uint32_t topo;                     /* its topology signature: pf_analysis.topo[topo] */
  int motif;                         /* repeat nodes: index of the sorted signature, else -1 */
} pf_node;

/* Costs of an occurrence in ns (the published *_us are these / 1000). */
enum { PF_C_COMPUTE, PF_C_COMM, PF_C_IDLE, PF_C_TOTAL, PF_C_SELF, PF_C_AUX, PF_NCOST };

/* One row of traceloom_position_occurrence: a measured realization of a position, linked
** to the occurrence it sits in (parent_n). Whatever the node model (one node per symbol or
** one per structural position), the parent links form the tree that is drawn. */
typedef struct pf_occ {
  int64_t node;   /* index into pf_analysis.nodes */
  int64_t parent; /* index into pf_analysis.occs; -1 for a root */
  int64_t n;      /* occurrence_n */
  int64_t occ_idx, start, end;
  int64_t anchor_first, anchor_end; /* token span: anchors [first, end) of the device, 0-based */
  int64_t iteration;                /* repeat_iteration; 0 when NULL */
  int64_t cost[PF_NCOST];
  int64_t aux_events;
  int64_t event_n;         /* atoms: event_n of the anchor's event; -1 unknown or none (a
                              promoted launch's anchor has no event) */
  int64_t anchor_n;        /* atoms: the anchor (anchor_n); -1 unknown */
  int64_t stream;          /* atoms: stream_id of that event */
  uint32_t repeat_context; /* non-atoms (atoms: TL_STR_NONE) */
  uint32_t rooted_path;    /* non-atoms (atoms: TL_STR_NONE) */
  int has_stream;
} pf_occ;

/* One exact member of a promoted graph launch (traceloom_graph_body_member): on the device
** plane the launch's opaque anchor is replaced by its members. */
typedef struct pf_member {
  int64_t db, device, start, end, stream_id, lane, task, order, aggregate;
  int64_t event_n;      /* of event_id; -1 when not "event-<n>" */
  int64_t launch_event_n; /* of the launch's graph_event_id (its unit's event); -1 when not "event-<n>" */
  int64_t launch_anchor_n; /* the launch's anchor (anchor_n), whose atom the members replace */
  int64_t host_call_n;  /* the launch's host call (runtime-call-<n>); -1 none */
  int64_t unit;         /* its replay unit: traceloom_graph_launch.replay_unit_id, an integer */
  uint32_t launch_event, member_id, launch_id, event_id, kind, identity, anchor_id;
  int has_stream;
  int64_t occ; /* the atom occurrence of the launch anchor, set by the layout */
} pf_member;

/* One host runtime call (traceloom_runtime_call). */
typedef struct pf_call {
  int64_t call_n, db, start, end, tid, correlation;
  uint32_t api; /* api_name */
  int has_tid, has_correlation;
} pf_call;

/* One exact host-to-device relation (support_state supported_exact). */
typedef struct pf_relation {
  int64_t call_n, event_n;
} pf_relation;
typedef TL_VEC(pf_relation) pf_relations;

/* Typed args of the slices read as rows (ranks, scheduler context): kv_off/kv_n in the
** arena. key is a PF_K_* index (pf_args.h's list). */
enum { PF_KV_I64, PF_KV_US, PF_KV_STR, PF_KV_NULL }; /* PF_KV_US: i is ns */
typedef struct pf_kv {
  int key;
  int type;
  int64_t i;  /* PF_KV_I64, PF_KV_US */
  uint32_t s; /* PF_KV_STR: strpool id */
} pf_kv;

/* A slice read as a row (rank timelines, scheduler context), drawn as it is. */
typedef struct pf_row_slice {
  int kind;        /* PF_ROW_* */
  int64_t a, b;    /* group key: rank and rank index; host thread; device */
  int64_t start, end;
  uint32_t name;
  size_t kv_off, kv_n;
} pf_row_slice;
enum { PF_ROW_RANK, PF_ROW_CTX_HOST, PF_ROW_CTX_STEP, PF_ROW_CTX_DEVICE };

/* Fixed strings of the args, interned once (pf_analysis.strs). */
enum { PF_STR_PUBLISHED, PF_STR_BODY, PF_STR_MEMBER, PF_STR_GEOMETRY, PF_STR_STRUCTURE,
       PF_STR_DEVICE_EVENTS, PF_NSTR };

/* A topology signature: the SHA-256 (hex) of S(..)/R(..)/A(..) of the children (pf_read.c),
** one per distinct subtree shape. */
typedef struct pf_topo {
  char sha[65];
} pf_topo;

typedef struct pf_analysis {
  tl_strpool *pool;
  uint32_t strs[PF_NSTR];
  TL_VEC(pf_node) nodes;
  TL_VEC(pf_topo) topo;      /* by pf_node.topo */
  TL_VEC(pf_occ) occs;
  TL_VEC(pf_member) members; /* by (db, launch occurrence, member order) */
  TL_VEC(pf_call) calls;     /* by call_n */
  pf_relations relations;
  TL_VEC(pf_row_slice) rows;
  TL_VEC(pf_kv) kv;
  int64_t nmotif;
  /* The relations, when a worker thread is still reading them (pf_read.c): the layout
  ** needs them last (its flows) and takes them with pf_relations_ready. */
  struct pf_pending *pending;
} pf_analysis;

/* Reads everything drawn from the analysis in db's main database: tree nodes and motifs,
** occurrences, atom events, replay members, runtime calls and relations (unless
** distributed), scheduler context (unless distributed). Fails with a message naming the
** missing relation or column of an analysis written by another version. */
int pf_read_analysis(sqlite3 *db, int distributed, pf_analysis *a, tl_err *e);
/* 1 when db's main database is a TraceLoom timeline (the tree views and
** traceloom_metadata.artifact_kind = 'queryable_database_timeline'); else TL_ERROR, what
** naming the database in the message. */
int pf_check_timeline(sqlite3 *db, const char *what, tl_err *e);
int pf_has_relation(sqlite3 *db, const char *name);
void pf_analysis_free(pf_analysis *a);
/* a->relations complete: waits for the worker still reading them (if any) and takes them;
** TL_ERROR with its message in e when it failed. */
int pf_relations_ready(pf_analysis *a, tl_err *e);
/* Appends one typed arg to a's arena (out-of-memory: -1). */
int pf_kv_i64(pf_analysis *a, int key, int64_t v);
int pf_kv_i64n(pf_analysis *a, int key, int64_t v, int is_null);
int pf_kv_str(pf_analysis *a, int key, const char *s);
int pf_kv_us(pf_analysis *a, int key, int64_t ns);
/* A, B, ..., Z, AA, AB, ... */
void pf_motif_alias(int k, char out[16]);

/* ---- Ranks (pf_rank.c) ----------------------------------------------------------------- */

/* One rank's collective-end affine mapping (identity for the reference rank). */
typedef struct pf_clock {
  int identity;
  long double scale, ref_source, ref_target;
  char scale_text[64], ref_source_text[64], ref_target_text[64];
} pf_clock;

typedef struct pf_ranks {
  char **sha;        /* per rank: SHA-256 of the database file */
  int64_t *first;    /* per rank: first atom start (source clock) */
  int64_t ref_first; /* rank 0's */
  pf_clock *clock;   /* per rank, PF_ALIGN_CLOCK only */
  int64_t clock_reference_rank;
  char clock_sha[65], *clock_status, *clock_marker;
} pf_ranks;

/* Opens an analysis database read-only (never created, never written): the rank databases
** of a distributed export. */
int pf_open_analysis_ro(const char *path, sqlite3 **out, tl_err *e);
/* Hashes the rank databases and validates the clock model, before anything is written. */
int pf_ranks_prepare(const pf_opts *o, pf_ranks *r, tl_err *e);
/* The atom occurrences of every rank as PF_ROW_RANK rows, mapped onto the display clock. */
int pf_ranks_read(const pf_opts *o, pf_ranks *r, pf_analysis *a, tl_err *e);
void pf_ranks_free(const pf_opts *o, pf_ranks *r);
const char *pf_alignment_name(int align);

/* ---- Layout (pf_layout.c) -------------------------------------------------------------- */

/* Slice sources: what the slice draws (and where its args come from). */
enum {
  PF_SRC_OCC,     /* a seq or repeat occurrence on a structure track */
  PF_SRC_BODY,    /* one iteration of a repeat occurrence (structure) */
  PF_SRC_LEAF,    /* an atom occurrence as a leaf of the structure */
  PF_SRC_ATOM,    /* an atom occurrence on its stream track (device plane) */
  PF_SRC_MEMBER,  /* an exact replay member on its stream track */
  PF_SRC_CALL,    /* a host runtime call */
  PF_SRC_ROW      /* a row slice (rank timeline, scheduler context) */
};

/* Categories (the "cat" of a slice). */
enum {
  PF_CAT_STRUCT, PF_CAT_REPEAT, PF_CAT_BODY, PF_CAT_LEAF, PF_CAT_EVENT, PF_CAT_CALL,
  PF_CAT_DIST, PF_CAT_CTX_HOST, PF_CAT_CTX_STEP, PF_CAT_CTX_DEVICE, PF_NCAT
};
extern const char *const pf_cat_names[PF_NCAT];

/* One repeat iteration window: the span of a repeat occurrence's children of one
** iteration, their anchor range and summed costs. */
typedef struct pf_body {
  int64_t rep_occ, ordinal, start, end, anchor_first, anchor_end, anchors, aux_events,
      children;
  int64_t cost[PF_NCOST];
} pf_body;

typedef struct pf_slice {
  int64_t start, end;
  int64_t ref;    /* occurrence, body, member, call or row index, by src */
  int64_t parent; /* structure: the slice it belongs in (-1: none) */
  uint32_t name;  /* strpool id */
  int32_t group;  /* index into pf_layout.groups */
  int32_t track;  /* index into pf_layout.tracks (a lane of the group) */
  int32_t depth;  /* nesting depth on its track, as Perfetto will see it */
  uint8_t src, cat;
} pf_slice;

/* An arrow from one slice to another (host call -> device work, launch -> member). */
typedef struct pf_flow {
  int64_t from, to; /* slice indices */
} pf_flow;

/* Packing of a group's slices into lanes. */
enum {
  PF_PACK_FLAT, /* no slice inside another: any overlap opens a lane */
  PF_PACK_NEST, /* a slice may sit inside any slice that contains it (call stacks) */
  PF_PACK_TREE  /* a slice sits only inside its own parent slice (the loop tree) */
};

/* A leaf group: the slices of one stream, one device's structure, one host thread, one
** rank ... packed into one or more lanes (tracks). */
typedef struct pf_group {
  int section;   /* display order: PF_SEC_* */
  int64_t k[3];  /* display order within the section */
  int pack;      /* PF_PACK_* */
  int32_t box;   /* the enclosing box track (a process in JSON) */
  int32_t first_track, ntracks;
} pf_group;
enum { PF_SEC_RANKS, PF_SEC_DEVICE, PF_SEC_HOST, PF_SEC_CTX };

/* A track: a box (device, host, ranks, context process) or a lane holding slices. */
typedef struct pf_track {
  uint32_t name;       /* strpool id, the short display name */
  int32_t box;         /* lanes: their box track; boxes: -1 */
  int32_t rank;        /* order among its siblings */
  int64_t json_pid, json_tid; /* boxes: pid; lanes: pid and tid */
  int64_t first, n;    /* lanes: their slices in pf_layout.order[first .. first + n) */
  int is_box;
} pf_track;

typedef TL_VEC(pf_slice) pf_slice_vec;
typedef TL_VEC(pf_group) pf_group_vec;

typedef struct pf_layout {
  pf_slice_vec slices;
  TL_VEC(pf_body) bodies;
  TL_VEC(pf_flow) flows;
  pf_group_vec groups;
  TL_VEC(pf_track) tracks; /* in display order: each box followed by its lanes */
  uint32_t *order;         /* slice indices, track by track, in emission order */
  uint32_t *flows_by_from; /* flow indices by (emission position of from, to) */
  uint32_t *flows_by_to;   /* flow indices by (emission position of to, from) */
  uint32_t *pos;           /* slice index -> emission position */
  int64_t origin;          /* the earliest slice start: ts = start - origin >= 0 */
  /* receipt */
  int64_t n_struct, n_repeat, n_body, n_leaf, n_atom, n_member, n_call, n_dist, n_context;
  int64_t n_flow_call, n_flow_launch, n_flow_backward, n_rank_tracks;
} pf_layout;

typedef struct pf_ctx {
  sqlite3 *db;
  tl_err *e;
  pf_opts opts;
  pf_analysis a;
  pf_ranks r;
  pf_layout l;
  /* Once every byte is written, the analysis and the layout are freed on a thread of their
  ** own (pf_out_write_file's written hook) while the output is fsync'ed and renamed. */
  pthread_t freer;
  int freeing;
  int64_t events; /* slices + flows, counted before they are freed */
} pf_ctx;

int pf_layout_build(pf_ctx *c);
void pf_layout_free(pf_layout *l);

/* ---- Args (pf_args.c) ------------------------------------------------------------------ */

/* Every arg key the export writes: the protobuf writer interns them all up front by this
** index, the JSON writer prints the text. */
#define PF_KEYS(X)                                                                          \
  X(semantic_kind) X(node_id) X(occurrence_idx) X(database_index) X(device_id) X(view_name)  \
  X(parent_node_id) X(repeat_context) X(rooted_role_path) X(tree_depth)                      \
  X(topology_signature_sha256) X(anchor_start_idx) X(anchor_end_idx) X(anchor_count)         \
  X(compute_us) X(comm_us) X(idle_us) X(total_us) X(self_us) X(aux_events) X(aux_us)         \
  X(symbol) X(event_id) X(stream_id) X(db_idx) X(projection_plane) X(display_depth)          \
  X(replay_derived) X(motif_alias) X(repeat_node_id) X(aggregate_occurrence_idx)             \
  X(body_ordinal) X(repeat_count) X(body_id) X(body_child_occurrences) X(launch_id)          \
  X(anchor_id) X(replay_unit_id) X(geometry) X(member_id) X(lane_ordinal) X(task_ordinal)   \
  X(position_ordinal) X(aggregate_id) X(kind) X(launch_event_id) X(runtime_call_id)         \
  X(correlation_id) X(rank) X(source_timeline_db) X(source_timeline_db_sha256) X(alignment)  \
  X(display_reference_rank) X(source_start_ns) X(source_end_ns) X(local_node_id)            \
  X(event_category) X(source_anchor_ns) X(display_reference_anchor_ns) X(clock_model_status) \
  X(clock_model_marker_contract) X(clock_model_metric) X(clock_model_scale)                 \
  X(clock_model_reference_source_ns) X(clock_model_reference_target_ns)                     \
  X(clock_model_receipt_sha256) X(run_id) X(step_id) X(execution_id) X(phase)               \
  X(scheduled_tokens) X(boundary) X(linked_device_work) X(device_work_id)                   \
  X(association_basis) X(compute_ns) X(comm_ns) X(idle_ns) X(total_ns) X(self_ns) X(aux_ns)  \
  X(event_n) X(call_n) X(aggregate_n) X(node_n) X(repeat_node_n)
#define PF_KEY_ENUM(k) PF_K_##k,
enum { PF_KEYS(PF_KEY_ENUM) PF_NKEYS };
#undef PF_KEY_ENUM
extern const char *const pf_key_names[PF_NKEYS];

/* Where args go; key is a PF_K_* index. */
typedef struct pf_argw pf_argw;
struct pf_argw {
  void (*i64)(pf_argw *w, int key, int64_t v);
  /* A duration in ns. JSON writes it as microseconds with 3 decimals under key (*_us);
  ** protobuf as the integer ns under the matching *_ns key (pf_ns_key). */
  void (*us)(pf_argw *w, int key, int64_t ns);
  void (*pool)(pf_argw *w, int key, uint32_t id);   /* an interned string; NONE: null */
  void (*text)(pf_argw *w, int key, const char *s, size_t n);
  void (*boolean)(pf_argw *w, int key, int v);
  void (*null)(pf_argw *w, int key);
  /* An id "<prefix><n>". JSON writes the text under key (event_id); protobuf the integer n
  ** under the matching *_n key (pf_n_key: event_n), the documented join key. */
  void (*id)(pf_argw *w, int key, const char *prefix, int64_t n);
  /* A row's text id with its integer key n (a node_id and its node_n). JSON writes the text
  ** under key; protobuf the integer under the matching *_n key (pf_n_key: node_n) when n >= 0,
  ** else the text. */
  void (*ref)(pf_argw *w, int key, uint32_t text, int64_t n);
};

/* The *_ns key of a *_us key, the *_n key of an id key (the same key when there is none). */
int pf_ns_key(int us_key);
int pf_n_key(int id_key);

/* Writes the args of slice s. */
void pf_slice_args(const pf_ctx *c, const pf_slice *s, pf_argw *w);

/* ---- Output (pf_out.c, pf_json.c, pf_proto.c) --------------------------------------- */

#define PF_FLUSH_BYTES ((size_t)1 << 20)

typedef struct pf_out {
  int fd;
  tl_gzpar *gz; /* NULL: written as it is */
  const char *path;
  tl_buf b;     /* pending bytes, flushed every PF_FLUSH_BYTES */
  tl_err *e;
  int64_t events; /* trace events written (slices, flow ends, metadata records) */
  /* The output file (not a part, not through gzip): its bytes are handed to the disk as they
  ** are written (pf_out_kick), so that the closing fsync finds little left to write. */
  int writeback;
  int64_t written, kicked; /* bytes written to fd, and handed to the disk */
  /* One of two parts of the file written at once by two threads (pf_proto.c): its bytes
  ** [from, written) go with pwrite to at + (byte - from), and wait in place until at is
  ** known (the part before it is written). NULL: written in order with write(2). */
  struct pf_place *place;
  int64_t at, from;
} pf_out;

/* Where the later of two parts written at once starts, and what it flushed before that was
** known (held in an unlinked file beside the output; the earlier part's writer copies it
** into place once it has written its own). */
typedef struct pf_place {
  pthread_mutex_t mu;
  int64_t at, from; /* the later part's first byte goes to at (-1: not yet known); its
                    ** writer's written was from when the part began */
  int fd;           /* the held bytes: the later part's first bytes, in order */
  int64_t held;
} pf_place;

/* Makes o the writer of the later part, from its next byte (o->b flushed); place->at -1.
** On an error nothing is left to free. */
int pf_place_open(pf_place *place, pf_out *o);
/* The earlier part ends at the file offset at: the held bytes are copied there (with the
** errors of the writer of the earlier part, ew). */
int pf_place_settle(pf_place *place, int64_t at, pf_out *ew);
/* o's part is written (the earlier part settled): o writes in order again, at the end of
** the file; frees place. Returns err, else the first error. */
int pf_place_close(pf_place *place, pf_out *o, int err);

/* Starts writing the bytes written since the last call to the disk (asynchronously) once
** there are at least min of them (0: any). */
void pf_out_kick(pf_out *o, int64_t min);

/* Flushes the buffer once it holds PF_FLUSH_BYTES (force: always). */
int pf_out_flush(pf_out *o, int force);
/* Writes path atomically (temporary sibling, fsync, rename) with write(c, out); written(c),
** when given, is called once every byte is written, before the fsync. */
int pf_out_write_file(pf_ctx *c, const char *path, int gzip,
                      int (*write)(pf_ctx *c, pf_out *o), void (*written)(pf_ctx *c));

int pf_write_json(pf_ctx *c, pf_out *o);
int pf_write_proto(pf_ctx *c, pf_out *o);

/* The metadata both formats carry (JSON: the trailing object; protobuf: chrome metadata). */
typedef struct pf_meta_writer pf_meta_writer;
struct pf_meta_writer {
  void (*str)(pf_meta_writer *w, const char *key, const char *v); /* NULL: null */
  void (*i64)(pf_meta_writer *w, const char *key, int64_t v, int is_null);
};
void pf_metadata(const pf_ctx *c, pf_meta_writer *w);

#endif
