/*
** perfetto.c: traceloom_export_perfetto(path [, options_json]), the analysis as a timeline
** that ui.perfetto.dev and chrome://tracing open (spec: perfetto.md).
**
**   SELECT traceloom_export_perfetto('analysis.perfetto.json.gz');
**   SELECT traceloom_export_perfetto('ranks.json', '{"ranks":[{"rank":0,"db":"r0.db"},
**                                     {"rank":1,"db":"r1.db"}], "align":"first_event"}');
**
** Reads the published relations of the calling connection's main database (a display of
** them, never a source of new facts) and writes Chrome JSON trace events: the structure
** plane (seq occurrences by depth, repeats as one window per iteration body), the
** device-event plane (one slice per atom occurrence) and, with ranks, one track per rank.
** Slices of one (pid, tid) never partially overlap: lanes are packed first-fit by real
** overlap after a deterministic sort (start, end, name, then the slice's identity instead
** of its args text, which is only formatted while writing), so re-exporting gives a
** byte-identical file. Options: "ranks", "align" (first_event | provider) or "clock_model"
** (a traceloom.distributed-clock-model/v1 JSONL receipt, validated before anything is
** written), "no_raw_provider".
**
** Times stay int64 ns; ts/dur are printed from the integers as microseconds with exactly
** three decimals. A ".gz" path is deflated in-process through zlib as the JSON streams out,
** on worker threads, as one gzip member of independently deflated 1 MiB chunks (gzpar.h).
** The file is written to a temporary sibling, fsync'ed and renamed; a failure removes the
** temporary file and leaves an older export untouched. The output may never be the
** analysis database, a rank database or an analysed input.
**
** Not implemented yet (the relations do not exist yet or the feature is a SHOULD): graph
** replay splicing (§6), the raw-provider plane (§7), runtime-context processes (§9), Ascend
** display folding (§5.3).
*/
#include "export/perfetto.h"
#include "export/gzpar.h"
#include "util/timing.h"
#include "util/buf.h"
#include "util/json.h"
#include "util/i64map.h"
#include "util/sha256.h"
#include "util/strpool.h"
#include "util/vec.h"
#include "source/sqlsrc.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PID_TREE 110
#define PID_RANKS 120
#define PID_CTX_HOST 130   /* scheduler context: host dispatch scopes (markers) */
#define PID_CTX_STEP 131   /* per-step envelopes of linked device work */
#define PID_CTX_DEVICE 132 /* device work linked to a step */
#define TID_EVENTS_BASE 900000
#define FLUSH_BYTES (1u << 20)

#define AGGREGATION_BOUNDARY                                                                   \
  "Views overlap: never sum structure, device_events and raw_provider together. Filter one " \
  "projection_plane and one rank/device/view; duration sums are not elapsed or busy time."

enum { ALIGN_NONE, ALIGN_FIRST_EVENT, ALIGN_PROVIDER, ALIGN_CLOCK };
enum { CAT_STRUCT, CAT_BODY, CAT_EVENT, CAT_DIST, CAT_CTX_HOST, CAT_CTX_STEP, CAT_CTX_DEVICE };
static const char *const cat_names[] = {"traceloom.structural_interval",
                                        "traceloom.repeat_body_window", "traceloom.timeline_event",
                                        "traceloom.distributed_timeline_event",
                                        "traceloom.context.host", "traceloom.context.step_envelope",
                                        "traceloom.context.device"};

typedef struct pf_rank {
  int64_t rank;
  char *db;
} pf_rank;

typedef struct pf_opts {
  TL_VEC(pf_rank) ranks;
  int align;
  char *clock_model; /* path of the clock-model JSONL (ALIGN_CLOCK) */
} pf_opts;

/* One rank's collective-end affine mapping (identity for the reference rank). */
typedef struct pf_clock {
  int identity;
  long double scale, ref_source, ref_target;
  char scale_text[64], ref_source_text[64], ref_target_text[64];
} pf_clock;

#define CLOCK_FORMAT "traceloom.distributed-clock-model/v1"
#define CLOCK_MAX_BYTES (16 << 20)

enum { KIND_SEQ, KIND_REPEAT, KIND_ATOM };

typedef struct pf_node {
  uint32_t node_id, local, label, category, parent, view, key;
  int64_t db, dev, tree_depth, display_order, repeat_count; /* repeat_count -1: NULL */
  int kind;
  int64_t first_child, next_sibling; /* -1 terminated, display order */
  char *topology;                    /* canonical topology string, built lazily */
  char sha[65];
  int motif; /* index into the sorted repeat signatures, -1 if not a repeat */
} pf_node;

/* Cost columns in integer thousandths of a microsecond (1 ns): exact sums, no NaN. */
enum { C_COMPUTE, C_COMM, C_IDLE, C_TOTAL, C_SELF, C_AUX_US, NCOST };
static const char *const cost_names[] = {"compute_us", "comm_us", "idle_us",
                                         "total_us",   "self_us", "aux_us"};

typedef struct pf_occ {
  int64_t node; /* index into nodes */
  int64_t occ_idx, start, end, anchor_start, anchor_end, anchor_count, aux_events, stream_id;
  int64_t cost[NCOST];
  int64_t depth;
  uint32_t repeat_context;
  int64_t rooted_path; /* see text_ref */
  int64_t event; /* the atom's event_id: see ev_code */
  int has_stream;
} pf_occ;

/* A slice's args are formatted when it is written (from its occurrence or body), so memory
** stays O(slices) however large the args are; only rank slices keep them in an arena. */
enum { SRC_OCC, SRC_BODY, SRC_RANK, SRC_MEMBER };

/* One exact member of a promoted graph launch (traceloom_graph_body_member): in the device
** plane the launch's opaque anchor slice is replaced by its members. */
typedef struct pf_member {
  int64_t db, device, start, end, stream_id, lane, task, order, aggregate;
  uint32_t launch_event, member_id, launch_id, unit_id, event_id, kind, identity, anchor_id;
  int has_stream;
  size_t occ; /* the atom occurrence of the launch anchor, set when its slices are made */
} pf_member;

typedef struct pf_slice {
  int64_t a, b, depth, start, end; /* a: db_idx or rank, b: device_id (rank: rank index) */
  uint32_t view, name;
  int pid, is_event, cat, src;
  size_t ref;                /* occurrence or body index (SRC_OCC, SRC_BODY) */
  size_t args_off, args_len; /* SRC_RANK: args in the arena */
  int64_t lane;
} pf_slice;

typedef struct pf_body {
  int64_t rep_occ, ordinal, start, end, as, ae, ac, aux_events, children;
  int64_t cost[NCOST];
} pf_body;

typedef struct pf_sink {
  int fd;
  tl_gzpar *gz; /* NULL: plain JSON */
} pf_sink;

typedef struct pf_ctx {
  sqlite3 *db;
  tl_err *e;
  pf_opts opts;
  tl_strpool *pool;
  tl_i64map node_by_key; /* strpool id of "db|dev|view|node_id" -> node index */
  tl_i64map occ_by_key;  /* node index << 32 | occurrence_idx -> occurrence index */
  TL_VEC(pf_node) nodes;
  TL_VEC(pf_occ) occs;
  TL_VEC(pf_slice) slices;
  TL_VEC(pf_body) bodies;
  TL_VEC(pf_member) members;   /* sorted by (db, launch event, member order) */
  tl_i64map member_by_launch;  /* db << 32 | launch event strpool id -> first member */
  int64_t n_member;
  tl_buf args;    /* arena of the rank slices' args objects */
  int64_t nmotif; /* distinct repeat signatures */
  int64_t origin;
  int has_origin;
  int64_t n_struct, n_body, n_atom, n_dist, n_rank_tracks, n_context;
  char **rank_sha;
  int64_t *rank_first, ref_first;
  pf_clock *clock;                /* per rank, ALIGN_CLOCK only */
  int64_t clock_reference_rank;
  char clock_sha[65], *clock_status, *clock_marker;
  tl_buf out;
  pf_sink sink;
  int64_t events;
  /* The fast reader (load_occurrences_fast): trees, the child occurrences of repeat
  ** occurrences for repeat_bodies, and its lookups. */
  TL_VEC(struct pf_tree) trees;
  TL_VEC(struct pf_child) children;
  tl_i64map semantic_member; /* node_id strpool id << 24 | tree: in traceloom_semantic_node */
  tl_i64map node_res;        /* same key -> (node + 1) * 2 + semantic member */
  tl_i64map repeat_occ;      /* occurrence_id strpool id << 24 | tree -> occurrence_idx */
  tl_buf paths;              /* rooted paths of the fast reader, NUL-terminated */
  int fast_bodies;
  sqlite3_stmt *round_st;
} pf_ctx;

/* A string literal, without strlen. */
#define PUT_LIT(b, lit) tl_buf_append((b), "" lit, sizeof(lit) - 1)

static int cmp_i64(int64_t a, int64_t b) { return a < b ? -1 : a > b; }

/* ---- Formatting ------------------------------------------------------------------- */

/* v nanoseconds as microseconds with exactly three decimals, from the integer. */
static void put_us3(tl_buf *b, int64_t v) {
  char tmp[32];
  int n = sizeof tmp;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  uint64_t q = u / 1000, r = u % 1000;
  tmp[--n] = (char)('0' + r % 10);
  tmp[--n] = (char)('0' + r / 10 % 10);
  tmp[--n] = (char)('0' + r / 100);
  tmp[--n] = '.';
  do {
    tmp[--n] = (char)('0' + q % 10);
    q /= 10;
  } while (q);
  if (v < 0) tmp[--n] = '-';
  tl_buf_append(b, tmp + n, sizeof tmp - (size_t)n);
}

/* Decimal int64 without printf: the exporter writes tens of integers per slice. */
static void put_i64(tl_buf *b, int64_t v) {
  char tmp[24];
  int n = sizeof tmp;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  do {
    tmp[--n] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0) tmp[--n] = '-';
  tl_buf_append(b, tmp + n, sizeof tmp - (size_t)n);
}

static int utf8_len(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  int len;
  uint32_t cp;
  if (c < 0xC2) return 0;
  if (c < 0xE0) len = 2, cp = c & 0x1F;
  else if (c < 0xF0) len = 3, cp = c & 0x0F;
  else if (c < 0xF5) len = 4, cp = c & 0x07;
  else return 0;
  if ((size_t)len > n) return 0;
  for (int i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = cp << 6 | (s[i] & 0x3F);
  }
  if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
      (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
    return 0;
  return len;
}

/* JSON string literal; invalid UTF-8 becomes U+FFFD so the file stays valid JSON. */
static void put_str(tl_buf *b, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  tl_buf_append(b, "\"", 1);
  size_t run = 0;
  for (size_t i = 0; i < n;) {
    /* Plain printable ASCII, by far the common case, is copied as one run. */
    while (i < n && (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x80 && s[i] != '"' &&
           s[i] != '\\')
      i++;
    if (i == n) break;
    unsigned char c = (unsigned char)s[i];
    const char *esc = NULL;
    char u[6];
    size_t elen = 0;
    if (c >= 0x80) {
      int l = utf8_len((const unsigned char *)s + i, n - i);
      if (l) {
        i += (size_t)l;
        continue;
      }
      esc = "\xEF\xBF\xBD", elen = 3;
    } else if (c == '"') esc = "\\\"", elen = 2;
    else if (c == '\\') esc = "\\\\", elen = 2;
    else if (c == '\b') esc = "\\b", elen = 2;
    else if (c == '\f') esc = "\\f", elen = 2;
    else if (c == '\n') esc = "\\n", elen = 2;
    else if (c == '\r') esc = "\\r", elen = 2;
    else if (c == '\t') esc = "\\t", elen = 2;
    else {
      memcpy(u, "\\u00", 4), u[4] = hex[c >> 4], u[5] = hex[c & 15];
      esc = u, elen = 6;
    }
    tl_buf_append(b, s + run, i - run);
    tl_buf_append(b, esc, elen);
    run = ++i;
  }
  tl_buf_append(b, s + run, n - run);
  tl_buf_append(b, "\"", 1);
}

static void put_cstr(tl_buf *b, const char *s) { put_str(b, s, strlen(s)); }

/* ,"k": in one append: tens of keys per slice. */
static inline void put_key(tl_buf *b, const char *k, int *first) {
  char tmp[72];
  size_t n = strlen(k), m = 0;
  if (n > sizeof tmp - 4) {
    if (!*first) tl_buf_append(b, ",", 1);
    *first = 0;
    tl_buf_append(b, "\"", 1);
    tl_buf_append(b, k, n);
    tl_buf_append(b, "\":", 2);
    return;
  }
  if (!*first) tmp[m++] = ',';
  *first = 0;
  tmp[m++] = '"';
  memcpy(tmp + m, k, n);
  m += n;
  tmp[m++] = '"';
  tmp[m++] = ':';
  tl_buf_append(b, tmp, m);
}

static inline void kv_i64(tl_buf *b, const char *k, int64_t v, int *first) {
  put_key(b, k, first);
  put_i64(b, v);
}

static inline void kv_i64n(tl_buf *b, const char *k, int64_t v, int null, int *first) {
  put_key(b, k, first);
  if (null) PUT_LIT(b, "null");
  else put_i64(b, v);
}

static inline void kv_pool(tl_buf *b, const char *k, const tl_strpool *p, uint32_t id, int *first) {
  put_key(b, k, first);
  if (id == TL_STR_NONE) PUT_LIT(b, "null");
  else put_str(b, tl_strpool_str(p, id), tl_strpool_len(p, id));
}

static void kv_event(const pf_ctx *c, tl_buf *b, const char *k, int64_t ev, int *first) {
  if (ev < 0) {
    kv_pool(b, k, c->pool, (uint32_t)(-(ev + 1)), first);
    return;
  }
  put_key(b, k, first);
  tl_buf_append(b, "\"event-", 7);
  put_i64(b, ev);
  tl_buf_append(b, "\"", 1);
}

static inline void kv_str(tl_buf *b, const char *k, const char *v, int *first) {
  put_key(b, k, first);
  if (!v) PUT_LIT(b, "null");
  else put_cstr(b, v);
}

static inline void kv_raw(tl_buf *b, const char *k, const char *raw, int *first) {
  put_key(b, k, first);
  tl_buf_puts(b, raw);
}

static inline void kv_milli(tl_buf *b, const char *k, int64_t v, int *first) {
  put_key(b, k, first);
  put_us3(b, v);
}

/* A REAL microsecond column as integer thousandths; NULL and non-finite as 0. */
static int64_t col_milli(sqlite3_stmt *st, int col) {
  if (sqlite3_column_type(st, col) == SQLITE_NULL) return 0;
  double x = sqlite3_column_double(st, col) * 1000.0;
  if (!isfinite(x) || fabs(x) > 9.0e18) return 0;
  return llround(x);
}

static uint32_t col_intern(pf_ctx *c, sqlite3_stmt *st, int col) {
  const unsigned char *t = sqlite3_column_text(st, col);
  if (!t) return TL_STR_NONE;
  return tl_strpool_intern(c->pool, (const char *)t, (size_t)sqlite3_column_bytes(st, col));
}

/* ---- Output sink ------------------------------------------------------------------ */

static int sink_feed(pf_ctx *c, const char *p, size_t n, int finish, const char *path) {
  pf_sink *k = &c->sink;
  if (k->gz) return finish ? tl_gzpar_finish(k->gz, c->e) : tl_gzpar_write(k->gz, p, n, c->e);
  if (n && tl_write_all(k->fd, p, n) != 0)
    return tl_fail(c->e, "traceloom_export_perfetto: cannot write '%s': %s", path,
                   strerror(errno));
  return TL_OK;
}

static int flush_out(pf_ctx *c, int force, const char *path) {
  if (c->out.oom) return tl_nomem(c->e);
  if (!force && c->out.n < FLUSH_BYTES) return TL_OK;
  int rc = sink_feed(c, c->out.p, c->out.n, 0, path);
  tl_buf_reset(&c->out);
  return rc;
}

/* ---- Options ------------------------------------------------------------------------ */

static int parse_opts(const char *json, pf_opts *o, tl_err *e) {
  o->align = ALIGN_NONE;
  if (!json || !*json) return TL_OK;
  tl_json *doc;
  if (tl_json_parse(json, strlen(json), &doc, e)) return TL_ERROR;
  int rc = TL_OK, have_align = 0, have_clock = 0;
  if (tl_json_type_of(doc) != TL_JSON_OBJECT)
    rc = tl_fail(e, "traceloom_export_perfetto options must be a JSON object");
  for (size_t i = 0; rc == TL_OK && i < tl_json_len(doc); i++) {
    const char *k = tl_json_key_at(doc, i);
    const tl_json *v = tl_json_value_at(doc, i);
    if (strcmp(k, "ranks") == 0) {
      if (tl_json_type_of(v) != TL_JSON_ARRAY) {
        rc = tl_fail(e, "traceloom_export_perfetto option \"ranks\" must be an array of "
                        "{\"rank\": R, \"db\": \"path\"}");
        break;
      }
      for (size_t j = 0; rc == TL_OK && j < tl_json_len(v); j++) {
        const tl_json *r = tl_json_at(v, j);
        const tl_json *rk = tl_json_get(r, "rank"), *db = tl_json_get(r, "db");
        int64_t rank;
        size_t dblen;
        const char *dbs = db ? tl_json_str(db, &dblen) : NULL;
        if (!rk || tl_json_i64(rk, &rank) || rank < 0 || !dbs || !*dbs ||
            tl_json_len(r) != 2) {
          rc = tl_fail(e, "traceloom_export_perfetto: ranks[%zu] must be {\"rank\": <non-negative "
                          "integer>, \"db\": \"<analysis db path>\"}", j);
          break;
        }
        for (size_t q = 0; q < o->ranks.n; q++)
          if (o->ranks.v[q].rank == rank)
            rc = tl_fail(e, "traceloom_export_perfetto: rank %lld is given twice", (long long)rank);
        if (rc) break;
        pf_rank pr = {rank, tl_strdup(dbs)};
        if (!pr.db || TL_VEC_PUSH(&o->ranks, pr)) {
          free(pr.db);
          rc = tl_nomem(e);
        }
      }
    } else if (strcmp(k, "align") == 0 || strcmp(k, "distributed_alignment") == 0) {
      size_t n;
      const char *s = tl_json_str(v, &n);
      have_align = 1;
      if (s && (strcmp(s, "first_event") == 0 || strcmp(s, "first-event") == 0))
        o->align = ALIGN_FIRST_EVENT;
      else if (s && strcmp(s, "provider") == 0)
        o->align = ALIGN_PROVIDER;
      else
        rc = tl_fail(e, "traceloom_export_perfetto: unknown alignment mode %s%s%s: expected "
                        "first_event, provider or clock_model",
                     s ? "\"" : "", s ? s : "(not a string)", s ? "\"" : "");
    } else if (strcmp(k, "clock_model") == 0 || strcmp(k, "distributed_clock_model") == 0) {
      size_t n;
      const char *s = tl_json_str(v, &n);
      if (!s || !*s) {
        rc = tl_fail(e, "traceloom_export_perfetto option \"clock_model\" must be the path of a "
                        "clock-model JSONL file");
        break;
      }
      free(o->clock_model);
      if (!(o->clock_model = tl_strdup(s))) rc = tl_nomem(e);
      have_clock = 1;
    } else if (strcmp(k, "no_raw_provider") == 0) {
      /* The raw-provider plane is not exported yet, so there is nothing to switch off. */
    } else {
      rc = tl_fail(e, "unknown traceloom_export_perfetto option \"%s\": expected ranks, align, "
                      "clock_model or no_raw_provider", k);
    }
  }
  if (rc == TL_OK && have_clock && have_align)
    rc = tl_fail(e, "traceloom_export_perfetto: a clock model and the alignment option are "
                    "mutually exclusive");
  if (rc == TL_OK && have_clock) o->align = ALIGN_CLOCK;
  if (rc == TL_OK && (have_align || have_clock) && !o->ranks.n)
    rc = tl_fail(e, "traceloom_export_perfetto: alignment options need \"ranks\"");
  if (rc == TL_OK && o->ranks.n) {
    int has0 = 0;
    for (size_t q = 0; q < o->ranks.n; q++) has0 |= o->ranks.v[q].rank == 0;
    if (!has0)
      rc = tl_fail(e, "traceloom_export_perfetto: rank 0 is required in \"ranks\" (it is the "
                      "display reference)");
    if (o->align == ALIGN_NONE) o->align = ALIGN_FIRST_EVENT;
  }
  tl_json_free(doc);
  return rc;
}

/* ---- Reading the analysis ------------------------------------------------------------ */

/* 1 when the main database has a table or view of that name. */
static int has_relation(sqlite3 *db, const char *name) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db, "SELECT 1 FROM main.sqlite_schema WHERE type IN ('table', 'view') "
                             "AND name = ?1", -1, &st, NULL) != SQLITE_OK)
    return 0;
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  int found = sqlite3_step(st) == SQLITE_ROW;
  sqlite3_finalize(st);
  return found;
}

/* 1 when table (or view) has that column. */
static int has_column(sqlite3 *db, const char *table, const char *column) {
  /* Unquoted: a double-quoted name that is no column would be read as a string literal. */
  char *sql = tl_mprintf("SELECT %s FROM main.\"%s\" LIMIT 0", column, table);
  sqlite3_stmt *st = NULL;
  int ok = sql && sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK;
  sqlite3_finalize(st);
  free(sql);
  return ok;
}

static int check_timeline(sqlite3 *db, const char *what, tl_err *e) {
  static const char *const need[] = {"traceloom_v_tree_node", "traceloom_tree_node_occurrence",
                                     "traceloom_metadata"};
  for (size_t i = 0; i < sizeof need / sizeof *need; i++) {
    if (!has_relation(db, need[i]))
      return tl_fail(e, "traceloom_export_perfetto: %s has no relation %s: expected a "
                        "TraceLoom analysis database (run traceloom_analyze first)",
                     what, need[i]);
  }
  sqlite3_stmt *st;
  int rc = sqlite3_prepare_v2(db, "SELECT value FROM traceloom_metadata WHERE key = "
                                  "'artifact_kind'", -1, &st, NULL);
  if (rc != SQLITE_OK)
    return tl_fail(e, "traceloom_export_perfetto: cannot read traceloom_metadata of %s: %s",
                   what, sqlite3_errmsg(db));
  const char *kind = NULL;
  int ok = 0;
  if (sqlite3_step(st) == SQLITE_ROW) {
    kind = (const char *)sqlite3_column_text(st, 0);
    ok = kind && strcmp(kind, "queryable_database_timeline") == 0;
  }
  if (!ok)
    tl_fail(e, "traceloom_export_perfetto: %s has traceloom_metadata.artifact_kind = %s%s%s, "
               "expected 'queryable_database_timeline'",
            what, kind ? "'" : "", kind ? kind : "(missing)", kind ? "'" : "");
  sqlite3_finalize(st);
  return ok ? TL_OK : TL_ERROR;
}


static int prep(pf_ctx *c, sqlite3 *db, const char *sql, sqlite3_stmt **st) {
  if (sqlite3_prepare_v2(db, sql, -1, st, NULL) != SQLITE_OK)
    return tl_fail(c->e, "traceloom_export_perfetto: cannot query the analysis: %s; sql=%s",
                   sqlite3_errmsg(db), sql);
  return TL_OK;
}

static int step_done(pf_ctx *c, sqlite3 *db, int rc) {
  if (rc != SQLITE_DONE)
    return tl_fail(c->e, "traceloom_export_perfetto: reading the analysis failed: %s",
                   sqlite3_errmsg(db));
  return TL_OK;
}

static uint32_t node_key(pf_ctx *c, int64_t db, int64_t dev, uint32_t view, const char *node,
                         int insert) {
  char tmp[512];
  int n = snprintf(tmp, sizeof tmp, "%lld\x1f%lld\x1f%s\x1f%s", (long long)db, (long long)dev,
                   tl_strpool_str(c->pool, view), node);
  if (n < 0 || (size_t)n >= sizeof tmp) return TL_STR_NOMEM;
  return insert ? tl_strpool_intern(c->pool, tmp, (size_t)n)
                : tl_strpool_find(c->pool, tmp, (size_t)n);
}

static int64_t find_node(pf_ctx *c, int64_t db, int64_t dev, uint32_t view, const char *node) {
  uint32_t k = node_key(c, db, dev, view, node, 0);
  if (k == TL_STR_NOMEM) return -1;
  int64_t *v = tl_i64map_get(&c->node_by_key, k);
  return v ? *v : -1;
}

static int load_nodes(pf_ctx *c) {
  sqlite3_stmt *st;
  if (prep(c, c->db,
           "SELECT node_id, parent_node_id, local_node_id, kind, node_type, label, category, "
           "db_idx, device_id, view_name, tree_depth, display_order, repeat_count "
           "FROM traceloom_v_tree_node ORDER BY db_idx, device_id, view_name, display_order",
           &st))
    return TL_ERROR;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    pf_node n;
    memset(&n, 0, sizeof n);
    n.node_id = col_intern(c, st, 0);
    n.parent = col_intern(c, st, 1);
    n.local = col_intern(c, st, 2);
    const char *kind = (const char *)sqlite3_column_text(st, 3);
    const char *type = (const char *)sqlite3_column_text(st, 4);
    n.label = col_intern(c, st, 5);
    n.category = col_intern(c, st, 6);
    n.db = sqlite3_column_int64(st, 7);
    n.dev = sqlite3_column_int64(st, 8);
    n.view = col_intern(c, st, 9);
    n.tree_depth = sqlite3_column_int64(st, 10);
    n.display_order = sqlite3_column_int64(st, 11);
    n.repeat_count = sqlite3_column_type(st, 12) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 12);
    if ((type && strcmp(type, "Repeat") == 0) || (!type && kind && strcmp(kind, "repeat") == 0))
      n.kind = KIND_REPEAT;
    else if ((type && strcmp(type, "Atom") == 0) ||
             (!type && kind && strcmp(kind, "seq") != 0 && strcmp(kind, "repeat") != 0))
      n.kind = KIND_ATOM;
    else
      n.kind = KIND_SEQ;
    n.first_child = n.next_sibling = -1;
    n.motif = -1;
    n.key = node_key(c, n.db, n.dev, n.view, tl_strpool_str(c->pool, n.node_id), 1);
    if (n.node_id == TL_STR_NOMEM || n.parent == TL_STR_NOMEM || n.local == TL_STR_NOMEM ||
        n.label == TL_STR_NOMEM || n.category == TL_STR_NOMEM || n.view == TL_STR_NOMEM ||
        n.key == TL_STR_NOMEM) {
      sqlite3_finalize(st);
      return tl_nomem(c->e);
    }
    if (tl_i64map_get(&c->node_by_key, n.key)) {
      sqlite3_finalize(st);
      return tl_fail(c->e, "traceloom_export_perfetto: traceloom_v_tree_node lists node %s "
                           "(db %lld, device %lld) twice",
                     tl_strpool_str(c->pool, n.node_id), (long long)n.db, (long long)n.dev);
    }
    if (tl_i64map_put(&c->node_by_key, n.key, (int64_t)c->nodes.n) || TL_VEC_PUSH(&c->nodes, n)) {
      sqlite3_finalize(st);
      return tl_nomem(c->e);
    }
  }
  sqlite3_finalize(st);
  if (step_done(c, c->db, rc)) return TL_ERROR;
  /* Children lists in display order: nodes arrive sorted, so link back to front. */
  for (size_t i = c->nodes.n; i-- > 0;) {
    pf_node *n = &c->nodes.v[i];
    if (n->parent == TL_STR_NONE) continue;
    int64_t p = find_node(c, n->db, n->dev, n->view, tl_strpool_str(c->pool, n->parent));
    if (p < 0) continue;
    n->next_sibling = c->nodes.v[p].first_child;
    c->nodes.v[p].first_child = (int64_t)i;
  }
  return TL_OK;
}

/* S(...)/R(...)/A() over the children in display order; memoised per node. */
static const char *topology(pf_ctx *c, int64_t i, int guard) {
  pf_node *n = &c->nodes.v[i];
  if (n->topology || guard > 100000) return n->topology;
  tl_buf b = {0};
  tl_buf_puts(&b, n->kind == KIND_SEQ ? "S(" : n->kind == KIND_REPEAT ? "R(" : "A(");
  for (int64_t ch = n->first_child, k = 0; ch >= 0; ch = c->nodes.v[ch].next_sibling, k++) {
    const char *t = topology(c, ch, guard + 1);
    if (!t) {
      tl_buf_free(&b);
      return NULL;
    }
    if (k) PUT_LIT(&b, ",");
    tl_buf_puts(&b, t);
  }
  PUT_LIT(&b, ")");
  if (b.oom) {
    tl_buf_free(&b);
    return NULL;
  }
  n = &c->nodes.v[i];
  n->topology = b.p;
  tl_sha256 s;
  uint8_t d[32];
  tl_sha256_init(&s);
  tl_sha256_update(&s, b.p, b.n);
  tl_sha256_final(&s, d);
  tl_sha256_hex(d, n->sha);
  return n->topology;
}

static int cmp_str_ptr(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int assign_motifs(pf_ctx *c) {
  for (size_t i = 0; i < c->nodes.n; i++)
    if (!topology(c, (int64_t)i, 0)) return tl_nomem(c->e);
  const char **sig = malloc((c->nodes.n + 1) * sizeof *sig);
  if (!sig) return tl_nomem(c->e);
  size_t n = 0;
  for (size_t i = 0; i < c->nodes.n; i++)
    if (c->nodes.v[i].kind == KIND_REPEAT) sig[n++] = c->nodes.v[i].sha;
  qsort(sig, n, sizeof *sig, cmp_str_ptr);
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (m == 0 || strcmp(sig[m - 1], sig[i]) != 0) sig[m++] = sig[i];
  c->nmotif = (int64_t)m;
  for (size_t i = 0; i < c->nodes.n; i++) {
    pf_node *nd = &c->nodes.v[i];
    if (nd->kind != KIND_REPEAT) continue;
    const char *key = nd->sha;
    const char **hit = bsearch(&key, sig, m, sizeof *sig, cmp_str_ptr);
    nd->motif = hit ? (int)(hit - sig) : -1;
  }
  free(sig);
  return TL_OK;
}

/* A, B, ..., Z, AA, AB, ... */
static void motif_alias(int k, char out[16]) {
  char tmp[16];
  int n = 0;
  for (int64_t v = (int64_t)k + 1; v > 0 && n < 15; v = (v - 1) / 26)
    tmp[n++] = (char)('A' + (v - 1) % 26);
  for (int i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
  out[n] = 0;
}

/* Depth from a rooted position path: the number of "/s<slot>/" steps. */
static int64_t path_depth(const char *p) {
  int64_t d = 0;
  for (; *p; p++)
    if (p[0] == '/' && p[1] == 's') d++;
  return d;
}

typedef struct pf_anchor_ev {
  int64_t db, dev, idx, stream, event;
  int has_stream;
} pf_anchor_ev;

/* An event_id as n >= 0 when it is exactly "event-<n>" (every id the analysis writes), so
** hundreds of thousands of unique ids need no interning; otherwise -(strpool id) - 1.
** EV_NONE (strpool id 0) is a NULL id. */
#define EV_NONE (-1)

static int64_t ev_code(pf_ctx *c, sqlite3_stmt *st, int col) {
  const char *t = (const char *)sqlite3_column_text(st, col);
  size_t n = (size_t)sqlite3_column_bytes(st, col);
  if (t && n > 6 && n <= 24 && memcmp(t, "event-", 6) == 0 && (t[6] != '0' || n == 7)) {
    int64_t v = 0;
    size_t i = 6;
    while (i < n && t[i] >= '0' && t[i] <= '9') v = v * 10 + (t[i++] - '0');
    if (i == n) return v;
  }
  uint32_t id = col_intern(c, st, col);
  return id == TL_STR_NOMEM ? INT64_MIN : -(int64_t)id - 1;
}

/* The strpool id of an event code (TL_STR_NOMEM: never interned, so nothing refers to it). */
static uint32_t ev_pool_id(const pf_ctx *c, int64_t ev) {
  if (ev < 0) return (uint32_t)(-(ev + 1));
  char tmp[32];
  int n = snprintf(tmp, sizeof tmp, "event-%lld", (long long)ev);
  return tl_strpool_find(c->pool, tmp, (size_t)n);
}

static int cmp_anchor_ev(const void *pa, const void *pb) {
  const pf_anchor_ev *x = pa, *y = pb;
  if (x->db != y->db) return x->db < y->db ? -1 : 1;
  if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/*
** The event of each atom occurrence: an atom's self coverage is its one anchor, so
** anchor_start_idx names it within (db_idx, device_id). One scan of traceloom_anchor
** joined to traceloom_event, then a binary search per atom occurrence (the
** traceloom_viz_node_anchor view is a range join, far too slow to probe per row).
*/
/* db, device and stream of one event, by event_n. */
typedef struct pf_event_slot {
  int64_t db, dev, stream;
  int state; /* 0: no such event, 1: stream NULL, 2: stream set */
} pf_event_slot;

/*
** Every event's (db_idx, device_id, stream_id) in an array indexed by event_n, from one
** scan: event_n is the n of 'event-<n>', so an anchor finds its event by parsing its id,
** without a join on the unindexed event_id text. *out stays NULL (the SQL join is used)
** when event_n is absent or too sparse for an array.
*/
static int load_event_slots(pf_ctx *c, pf_event_slot **out, size_t *n_out) {
  *out = NULL, *n_out = 0;
  if (!has_column(c->db, "traceloom_event", "event_n")) return TL_OK;
  sqlite3_stmt *st;
  /* The integer storage behind the traceloom_event view, where there is one: the view would
  ** join every row to its text shape for nothing. */
  if (prep(c, c->db,
           has_relation(c->db, "traceloom_event_core")
               ? "SELECT event_n, db_idx, device_id, stream_id FROM traceloom_event_core"
               : "SELECT event_n, db_idx, device_id, stream_id FROM traceloom_event",
           &st))
    return TL_ERROR;
  pf_event_slot *v = NULL;
  size_t cap = 0, rows = 0;
  int rc, err = TL_OK, sparse = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t n = sqlite3_column_int64(st, 0);
    rows++;
    if (sqlite3_column_type(st, 0) != SQLITE_INTEGER || n < 0 ||
        (uint64_t)n > 4 * (uint64_t)rows + 4096) {
      sparse = 1;
      break;
    }
    if ((size_t)n >= cap) {
      size_t nc = cap ? cap : 4096;
      while (nc <= (size_t)n) nc *= 2;
      pf_event_slot *g = realloc(v, nc * sizeof *v);
      if (!g) {
        err = tl_nomem(c->e);
        break;
      }
      memset(g + cap, 0, (nc - cap) * sizeof *g);
      v = g, cap = nc;
    }
    pf_event_slot *e = &v[n];
    if (e->state) {
      sparse = 1; /* a repeated event_n: leave it to the join */
      break;
    }
    e->db = sqlite3_column_int64(st, 1), e->dev = sqlite3_column_int64(st, 2);
    e->stream = sqlite3_column_int64(st, 3);
    e->state = sqlite3_column_type(st, 3) == SQLITE_NULL ? 1 : 2;
  }
  sqlite3_finalize(st);
  if (err == TL_OK && !sparse && rc != SQLITE_DONE) err = step_done(c, c->db, rc);
  if (err || sparse) {
    free(v);
    return err;
  }
  *out = v, *n_out = cap;
  return TL_OK;
}

static int load_anchor_events(pf_ctx *c) {
  if (!has_relation(c->db, "traceloom_anchor") || !has_relation(c->db, "traceloom_event"))
    return TL_OK;
  pf_event_slot *ev = NULL;
  size_t nev = 0;
  if (load_event_slots(c, &ev, &nev)) return TL_ERROR;
  sqlite3_stmt *st;
  /* Without the array: a rowid probe by event_n where there is one (the event_id equality
  ** keeps the join's meaning), else the join on the event_id text. */
  int by_n = !ev && has_column(c->db, "traceloom_event", "event_n");
  if (prep(c, c->db,
           ev     ? "SELECT db_idx, device_id, anchor_idx, event_id FROM traceloom_anchor"
           : by_n ? "SELECT a.db_idx, a.device_id, a.anchor_idx, a.event_id, e.stream_id "
                    "FROM traceloom_anchor a LEFT JOIN traceloom_event e ON e.event_n = "
                    "CAST(substr(a.event_id, 7) AS INTEGER) AND e.event_id = a.event_id "
                    "AND e.db_idx = a.db_idx AND e.device_id = a.device_id"
                  : "SELECT a.db_idx, a.device_id, a.anchor_idx, a.event_id, e.stream_id "
                    "FROM traceloom_anchor a LEFT JOIN traceloom_event e ON e.event_id = "
                    "a.event_id AND e.db_idx = a.db_idx AND e.device_id = a.device_id",
           &st))
    return free(ev), TL_ERROR;
  TL_VEC(pf_anchor_ev) v = {0};
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    pf_anchor_ev a = {sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                      sqlite3_column_int64(st, 2), 0, ev_code(c, st, 3), 0};
    if (!ev) {
      a.stream = sqlite3_column_int64(st, 4);
      a.has_stream = sqlite3_column_type(st, 4) != SQLITE_NULL;
    } else if (a.event >= 0 && (size_t)a.event < nev && ev[a.event].state &&
               ev[a.event].db == a.db && ev[a.event].dev == a.dev) {
      /* The join's match: the event 'event-<n>' of the same db and device. */
      a.stream = ev[a.event].stream;
      a.has_stream = ev[a.event].state == 2;
    }
    if (a.event == INT64_MIN || TL_VEC_PUSH(&v, a)) break;
  }
  sqlite3_finalize(st);
  free(ev);
  if (rc == SQLITE_ROW) return TL_VEC_FREE(&v), tl_nomem(c->e);
  if (step_done(c, c->db, rc)) return TL_VEC_FREE(&v), TL_ERROR;
  /* Anchors are stored in key order: the sort is only for databases written otherwise. */
  size_t unsorted = 0;
  for (size_t i = 1; i < v.n && !unsorted; i++) unsorted = cmp_anchor_ev(&v.v[i - 1], &v.v[i]) > 0;
  if (unsorted) qsort(v.v, v.n, sizeof *v.v, cmp_anchor_ev);
  for (size_t i = 0; i < c->occs.n; i++) {
    pf_occ *o = &c->occs.v[i];
    const pf_node *n = &c->nodes.v[o->node];
    if (n->kind != KIND_ATOM) continue;
    pf_anchor_ev key = {.db = n->db, .dev = n->dev, .idx = o->anchor_start};
    const pf_anchor_ev *hit = v.n ? bsearch(&key, v.v, v.n, sizeof *v.v, cmp_anchor_ev) : NULL;
    if (!hit) continue;
    o->event = hit->event;
    o->stream_id = hit->stream;
    o->has_stream = hit->has_stream;
  }
  TL_VEC_FREE(&v);
  return TL_OK;
}

/* ---- The fast reader: base tables in one pass, joined in C -------------------------- */

#define PF_FALLBACK 2 /* the fast reader declines; the SQL reader over the views runs */
#define PF_TREE_BITS 24

typedef struct pf_tree {
  uint32_t id; /* strpool id of tree_id */
  int64_t db, dev;
} pf_tree;

/* A child occurrence whose parent position is a Repeat: one row of the membership join. */
typedef struct pf_child {
  int64_t pn, parent_idx, order, idx; /* parent_idx INT64_MIN: no parent occurrence row */
  uint32_t tree, parent_occ, pos;     /* tree index; strpool ids */
} pf_child;

/* ROUND(x, 3), as the traceloom_tree_node_occurrence view computes it, in thousandths (what
** col_milli gives for the rounded value). Below 1e9 and away from a half-thousandth tie, the
** nearest integer to x*1000 is what SQLite's printf-based round gives on every version;
** near ties and large values ask SQLite's own round(), so the numbers stay byte-identical
** to the view's. Saves a printf and a parse per cost column. */
static int cost_milli(pf_ctx *c, sqlite3_stmt *st, int col, int64_t *out) {
  if (sqlite3_column_type(st, col) == SQLITE_NULL) return *out = 0, TL_OK;
  double x = sqlite3_column_double(st, col);
  if (fabs(x) < 1e9) {
    double y = x * 1000.0, fl = floor(y), fr = y - fl;
    if (fabs(fr - 0.5) > 0.01) return *out = (int64_t)fl + (fr > 0.5), TL_OK;
  }
  if (!c->round_st && prep(c, c->db, "SELECT round(?1, 3)", &c->round_st)) return TL_ERROR;
  sqlite3_bind_double(c->round_st, 1, x);
  int rc = sqlite3_step(c->round_st);
  *out = rc == SQLITE_ROW ? col_milli(c->round_st, 0) : 0;
  sqlite3_reset(c->round_st);
  if (rc != SQLITE_ROW)
    return tl_fail(c->e, "traceloom_export_perfetto: round() failed: %s", sqlite3_errmsg(c->db));
  return TL_OK;
}

static int is_view(sqlite3 *db, const char *name) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db, "SELECT 1 FROM main.sqlite_schema WHERE type = 'view' AND name = ?1",
                         -1, &st, NULL) != SQLITE_OK)
    return 0;
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  int found = sqlite3_step(st) == SQLITE_ROW;
  sqlite3_finalize(st);
  return found;
}

/* A text column kept either in the paths arena (offset >= 0) or interned (-(strpool id) - 1);
** TEXT_NULL is NULL or empty, as strpool id 0. */
#define TEXT_NULL (-1)
#define TEXT_NOMEM INT64_MIN

static int64_t text_pool(pf_ctx *c, sqlite3_stmt *st, int col) {
  uint32_t id = col_intern(c, st, col);
  return id == TL_STR_NOMEM ? TEXT_NOMEM : -(int64_t)id - 1;
}

static const char *text_str(const pf_ctx *c, int64_t ref) {
  return ref >= 0 ? c->paths.p + ref : tl_strpool_str(c->pool, (uint32_t)(-(ref + 1)));
}

static void kv_text(const pf_ctx *c, tl_buf *b, const char *k, int64_t ref, int *first) {
  if (ref < 0) {
    kv_pool(b, k, c->pool, (uint32_t)(-(ref + 1)), first);
    return;
  }
  put_key(b, k, first);
  put_cstr(b, text_str(c, ref));
}

static int64_t tree_of(const pf_ctx *c, uint32_t id) {
  for (size_t i = 0; i < c->trees.n; i++)
    if (c->trees.v[i].id == id) return (int64_t)i;
  return -1;
}

static int64_t res_key(uint32_t pid, size_t tree) {
  return (int64_t)((uint64_t)pid << PF_TREE_BITS | (uint64_t)tree);
}

/* The report node of position pid in a tree (-1: none) and whether traceloom_semantic_node
** lists it there (the view's inner join); memoised per (position, tree). */
static int resolve_pos(pf_ctx *c, uint32_t pid, size_t tree, int64_t *node, int *member) {
  int64_t key = res_key(pid, tree);
  const int64_t *v = tl_i64map_get(&c->node_res, key);
  if (!v) {
    const pf_tree *t = &c->trees.v[tree];
    uint32_t native = tl_strpool_find(c->pool, "native_report_tree", 18);
    int64_t n = native == TL_STR_NOMEM
                    ? -1
                    : find_node(c, t->db, t->dev, native, tl_strpool_str(c->pool, pid));
    int64_t val = (n + 1) * 2 + (tl_i64map_get(&c->semantic_member, key) != NULL);
    if (tl_i64map_put(&c->node_res, key, val)) return tl_nomem(c->e);
    v = tl_i64map_get(&c->node_res, key);
  }
  *node = *v / 2 - 1;
  *member = (int)(*v % 2);
  return TL_OK;
}

/* Trees and semantic positions; PF_FALLBACK unless every tree is the one native report tree
** of its (db_idx, device_id), which is what makes the view joins plain lookups. */
static int load_trees(pf_ctx *c) {
  if (tl_strpool_intern_cstr(c->pool, "native_report_tree") == TL_STR_NOMEM) return tl_nomem(c->e);
  sqlite3_stmt *st;
  if (prep(c, c->db,
           "SELECT tree_id, db_idx, device_id, semantic_projection IS 'native_report_tree' "
           "FROM traceloom_semantic_tree ORDER BY db_idx, device_id, tree_id",
           &st))
    return TL_ERROR;
  int rc, res = TL_OK;
  while (res == TL_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    pf_tree t = {col_intern(c, st, 0), sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2)};
    if (t.id == TL_STR_NOMEM) res = tl_nomem(c->e);
    else if (!sqlite3_column_int(st, 3) || t.id == TL_STR_NONE || tree_of(c, t.id) >= 0 ||
             c->trees.n >= 4096)
      res = PF_FALLBACK;
    for (size_t i = 0; res == TL_OK && i < c->trees.n; i++)
      if (c->trees.v[i].db == t.db && c->trees.v[i].dev == t.dev) res = PF_FALLBACK;
    if (res == TL_OK && TL_VEC_PUSH(&c->trees, t)) res = tl_nomem(c->e);
  }
  sqlite3_finalize(st);
  if (res != TL_OK) return res;
  if (step_done(c, c->db, rc)) return TL_ERROR;
  if (prep(c, c->db, "SELECT node_id, tree_id, db_idx FROM traceloom_semantic_node", &st))
    return TL_ERROR;
  while (res == TL_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    uint32_t pid = col_intern(c, st, 0);
    const char *tt = (const char *)sqlite3_column_text(st, 1);
    uint32_t tid = tt ? tl_strpool_find(c->pool, tt, (size_t)sqlite3_column_bytes(st, 1))
                      : TL_STR_NOMEM;
    int64_t tree = tid == TL_STR_NOMEM ? -1 : tree_of(c, tid);
    if (pid == TL_STR_NOMEM) res = tl_nomem(c->e);
    /* Rows of other trees or databases can never meet an occurrence of a known tree. */
    if (res || tree < 0 || sqlite3_column_int64(st, 2) != c->trees.v[tree].db) continue;
    int64_t key = res_key(pid, (size_t)tree);
    if (tl_i64map_get(&c->semantic_member, key)) res = PF_FALLBACK; /* the join would repeat rows */
    else if (tl_i64map_put(&c->semantic_member, key, 1)) res = tl_nomem(c->e);
  }
  sqlite3_finalize(st);
  if (res != TL_OK) return res;
  return step_done(c, c->db, rc);
}

/* The parent occurrence_idx of children whose parent row was not a repeat row of the pass. */
static int resolve_parents(pf_ctx *c) {
  sqlite3_stmt *st = NULL;
  for (size_t i = 0; i < c->children.n; i++) {
    pf_child *ch = &c->children.v[i];
    const int64_t *v = tl_i64map_get(&c->repeat_occ, res_key(ch->parent_occ, ch->tree));
    if (v) {
      ch->parent_idx = *v;
      continue;
    }
    const pf_tree *t = &c->trees.v[ch->tree];
    if (!st && prep(c, c->db,
                    "SELECT occurrence_idx FROM traceloom_position_occurrence WHERE db_idx = ?1 "
                    "AND tree_id = ?2 AND occurrence_id = ?3",
                    &st))
      return TL_ERROR;
    sqlite3_bind_int64(st, 1, t->db);
    sqlite3_bind_text(st, 2, tl_strpool_str(c->pool, t->id), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, tl_strpool_str(c->pool, ch->parent_occ), -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    ch->parent_idx = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : INT64_MIN;
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
      sqlite3_finalize(st);
      return step_done(c, c->db, rc);
    }
  }
  sqlite3_finalize(st);
  return TL_OK;
}

static void fast_reset(pf_ctx *c) {
  c->occs.n = 0;
  c->origin = 0, c->has_origin = 0;
  tl_i64map_free(&c->occ_by_key);
  tl_i64map_free(&c->repeat_occ);
  tl_buf_free(&c->paths);
  TL_VEC_FREE(&c->children);
}

/* One row of traceloom_position_occurrence as the fast reader uses it. Texts point into the
** statement's row or the reader's buffers, valid until the next row; NULL is SQL NULL. */
typedef struct occ_row {
  const char *pos, *tree, *ctx, *rooted, *occ_id, *parent_occ, *parent_pos;
  size_t pos_n, tree_n, ctx_n, rooted_n, occ_id_n, parent_occ_n, parent_pos_n;
  int64_t db, dev, occ_idx, tok_start, tok_end, start, end, aux_events, member_order;
  int has_times;
  int64_t cost[NCOST]; /* milli-us */
} occ_row;

/* Interns t, skipping the hash when it equals *last (siblings share a context). */
static uint32_t intern_text(pf_ctx *c, const char *t, size_t n, uint32_t *last) {
  if (!t) return TL_STR_NONE;
  if (tl_strpool_len(c->pool, *last) == n && memcmp(tl_strpool_str(c->pool, *last), t, n) == 0)
    return *last;
  uint32_t id = tl_strpool_intern(c->pool, t, n);
  if (id != TL_STR_NOMEM) *last = id;
  return id;
}

/* The rooted path of an occurrence: paths run through slot ordinals, so most are unique and
** are appended to an arena, not interned (no hashing, no table); the arena is NUL-terminated,
** so a path holding a NUL is interned instead. */
static int64_t text_rooted_str(pf_ctx *c, const char *t, size_t n) {
  if (!t || !n) return TEXT_NULL;
  if (memchr(t, 0, n)) {
    uint32_t id = tl_strpool_intern(c->pool, t, n);
    return id == TL_STR_NOMEM ? TEXT_NOMEM : -(int64_t)id - 1;
  }
  int64_t off = (int64_t)c->paths.n;
  tl_buf_append(&c->paths, t, n);
  tl_buf_append(&c->paths, "", 1);
  return c->paths.oom ? TEXT_NOMEM : off;
}

/* Reader state carried from row to row. */
typedef struct occ_pass {
  size_t tree;
  uint32_t last_ctx, last_parent, last_pp;
} occ_pass;

/* Keeps one occurrence row: the occurrence of its report node, the repeat occurrence ids
** and the children of repeats. TL_OK, PF_FALLBACK or an error. */
static int keep_occurrence(pf_ctx *c, const occ_row *r, occ_pass *ps) {
  int res = TL_OK;
  if (!r->tree) return PF_FALLBACK;
  if (ps->tree == SIZE_MAX || tl_strpool_len(c->pool, c->trees.v[ps->tree].id) != r->tree_n ||
      memcmp(tl_strpool_str(c->pool, c->trees.v[ps->tree].id), r->tree, r->tree_n) != 0) {
    uint32_t tid = tl_strpool_find(c->pool, r->tree, r->tree_n);
    int64_t ti = tid == TL_STR_NOMEM ? -1 : tree_of(c, tid);
    if (ti < 0) return PF_FALLBACK; /* an occurrence of a tree the view joins would not find */
    ps->tree = (size_t)ti;
  }
  size_t tree = ps->tree;
  const pf_tree *t = &c->trees.v[tree];
  if (r->db != t->db || r->dev != t->dev) return PF_FALLBACK;
  uint32_t pid = r->pos ? tl_strpool_find(c->pool, r->pos, r->pos_n) : TL_STR_NOMEM;
  int64_t node = -1, occ_idx = r->occ_idx;
  int member = 0;
  if (pid != TL_STR_NOMEM && (res = resolve_pos(c, pid, tree, &node, &member))) return res;
  if (member) {
    if (node < 0)
      return tl_fail(c->e, "traceloom_export_perfetto: traceloom_tree_node_occurrence row for "
                           "node %.*s (db %lld, device %lld, view native_report_tree) has no "
                           "traceloom_v_tree_node row",
                     (int)r->pos_n, r->pos, (long long)r->db, (long long)r->dev);
    pf_occ o;
    memset(&o, 0, sizeof o);
    o.node = node;
    o.event = EV_NONE;
    o.occ_idx = occ_idx;
    o.repeat_context = intern_text(c, r->ctx, r->ctx_n, &ps->last_ctx);
    o.anchor_start = r->tok_start + 1;
    o.anchor_end = r->tok_end;
    o.anchor_count = o.anchor_end - (o.anchor_start - 1);
    if (!r->has_times)
      return tl_fail(c->e, "traceloom_export_perfetto: occurrence %lld of node %s has no "
                           "start_ns/end_ns in traceloom_tree_node_occurrence",
                     (long long)o.occ_idx, tl_strpool_str(c->pool, c->nodes.v[node].node_id));
    o.start = r->start;
    o.end = r->end;
    memcpy(o.cost, r->cost, sizeof o.cost);
    o.aux_events = r->aux_events;
    o.rooted_path = text_rooted_str(c, r->rooted, r->rooted_n);
    if (o.repeat_context == TL_STR_NOMEM || o.rooted_path == TEXT_NOMEM) return tl_nomem(c->e);
    o.depth = o.rooted_path != TEXT_NULL ? path_depth(text_str(c, o.rooted_path))
                                         : c->nodes.v[node].tree_depth;
    if (!c->has_origin || o.start < c->origin) c->origin = o.start, c->has_origin = 1;
    int64_t key = (int64_t)((uint64_t)node << 32 | (uint64_t)(uint32_t)o.occ_idx);
    if (tl_i64map_put(&c->occ_by_key, key, (int64_t)c->occs.n) || TL_VEC_PUSH(&c->occs, o))
      return tl_nomem(c->e);
  }
  if (node >= 0 && c->nodes.v[node].kind == KIND_REPEAT) {
    uint32_t oid = r->occ_id ? tl_strpool_intern(c->pool, r->occ_id, r->occ_id_n) : TL_STR_NONE;
    if (oid == TL_STR_NOMEM || tl_i64map_put(&c->repeat_occ, res_key(oid, tree), occ_idx))
      return tl_nomem(c->e);
  }
  if (!r->parent_occ) return TL_OK;
  /* Siblings are neighbours: the parent position is usually the last row's. */
  const char *pp = r->parent_pos;
  size_t ppn = r->parent_pos_n;
  uint32_t ppid = !pp ? TL_STR_NOMEM
                  : ps->last_pp != TL_STR_NOMEM && tl_strpool_len(c->pool, ps->last_pp) == ppn &&
                          memcmp(tl_strpool_str(c->pool, ps->last_pp), pp, ppn) == 0
                      ? ps->last_pp
                      : tl_strpool_find(c->pool, pp, ppn);
  ps->last_pp = ppid;
  int64_t pn = -1;
  int pmember;
  if (ppid != TL_STR_NOMEM && (res = resolve_pos(c, ppid, tree, &pn, &pmember))) return res;
  if (pn < 0 || c->nodes.v[pn].kind != KIND_REPEAT) return TL_OK;
  pf_child ch = {.pn = pn, .order = r->member_order, .idx = occ_idx, .tree = (uint32_t)tree,
                 .parent_occ = intern_text(c, r->parent_occ, r->parent_occ_n, &ps->last_parent),
                 .pos = pid != TL_STR_NOMEM ? pid : tl_strpool_intern(c->pool, r->pos, r->pos_n)};
  if (ch.parent_occ == TL_STR_NOMEM || ch.pos == TL_STR_NOMEM || TL_VEC_PUSH(&c->children, ch))
    return tl_nomem(c->e);
  return TL_OK;
}

static const char *col_str(sqlite3_stmt *st, int col, size_t *n) {
  const char *t = (const char *)sqlite3_column_text(st, col);
  *n = t ? (size_t)sqlite3_column_bytes(st, col) : 0;
  return t;
}

/* Rows of the traceloom_position_occurrence relation (a table in older analyses, or a view). */
static int occurrences_from_relation(pf_ctx *c, occ_pass *ps) {
  sqlite3_stmt *st;
  if (prep(c, c->db,
           "SELECT position_id, db_idx, device_id, tree_id, occurrence_idx, repeat_context, "
           "token_start_ordinal, token_end_exclusive, start_ns, end_ns, compute_us, comm_us, "
           "idle_us, total_us, self_us, aux_us, aux_events, rooted_position_path, "
           "occurrence_id, parent_occurrence_id, parent_position_id, member_order "
           "FROM traceloom_position_occurrence",
           &st))
    return TL_ERROR;
  int rc, res = TL_OK;
  while (res == TL_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    occ_row r;
    r.pos = col_str(st, 0, &r.pos_n);
    r.db = sqlite3_column_int64(st, 1), r.dev = sqlite3_column_int64(st, 2);
    r.tree = col_str(st, 3, &r.tree_n);
    r.occ_idx = sqlite3_column_int64(st, 4);
    r.ctx = col_str(st, 5, &r.ctx_n);
    r.tok_start = sqlite3_column_int64(st, 6), r.tok_end = sqlite3_column_int64(st, 7);
    r.has_times = sqlite3_column_type(st, 8) != SQLITE_NULL &&
                  sqlite3_column_type(st, 9) != SQLITE_NULL;
    r.start = sqlite3_column_int64(st, 8), r.end = sqlite3_column_int64(st, 9);
    for (int k = 0; res == TL_OK && k < NCOST; k++) res = cost_milli(c, st, 10 + k, &r.cost[k]);
    if (res) break;
    r.aux_events = sqlite3_column_int64(st, 16);
    r.rooted = col_str(st, 17, &r.rooted_n);
    r.occ_id = col_str(st, 18, &r.occ_id_n);
    r.parent_occ = col_str(st, 19, &r.parent_occ_n);
    r.parent_pos = col_str(st, 20, &r.parent_pos_n);
    r.member_order = sqlite3_column_int64(st, 21);
    res = keep_occurrence(c, &r, ps);
  }
  sqlite3_finalize(st);
  if (res == TL_OK && rc != SQLITE_DONE) res = step_done(c, c->db, rc);
  return res;
}

/* put_i64 zero-padded to 3 digits, as printf's %03lld (local ids are >= 1). */
static void put_local(tl_buf *b, int64_t local) {
  if (local >= 0 && local < 100) tl_buf_append(b, local < 10 ? "00" : "0", local < 10 ? 2 : 1);
  put_i64(b, local);
}

/* Appends "node-[d<dev>-]N007" (with "-occurrence-<k>" when k >= 0) to b, as the view's
** generated columns format them. */
static void put_node_id(tl_buf *b, int has_dev, int64_t dev, int64_t local, int64_t k) {
  tl_buf_append(b, "node-", 5);
  if (has_dev) {
    tl_buf_append(b, "d", 1);
    put_i64(b, dev);
    tl_buf_append(b, "-", 1);
  }
  tl_buf_append(b, "N", 1);
  put_local(b, local);
  if (k >= 0) {
    tl_buf_append(b, "-occurrence-", 12);
    put_i64(b, k);
  }
}

/* The stored path and context of an occurrence with children, for its children's rows. */
typedef struct occ_parent {
  size_t rooted_off, rooted_n, ctx_off, ctx_n;
  int has_ctx;
} occ_parent;

/*
** The same rows straight from traceloom_position_occurrence_core: the view computes ids,
** paths and repeat contexts with printf and parent lookups (2 s per million rows); here they
** are formatted in C, an atom's path and context from its parent's (parents come first).
*/
static int occurrences_from_core(pf_ctx *c, occ_pass *ps) {
  sqlite3_stmt *st;
  if (prep(c, c->db,
           "SELECT occurrence_n, parent_n, node_device, position_local, parent_local, "
           "parent_occurrence_idx, db_idx, device_id, occurrence_idx, repeat_iteration, "
           "member_order, slot_ordinal, token_start_ordinal, token_end_exclusive, start_ns, "
           "end_ns, compute_ns, comm_ns, idle_ns, self_ns, aux_ns, aux_events, "
           "rooted_position_path, repeat_context "
           "FROM traceloom_position_occurrence_core ORDER BY occurrence_n",
           &st))
    return TL_ERROR;
  tl_buf pos = {0}, tree = {0}, occ = {0}, parent_occ = {0}, parent_pos = {0}, rooted = {0},
         ctx = {0}, store = {0};
  TL_VEC(occ_parent) parents = {0};
  tl_i64map parent_of = {0}; /* occurrence_n -> index into parents */
  int rc, res = TL_OK;
  while (res == TL_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    occ_row r;
    int has_parent = sqlite3_column_type(st, 1) != SQLITE_NULL;
    int has_dev = sqlite3_column_type(st, 2) != SQLITE_NULL;
    int64_t dev_in_id = sqlite3_column_int64(st, 2), local = sqlite3_column_int64(st, 3);
    r.db = sqlite3_column_int64(st, 6), r.dev = sqlite3_column_int64(st, 7);
    r.occ_idx = sqlite3_column_int64(st, 8);
    r.member_order = sqlite3_column_int64(st, 10);
    r.tok_start = sqlite3_column_int64(st, 12), r.tok_end = sqlite3_column_int64(st, 13);
    r.has_times = sqlite3_column_type(st, 14) != SQLITE_NULL &&
                  sqlite3_column_type(st, 15) != SQLITE_NULL;
    r.start = sqlite3_column_int64(st, 14), r.end = sqlite3_column_int64(st, 15);
    int64_t compute = sqlite3_column_int64(st, 16), comm = sqlite3_column_int64(st, 17),
            idle = sqlite3_column_int64(st, 18);
    /* The view's order: compute, comm, idle, total, self, aux (ns are exactly milli-us). */
    r.cost[0] = compute, r.cost[1] = comm, r.cost[2] = idle, r.cost[3] = compute + comm + idle;
    r.cost[4] = sqlite3_column_int64(st, 19), r.cost[5] = sqlite3_column_int64(st, 20);
    r.aux_events = sqlite3_column_int64(st, 21);
    tl_buf_reset(&pos), tl_buf_reset(&tree), tl_buf_reset(&occ);
    put_node_id(&pos, has_dev, dev_in_id, local, -1);
    put_node_id(&occ, has_dev, dev_in_id, local, r.occ_idx);
    tl_buf_append(&tree, "tree-db", 7);
    put_i64(&tree, r.db);
    tl_buf_append(&tree, "-dev", 4);
    put_i64(&tree, r.dev);
    tl_buf_reset(&parent_occ), tl_buf_reset(&parent_pos);
    if (has_parent) {
      int64_t plocal = sqlite3_column_int64(st, 4);
      put_node_id(&parent_pos, has_dev, dev_in_id, plocal, -1);
      put_node_id(&parent_occ, has_dev, dev_in_id, plocal, sqlite3_column_int64(st, 5));
    }
    size_t stored_n;
    const char *stored = col_str(st, 22, &stored_n);
    const occ_parent *par = NULL;
    if (!stored && has_parent) {
      const int64_t *pi = tl_i64map_get(&parent_of, sqlite3_column_int64(st, 1));
      if (!pi) { /* the parent has no stored path: not the shape this reader assumes */
        res = PF_FALLBACK;
        break;
      }
      par = &parents.v[*pi];
    }
    tl_buf_reset(&rooted), tl_buf_reset(&ctx);
    int has_ctx;
    if (stored || !par) {
      if (stored) tl_buf_append(&rooted, stored, stored_n);
      size_t cn;
      const char *cs = col_str(st, 23, &cn);
      has_ctx = cs != NULL;
      if (cs) tl_buf_append(&ctx, cs, cn);
    } else {
      tl_buf_append(&rooted, store.p + par->rooted_off, par->rooted_n);
      tl_buf_append(&rooted, "/s", 2);
      put_i64(&rooted, sqlite3_column_int64(st, 11));
      tl_buf_append(&rooted, "/", 1);
      tl_buf_append(&rooted, pos.p, pos.n);
      has_ctx = par->has_ctx;
      if (par->has_ctx) tl_buf_append(&ctx, store.p + par->ctx_off, par->ctx_n);
      if (sqlite3_column_type(st, 9) != SQLITE_NULL) { /* a repeat iteration */
        if (par->has_ctx) tl_buf_append(&ctx, ",", 1);
        tl_buf_append(&ctx, "N", 1);
        put_local(&ctx, sqlite3_column_int64(st, 4));
        tl_buf_append(&ctx, ":", 1);
        put_i64(&ctx, r.member_order);
        has_ctx = 1;
      }
    }
    if (stored) { /* children extend this path and context */
      occ_parent op = {.rooted_off = store.n, .rooted_n = rooted.n, .has_ctx = has_ctx};
      tl_buf_append(&store, rooted.p, rooted.n);
      op.ctx_off = store.n, op.ctx_n = ctx.n;
      tl_buf_append(&store, ctx.p, ctx.n);
      if (TL_VEC_PUSH(&parents, op) ||
          tl_i64map_put(&parent_of, sqlite3_column_int64(st, 0), (int64_t)parents.n - 1)) {
        res = tl_nomem(c->e);
        break;
      }
    }
    if (pos.oom || tree.oom || occ.oom || parent_occ.oom || parent_pos.oom || rooted.oom ||
        ctx.oom || store.oom) {
      res = tl_nomem(c->e);
      break;
    }
    r.pos = pos.p, r.pos_n = pos.n, r.tree = tree.p, r.tree_n = tree.n;
    r.occ_id = occ.p, r.occ_id_n = occ.n;
    r.parent_occ = has_parent ? parent_occ.p : NULL, r.parent_occ_n = parent_occ.n;
    r.parent_pos = has_parent ? parent_pos.p : NULL, r.parent_pos_n = parent_pos.n;
    r.rooted = rooted.n ? rooted.p : NULL, r.rooted_n = rooted.n;
    r.ctx = has_ctx ? (ctx.n ? ctx.p : "") : NULL, r.ctx_n = ctx.n;
    res = keep_occurrence(c, &r, ps);
  }
  sqlite3_finalize(st);
  if (res == TL_OK && rc != SQLITE_DONE) res = step_done(c, c->db, rc);
  tl_buf_free(&pos), tl_buf_free(&tree), tl_buf_free(&occ), tl_buf_free(&parent_occ);
  tl_buf_free(&parent_pos), tl_buf_free(&rooted), tl_buf_free(&ctx), tl_buf_free(&store);
  TL_VEC_FREE(&parents);
  tl_i64map_free(&parent_of);
  return res;
}

/*
** traceloom_tree_node_occurrence (and the rooted path the SQL reader joins to it) straight
** from the occurrence rows: one sequential pass, positions resolved per (position, tree) once
** instead of per row, costs rounded in C. The same pass keeps the child occurrences of
** repeat occurrences, so repeat_bodies needs no membership query.
** PF_FALLBACK (nothing kept) when the database is not shaped as the views assume.
*/
static int load_occurrences_fast(pf_ctx *c) {
  if (!has_relation(c->db, "traceloom_position_occurrence") ||
      !has_relation(c->db, "traceloom_semantic_tree") ||
      !has_relation(c->db, "traceloom_semantic_node") ||
      !is_view(c->db, "traceloom_tree_node_occurrence"))
    return PF_FALLBACK;
  int res = load_trees(c);
  if (res != TL_OK) return res;
  occ_pass ps = {.tree = SIZE_MAX, .last_ctx = TL_STR_NONE, .last_parent = TL_STR_NONE,
                 .last_pp = TL_STR_NOMEM};
  res = is_view(c->db, "traceloom_position_occurrence") &&
                has_column(c->db, "traceloom_position_occurrence_core", "position_local")
            ? occurrences_from_core(c, &ps)
            : occurrences_from_relation(c, &ps);
  if (res == TL_OK) res = resolve_parents(c);
  if (res == PF_FALLBACK) fast_reset(c);
  if (res == TL_OK) c->fast_bodies = 1;
  return res;
}

static int load_occurrences_sql(pf_ctx *c);

static int load_occurrences(pf_ctx *c) {
  int res = load_occurrences_fast(c);
  if (res == TL_OK) return load_anchor_events(c);
  if (res != PF_FALLBACK) return res;
  return load_occurrences_sql(c);
}

static int load_occurrences_sql(pf_ctx *c) {
  int hpo = has_relation(c->db, "traceloom_position_occurrence") &&
            has_relation(c->db, "traceloom_semantic_tree");
  tl_buf sql = {0};
  tl_buf_puts(&sql, "SELECT o.node_id, o.db_idx, o.device_id, o.view_name, o.occurrence_idx, "
                    "o.repeat_context, o.anchor_start_idx, o.anchor_end_idx, o.anchor_count, "
                    "o.start_ns, o.end_ns, o.compute_us, o.comm_us, o.idle_us, o.total_us, "
                    "o.self_us, o.aux_us, o.aux_events, ");
  tl_buf_puts(&sql, hpo ? "p.rooted_position_path " : "NULL ");
  PUT_LIT(&sql, "FROM traceloom_tree_node_occurrence o ");
  if (hpo)
    tl_buf_puts(&sql, "LEFT JOIN traceloom_semantic_tree t ON t.db_idx = o.db_idx AND "
                      "t.device_id = o.device_id AND t.semantic_projection = o.view_name "
                      "LEFT JOIN traceloom_position_occurrence p ON p.db_idx = o.db_idx AND "
                      "p.tree_id = t.tree_id AND p.position_id = o.node_id AND "
                      "p.occurrence_idx = o.occurrence_idx ");
  if (sql.oom) return tl_buf_free(&sql), tl_nomem(c->e);
  sqlite3_stmt *st;
  int rc = prep(c, c->db, sql.p, &st);
  tl_buf_free(&sql);
  if (rc) return TL_ERROR;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    uint32_t view = col_intern(c, st, 3);
    if (view == TL_STR_NOMEM) break;
    int64_t node = find_node(c, sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2), view,
                             (const char *)sqlite3_column_text(st, 0));
    if (node < 0) {
      sqlite3_finalize(st);
      return tl_fail(c->e, "traceloom_export_perfetto: traceloom_tree_node_occurrence row for "
                           "node %s (db %lld, device %lld, view %s) has no traceloom_v_tree_node "
                           "row",
                     sqlite3_column_text(st, 0), (long long)sqlite3_column_int64(st, 1),
                     (long long)sqlite3_column_int64(st, 2), tl_strpool_str(c->pool, view));
    }
    pf_occ o;
    memset(&o, 0, sizeof o);
    o.node = node;
    o.event = EV_NONE;
    o.occ_idx = sqlite3_column_int64(st, 4);
    o.repeat_context = col_intern(c, st, 5);
    o.anchor_start = sqlite3_column_int64(st, 6);
    o.anchor_end = sqlite3_column_int64(st, 7);
    o.anchor_count = sqlite3_column_int64(st, 8);
    if (sqlite3_column_type(st, 9) == SQLITE_NULL || sqlite3_column_type(st, 10) == SQLITE_NULL) {
      sqlite3_finalize(st);
      return tl_fail(c->e, "traceloom_export_perfetto: occurrence %lld of node %s has no "
                           "start_ns/end_ns in traceloom_tree_node_occurrence",
                     (long long)o.occ_idx, tl_strpool_str(c->pool, c->nodes.v[node].node_id));
    }
    o.start = sqlite3_column_int64(st, 9);
    o.end = sqlite3_column_int64(st, 10);
    for (int k = 0; k < NCOST; k++) o.cost[k] = col_milli(st, 11 + k);
    o.aux_events = sqlite3_column_int64(st, 17);
    o.rooted_path = text_pool(c, st, 18);
    o.depth = o.rooted_path != TEXT_NULL && o.rooted_path != TEXT_NOMEM
                  ? path_depth(text_str(c, o.rooted_path))
                  : c->nodes.v[node].tree_depth;
    if (o.repeat_context == TL_STR_NOMEM || o.rooted_path == TEXT_NOMEM) break;
    if (!c->has_origin || o.start < c->origin) c->origin = o.start, c->has_origin = 1;
    int64_t key = (int64_t)((uint64_t)node << 32 | (uint64_t)(uint32_t)o.occ_idx);
    if (tl_i64map_put(&c->occ_by_key, key, (int64_t)c->occs.n) || TL_VEC_PUSH(&c->occs, o)) break;
  }
  sqlite3_finalize(st);
  if (rc == SQLITE_ROW) return tl_nomem(c->e);
  if (step_done(c, c->db, rc)) return TL_ERROR;
  return load_anchor_events(c);
}

/* Exact replay members by launch anchor event (absent tables: no splice). */
static int load_members(pf_ctx *c) {
  if (!has_relation(c->db, "traceloom_graph_body_member") ||
      !has_relation(c->db, "traceloom_graph_launch"))
    return TL_OK;
  sqlite3_stmt *st;
  if (prep(c, c->db,
           "SELECT m.db_idx, l.graph_event_id, m.member_id, m.launch_id, m.replay_unit_id, "
           "m.event_id, m.kind, m.identity, m.stream_id, m.start_ns, m.end_ns, m.lane_ordinal, "
           "m.task_ordinal, m.member_order, l.anchor_id, m.aggregate_n, m.device_id "
           "FROM traceloom_graph_body_member m "
           "JOIN traceloom_graph_launch l ON l.launch_id = m.launch_id "
           "WHERE l.anchor_id IS NOT NULL ORDER BY m.db_idx, l.graph_launch_occurrence_id, "
           "m.member_order",
           &st))
    return TL_ERROR;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    pf_member m;
    memset(&m, 0, sizeof m);
    m.db = sqlite3_column_int64(st, 0);
    m.launch_event = col_intern(c, st, 1);
    m.member_id = col_intern(c, st, 2);
    m.launch_id = col_intern(c, st, 3);
    m.unit_id = col_intern(c, st, 4);
    m.event_id = col_intern(c, st, 5);
    m.kind = col_intern(c, st, 6);
    m.identity = col_intern(c, st, 7);
    m.has_stream = sqlite3_column_type(st, 8) != SQLITE_NULL;
    m.stream_id = sqlite3_column_int64(st, 8);
    m.start = sqlite3_column_int64(st, 9);
    m.end = sqlite3_column_int64(st, 10);
    m.lane = sqlite3_column_int64(st, 11);
    m.task = sqlite3_column_int64(st, 12);
    m.order = sqlite3_column_int64(st, 13);
    m.anchor_id = col_intern(c, st, 14);
    m.aggregate = sqlite3_column_int64(st, 15);
    m.device = sqlite3_column_int64(st, 16);
    if (m.launch_event == TL_STR_NOMEM || m.member_id == TL_STR_NOMEM ||
        m.launch_id == TL_STR_NOMEM || m.unit_id == TL_STR_NOMEM || m.event_id == TL_STR_NOMEM ||
        m.kind == TL_STR_NOMEM || m.identity == TL_STR_NOMEM || m.anchor_id == TL_STR_NOMEM)
      break;
    int64_t key = (int64_t)((uint64_t)m.db << 32 | m.launch_event);
    if (!tl_i64map_get(&c->member_by_launch, key) &&
        tl_i64map_put(&c->member_by_launch, key, (int64_t)c->members.n))
      break;
    if (TL_VEC_PUSH(&c->members, m)) break;
  }
  sqlite3_finalize(st);
  if (rc == SQLITE_ROW) return tl_nomem(c->e);
  return step_done(c, c->db, rc);
}

/* ---- Slices ---------------------------------------------------------------------------- */

static int add_slice(pf_ctx *c, pf_slice s, size_t args_off) {
  s.args_off = args_off;
  s.args_len = c->args.n - args_off;
  if (c->args.oom || s.name == TL_STR_NOMEM || TL_VEC_PUSH(&c->slices, s)) return tl_nomem(c->e);
  return TL_OK;
}

/* The structural args after the identity ones (anchor range, costs). */
static void args_costs(tl_buf *b, int64_t as, int64_t ae, int64_t ac, const int64_t *cost,
                       int64_t aux_events, int *first) {
  kv_i64(b, "anchor_start_idx", as, first);
  kv_i64(b, "anchor_end_idx", ae, first);
  kv_i64(b, "anchor_count", ac, first);
  for (int k = 0; k < C_AUX_US; k++) kv_milli(b, cost_names[k], cost[k], first);
  kv_i64(b, "aux_events", aux_events, first);
  kv_milli(b, "aux_us", cost[C_AUX_US], first);
}

static void args_common(tl_buf *b, int64_t db, int event, int64_t depth, int *first) {
  kv_i64(b, "db_idx", db, first);
  kv_str(b, "projection_plane", event ? "device_events" : "structure", first);
  kv_i64n(b, "display_depth", depth, event, first);
  kv_raw(b, "replay_derived", "false", first);
}

static void occurrence_args(const pf_ctx *c, tl_buf *b, const pf_occ *o) {
  const pf_node *n = &c->nodes.v[o->node];
  int event = n->kind == KIND_ATOM, first = 1;
  PUT_LIT(b, "{");
  kv_str(b, "semantic_kind", "published_tree_occurrence", &first);
  kv_pool(b, "node_id", c->pool, n->node_id, &first);
  kv_i64(b, "occurrence_idx", o->occ_idx, &first);
  kv_i64(b, "database_index", n->db, &first);
  kv_i64(b, "device_id", n->dev, &first);
  kv_pool(b, "view_name", c->pool, n->view, &first);
  kv_pool(b, "parent_node_id", c->pool, n->parent, &first);
  kv_pool(b, "repeat_context", c->pool, o->repeat_context, &first);
  kv_text(c, b, "rooted_role_path", o->rooted_path, &first);
  kv_i64(b, "tree_depth", n->tree_depth, &first);
  kv_str(b, "topology_signature_sha256", n->sha, &first);
  args_costs(b, o->anchor_start, o->anchor_end, o->anchor_count, o->cost, o->aux_events, &first);
  if (event) {
    kv_pool(b, "symbol", c->pool, n->label, &first);
    kv_event(c, b, "event_id", o->event, &first);
    kv_i64n(b, "stream_id", o->stream_id, !o->has_stream, &first);
  }
  args_common(b, n->db, event, o->depth, &first);
  PUT_LIT(b, "}");
}

static int occurrence_slice(pf_ctx *c, size_t i) {
  const pf_occ *o = &c->occs.v[i];
  const pf_node *n = &c->nodes.v[o->node];
  if (n->kind == KIND_REPEAT) return TL_OK;
  int event = n->kind == KIND_ATOM;
  if (event && c->opts.ranks.n) return TL_OK; /* §5.3: suppressed in distributed mode */
  pf_slice s = {.a = n->db, .b = n->dev, .depth = event ? 0 : o->depth, .start = o->start,
                .end = o->end, .view = n->view, .pid = PID_TREE, .is_event = event,
                .cat = event ? CAT_EVENT : CAT_STRUCT, .src = SRC_OCC, .ref = i};
  const char *local = tl_strpool_str(c->pool, n->local);
  char tmp[1024];
  if (event)
    s.name = n->label != TL_STR_NONE ? n->label : n->local;
  else {
    if (strcmp(tl_strpool_str(c->pool, n->category), "model_rule") == 0)
      snprintf(tmp, sizeof tmp, "%s \xC2\xB7 %s", tl_strpool_str(c->pool, n->label), local);
    else
      snprintf(tmp, sizeof tmp, "%s \xC2\xB7 %s", local,
               n->parent == TL_STR_NONE ? "root" : "seq");
    s.name = tl_strpool_intern_cstr(c->pool, tmp);
  }
  if (event && c->members.n) {
    /* A completely reconstructed launch: its exact members replace the opaque slice. */
    uint32_t ev = ev_pool_id(c, o->event);
    int64_t *first = ev == TL_STR_NOMEM
                         ? NULL
                         : tl_i64map_get(&c->member_by_launch, (int64_t)((uint64_t)n->db << 32 | ev));
    if (first) {
      const pf_member *m0 = &c->members.v[*first];
      for (size_t k = (size_t)*first; k < c->members.n && c->members.v[k].db == n->db &&
                                      c->members.v[k].launch_event == m0->launch_event;
           k++) {
        pf_member *m = &c->members.v[k];
        m->occ = i;
        pf_slice ms = s;
        ms.start = m->start, ms.end = m->end, ms.cat = CAT_EVENT, ms.src = SRC_MEMBER, ms.ref = k;
        ms.name = m->identity ? m->identity : m->member_id;
        if (TL_VEC_PUSH(&c->slices, ms)) return tl_nomem(c->e);
        c->n_member++;
      }
      return TL_OK;
    }
  }
  if (event) c->n_atom++;
  else c->n_struct++;
  if (s.name == TL_STR_NOMEM || TL_VEC_PUSH(&c->slices, s)) return tl_nomem(c->e);
  return TL_OK;
}

/* perfetto.md section 6.4: the launch part, then the member part. */
static void member_args(const pf_ctx *c, tl_buf *b, const pf_member *m) {
  const pf_occ *o = &c->occs.v[m->occ];
  const pf_node *n = &c->nodes.v[o->node];
  int first = 1;
  char agg[48];
  snprintf(agg, sizeof agg, "replay-cost-aggregate-%lld", (long long)m->aggregate);
  PUT_LIT(b, "{");
  kv_str(b, "semantic_kind", "exact_replay_member", &first);
  kv_pool(b, "launch_id", c->pool, m->launch_id, &first);
  kv_i64(b, "device_id", m->device, &first);
  kv_i64n(b, "stream_id", m->stream_id, !m->has_stream, &first);
  kv_pool(b, "anchor_id", c->pool, m->anchor_id, &first);
  kv_pool(b, "replay_unit_id", c->pool, m->unit_id, &first);
  kv_str(b, "geometry", "exact_launch_members; envelopes_include_gaps; non_additive", &first);
  kv_pool(b, "member_id", c->pool, m->member_id, &first);
  kv_pool(b, "event_id", c->pool, m->event_id, &first);
  kv_i64(b, "lane_ordinal", m->lane, &first);
  kv_i64(b, "task_ordinal", m->task, &first);
  kv_i64(b, "position_ordinal", m->order, &first);
  kv_str(b, "aggregate_id", agg, &first);
  kv_pool(b, "kind", c->pool, m->kind, &first);
  kv_pool(b, "launch_event_id", c->pool, m->launch_event, &first);
  kv_pool(b, "node_id", c->pool, n->node_id, &first);
  kv_i64(b, "occurrence_idx", o->occ_idx, &first);
  kv_i64(b, "database_index", n->db, &first);
  kv_pool(b, "view_name", c->pool, n->view, &first);
  kv_i64(b, "db_idx", n->db, &first);
  kv_str(b, "projection_plane", "device_events", &first);
  kv_i64n(b, "display_depth", 0, 1, &first);
  kv_raw(b, "replay_derived", "true", &first);
  PUT_LIT(b, "}");
}

static void body_args(const pf_ctx *c, tl_buf *b, const pf_body *bd) {
  const pf_occ *ro = &c->occs.v[bd->rep_occ];
  const pf_node *n = &c->nodes.v[ro->node];
  char alias[16], tmp[1024];
  motif_alias(n->motif, alias);
  const char *pctx = tl_strpool_str(c->pool, ro->repeat_context);
  int first = 1;
  PUT_LIT(b, "{");
  kv_str(b, "semantic_kind", "derived_repeat_body_window", &first);
  kv_str(b, "motif_alias", alias, &first);
  kv_pool(b, "repeat_node_id", c->pool, n->node_id, &first);
  kv_i64(b, "aggregate_occurrence_idx", ro->occ_idx, &first);
  kv_i64(b, "body_ordinal", bd->ordinal, &first);
  kv_i64(b, "repeat_count", n->repeat_count, &first);
  snprintf(tmp, sizeof tmp, "%s@%lld/body-%lld", tl_strpool_str(c->pool, n->node_id),
           (long long)ro->occ_idx, (long long)bd->ordinal);
  kv_str(b, "body_id", tmp, &first);
  kv_i64(b, "database_index", n->db, &first);
  kv_i64(b, "device_id", n->dev, &first);
  kv_pool(b, "view_name", c->pool, n->view, &first);
  kv_pool(b, "parent_node_id", c->pool, n->parent, &first);
  snprintf(tmp, sizeof tmp, "%s%s%s#%lld", pctx, *pctx ? "/" : "",
           tl_strpool_str(c->pool, n->local), (long long)bd->ordinal);
  kv_str(b, "repeat_context", tmp, &first);
  kv_text(c, b, "rooted_role_path", ro->rooted_path, &first);
  kv_i64(b, "tree_depth", n->tree_depth, &first);
  kv_str(b, "topology_signature_sha256", n->sha, &first);
  kv_i64(b, "body_child_occurrences", bd->children, &first);
  args_costs(b, bd->as, bd->ae, bd->ac, bd->cost, bd->aux_events, &first);
  args_common(b, n->db, 0, ro->depth, &first);
  PUT_LIT(b, "}");
}

static int body_slice(pf_ctx *c, const pf_body *bd) {
  const pf_occ *ro = &c->occs.v[bd->rep_occ];
  const pf_node *n = &c->nodes.v[ro->node];
  char alias[16], tmp[1024];
  motif_alias(n->motif, alias);
  snprintf(tmp, sizeof tmp, "%s \xC2\xB7 motif %s \xC2\xB7 body %lld/%lld",
           tl_strpool_str(c->pool, n->local), alias, (long long)bd->ordinal,
           (long long)n->repeat_count);
  pf_slice s = {.a = n->db, .b = n->dev, .depth = ro->depth, .start = bd->start, .end = bd->end,
                .view = n->view, .pid = PID_TREE, .cat = CAT_BODY, .src = SRC_BODY,
                .ref = c->bodies.n, .name = tl_strpool_intern_cstr(c->pool, tmp)};
  c->n_body++;
  if (s.name == TL_STR_NOMEM || TL_VEC_PUSH(&c->bodies, *bd) || TL_VEC_PUSH(&c->slices, s))
    return tl_nomem(c->e);
  return TL_OK;
}

/* The body being summed, and the bodies seen per repeat occurrence. */
typedef struct pf_body_acc {
  pf_body cur;
  int have;
  int64_t *nbodies;
} pf_body_acc;

/* One (repeat occurrence, member_order, child occurrence) row, in membership order. */
static int body_row(pf_ctx *c, pf_body_acc *a, int64_t pn, const int64_t *ro, const int64_t *co,
                    int64_t ord, const char *child_pos, int64_t child_idx, const char *parent_pos,
                    int64_t parent_idx) {
  if (!ro || !co)
    return tl_fail(c->e, "traceloom_export_perfetto: incomplete repeat-body projection: member "
                         "%s occurrence %lld of repeat %s occurrence %lld has no published "
                         "traceloom_tree_node_occurrence row",
                   child_pos, (long long)child_idx, parent_pos, (long long)parent_idx);
  const pf_occ *ch = &c->occs.v[*co];
  pf_body *cur = &a->cur;
  if (a->have && cur->rep_occ == *ro && cur->ordinal == ord) {
    if (ch->start < cur->start) cur->start = ch->start;
    if (ch->end > cur->end) cur->end = ch->end;
    if (ch->anchor_start < cur->as) cur->as = ch->anchor_start;
    if (ch->anchor_end > cur->ae) cur->ae = ch->anchor_end;
    cur->ac += ch->anchor_count;
    cur->aux_events += ch->aux_events;
    for (int k = 0; k < NCOST; k++) cur->cost[k] += ch->cost[k];
    cur->children++;
    return TL_OK;
  }
  if (a->have && body_slice(c, cur) != TL_OK) return TL_ERROR;
  /* Ordinals of one repeat occurrence must run 1, 2, ... without gaps or repeats. */
  if (ord != a->nbodies[*ro] + 1)
    return tl_fail(c->e, "traceloom_export_perfetto: incomplete repeat-body projection: repeat "
                         "%s occurrence %lld has body ordinal %lld after %lld",
                   tl_strpool_str(c->pool, c->nodes.v[pn].node_id),
                   (long long)c->occs.v[*ro].occ_idx, (long long)ord,
                   (long long)a->nbodies[*ro]);
  a->nbodies[*ro] = ord;
  memset(cur, 0, sizeof *cur);
  cur->rep_occ = *ro, cur->ordinal = ord, cur->start = ch->start, cur->end = ch->end;
  cur->as = ch->anchor_start, cur->ae = ch->anchor_end, cur->ac = ch->anchor_count;
  cur->aux_events = ch->aux_events, cur->children = 1;
  memcpy(cur->cost, ch->cost, sizeof cur->cost);
  a->have = 1;
  return TL_OK;
}

/* The rows of traceloom_position_member joined to their occurrences (views). */
static int body_rows_sql(pf_ctx *c, pf_body_acc *a) {
  sqlite3_stmt *st;
  if (prep(c, c->db,
           "SELECT m.db_idx, m.device_id, t.semantic_projection, m.parent_position_id, "
           "po.occurrence_idx, m.member_order, m.child_position_id, co.occurrence_idx "
           "FROM traceloom_position_member m "
           "JOIN traceloom_semantic_tree t ON t.db_idx = m.db_idx AND t.device_id = m.device_id "
           "AND t.tree_id = m.tree_id "
           "JOIN traceloom_position_occurrence po ON po.db_idx = m.db_idx AND po.tree_id = "
           "m.tree_id AND po.occurrence_id = m.parent_occurrence_id "
           "JOIN traceloom_position_occurrence co ON co.db_idx = m.db_idx AND co.tree_id = "
           "m.tree_id AND co.occurrence_id = m.child_occurrence_id "
           "WHERE m.member_kind = 'child_occurrence' "
           "ORDER BY m.db_idx, m.device_id, m.tree_id, m.parent_position_id, po.occurrence_idx, "
           "m.member_order",
           &st))
    return TL_ERROR;
  int rc, err = TL_OK;
  while (err == TL_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    uint32_t view = col_intern(c, st, 2);
    if (view == TL_STR_NOMEM) {
      err = tl_nomem(c->e);
      break;
    }
    int64_t db = sqlite3_column_int64(st, 0), dev = sqlite3_column_int64(st, 1);
    int64_t pn = find_node(c, db, dev, view, (const char *)sqlite3_column_text(st, 3));
    if (pn < 0 || c->nodes.v[pn].kind != KIND_REPEAT) continue;
    int64_t cn = find_node(c, db, dev, view, (const char *)sqlite3_column_text(st, 6));
    int64_t pk = (int64_t)((uint64_t)pn << 32 | (uint64_t)(uint32_t)sqlite3_column_int64(st, 4));
    int64_t *ro = tl_i64map_get(&c->occ_by_key, pk);
    int64_t *co = cn < 0 ? NULL
                         : tl_i64map_get(&c->occ_by_key,
                                         (int64_t)((uint64_t)cn << 32 |
                                                   (uint64_t)(uint32_t)sqlite3_column_int64(st, 7)));
    err = body_row(c, a, pn, ro, co, sqlite3_column_int64(st, 5),
                   (const char *)sqlite3_column_text(st, 6), sqlite3_column_int64(st, 7),
                   (const char *)sqlite3_column_text(st, 3), sqlite3_column_int64(st, 4));
  }
  sqlite3_finalize(st);
  if (err == TL_OK && rc != SQLITE_DONE) err = step_done(c, c->db, rc);
  return err;
}

typedef struct pf_child_sort {
  const pf_ctx *c;
  const int64_t *node_rank;
} pf_child_sort;

/* The SQL reader's ORDER BY: db_idx, device_id, tree_id (the tree order), parent position
** text, parent occurrence_idx, member_order. */
static int cmp_child(const void *pa, const void *pb, void *ctx) {
  const pf_child_sort *k = ctx;
  const pf_child *x = pa, *y = pb;
  int r;
  if ((r = cmp_i64(x->tree, y->tree)) || (r = cmp_i64(k->node_rank[x->pn], k->node_rank[y->pn])) ||
      (r = cmp_i64(x->parent_idx, y->parent_idx)) || (r = cmp_i64(x->order, y->order)))
    return r;
  return cmp_i64(x->idx, y->idx);
}

static int cmp_node_id(const void *pa, const void *pb, void *ctx) {
  const pf_ctx *c = ctx;
  const pf_node *x = &c->nodes.v[*(const int64_t *)pa], *y = &c->nodes.v[*(const int64_t *)pb];
  return strcmp(tl_strpool_str(c->pool, x->node_id), tl_strpool_str(c->pool, y->node_id));
}

/* The same rows from the child occurrences the fast reader kept. */
static int body_rows_fast(pf_ctx *c, pf_body_acc *a) {
  size_t nn = c->nodes.n;
  int64_t *order = malloc((nn + 1) * sizeof *order), *rank = malloc((nn + 1) * sizeof *rank);
  if (!order || !rank) return free(order), free(rank), tl_nomem(c->e);
  for (size_t i = 0; i < nn; i++) order[i] = (int64_t)i;
  qsort_r(order, nn, sizeof *order, cmp_node_id, c);
  for (size_t i = 0; i < nn; i++)
    rank[order[i]] = i && cmp_node_id(&order[i - 1], &order[i], c) == 0 ? rank[order[i - 1]]
                                                                        : (int64_t)i;
  pf_child_sort k = {c, rank};
  qsort_r(c->children.v, c->children.n, sizeof *c->children.v, cmp_child, &k);
  free(order);
  free(rank);
  int err = TL_OK;
  for (size_t i = 0; err == TL_OK && i < c->children.n; i++) {
    const pf_child *ch = &c->children.v[i];
    if (ch->parent_idx == INT64_MIN) continue; /* no parent occurrence row: the join drops it */
    int64_t cn;
    int member;
    if ((err = resolve_pos(c, ch->pos, ch->tree, &cn, &member))) break;
    int64_t pk = (int64_t)((uint64_t)ch->pn << 32 | (uint64_t)(uint32_t)ch->parent_idx);
    int64_t *ro = tl_i64map_get(&c->occ_by_key, pk);
    int64_t *co = cn < 0 ? NULL
                         : tl_i64map_get(&c->occ_by_key,
                                         (int64_t)((uint64_t)cn << 32 | (uint64_t)(uint32_t)ch->idx));
    err = body_row(c, a, ch->pn, ro, co, ch->order, tl_strpool_str(c->pool, ch->pos), ch->idx,
                   tl_strpool_str(c->pool, c->nodes.v[ch->pn].node_id), ch->parent_idx);
  }
  return err;
}

/*
** Repeat occurrences become one window per body: the direct child occurrences grouped by
** (parent repeat occurrence, member_order) from HPO membership. Fails closed when any
** repeat occurrence does not have exactly bodies 1..repeat_count.
*/
static int repeat_bodies(pf_ctx *c) {
  int nrep = 0;
  for (size_t i = 0; i < c->occs.n; i++) nrep += c->nodes.v[c->occs.v[i].node].kind == KIND_REPEAT;
  if (!nrep) return TL_OK;
  if (!has_relation(c->db, "traceloom_position_member") ||
      !has_relation(c->db, "traceloom_position_occurrence") ||
      !has_relation(c->db, "traceloom_semantic_tree"))
    return tl_fail(c->e, "traceloom_export_perfetto: incomplete repeat-body projection: the "
                         "analysis has repeat occurrences but no traceloom_position_member / "
                         "traceloom_position_occurrence / traceloom_semantic_tree relations");
  pf_body_acc a;
  memset(&a, 0, sizeof a);
  if (!(a.nbodies = calloc(c->occs.n + 1, sizeof *a.nbodies))) return tl_nomem(c->e);
  int err = c->fast_bodies ? body_rows_fast(c, &a) : body_rows_sql(c, &a);
  if (err == TL_OK && a.have) err = body_slice(c, &a.cur);
  for (size_t i = 0; err == TL_OK && i < c->occs.n; i++) {
    const pf_node *n = &c->nodes.v[c->occs.v[i].node];
    if (n->kind == KIND_REPEAT && a.nbodies[i] != n->repeat_count)
      err = tl_fail(c->e, "traceloom_export_perfetto: incomplete repeat-body projection: repeat "
                          "%s occurrence %lld has %lld bod%s, repeat_count is %lld",
                    tl_strpool_str(c->pool, n->node_id), (long long)c->occs.v[i].occ_idx,
                    (long long)a.nbodies[i], a.nbodies[i] == 1 ? "y" : "ies",
                    (long long)n->repeat_count);
  }
  free(a.nbodies);
  return err;
}

/* ---- Clock model (traceloom.distributed-clock-model/v1) ---------------------------------- */

/* A decimal number of the record as text (kept for the args) and as long double. */
static int clock_number(const tl_json *rec, const char *key, char *text, size_t cap,
                        long double *out) {
  const tl_json *v = tl_json_get(rec, key);
  const char *t = v ? tl_json_number_text(v) : NULL;
  if (!t || strlen(t) >= cap) return -1;
  snprintf(text, cap, "%s", t);
  char *end;
  errno = 0;
  *out = strtold(t, &end);
  return *end || errno || !isfinite(*out) ? -1 : 0;
}

static const char *clock_string(const tl_json *rec, const char *key) {
  const tl_json *v = tl_json_get(rec, key);
  size_t n;
  return v ? tl_json_str(v, &n) : NULL;
}

static int64_t rank_index(const pf_ctx *c, int64_t rank) {
  for (size_t i = 0; i < c->opts.ranks.n; i++)
    if (c->opts.ranks.v[i].rank == rank) return (int64_t)i;
  return -1;
}

/*
** Reads and validates the whole receipt before anything is written. Fails closed on a
** malformed, non-ASCII or oversized file, an unknown rank, scale <= 0, records that
** disagree on status / marker_contract / target_clock_domain, or not exactly one
** metric=end record per non-reference rank.
*/
static int load_clock_model(pf_ctx *c) {
  const char *path = c->opts.clock_model;
  tl_err *e = c->e;
  FILE *f = fopen(path, "rb");
  if (!f)
    return tl_fail(e, "traceloom_export_perfetto: cannot open clock model '%s': %s", path,
                   strerror(errno));
  char *data = malloc(CLOCK_MAX_BYTES + 1);
  size_t n = data ? fread(data, 1, CLOCK_MAX_BYTES + 1, f) : 0;
  int rd_err = ferror(f);
  fclose(f);
  if (!data) return tl_nomem(e);
  if (rd_err) {
    free(data);
    return tl_fail(e, "traceloom_export_perfetto: cannot read clock model '%s'", path);
  }
  if (n > CLOCK_MAX_BYTES) {
    free(data);
    return tl_fail(e, "traceloom_export_perfetto: clock model '%s' is larger than 16 MiB", path);
  }
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)data[i] >= 0x80 || data[i] == 0) {
      free(data);
      return tl_fail(e, "traceloom_export_perfetto: clock model '%s' is not ASCII (byte %zu)",
                     path, i);
    }
  tl_sha256 sh;
  uint8_t d[32];
  tl_sha256_init(&sh);
  tl_sha256_update(&sh, data, n);
  tl_sha256_final(&sh, d);
  tl_sha256_hex(d, c->clock_sha);
  size_t nr = c->opts.ranks.n;
  c->clock = calloc(nr, sizeof *c->clock);
  int *seen = calloc(nr, sizeof *seen);
  int rc = c->clock && seen ? TL_OK : tl_nomem(e);
  const char *target_domain = NULL;
  tl_json *docs[2] = {NULL, NULL}; /* keeps the first end record's strings alive */
  int64_t ref_rank = -1, line = 0;
  for (size_t pos = 0; rc == TL_OK && pos < n;) {
    size_t eol = pos;
    while (eol < n && data[eol] != '\n') eol++;
    line++;
    size_t a = pos, b = eol;
    pos = eol + 1;
    while (a < b && (data[a] == ' ' || data[a] == '\t' || data[a] == '\r')) a++;
    while (b > a && (data[b - 1] == ' ' || data[b - 1] == '\t' || data[b - 1] == '\r')) b--;
    if (a == b) continue;
    tl_json *rec = NULL;
    tl_err pe = {0};
    if (tl_json_parse(data + a, b - a, &rec, &pe)) {
      rc = tl_fail(e, "traceloom_export_perfetto: clock model '%s' line %lld is not JSON: %s",
                   path, (long long)line, pe.msg ? pe.msg : "?");
      tl_err_clear(&pe);
      break;
    }
    int keep = 0;
    const char *fmt = clock_string(rec, "format"), *metric = clock_string(rec, "metric");
    const char *status = clock_string(rec, "status"), *marker = clock_string(rec, "marker_contract");
    const char *tdom = clock_string(rec, "target_clock_domain");
    int64_t rank, rrank;
    int flat = tl_json_type_of(rec) == TL_JSON_OBJECT;
    for (size_t i = 0; flat && i < tl_json_len(rec); i++) {
      tl_json_type t = tl_json_type_of(tl_json_value_at(rec, i));
      flat = t != TL_JSON_OBJECT && t != TL_JSON_ARRAY;
    }
    pf_clock m;
    memset(&m, 0, sizeof m);
    if (!flat || !fmt || strcmp(fmt, CLOCK_FORMAT) != 0 || !metric || !status || !marker ||
        !tdom || !clock_string(rec, "source_clock_domain") || !tl_json_get(rec, "rank") ||
        tl_json_i64(tl_json_get(rec, "rank"), &rank) || !tl_json_get(rec, "reference_rank") ||
        tl_json_i64(tl_json_get(rec, "reference_rank"), &rrank) ||
        (strcmp(status, "candidate_only") != 0 && strcmp(status, "calibrated") != 0) ||
        clock_number(rec, "scale", m.scale_text, sizeof m.scale_text, &m.scale) ||
        clock_number(rec, "reference_source_ns", m.ref_source_text, sizeof m.ref_source_text,
                     &m.ref_source) ||
        clock_number(rec, "reference_target_ns", m.ref_target_text, sizeof m.ref_target_text,
                     &m.ref_target)) {
      rc = tl_fail(e, "traceloom_export_perfetto: clock model '%s' line %lld: expected a flat "
                      "object with format \"" CLOCK_FORMAT "\", integer rank and reference_rank, "
                      "metric, status (candidate_only|calibrated), source_clock_domain, "
                      "target_clock_domain, marker_contract and decimal scale, "
                      "reference_source_ns, reference_target_ns",
                   path, (long long)line);
    } else if (ref_rank >= 0 && rrank != ref_rank) {
      rc = tl_fail(e, "traceloom_export_perfetto: clock model '%s' line %lld: reference_rank %lld "
                      "disagrees with %lld", path, (long long)line, (long long)rrank,
                   (long long)ref_rank);
    } else if (rank_index(c, rank) < 0 || rank_index(c, rrank) < 0) {
      rc = tl_fail(e, "traceloom_export_perfetto: clock model '%s' line %lld names rank %lld, "
                      "which is not among the exported ranks", path, (long long)line,
                   (long long)(rank_index(c, rank) < 0 ? rank : rrank));
    } else if (!(m.scale > 0)) {
      rc = tl_fail(e, "traceloom_export_perfetto: clock model '%s' line %lld: scale must be > 0",
                   path, (long long)line);
    } else if (strcmp(metric, "end") == 0 && rank != rrank) {
      int64_t ri = rank_index(c, rank);
      ref_rank = rrank;
      if (seen[ri]) {
        rc = tl_fail(e, "traceloom_export_perfetto: clock model '%s' has more than one "
                        "metric=end record for rank %lld", path, (long long)rank);
      } else if (c->clock_status && (strcmp(c->clock_status, status) != 0 ||
                                     strcmp(c->clock_marker, marker) != 0 ||
                                     strcmp(target_domain, tdom) != 0)) {
        rc = tl_fail(e, "traceloom_export_perfetto: clock model '%s' line %lld disagrees with "
                        "earlier records on status, marker_contract or target_clock_domain",
                     path, (long long)line);
      } else {
        seen[ri] = 1;
        c->clock[ri] = m;
        if (!c->clock_status) {
          c->clock_status = tl_strdup(status);
          c->clock_marker = tl_strdup(marker);
          target_domain = tdom;
          docs[0] = rec, keep = 1;
          if (!c->clock_status || !c->clock_marker) rc = tl_nomem(e);
        }
      }
    } else {
      ref_rank = rrank; /* other metrics are recorded by the producer but not applied */
    }
    if (!keep) tl_json_free(rec);
  }
  if (rc == TL_OK && ref_rank < 0)
    rc = tl_fail(e, "traceloom_export_perfetto: clock model '%s' has no metric=end record", path);
  for (size_t i = 0; rc == TL_OK && i < nr; i++) {
    if (c->opts.ranks.v[i].rank == ref_rank) {
      c->clock[i].identity = 1;
    } else if (!seen[i]) {
      rc = tl_fail(e, "traceloom_export_perfetto: clock model '%s' has no metric=end record for "
                      "rank %lld", path, (long long)c->opts.ranks.v[i].rank);
    }
  }
  c->clock_reference_rank = ref_rank;
  tl_json_free(docs[0]);
  free(seen);
  free(data);
  return rc;
}

/* round_half_even(ref_target + scale * (src - ref_source)) in long double (64-bit mantissa). */
static int clock_map(const pf_clock *m, int64_t src, int64_t *out) {
  if (m->identity) {
    *out = src;
    return 0;
  }
  long double x = m->ref_target + m->scale * ((long double)src - m->ref_source);
  long double r = nearbyintl(x); /* default rounding mode: to nearest, ties to even */
  if (!isfinite(r) || r < -9.2e18L || r > 9.2e18L) return -1;
  *out = (int64_t)r;
  return 0;
}

/* ---- Distributed ranks ------------------------------------------------------------------ */

static int rank_slices(pf_ctx *c, size_t ri) {
  const pf_rank *r = &c->opts.ranks.v[ri];
  sqlite3 *db = NULL;
  if (tl_sql_open_ro(r->db, &db, c->e)) return TL_ERROR;
  char *what = tl_mprintf("rank %lld database '%s'", (long long)r->rank, r->db);
  int err = what ? check_timeline(db, what, c->e) : tl_nomem(c->e);
  free(what);
  sqlite3_stmt *st = NULL;
  if (!err && !has_relation(db, "traceloom_viz_node"))
    err = tl_fail(c->e, "traceloom_export_perfetto: rank %lld database '%s' has no relation "
                        "traceloom_viz_node", (long long)r->rank, r->db);
  if (!err)
    err = prep(c, db,
               "SELECT o.node_id, o.local_node_id, v.label, o.occurrence_idx, o.db_idx, "
               "o.device_id, o.view_name, o.repeat_context, v.depth, v.category, "
               "o.anchor_start_idx, o.anchor_end_idx, o.anchor_count, o.start_ns, o.end_ns, "
               "o.compute_us, o.comm_us, o.idle_us, o.total_us, o.self_us, o.aux_us, o.aux_events "
               "FROM traceloom_tree_node_occurrence o JOIN traceloom_viz_node v ON v.node_id = "
               "o.node_id AND v.db_idx = o.db_idx AND v.device_id = o.device_id AND v.view_name = "
               "o.view_name WHERE (v.node_type = 'Atom' OR (v.node_type IS NULL AND v.kind NOT IN "
               "('seq', 'repeat'))) AND o.start_ns IS NOT NULL AND o.end_ns IS NOT NULL "
               "ORDER BY o.start_ns, o.end_ns, o.db_idx, o.device_id, o.node_id, o.occurrence_idx",
               &st);
  int64_t first_start = 0, n = 0;
  int rc = SQLITE_DONE;
  const char *alias = c->opts.align == ALIGN_PROVIDER ? "provider_timestamps_uncalibrated"
                      : c->opts.align == ALIGN_CLOCK  ? "collective_end_affine_clock_model"
                                                      : "first_timeline_event_per_rank";
  while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t s0 = sqlite3_column_int64(st, 13), e0 = sqlite3_column_int64(st, 14);
    if (n == 0) {
      first_start = s0;
      c->rank_first[ri] = s0;
      if (r->rank == 0) c->ref_first = s0;
    }
    n++;
    /* Display times are computed at emit time once the reference is known: store source. */
    tl_buf *b = &c->args;
    size_t off = b->n;
    int first = 1;
    PUT_LIT(b, "{");
    kv_str(b, "semantic_kind", "distributed_traceloom_timeline_event", &first);
    kv_i64(b, "rank", r->rank, &first);
    kv_str(b, "source_timeline_db", r->db, &first);
    kv_str(b, "source_timeline_db_sha256", c->rank_sha[ri], &first);
    kv_str(b, "alignment", alias, &first);
    kv_i64(b, "display_reference_rank",
           c->opts.align == ALIGN_CLOCK ? c->clock_reference_rank : 0, &first);
    kv_i64(b, "source_start_ns", s0, &first);
    kv_i64(b, "source_end_ns", e0, &first);
    for (int k = 0; k < 2; k++) {
      const char *t = (const char *)sqlite3_column_text(st, k);
      kv_str(b, k ? "local_node_id" : "node_id", t, &first);
    }
    kv_i64(b, "occurrence_idx", sqlite3_column_int64(st, 3), &first);
    kv_i64(b, "database_index", sqlite3_column_int64(st, 4), &first);
    kv_i64(b, "device_id", sqlite3_column_int64(st, 5), &first);
    kv_str(b, "view_name", (const char *)sqlite3_column_text(st, 6), &first);
    kv_str(b, "repeat_context", (const char *)sqlite3_column_text(st, 7), &first);
    kv_raw(b, "rooted_role_path", "null", &first);
    kv_i64n(b, "tree_depth", sqlite3_column_int64(st, 8), sqlite3_column_type(st, 8) == SQLITE_NULL,
            &first);
    kv_str(b, "event_category", (const char *)sqlite3_column_text(st, 9), &first);
    int64_t cost[NCOST];
    for (int k = 0; k < NCOST; k++) cost[k] = col_milli(st, 15 + k);
    args_costs(b, sqlite3_column_int64(st, 10), sqlite3_column_int64(st, 11),
               sqlite3_column_int64(st, 12), cost, sqlite3_column_int64(st, 21), &first);
    if (c->opts.align == ALIGN_FIRST_EVENT) {
      kv_i64(b, "source_anchor_ns", first_start, &first);
      /* Patched in at emit time: the reference rank may be read later. */
      kv_raw(b, "display_reference_anchor_ns", "@REF@", &first);
    } else if (c->opts.align == ALIGN_CLOCK) {
      const pf_clock *m = &c->clock[ri];
      kv_str(b, "clock_model_status", m->identity ? "reference_identity" : c->clock_status, &first);
      kv_str(b, "clock_model_marker_contract", c->clock_marker, &first);
      kv_str(b, "clock_model_metric", "end", &first);
      kv_str(b, "clock_model_scale", m->identity ? NULL : m->scale_text, &first);
      kv_str(b, "clock_model_reference_source_ns", m->identity ? NULL : m->ref_source_text, &first);
      kv_str(b, "clock_model_reference_target_ns", m->identity ? NULL : m->ref_target_text, &first);
      kv_str(b, "clock_model_receipt_sha256", c->clock_sha, &first);
    }
    PUT_LIT(b, "}");
    const char *label = (const char *)sqlite3_column_text(st, 2);
    if (!label) label = (const char *)sqlite3_column_text(st, 1);
    pf_slice s = {.a = r->rank, .b = (int64_t)ri, .start = s0, .end = e0, .pid = PID_RANKS,
                  .is_event = 1, .cat = CAT_DIST, .src = SRC_RANK,
                  .name = tl_strpool_intern_cstr(c->pool, label ? label : "")};
    err = add_slice(c, s, off);
    c->n_dist++;
  }
  if (!err && rc != SQLITE_DONE) err = step_done(c, db, rc);
  if (!err && n == 0)
    err = tl_fail(c->e, "traceloom_export_perfetto: rank %lld database '%s' has no atom "
                        "occurrence (traceloom_tree_node_occurrence of an Atom node)",
                  (long long)r->rank, r->db);
  sqlite3_finalize(st);
  tl_sql_close(db);
  return err;
}

/* Maps the rank slices onto the display clock and extends the origin with them. */
/* perfetto.md section 9: the scheduler context, when the analysis has one. Host scopes are
** the execution markers on their host thread (pid 130), step envelopes span the device
** work linked to a step (pid 131), and the linked work itself is drawn again with its
** association basis (pid 132). All three are observations over identity links, never
** timestamp joins, and say what they are not in a `boundary` arg. */
static int context_slices(pf_ctx *c) {
  if (c->opts.ranks.n || !has_relation(c->db, "traceloom_context_marker") ||
      !has_relation(c->db, "traceloom_v_context_device_work"))
    return TL_OK;
  static const char *const sql[3] = {
      "SELECT m.start_ns, m.end_ns, CAST(m.global_tid AS INTEGER), x.run_id, x.step_id, "
      "x.execution_id, x.phase, x.worker_rank, s.ordinal, s.total_scheduled_tokens "
      "FROM traceloom_context_marker m JOIN traceloom_context_execution x "
      "ON x.execution_id = m.execution_id LEFT JOIN traceloom_scheduler_step s "
      "ON s.run_id = x.run_id AND s.step_id = x.step_id ORDER BY m.start_ns, m.execution_id",
      "SELECT min(w.start_ns), max(w.end_ns), w.device_id, w.run_id, w.step_id, count(*), "
      "s.ordinal FROM (SELECT DISTINCT run_id, step_id, device_id, device_work_id, start_ns, "
      "end_ns FROM traceloom_v_context_device_work) w LEFT JOIN traceloom_scheduler_step s "
      "ON s.run_id = w.run_id AND s.step_id = w.step_id GROUP BY w.run_id, w.step_id, "
      "w.device_id ORDER BY 1, 2, w.step_id",
      "SELECT start_ns, end_ns, device_id, run_id, step_id, device_work_id, event_id, symbol, "
      "group_concat(DISTINCT association_basis) FROM traceloom_v_context_device_work "
      "GROUP BY device_work_id, run_id, step_id ORDER BY start_ns, device_work_id"};
  static const int pids[3] = {PID_CTX_HOST, PID_CTX_STEP, PID_CTX_DEVICE};
  static const int cats[3] = {CAT_CTX_HOST, CAT_CTX_STEP, CAT_CTX_DEVICE};
  uint32_t view = tl_strpool_intern_cstr(c->pool, "scheduler_context");
  if (view == TL_STR_NOMEM) return tl_nomem(c->e);
  for (int k = 0; k < 3; k++) {
    sqlite3_stmt *st;
    if (prep(c, c->db, sql[k], &st)) return TL_ERROR;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      int64_t s0 = sqlite3_column_int64(st, 0), e0 = sqlite3_column_int64(st, 1);
      tl_buf *b = &c->args;
      size_t off = b->n;
      int first = 1;
      char name[256];
      PUT_LIT(b, "{");
      kv_str(b, "run_id", (const char *)sqlite3_column_text(st, 3), &first);
      kv_str(b, "step_id", (const char *)sqlite3_column_text(st, 4), &first);
      if (k == 0) {
        int null_ord = sqlite3_column_type(st, 8) == SQLITE_NULL;
        snprintf(name, sizeof name, "Step %s \xC2\xB7 %s",
                 null_ord ? "?" : (const char *)sqlite3_column_text(st, 8),
                 (const char *)sqlite3_column_text(st, 6));
        kv_str(b, "execution_id", (const char *)sqlite3_column_text(st, 5), &first);
        kv_str(b, "phase", (const char *)sqlite3_column_text(st, 6), &first);
        kv_i64n(b, "rank", sqlite3_column_int64(st, 7), sqlite3_column_type(st, 7) == SQLITE_NULL,
                &first);
        kv_i64n(b, "scheduled_tokens", sqlite3_column_int64(st, 9),
                sqlite3_column_type(st, 9) == SQLITE_NULL, &first);
        kv_str(b, "boundary", "host dispatch scope; not device duration", &first);
      } else if (k == 1) {
        int null_ord = sqlite3_column_type(st, 6) == SQLITE_NULL;
        snprintf(name, sizeof name, "Step %s \xC2\xB7 device %lld",
                 null_ord ? "?" : (const char *)sqlite3_column_text(st, 6),
                 (long long)sqlite3_column_int64(st, 2));
        kv_i64(b, "device_id", sqlite3_column_int64(st, 2), &first);
        kv_i64(b, "linked_device_work", sqlite3_column_int64(st, 5), &first);
        kv_str(b, "boundary", "linked device envelope; not busy time or complete membership",
               &first);
      } else {
        const char *sym = (const char *)sqlite3_column_text(st, 7);
        snprintf(name, sizeof name, "%s", sym ? sym : (const char *)sqlite3_column_text(st, 5));
        kv_i64(b, "device_id", sqlite3_column_int64(st, 2), &first);
        kv_str(b, "device_work_id", (const char *)sqlite3_column_text(st, 5), &first);
        kv_str(b, "event_id", (const char *)sqlite3_column_text(st, 6), &first);
        kv_str(b, "association_basis", (const char *)sqlite3_column_text(st, 8), &first);
      }
      PUT_LIT(b, "}");
      pf_slice sl = {.a = k == 0 ? sqlite3_column_int64(st, 2) : sqlite3_column_int64(st, 2),
                     .b = 0, .depth = 0, .start = s0, .end = e0 > s0 ? e0 : s0, .view = view,
                     .pid = pids[k], .is_event = 0, .cat = cats[k], .src = SRC_RANK};
      sl.name = tl_strpool_intern_cstr(c->pool, name);
      if (add_slice(c, sl, off)) {
        sqlite3_finalize(st);
        return TL_ERROR;
      }
      c->n_context++;
    }
    sqlite3_finalize(st);
    if (step_done(c, c->db, rc)) return TL_ERROR;
  }
  return TL_OK;
}

static int align_ranks(pf_ctx *c) {
  for (size_t i = 0; i < c->slices.n; i++) {
    pf_slice *s = &c->slices.v[i];
    if (s->pid != PID_RANKS) continue;
    if (c->opts.align == ALIGN_FIRST_EVENT) {
      int64_t shift = c->ref_first - c->rank_first[s->b];
      s->start += shift, s->end += shift;
    } else if (c->opts.align == ALIGN_CLOCK) {
      int64_t a, z;
      if (clock_map(&c->clock[s->b], s->start, &a) || clock_map(&c->clock[s->b], s->end, &z) ||
          z < a)
        return tl_fail(c->e, "traceloom_export_perfetto: the clock model maps a rank %lld slice "
                             "[%lld, %lld) to an invalid interval",
                       (long long)s->a, (long long)s->start, (long long)s->end);
      s->start = a, s->end = z;
    }
    if (!c->has_origin || s->start < c->origin) c->origin = s->start, c->has_origin = 1;
  }
  return TL_OK;
}

/* ---- Lanes and emission -------------------------------------------------------------- */

typedef struct pf_sort_ctx {
  const pf_ctx *c;
  const char *args;
} pf_sort_ctx;

static int cmp_group(const pf_sort_ctx *k, const pf_slice *x, const pf_slice *y) {
  int r;
  if ((r = cmp_i64(x->pid, y->pid)) || (r = cmp_i64(x->a, y->a)) || (r = cmp_i64(x->b, y->b)))
    return r;
  if (x->view != y->view &&
      (r = strcmp(tl_strpool_str(k->c->pool, x->view), tl_strpool_str(k->c->pool, y->view))))
    return r;
  if ((r = cmp_i64(x->is_event, y->is_event)) || (r = cmp_i64(x->depth, y->depth))) return r;
  return 0;
}

static int cmp_slice(const void *pa, const void *pb, void *ctx) {
  const pf_sort_ctx *k = ctx;
  const pf_slice *x = pa, *y = pb;
  int r = cmp_group(k, x, y);
  if (r || (r = cmp_i64(x->start, y->start)) || (r = cmp_i64(x->end, y->end))) return r;
  if (x->name != y->name &&
      (r = strcmp(tl_strpool_str(k->c->pool, x->name), tl_strpool_str(k->c->pool, y->name))))
    return r;
  /* Exact ties: by identity (node, occurrence, body ordinal), or the rank slice's args. */
  if ((r = cmp_i64(x->src, y->src))) return r;
  if (x->src == SRC_MEMBER)
    return strcmp(tl_strpool_str(k->c->pool, k->c->members.v[x->ref].member_id),
                  tl_strpool_str(k->c->pool, k->c->members.v[y->ref].member_id));
  if (x->src == SRC_RANK) {
    size_t n = x->args_len < y->args_len ? x->args_len : y->args_len;
    if ((r = memcmp(k->args + x->args_off, k->args + y->args_off, n))) return r;
    return cmp_i64((int64_t)x->args_len, (int64_t)y->args_len);
  }
  const pf_ctx *c = k->c;
  const pf_body *bx = x->src == SRC_BODY ? &c->bodies.v[x->ref] : NULL;
  const pf_body *by = y->src == SRC_BODY ? &c->bodies.v[y->ref] : NULL;
  const pf_occ *ox = &c->occs.v[bx ? (size_t)bx->rep_occ : x->ref];
  const pf_occ *oy = &c->occs.v[by ? (size_t)by->rep_occ : y->ref];
  uint32_t nx = c->nodes.v[ox->node].node_id, ny = c->nodes.v[oy->node].node_id;
  if (nx != ny && (r = strcmp(tl_strpool_str(c->pool, nx), tl_strpool_str(c->pool, ny))))
    return r;
  if ((r = cmp_i64(ox->occ_idx, oy->occ_idx))) return r;
  return bx && by ? cmp_i64(bx->ordinal, by->ordinal) : 0;
}

static void put_meta(pf_ctx *c, int pid, int64_t tid, const char *name, const char *key,
                     const char *sval, int64_t ival) {
  tl_buf *b = &c->out;
  tl_buf_puts(b, c->events ? ",\n{\"ph\":\"M\",\"pid\":" : "\n{\"ph\":\"M\",\"pid\":");
  put_i64(b, pid);
  PUT_LIT(b, ",\"tid\":");
  put_i64(b, tid);
  PUT_LIT(b, ",\"name\":\"");
  tl_buf_puts(b, name);
  PUT_LIT(b, "\",\"args\":{\"");
  tl_buf_puts(b, key);
  PUT_LIT(b, "\":");
  if (sval) put_cstr(b, sval);
  else put_i64(b, ival);
  PUT_LIT(b, "}}");
  c->events++;
}

static int emit(pf_ctx *c, const char *path) {
  pf_sort_ctx k = {c, c->args.p};
  if (c->args.oom) return tl_nomem(c->e);
  qsort_r(c->slices.v, c->slices.n, sizeof *c->slices.v, cmp_slice, &k);
  tl_buf *b = &c->out;
  PUT_LIT(b, "{\"traceEvents\":[");
  int tree_named = 0, ranks_named = 0, ctx_named = 0;
  int64_t next_ctx_tid[3] = {1, 1, 1};
  int64_t next_struct_tid = 1, next_event_tid = TID_EVENTS_BASE, next_rank_tid = 1;
  TL_VEC(int64_t) lane_end = {0};
  char ref[32];
  snprintf(ref, sizeof ref, "%lld", (long long)c->ref_first);
  const char *rank_process =
      c->opts.align == ALIGN_PROVIDER
          ? "TraceLoom \xC2\xB7 distributed flat timeline events \xC2\xB7 provider timestamps "
            "(uncalibrated)"
      : c->opts.align == ALIGN_CLOCK
          ? "TraceLoom \xC2\xB7 distributed flat timeline events \xC2\xB7 collective-end affine "
            "aligned"
          : "TraceLoom \xC2\xB7 distributed flat timeline events \xC2\xB7 first-event normalized";
  for (size_t g = 0; g < c->slices.n;) {
    size_t h = g + 1;
    while (h < c->slices.n && cmp_group(&k, &c->slices.v[g], &c->slices.v[h]) == 0) h++;
    /* First-fit: the first lane whose last end is at or before the start. */
    lane_end.n = 0;
    for (size_t i = g; i < h; i++) {
      pf_slice *s = &c->slices.v[i];
      size_t l = 0;
      while (l < lane_end.n && lane_end.v[l] > s->start) l++;
      if (l == lane_end.n && TL_VEC_PUSH(&lane_end, s->end)) {
        TL_VEC_FREE(&lane_end);
        return tl_nomem(c->e);
      }
      lane_end.v[l] = s->end > s->start ? s->end : s->start;
      s->lane = (int64_t)l;
    }
    const pf_slice *s0 = &c->slices.v[g];
    int pid = s0->pid;
    if (pid == PID_TREE && !tree_named) {
      put_meta(c, pid, 0, "process_name", "name",
               "TraceLoom \xC2\xB7 execution tree + flat timeline events", 0);
      put_meta(c, pid, 0, "process_sort_index", "sort_index", NULL, 0);
      tree_named = 1;
    } else if (pid == PID_RANKS && !ranks_named) {
      put_meta(c, pid, 0, "process_name", "name", rank_process, 0);
      put_meta(c, pid, 0, "process_sort_index", "sort_index", NULL, 1);
      ranks_named = 1;
    } else if (pid >= PID_CTX_HOST && pid <= PID_CTX_DEVICE && !(ctx_named & (1 << (pid - PID_CTX_HOST)))) {
      static const char *const names[] = {
          "TraceLoom \xC2\xB7 scheduler context \xC2\xB7 host dispatch scopes",
          "TraceLoom \xC2\xB7 scheduler context \xC2\xB7 step device envelopes",
          "TraceLoom \xC2\xB7 scheduler context \xC2\xB7 linked device work"};
      put_meta(c, pid, 0, "process_name", "name", names[pid - PID_CTX_HOST], 0);
      put_meta(c, pid, 0, "process_sort_index", "sort_index", NULL, 2 + pid - PID_CTX_HOST);
      ctx_named |= 1 << (pid - PID_CTX_HOST);
    }
    int ctx = pid >= PID_CTX_HOST && pid <= PID_CTX_DEVICE;
    int64_t base = pid == PID_RANKS ? next_rank_tid
                   : ctx            ? next_ctx_tid[pid - PID_CTX_HOST]
                   : s0->is_event   ? next_event_tid
                                    : next_struct_tid;
    for (size_t l = 0; l < lane_end.n; l++) {
      char tn[1024];
      const char *view = tl_strpool_str(c->pool, s0->view);
      if (ctx)
        snprintf(tn, sizeof tn, "%s %lld \xC2\xB7 lane %zu",
                 pid == PID_CTX_HOST ? "host thread" : "device", (long long)s0->a, l);
      else if (pid == PID_RANKS && lane_end.n > 1)
        snprintf(tn, sizeof tn, "timeline events \xC2\xB7 rank %lld \xC2\xB7 lane %zu",
                 (long long)s0->a, l);
      else if (pid == PID_RANKS)
        snprintf(tn, sizeof tn, "timeline events \xC2\xB7 rank %lld", (long long)s0->a);
      else if (s0->is_event)
        snprintf(tn, sizeof tn,
                 "timeline events \xC2\xB7 db %lld \xC2\xB7 device %lld \xC2\xB7 %s \xC2\xB7 "
                 "lane %zu",
                 (long long)s0->a, (long long)s0->b, view, l);
      else
        snprintf(tn, sizeof tn,
                 "subtree \xC2\xB7 db %lld \xC2\xB7 device %lld \xC2\xB7 %s \xC2\xB7 depth %lld "
                 "\xC2\xB7 lane %zu",
                 (long long)s0->a, (long long)s0->b, view, (long long)s0->depth, l);
      put_meta(c, pid, base + (int64_t)l, "thread_name", "name", tn, 0);
      put_meta(c, pid, base + (int64_t)l, "thread_sort_index", "sort_index", NULL,
               base + (int64_t)l);
    }
    if (ctx) next_ctx_tid[pid - PID_CTX_HOST] += (int64_t)lane_end.n;
    else if (pid == PID_RANKS) next_rank_tid += (int64_t)lane_end.n, c->n_rank_tracks++;
    else if (s0->is_event) next_event_tid += (int64_t)lane_end.n;
    else next_struct_tid += (int64_t)lane_end.n;
    for (size_t i = g; i < h; i++) {
      const pf_slice *s = &c->slices.v[i];
      PUT_LIT(b, ",\n{\"ph\":\"X\",\"pid\":");
      put_i64(b, s->pid);
      PUT_LIT(b, ",\"tid\":");
      put_i64(b, base + s->lane);
      PUT_LIT(b, ",\"name\":");
      put_str(b, tl_strpool_str(c->pool, s->name), tl_strpool_len(c->pool, s->name));
      PUT_LIT(b, ",\"cat\":\"");
      tl_buf_puts(b, cat_names[s->cat]);
      PUT_LIT(b, "\",\"ts\":");
      put_us3(b, s->start - c->origin);
      PUT_LIT(b, ",\"dur\":");
      put_us3(b, s->end > s->start ? s->end - s->start : 0);
      PUT_LIT(b, ",\"args\":");
      const char *a = s->src == SRC_RANK ? c->args.p + s->args_off : NULL;
      const char *at = a ? memmem(a, s->args_len, "@REF@", 5) : NULL;
      if (s->src == SRC_OCC) {
        occurrence_args(c, b, &c->occs.v[s->ref]);
      } else if (s->src == SRC_BODY) {
        body_args(c, b, &c->bodies.v[s->ref]);
      } else if (s->src == SRC_MEMBER) {
        member_args(c, b, &c->members.v[s->ref]);
      } else if (at) {
        tl_buf_append(b, a, (size_t)(at - a));
        tl_buf_puts(b, ref);
        tl_buf_append(b, at + 5, s->args_len - (size_t)(at - a) - 5);
      } else {
        tl_buf_append(b, a, s->args_len);
      }
      PUT_LIT(b, "}");
      c->events++;
      if (b->n >= FLUSH_BYTES && flush_out(c, 0, path)) {
        TL_VEC_FREE(&lane_end);
        return TL_ERROR;
      }
    }
    g = h;
  }
  TL_VEC_FREE(&lane_end);
  /* Trailing metadata. */
  int first = 1;
  PUT_LIT(b, "\n],\"displayTimeUnit\":\"ns\",\"metadata\":{");
  kv_str(b, "format", "TraceLoom queryable database timeline Perfetto export", &first);
  kv_str(b, "analysis_db", sqlite3_db_filename(c->db, "main"), &first);
  kv_i64(b, "time_origin_ns", c->has_origin ? c->origin : 0, &first);
  kv_str(b, "aggregation_boundary", AGGREGATION_BOUNDARY, &first);
  kv_i64(b, "structural_slices", c->n_struct, &first);
  kv_i64(b, "repeat_body_slices", c->n_body, &first);
  kv_i64(b, "atomic_slices", c->n_atom, &first);
  kv_i64(b, "replay_structure_slices", 0, &first);
  kv_i64(b, "replay_member_slices", c->n_member, &first);
  kv_i64(b, "raw_slices", 0, &first);
  kv_i64(b, "counter_samples", 0, &first);
  kv_i64(b, "distributed_timeline_slices", c->n_dist, &first);
  kv_i64(b, "context_slices", c->n_context, &first);
  kv_i64(b, "motif_classes", c->nmotif, &first);
  int dist = c->opts.ranks.n > 0, clock = c->opts.align == ALIGN_CLOCK;
  const char *alignment = NULL, *evidence = NULL, *boundary = NULL;
  if (dist && c->opts.align == ALIGN_PROVIDER) {
    alignment = "provider_timestamps_uncalibrated", evidence = "uncalibrated";
    boundary = "provider timestamps with one shared origin; uncalibrated, no shared "
               "absolute-clock claim";
  } else if (dist && clock) {
    alignment = "collective_end_affine_clock_model", evidence = c->clock_status;
    boundary = strcmp(c->clock_status, "candidate_only") == 0
                   ? "display-only candidate mapping; source timestamps retained; no calibrated "
                     "global-time claim"
                   : "calibrated collective-end affine mapping; source timestamps retained";
  } else if (dist) {
    alignment = "first_timeline_event_per_rank", evidence = "display_only";
    boundary = "first-event translation only; no shared absolute-clock claim";
  }
  kv_str(b, "distributed_alignment", alignment, &first);
  kv_str(b, "distributed_alignment_evidence_status", evidence, &first);
  kv_str(b, "distributed_alignment_boundary", boundary, &first);
  kv_str(b, "distributed_clock_model_path", clock ? c->opts.clock_model : NULL, &first);
  kv_str(b, "distributed_clock_model_sha256", clock ? c->clock_sha : NULL, &first);
  kv_i64n(b, "distributed_reference_rank", clock ? c->clock_reference_rank : 0, !dist, &first);
  kv_i64n(b, "distributed_rank_tracks", (int64_t)c->opts.ranks.n, !dist, &first);
  PUT_LIT(b, "}}\n");
  if (flush_out(c, 1, path)) return TL_ERROR;
  return sink_feed(c, NULL, 0, 1, path);
}

/* ---- Output file ------------------------------------------------------------------------ */

static int same_file(const struct stat *a, const char *path) {
  struct stat s;
  return path && *path && stat(path, &s) == 0 && s.st_dev == a->st_dev && s.st_ino == a->st_ino;
}

/* Refuses an output that is the analysis DB, a rank DB or an analysed input. */
static int check_output(pf_ctx *c, const char *path) {
  struct stat so;
  if (stat(path, &so) != 0) return TL_OK;
  if (S_ISDIR(so.st_mode))
    return tl_fail(c->e, "traceloom_export_perfetto: output '%s' is a directory", path);
  if (same_file(&so, sqlite3_db_filename(c->db, "main")))
    return tl_fail(c->e, "traceloom_export_perfetto: refusing to overwrite '%s': it is the "
                         "analysis database", path);
  for (size_t i = 0; i < c->opts.ranks.n; i++)
    if (same_file(&so, c->opts.ranks.v[i].db))
      return tl_fail(c->e, "traceloom_export_perfetto: refusing to overwrite '%s': it is the "
                           "rank %lld database", path, (long long)c->opts.ranks.v[i].rank);
  if (!has_relation(c->db, "traceloom_raw_source_database")) return TL_OK;
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(c->db, "SELECT source_path FROM traceloom_raw_source_database", -1, &st,
                         NULL) != SQLITE_OK)
    return TL_OK;
  int hit = 0;
  while (!hit && sqlite3_step(st) == SQLITE_ROW)
    hit = same_file(&so, (const char *)sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  if (hit)
    return tl_fail(c->e, "traceloom_export_perfetto: refusing to overwrite '%s': it is an input "
                         "of the analysis", path);
  return TL_OK;
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int write_file(pf_ctx *c, const char *path) {
  char *tmp = tl_mprintf("%s.tmp-XXXXXX", path);
  if (!tmp) return tl_nomem(c->e);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    int err = errno;
    free(tmp);
    return tl_fail(c->e, "traceloom_export_perfetto: cannot create a temporary file beside "
                         "'%s': %s", path, strerror(err));
  }
  fchmod(fd, 0644);
  c->sink.fd = fd;
  int rc = TL_OK;
  if (ends_with(path, ".gz")) {
    /* Level 1: timelines are large and repetitive; it compresses ~1.4x less than level 6
    ** but takes a third less CPU, and export time is what users wait for. Deflate runs on
    ** worker threads (gzpar.h) while this thread formats; TRACELOOM_EXPORT_THREADS caps
    ** them (the bytes do not depend on it). */
    const char *env = getenv("TRACELOOM_EXPORT_THREADS");
    int threads = env && *env ? atoi(env) : 0;
    rc = tl_gzpar_open(&c->sink.gz, fd, 1, threads < 0 ? 0 : threads > 64 ? 64 : threads, path,
                       c->e);
  }
  if (rc == TL_OK) rc = emit(c, path);
  tl_gzpar_free(c->sink.gz);
  c->sink.gz = NULL;
  if (rc == TL_OK && fsync(fd) != 0)
    rc = tl_fail(c->e, "traceloom_export_perfetto: cannot fsync '%s': %s", tmp, strerror(errno));
  if (close(fd) != 0 && rc == TL_OK)
    rc = tl_fail(c->e, "traceloom_export_perfetto: cannot close '%s': %s", tmp, strerror(errno));
  if (rc == TL_OK && rename(tmp, path) != 0)
    rc = tl_fail(c->e, "traceloom_export_perfetto: cannot move the export into place at '%s': %s",
                 path, strerror(errno));
  if (rc != TL_OK) unlink(tmp);
  free(tmp);
  return rc;
}

/* 1 for the names Perfetto gives its protobuf traces (.pftrace, .perfetto-trace, gzipped or
** not): JSON written under such a name would mislead every tool that trusts the name. */
static int names_protobuf_trace(const char *path) {
  static const char *const protobuf_suffixes[] = {".pftrace", ".perfetto-trace", ".pftrace.gz",
                                                  ".perfetto-trace.gz"};
  for (size_t i = 0; i < sizeof protobuf_suffixes / sizeof *protobuf_suffixes; i++)
    if (ends_with(path, protobuf_suffixes[i])) return 1;
  return 0;
}

int tl_export_perfetto(sqlite3 *db, const char *path, const char *options_json, int64_t *events,
                       tl_err *e) {
  *events = 0;
  if (!path || !*path)
    return tl_fail(e, "traceloom_export_perfetto: an output path is required");
  if (names_protobuf_trace(path))
    return tl_fail(e, "traceloom_export_perfetto: '%s' names a Perfetto protobuf trace, which "
                      "this version does not write (it writes Perfetto/Chrome JSON): use a "
                      "name ending in .json or .json.gz", path);
  pf_ctx c;
  memset(&c, 0, sizeof c);
  c.db = db;
  c.e = e;
  int rc = parse_opts(options_json, &c.opts, e);
  if (rc == TL_OK) rc = check_timeline(db, "the analysis database", e);
  if (rc == TL_OK && !(c.pool = tl_strpool_new())) rc = tl_nomem(e);
  if (rc == TL_OK) rc = check_output(&c, path);
  if (rc == TL_OK && c.opts.ranks.n) {
    c.rank_sha = calloc(c.opts.ranks.n, sizeof *c.rank_sha);
    c.rank_first = calloc(c.opts.ranks.n, sizeof *c.rank_first);
    if (!c.rank_sha || !c.rank_first) rc = tl_nomem(e);
    for (size_t i = 0; rc == TL_OK && i < c.opts.ranks.n; i++) {
      c.rank_sha[i] = malloc(65);
      if (!c.rank_sha[i]) rc = tl_nomem(e);
      else rc = tl_sha256_file(c.opts.ranks.v[i].db, c.rank_sha[i], NULL, e);
    }
  }
  tl_timer tm;
  tl_timer_start(&tm, "export");
  if (rc == TL_OK && c.opts.align == ALIGN_CLOCK) rc = load_clock_model(&c);
  if (rc == TL_OK) rc = load_nodes(&c);
  if (rc == TL_OK) rc = assign_motifs(&c);
  tl_timer_mark(&tm, "nodes");
  if (rc == TL_OK) rc = load_occurrences(&c);
  tl_timer_mark(&tm, "occurrences and anchors");
  if (rc == TL_OK && !c.opts.ranks.n) rc = load_members(&c);
  tl_timer_mark(&tm, "replay members");
  for (size_t i = 0; rc == TL_OK && i < c.occs.n; i++) rc = occurrence_slice(&c, i);
  tl_timer_mark(&tm, "occurrence slices");
  if (rc == TL_OK) rc = repeat_bodies(&c);
  tl_timer_mark(&tm, "repeat bodies");
  for (size_t i = 0; rc == TL_OK && i < c.opts.ranks.n; i++) rc = rank_slices(&c, i);
  if (rc == TL_OK) rc = context_slices(&c);
  if (rc == TL_OK) rc = align_ranks(&c);
  tl_timer_mark(&tm, "ranks and context");
  if (rc == TL_OK) rc = write_file(&c, path);
  tl_timer_mark(&tm, "sort and write");
  if (rc == TL_OK) *events = c.events;
  for (size_t i = 0; i < c.opts.ranks.n; i++) {
    free(c.opts.ranks.v[i].db);
    if (c.rank_sha) free(c.rank_sha[i]);
  }
  TL_VEC_FREE(&c.opts.ranks);
  free(c.rank_sha);
  free(c.rank_first);
  free(c.clock);
  free(c.clock_status);
  free(c.clock_marker);
  free(c.opts.clock_model);
  for (size_t i = 0; i < c.nodes.n; i++) free(c.nodes.v[i].topology);
  TL_VEC_FREE(&c.nodes);
  TL_VEC_FREE(&c.occs);
  TL_VEC_FREE(&c.slices);
  TL_VEC_FREE(&c.bodies);
  TL_VEC_FREE(&c.members);
  tl_i64map_free(&c.member_by_launch);
  tl_buf_free(&c.args);
  tl_buf_free(&c.out);
  tl_i64map_free(&c.node_by_key);
  tl_i64map_free(&c.occ_by_key);
  TL_VEC_FREE(&c.trees);
  TL_VEC_FREE(&c.children);
  tl_i64map_free(&c.semantic_member);
  tl_i64map_free(&c.node_res);
  tl_i64map_free(&c.repeat_occ);
  tl_buf_free(&c.paths);
  sqlite3_finalize(c.round_st);
  tl_strpool_free(c.pool);
  return rc;
}
