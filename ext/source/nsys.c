/*
** nsys.c: the NVIDIA Nsight Systems SQLite reader (`nsys export --type sqlite`, inputs.md
** section 6), source kind cuda_nsys_sqlite.
**
**   inventory    capability rows: device tasks, compute/communication identity, host runtime
**                API, memcpy, memset, synchronization, CUDA events, graph node identity,
**                graph trace, NVTX, StringIds and the export schema version
**   events_open  KERNEL, then MEMCPY, MEMSET, SYNCHRONIZATION, CUDA_EVENT, GRAPH_TRACE, each in
**                rowid order. CUPTI_ACTIVITY_KIND_RUNTIME is not read here: its rows are host
**                calls, and the reference's "host mirrors" on the device plane are never
**                anchors, aux links or cost.
**   calls_open   CUPTI_ACTIVITY_KIND_RUNTIME as host calls (provider cuda, api cuda_runtime)
**
** The export has no indexes and creates tables lazily, so every table but the kernel table
** is optional; each is read by one prepared statement with its columns at fixed indexes
** (a column the table lacks is selected as NULL). Column names are matched
** case-insensitively. Name columns hold StringIds ids or, in some exports, TEXT: text is
** used as is, an id is looked up in StringIds (loaded once per cursor), and an id missing
** from StringIds decodes to its decimal string.
**
** Labels and identities (inputs.md sections 6 and 9.1):
**   kernel       name = shortName, or demangledName when shortName is a generic
**                kernel/kernel1/kernel2/kernel3; empty -> cuda_kernel_<rowid>.
**                op_name = name; op_type = the lifted label (CudaMatMul, CudaAux:Fill, ...).
**                An NCCL collective name gives kind communication, task type
**                CUDA_COLLECTIVE_KERNEL and comm_name = name; a lifted label starting with
**                CudaAux: gives CUDA_KERNEL_AUX, any other kernel CUDA_KERNEL.
**   memcpy       data_move, CUDA_MEMCPY_AUX, "CudaMemcpy kind=<copyKind> bytes=<bytes>" (the
**                label the CUDA graph body signature uses, recovery.md section 7.2)
**   memset       data_move, CUDA_MEMSET_AUX, "CudaMemset bytes=<bytes>"
**   sync         sync, CUDA_SYNC_AUX, the CUPTI synchronization type without its
**                CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_ prefix, unknown -> CUDA_SYNC_TYPE_<n>
**   CUDA event   control, CUDA_EVENT_AUX, "CudaEvent event=<eventId>"; a table without start
**                or timestamp holds identity-only records and is skipped
**   graph trace  graph_launch, CUDA_GRAPH_TRACE, "CudaGraph graph=<graphId> exec=<graphExecId>"
** Auxiliary rows (everything but kernels) whose end is NULL or <= start end at start + 1;
** one with a NULL start is skipped and counted in dropped_rows. A kernel whose end is before
** its start ends at its start. A label whose source column is NULL falls back to
** <table fallback>_<rowid>. A NULL, negative or > UINT32_MAX deviceId/streamId is an error
** naming the row ("ordered kernel row <n>": n is the 0-based position in reader order).
** task_id = correlationId (rowid when NULL); correlation_id = correlationId.
**
** Host calls: api_name = decoded nameId; pid/tid come from processId/pid and threadId/tid
** when the table has them, else from globalTid the Nsight way (pid = (globalTid >> 24) &
** 0xFFFFFF, tid = globalTid & 0xFFFFFF); global_tid stays raw.
*/
#include "source/readers.h"
#include "source/sqlsrc.h"
#include "source/strtab.h"
#include "source/cuda_labels.h"
#include "util/buf.h"
#include "util/i64map.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define KERNEL_TABLE "CUPTI_ACTIVITY_KIND_KERNEL"
#define RUNTIME_TABLE "CUPTI_ACTIVITY_KIND_RUNTIME"
#define SOURCE_KIND "cuda_nsys_sqlite"

/* ------------------------------------------------------------------ opening */

static const char *input_path(const tl_profile *p, int db_idx) {
  return p->inputs.v[db_idx].path;
}

static int open_db(const char *path, sqlite3 **db, tl_err *e) {
  struct stat st;
  if (!path || !*path) return tl_fail(e, "CUDA/Nsight SQLite DB path is empty");
  if (stat(path, &st) != 0) return tl_fail(e, "CUDA/Nsight SQLite DB does not exist: %s", path);
  return tl_sql_open_ro(path, db, e);
}

/* First column of cols named like one of the NULL-terminated candidates, or NULL. */
static const char *find_col(const tl_columns *cols, const char *const *cands) {
  for (int i = 0; cands[i]; i++) {
    int k = tl_columns_find(cols, cands[i], 1);
    if (k >= 0) return cols->names[k];
  }
  return NULL;
}

/* ------------------------------------------------------------------ StringIds */

/* StringIds(id, value): texts are interned when a row first uses them; a table without
** both columns is an unsupported export. */
static const tl_strtab_spec string_ids = {"StringIds", "id", "value", 1, 1, 0, 0, NULL,
                                          "CUDA/Nsight"};

static int strings_load(sqlite3 *db, const char *path, tl_strtab *s, tl_err *e) {
  return tl_strtab_load(db, path, &string_ids, NULL, s, e);
}

/* The pool id of a name column: TEXT as is, an integer through StringIds (decimal string
** when missing), NULL -> 0. Returns TL_STR_NOMEM on out-of-memory. */
static uint32_t decode_name(tl_strtab *s, tl_strpool *pool, sqlite3_stmt *st, int col) {
  switch (sqlite3_column_type(st, col)) {
    case SQLITE_NULL: return TL_STR_NONE;
    case SQLITE_TEXT: {
      const char *t = (const char *)sqlite3_column_text(st, col);
      return tl_strpool_intern(pool, t ? t : "", (size_t)sqlite3_column_bytes(st, col));
    }
    default: {
      int64_t id = tl_col_i64(st, col, INT64_MIN);
      if (id == INT64_MIN) return TL_STR_NONE;
      int nomem = 0;
      uint32_t known = tl_strtab_lookup(s, pool, id, &nomem);
      if (known != TL_STR_NOMEM || nomem) return known;
      char num[24];
      int n = snprintf(num, sizeof num, "%" PRId64, id);
      return tl_strpool_intern(pool, num, (size_t)n);
    }
  }
}

/* ------------------------------------------------------------------ labels */

static int is_generic_kernel_name(const char *s) {
  return strcmp(s, "kernel") == 0 || strcmp(s, "kernel1") == 0 || strcmp(s, "kernel2") == 0 ||
         strcmp(s, "kernel3") == 0;
}

/* The CUPTI synchronization type names (CUpti_ActivitySynchronizationType), prefix removed. */
static const char *const sync_type_names[] = {"UNKNOWN", "EVENT_SYNCHRONIZE",
                                              "STREAM_WAIT_EVENT", "STREAM_SYNCHRONIZE",
                                              "CONTEXT_SYNCHRONIZE"};
#define SYNC_PREFIX "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_"

/* ------------------------------------------------------------------ event tables */

enum { T_KERNEL, T_MEMCPY, T_MEMSET, T_SYNC, T_EVENT, T_GRAPH, T_COUNT };

/* Selected columns, after rowid at index 0. A and B are per-table name/identity sources. */
enum { F_START = 1, F_END, F_DEVICE, F_STREAM, F_CORR, F_CONTEXT, F_GRAPHNODE, F_A, F_B,
       F_END_OF_FIELDS };
#define NFIELDS (F_END_OF_FIELDS - 1)

typedef struct table_spec {
  const char *table;
  const char *fallback;  /* label prefix when the label column is NULL */
  const char *task_type;
  tl_kind kind;
  const char *const *fields[NFIELDS]; /* candidate columns per field, NULL = never present */
} table_spec;

static const char *const c_start_only[] = {"start", NULL};
static const char *const c_start[] = {"start", "timestamp", NULL};
static const char *const c_end[] = {"end", NULL};
static const char *const c_device_only[] = {"deviceId", NULL};
static const char *const c_device[] = {"deviceId", "device", NULL};
static const char *const c_stream_only[] = {"streamId", NULL};
static const char *const c_stream[] = {"streamId", "stream", NULL};
static const char *const c_corr[] = {"correlationId", NULL};
static const char *const c_context[] = {"contextId", NULL};
static const char *const c_graphnode[] = {"graphNodeId", NULL};
static const char *const c_short[] = {"shortName", NULL};
static const char *const c_demangled[] = {"demangledName", NULL};
static const char *const c_copykind[] = {"copyKind", NULL};
static const char *const c_bytes[] = {"bytes", NULL};
static const char *const c_synctype[] = {"syncType", NULL};
static const char *const c_eventid[] = {"eventId", NULL};
static const char *const c_graphid[] = {"graphId", NULL};
static const char *const c_graphexec[] = {"graphExecId", NULL};

static const table_spec specs[T_COUNT] = {
    {KERNEL_TABLE, "cuda_kernel", "CUDA_KERNEL", TL_KIND_COMPUTE,
     {c_start_only, c_end, c_device_only, c_stream_only, c_corr, c_context, c_graphnode, c_short,
      c_demangled}},
    {"CUPTI_ACTIVITY_KIND_MEMCPY", "cuda_memcpy", "CUDA_MEMCPY_AUX", TL_KIND_DATA_MOVE,
     {c_start, c_end, c_device, c_stream, c_corr, c_context, c_graphnode, c_copykind, c_bytes}},
    {"CUPTI_ACTIVITY_KIND_MEMSET", "cuda_memset", "CUDA_MEMSET_AUX", TL_KIND_DATA_MOVE,
     {c_start, c_end, c_device, c_stream, c_corr, c_context, c_graphnode, c_bytes, NULL}},
    {"CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "cuda_sync", "CUDA_SYNC_AUX", TL_KIND_SYNC,
     {c_start, c_end, c_device, c_stream, c_corr, c_context, NULL, c_synctype, c_eventid}},
    {"CUPTI_ACTIVITY_KIND_CUDA_EVENT", "cuda_event", "CUDA_EVENT_AUX", TL_KIND_CONTROL,
     {c_start, c_end, c_device, c_stream, c_corr, c_context, NULL, c_eventid, NULL}},
    {"CUPTI_ACTIVITY_KIND_GRAPH_TRACE", "cuda_graph_trace", "CUDA_GRAPH_TRACE",
     TL_KIND_GRAPH_LAUNCH,
     {c_start, c_end, c_device, c_stream, c_corr, c_context, NULL, c_graphid, c_graphexec}},
};

/* Builds "SELECT rowid, <fields or NULL> FROM t [WHERE device = ?1] ORDER BY rowid". */
static char *select_sql(const char *table, const char *cols[], int nfields, int device_field,
                        int filter_device) {
  tl_buf b = {0};
  char *qt = tl_sql_quote_ident(table);
  if (!qt) return NULL;
  tl_buf_puts(&b, "SELECT rowid");
  for (int i = 0; i < nfields; i++) {
    tl_buf_puts(&b, ", ");
    char *q = cols[i] ? tl_sql_quote_ident(cols[i]) : NULL;
    if (cols[i] && !q) b.oom = 1;
    tl_buf_puts(&b, q ? q : "NULL");
    free(q);
  }
  tl_buf_printf(&b, " FROM %s", qt);
  if (filter_device && device_field >= 0 && cols[device_field]) {
    char *q = tl_sql_quote_ident(cols[device_field]);
    if (!q) b.oom = 1;
    tl_buf_printf(&b, " WHERE %s = ?1", q ? q : "NULL");
    free(q);
  }
  tl_buf_puts(&b, " ORDER BY rowid");
  free(qt);
  if (b.oom) {
    tl_buf_free(&b);
    return NULL;
  }
  return b.p;
}

/* Interned constants, interned on first use so unused ones never reach the pool. */
enum { K_CUDA_KERNEL, K_CUDA_KERNEL_AUX, K_CUDA_COLLECTIVE_KERNEL, K_COUNT };
static const char *const konst_text[K_COUNT] = {"CUDA_KERNEL", "CUDA_KERNEL_AUX",
                                                "CUDA_COLLECTIVE_KERNEL"};

typedef struct nsys_events {
  tl_cursor base;
  sqlite3 *db;
  char *path;
  tl_strpool *pool;
  tl_strtab strings;
  int db_idx, source_id;
  int phase;                      /* index into specs */
  sqlite3_stmt *st[T_COUNT];      /* NULL: table absent or skipped */
  int64_t kernel_ordinal;         /* 0-based position of the kernel row in reader order */
  tl_i64map kernel_cache;         /* label id -> op_type id | flags << 32 */
  char *lower;                    /* lower-cased label scratch */
  size_t lower_cap;
  uint32_t konst[K_COUNT];
  uint32_t table_task_type[T_COUNT];
  char *sync_names[64];           /* ENUM_CUPTI_SYNC_TYPE of the export, prefix removed */
  tl_buf scratch;
} nsys_events;

#define KF_COLLECTIVE (1ll << 32)
#define KF_AUX (1ll << 33)

static uint32_t konst(nsys_events *c, int k) {
  if (!c->konst[k]) c->konst[k] = tl_strpool_intern_cstr(c->pool, konst_text[k]);
  return c->konst[k];
}

static uint32_t intern_scratch(nsys_events *c) {
  if (c->scratch.oom) return TL_STR_NOMEM;
  return tl_strpool_intern(c->pool, c->scratch.p ? c->scratch.p : "", c->scratch.n);
}

static uint32_t fallback_label(nsys_events *c, const char *prefix, int64_t rowid) {
  tl_buf_reset(&c->scratch);
  tl_buf_printf(&c->scratch, "%s_%" PRId64, prefix, rowid);
  return intern_scratch(c);
}

/* op_type and flags of a kernel label, computed once per distinct label. */
static int kernel_identity(nsys_events *c, uint32_t label, int64_t *out, tl_err *e) {
  int64_t *hit = tl_i64map_get(&c->kernel_cache, label);
  if (hit) {
    *out = *hit;
    return TL_OK;
  }
  const char *s = tl_strpool_str(c->pool, label);
  size_t n = tl_strpool_len(c->pool, label);
  if (n + 1 > c->lower_cap) {
    size_t cap = (n + 1) * 2;
    char *l = realloc(c->lower, cap);
    if (!l) return tl_nomem(e);
    c->lower = l, c->lower_cap = cap;
  }
  for (size_t i = 0; i < n; i++) c->lower[i] = (char)tolower((unsigned char)s[i]);
  c->lower[n] = 0;
  int64_t v;
  if (tl_cuda_is_nccl_collective(c->lower)) {
    v = (int64_t)label | KF_COLLECTIVE;
  } else {
    const char *lifted = tl_cuda_lift_label(c->lower);
    uint32_t id = lifted ? tl_strpool_intern_cstr(c->pool, lifted) : label;
    if (id == TL_STR_NOMEM) return tl_nomem(e);
    v = (int64_t)id | (lifted && strncmp(lifted, "CudaAux:", 8) == 0 ? KF_AUX : 0);
  }
  if (tl_i64map_put(&c->kernel_cache, label, v)) return tl_nomem(e);
  *out = v;
  return TL_OK;
}

/* Device and stream of a row; negative or out-of-range ids are errors. */
static int read_device_stream(nsys_events *c, sqlite3_stmt *st, const table_spec *t,
                              int64_t rowid, tl_event_row *r, tl_err *e) {
  int64_t dev = tl_col_i64(st, F_DEVICE, INT64_MIN);
  int64_t stream = tl_col_i64(st, F_STREAM, TL_NO_STREAM);
  if (dev >= 0 && dev <= (int64_t)UINT32_MAX && stream >= 0 && stream <= (int64_t)UINT32_MAX) {
    r->device_id = (uint32_t)dev;
    r->stream_id = (uint32_t)stream;
    return TL_OK;
  }
  char where[96];
  if (c->phase == T_KERNEL)
    snprintf(where, sizeof where, "ordered kernel row %" PRId64, c->kernel_ordinal);
  else
    snprintf(where, sizeof where, "%s row %" PRId64, t->table, rowid);
  const char *field = dev >= 0 && dev <= (int64_t)UINT32_MAX ? "streamId" : "deviceId";
  char value[24];
  if (field[0] == 'd' && dev == INT64_MIN) snprintf(value, sizeof value, "NULL");
  else snprintf(value, sizeof value, "%" PRId64, field[0] == 'd' ? dev : stream);
  return tl_fail(e,
                 "unsupported CUDA/Nsight %s at %s: %s (table %s rowid %" PRId64
                 " in '%s'; expected an id in 0..4294967295)",
                 field, where, value, t->table, rowid, c->path);
}

static int kernel_row(nsys_events *c, sqlite3_stmt *st, int64_t rowid, tl_event_row *r,
                      tl_err *e) {
  const table_spec *t = &specs[T_KERNEL];
  r->start_ns = tl_col_i64(st, F_START, INT64_MIN);
  if (r->start_ns == INT64_MIN)
    return tl_fail(e,
                   "unsupported CUDA/Nsight start at ordered kernel row %" PRId64
                   ": NULL (table %s rowid %" PRId64 " in '%s'; expected integer ns)",
                   c->kernel_ordinal, t->table, rowid, c->path);
  r->end_ns = tl_col_i64(st, F_END, r->start_ns);
  if (r->end_ns < r->start_ns) r->end_ns = r->start_ns;
  if (read_device_stream(c, st, t, rowid, r, e)) return TL_ERROR;

  uint32_t shortname = decode_name(&c->strings, c->pool, st, F_A);
  uint32_t demangled = decode_name(&c->strings, c->pool, st, F_B);
  if (shortname == TL_STR_NOMEM || demangled == TL_STR_NOMEM) return tl_nomem(e);
  uint32_t label = shortname;
  if (demangled && (!shortname || is_generic_kernel_name(tl_strpool_str(c->pool, shortname))))
    label = demangled;
  if (!label) label = fallback_label(c, t->fallback, rowid);
  if (label == TL_STR_NOMEM) return tl_nomem(e);

  int64_t ident = 0;
  if (kernel_identity(c, label, &ident, e)) return TL_ERROR;
  r->name = label;
  r->op_name = label;
  r->op_type = (uint32_t)(ident & 0xffffffffll);
  if (ident & KF_COLLECTIVE) {
    r->kind = TL_KIND_COMMUNICATION;
    r->task_type = konst(c, K_CUDA_COLLECTIVE_KERNEL);
    r->comm_name = label;
    r->comm_task_type = r->task_type;
  } else {
    r->kind = TL_KIND_COMPUTE;
    r->task_type = konst(c, ident & KF_AUX ? K_CUDA_KERNEL_AUX : K_CUDA_KERNEL);
  }
  if (r->task_type == TL_STR_NOMEM) return tl_nomem(e);
  r->graph_node_id = tl_col_i64(st, F_GRAPHNODE, TL_ABSENT);
  c->kernel_ordinal++;
  return TL_OK;
}

/* "<what> <key>=<v>[ <key>=<v>]", or the fallback when the first value is NULL. */
static uint32_t keyed_label(nsys_events *c, sqlite3_stmt *st, const char *what, const char *ka,
                            const char *kb, const char *fallback, int64_t rowid) {
  if (sqlite3_column_type(st, F_A) == SQLITE_NULL) return fallback_label(c, fallback, rowid);
  tl_buf_reset(&c->scratch);
  tl_buf_printf(&c->scratch, "%s %s=%" PRId64, what, ka, tl_col_i64(st, F_A, 0));
  if (kb && sqlite3_column_type(st, F_B) != SQLITE_NULL)
    tl_buf_printf(&c->scratch, " %s=%" PRId64, kb, tl_col_i64(st, F_B, 0));
  return intern_scratch(c);
}

static uint32_t sync_label(nsys_events *c, sqlite3_stmt *st, int64_t rowid) {
  if (sqlite3_column_type(st, F_A) == SQLITE_NULL)
    return fallback_label(c, specs[T_SYNC].fallback, rowid);
  int64_t v = tl_col_i64(st, F_A, -1);
  const char *name = NULL;
  if (v >= 0 && v < 64 && c->sync_names[v]) name = c->sync_names[v];
  else if (v >= 0 && v < (int64_t)(sizeof sync_type_names / sizeof *sync_type_names))
    name = sync_type_names[v];
  if (name) return tl_strpool_intern_cstr(c->pool, name);
  tl_buf_reset(&c->scratch);
  tl_buf_printf(&c->scratch, "CUDA_SYNC_TYPE_%" PRId64, v);
  return intern_scratch(c);
}

/* Returns 1 = row, 0 = skip the row (no timestamp: identity-only), -1 = error. */
static int aux_row(nsys_events *c, sqlite3_stmt *st, int64_t rowid, tl_event_row *r,
                   tl_err *e) {
  const table_spec *t = &specs[c->phase];
  r->start_ns = tl_col_i64(st, F_START, INT64_MIN);
  if (r->start_ns == INT64_MIN) {
    c->base.dropped_rows++;
    return 0;
  }
  int64_t end = tl_col_i64(st, F_END, INT64_MIN);
  /* A missing or non-positive duration still occupies the timeline for 1 ns (none at
  ** INT64_MAX, where start + 1 would overflow). */
  r->end_ns = end == INT64_MIN || end <= r->start_ns ? r->start_ns + (r->start_ns < INT64_MAX) : end;
  if (read_device_stream(c, st, t, rowid, r, e)) return -1;
  r->kind = t->kind;
  switch (c->phase) {
    case T_MEMCPY:
      r->name = keyed_label(c, st, "CudaMemcpy", "kind", "bytes", t->fallback, rowid);
      r->graph_node_id = tl_col_i64(st, F_GRAPHNODE, TL_ABSENT);
      break;
    case T_MEMSET:
      r->name = keyed_label(c, st, "CudaMemset", "bytes", NULL, t->fallback, rowid);
      r->graph_node_id = tl_col_i64(st, F_GRAPHNODE, TL_ABSENT);
      break;
    case T_SYNC: r->name = sync_label(c, st, rowid); break;
    case T_EVENT:
      r->name = keyed_label(c, st, "CudaEvent", "event", NULL, t->fallback, rowid);
      break;
    default:
      r->name = keyed_label(c, st, "CudaGraph", "graph", "exec", t->fallback, rowid);
      break;
  }
  if (!c->table_task_type[c->phase])
    c->table_task_type[c->phase] = tl_strpool_intern_cstr(c->pool, t->task_type);
  r->task_type = c->table_task_type[c->phase];
  if (r->name == TL_STR_NOMEM || r->task_type == TL_STR_NOMEM) return tl_nomem(e), -1;
  return 1;
}

static int events_next(tl_cursor *base, void *out, tl_err *e) {
  nsys_events *c = (nsys_events *)base;
  tl_event_row *r = out;
  while (c->phase < T_COUNT) {
    sqlite3_stmt *st = c->st[c->phase];
    if (!st) {
      c->phase++;
      continue;
    }
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
      c->phase++;
      continue;
    }
    if (rc != SQLITE_ROW)
      return tl_fail(e, "failed to read table %s in '%s': %s", specs[c->phase].table, c->path,
                     sqlite3_errmsg(c->db)),
             -1;
    memset(r, 0, sizeof *r);
    int64_t rowid = sqlite3_column_int64(st, 0);
    r->db_idx = c->db_idx;
    r->source_id = c->source_id;
    r->source_table = specs[c->phase].table;
    r->source_rowid = rowid;
    r->correlation_id = tl_col_i64(st, F_CORR, TL_ABSENT);
    r->task_id = r->correlation_id != TL_ABSENT ? r->correlation_id : rowid;
    r->global_task_id = TL_ABSENT;
    r->context_id = tl_col_i64(st, F_CONTEXT, TL_ABSENT);
    r->model_id = TL_ABSENT;
    r->graph_node_id = TL_ABSENT;
    r->op_id = TL_ABSENT;
    if (c->phase == T_KERNEL) {
      if (kernel_row(c, st, rowid, r, e)) return -1;
      return 1;
    }
    int got = aux_row(c, st, rowid, r, e);
    if (got != 0) return got;
  }
  return 0;
}

static void events_close(tl_cursor *base) {
  nsys_events *c = (nsys_events *)base;
  if (!c) return;
  for (int i = 0; i < T_COUNT; i++) sqlite3_finalize(c->st[i]);
  tl_sql_close(c->db);
  tl_strtab_free(&c->strings);
  tl_i64map_free(&c->kernel_cache);
  for (int i = 0; i < 64; i++) free(c->sync_names[i]);
  free(c->lower);
  tl_buf_free(&c->scratch);
  free(c->path);
  free(c);
}

/* The export's ENUM_CUPTI_SYNC_TYPE(id, name), when present, names newer sync types too. */
static int load_sync_names(nsys_events *c, tl_err *e) {
  tl_columns cols;
  if (tl_sql_columns(c->db, c->path, "ENUM_CUPTI_SYNC_TYPE", &cols, e)) return TL_ERROR;
  int ok = tl_columns_find(&cols, "id", 1) >= 0 && tl_columns_find(&cols, "name", 1) >= 0;
  tl_columns_free(&cols);
  if (!ok) return TL_OK;
  sqlite3_stmt *st;
  if (tl_sql_prepare(c->db, c->path, "SELECT \"id\", \"name\" FROM \"ENUM_CUPTI_SYNC_TYPE\"",
                     &st, e))
    return TL_ERROR;
  while (sqlite3_step(st) == SQLITE_ROW) {
    int64_t id = tl_col_i64(st, 0, -1);
    const char *name = tl_col_text(st, 1, NULL);
    if (id < 0 || id >= 64 || !*name || c->sync_names[id]) continue;
    if (strncmp(name, SYNC_PREFIX, strlen(SYNC_PREFIX)) == 0) name += strlen(SYNC_PREFIX);
    if (!(c->sync_names[id] = tl_strdup(name))) {
      sqlite3_finalize(st);
      return tl_nomem(e);
    }
  }
  sqlite3_finalize(st);
  return TL_OK;
}

/* Checks one table's schema and prepares its statement (left NULL when the table is absent
** or holds identity-only records). */
static int prepare_table(nsys_events *c, int t, const tl_event_filter *f, tl_err *e) {
  const table_spec *spec = &specs[t];
  tl_columns cols;
  if (tl_sql_columns(c->db, c->path, spec->table, &cols, e)) return TL_ERROR;
  int rc = TL_OK;
  const char *sel[NFIELDS];
  for (int i = 0; i < NFIELDS; i++) sel[i] = spec->fields[i] ? find_col(&cols, spec->fields[i]) : NULL;
  if (t == T_KERNEL) {
    static const char *const need[] = {"start", "end", "deviceId", "streamId", NULL};
    char *missing = NULL;
    if (!cols.exists)
      rc = tl_fail(e,
                   "unsupported CUDA/Nsight SQLite export: required table "
                   "CUPTI_ACTIVITY_KIND_KERNEL is missing (file '%s')",
                   c->path);
    else if (!tl_columns_have(&cols, need, 1, &missing))
      rc = tl_fail(e,
                   "unsupported CUDA/Nsight kernel schema: missing required column(s): %s "
                   "(table CUPTI_ACTIVITY_KIND_KERNEL in '%s'; expected start, end, deviceId, "
                   "streamId)",
                   missing ? missing : "?", c->path);
    free(missing);
  } else if (cols.exists) {
    if (!sel[F_START - 1]) {
      if (t == T_EVENT && sel[F_END - 1])
        rc = tl_fail(e,
                     "unsupported CUDA/Nsight CUPTI_ACTIVITY_KIND_CUDA_EVENT schema: end "
                     "without start or timestamp (file '%s')",
                     c->path);
      else if (t != T_EVENT)
        rc = tl_fail(e,
                     "unsupported CUDA/Nsight %s schema: missing start or timestamp (file '%s')",
                     spec->table, c->path);
      /* else: identity-only CUDA events (older exports) carry no time and are skipped. */
    } else if (!sel[F_DEVICE - 1]) {
      rc = tl_fail(e,
                   "unsupported CUDA/Nsight %s schema: missing deviceId or device (file '%s')",
                   spec->table, c->path);
    }
  }
  if (rc == TL_OK && cols.exists && sel[F_START - 1]) {
    char *sql = select_sql(spec->table, sel, NFIELDS, F_DEVICE - 1, f && f->has_device);
    if (!sql) rc = tl_nomem(e);
    else rc = tl_sql_prepare(c->db, c->path, sql, &c->st[t], e);
    free(sql);
    if (rc == TL_OK && f && f->has_device) sqlite3_bind_int64(c->st[t], 1, f->device_id);
  }
  tl_columns_free(&cols);
  return rc;
}

static int events_open(const tl_profile *p, int db_idx, const tl_event_filter *f,
                       tl_strpool *pool, tl_cursor **out, tl_err *e) {
  *out = NULL;
  nsys_events *c = calloc(1, sizeof *c);
  if (!c) return tl_nomem(e);
  c->base.next = events_next;
  c->base.close = events_close;
  c->pool = pool;
  c->db_idx = db_idx;
  c->source_id = p->inputs.v[db_idx].primary_file;
  c->path = tl_strdup(input_path(p, db_idx) ? input_path(p, db_idx) : "");
  int rc = c->path ? TL_OK : tl_nomem(e);
  if (rc == TL_OK) rc = open_db(c->path, &c->db, e);
  for (int t = 0; rc == TL_OK && t < T_COUNT; t++) rc = prepare_table(c, t, f, e);
  if (rc == TL_OK) rc = strings_load(c->db, c->path, &c->strings, e);
  if (rc == TL_OK) rc = load_sync_names(c, e);
  if (rc) {
    events_close(&c->base);
    return TL_ERROR;
  }
  *out = &c->base;
  return TL_OK;
}

/* ------------------------------------------------------------------ host calls */

enum { R_START = 1, R_END, R_CORR, R_NAME, R_GTID, R_PID, R_TID, R_CONTEXT, R_DEVICE,
       R_END_OF_FIELDS };
#define NRFIELDS (R_END_OF_FIELDS - 1)

typedef struct nsys_calls {
  tl_cursor base;
  sqlite3 *db;
  char *path;
  tl_strpool *pool;
  tl_strtab strings;
  sqlite3_stmt *st;    /* NULL: no runtime table */
  int db_idx, source_id;
  uint32_t api_type;
  char fallback[48];
} nsys_calls;

static int calls_next(tl_cursor *base, void *out, tl_err *e) {
  nsys_calls *c = (nsys_calls *)base;
  tl_call_row *r = out;
  if (!c->st) return 0;
  for (;;) {
    int rc = sqlite3_step(c->st);
    if (rc == SQLITE_DONE) return 0;
    if (rc != SQLITE_ROW)
      return tl_fail(e, "failed to read table %s in '%s': %s", RUNTIME_TABLE, c->path,
                     sqlite3_errmsg(c->db)),
             -1;
    sqlite3_stmt *st = c->st;
    if (sqlite3_column_type(st, R_START) == SQLITE_NULL) { /* no time, no call */
      c->base.dropped_rows++;
      continue;
    }
    memset(r, 0, sizeof *r);
    int64_t rowid = sqlite3_column_int64(st, 0);
    r->db_idx = c->db_idx;
    r->source_id = c->source_id;
    r->source_table = RUNTIME_TABLE;
    r->source_rowid = rowid;
    r->provider = TL_PROVIDER_CUDA;
    r->api_name = decode_name(&c->strings, c->pool, st, R_NAME);
    if (r->api_name == TL_STR_NONE) {
      snprintf(c->fallback, sizeof c->fallback, "cuda_runtime_%" PRId64, rowid);
      r->api_name = tl_strpool_intern_cstr(c->pool, c->fallback);
    }
    if (!c->api_type) c->api_type = tl_strpool_intern_cstr(c->pool, "cuda_runtime");
    r->api_type = c->api_type;
    if (r->api_name == TL_STR_NOMEM || r->api_type == TL_STR_NOMEM) return tl_nomem(e), -1;
    r->start_ns = tl_col_i64(st, R_START, 0);
    int64_t end = tl_col_i64(st, R_END, INT64_MIN);
    r->end_ns = end == INT64_MIN || end <= r->start_ns ? r->start_ns + (r->start_ns < INT64_MAX) : end;
    r->global_tid = tl_col_i64(st, R_GTID, TL_ABSENT);
    int have_gtid = sqlite3_column_type(st, R_GTID) != SQLITE_NULL;
    uint64_t g = (uint64_t)r->global_tid;
    r->process_id = sqlite3_column_type(st, R_PID) != SQLITE_NULL
                        ? tl_col_i64(st, R_PID, TL_ABSENT)
                        : have_gtid ? (int64_t)((g >> 24) & 0xFFFFFF) : TL_ABSENT;
    r->thread_id = sqlite3_column_type(st, R_TID) != SQLITE_NULL
                       ? tl_col_i64(st, R_TID, TL_ABSENT)
                       : have_gtid ? (int64_t)(g & 0xFFFFFF) : TL_ABSENT;
    r->context_id = tl_col_i64(st, R_CONTEXT, TL_ABSENT);
    r->device_id = tl_col_i64(st, R_DEVICE, TL_ABSENT);
    r->correlation_id = tl_col_i64(st, R_CORR, TL_ABSENT);
    return 1;
  }
}

static void calls_close(tl_cursor *base) {
  nsys_calls *c = (nsys_calls *)base;
  if (!c) return;
  sqlite3_finalize(c->st);
  tl_sql_close(c->db);
  tl_strtab_free(&c->strings);
  free(c->path);
  free(c);
}

static int calls_prepare(nsys_calls *c, tl_err *e) {
  static const char *const c_name[] = {"nameId", NULL};
  static const char *const c_gtid[] = {"globalTid", NULL};
  static const char *const c_pid[] = {"processId", "pid", NULL};
  static const char *const c_tid[] = {"threadId", "tid", NULL};
  static const char *const *const fields[NRFIELDS] = {c_start, c_end,  c_corr,    c_name,
                                                      c_gtid,  c_pid,  c_tid,     c_context,
                                                      c_device};
  tl_columns cols;
  if (tl_sql_columns(c->db, c->path, RUNTIME_TABLE, &cols, e)) return TL_ERROR;
  if (!cols.exists) return TL_OK; /* lazily created: no runtime trace, no calls */
  const char *sel[NRFIELDS];
  for (int i = 0; i < NRFIELDS; i++) sel[i] = find_col(&cols, fields[i]);
  int rc = TL_OK;
  if (!sel[R_START - 1]) {
    rc = tl_fail(e,
                 "unsupported CUDA/Nsight %s schema: missing start or timestamp (file '%s')",
                 RUNTIME_TABLE, c->path);
  } else {
    char *sql = select_sql(RUNTIME_TABLE, sel, NRFIELDS, -1, 0);
    rc = sql ? tl_sql_prepare(c->db, c->path, sql, &c->st, e) : tl_nomem(e);
    free(sql);
  }
  tl_columns_free(&cols);
  return rc;
}

static int calls_open(const tl_profile *p, int db_idx, tl_strpool *pool, tl_cursor **out,
                      tl_err *e) {
  *out = NULL;
  nsys_calls *c = calloc(1, sizeof *c);
  if (!c) return tl_nomem(e);
  c->base.next = calls_next;
  c->base.close = calls_close;
  c->pool = pool;
  c->db_idx = db_idx;
  c->source_id = p->inputs.v[db_idx].primary_file;
  c->path = tl_strdup(input_path(p, db_idx) ? input_path(p, db_idx) : "");
  int rc = c->path ? TL_OK : tl_nomem(e);
  if (rc == TL_OK) rc = open_db(c->path, &c->db, e);
  if (rc == TL_OK) rc = calls_prepare(c, e);
  if (rc == TL_OK && c->st) rc = strings_load(c->db, c->path, &c->strings, e);
  if (rc) {
    calls_close(&c->base);
    return TL_ERROR;
  }
  *out = &c->base;
  return TL_OK;
}

/* ------------------------------------------------------------------ inventory */

typedef struct inv_ctx {
  sqlite3 *db;
  const char *path;
  int db_idx;
  tl_inventory *inv;
  tl_err *e;
} inv_ctx;

/* Why a table cannot serve a capability, or NULL when it can: absent, empty, or lacking
** columns (each required entry is a NULL-terminated alternative list). malloc'd. */
static char *table_gap(inv_ctx *x, const char *table, const char *const *const *required,
                       int *failed) {
  tl_columns cols;
  *failed = 0;
  if (tl_sql_columns(x->db, x->path, table, &cols, x->e)) return *failed = 1, NULL;
  if (!cols.exists)
    return tl_mprintf("table %s is absent (Nsight creates tables lazily: no such data was "
                      "captured)",
                      table);
  tl_buf miss = {0};
  for (int i = 0; required && required[i]; i++) {
    if (find_col(&cols, required[i])) continue;
    if (miss.n) tl_buf_puts(&miss, ", ");
    for (int j = 0; required[i][j]; j++) tl_buf_printf(&miss, "%s%s", j ? " or " : "", required[i][j]);
  }
  tl_columns_free(&cols);
  char *why = NULL;
  if (miss.n)
    why = tl_mprintf("table %s is missing column(s): %s", table, miss.p);
  else if (tl_sql_nonempty(x->db, table) == 0)
    why = tl_mprintf("table %s is empty", table);
  tl_buf_free(&miss);
  return why;
}

static int add_cap(inv_ctx *x, const char *cap, const char *table, const char *why,
                   const char *ok_detail) {
  return tl_inventory_add(x->inv, x->db_idx, "capability", SOURCE_KIND, x->path, table, -1, cap,
                          why ? 0 : 1, why ? why : ok_detail, x->e);
}

/* One capability backed by one table. */
static int cap_table(inv_ctx *x, const char *cap, const char *table,
                     const char *const *const *required, const char *ok_detail) {
  int failed;
  char *why = table_gap(x, table, required, &failed);
  if (failed) return TL_ERROR;
  int rc = add_cap(x, cap, table, why, ok_detail);
  free(why);
  return rc;
}

static int schema_version(inv_ctx *x) {
  static const char *const c_n[] = {"name", NULL}, *const c_v[] = {"value", NULL};
  static const char *const *const need[] = {c_n, c_v, NULL};
  int failed;
  char *why = table_gap(x, "META_DATA_EXPORT", need, &failed);
  if (failed) return TL_ERROR;
  char *version = NULL;
  if (!why) {
    sqlite3_stmt *st;
    if (tl_sql_prepare(x->db, x->path,
                       "SELECT \"value\" FROM \"META_DATA_EXPORT\" WHERE \"name\" = "
                       "'EXPORT_SCHEMA_VERSION' LIMIT 1",
                       &st, x->e))
      return TL_ERROR;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
      version = tl_mprintf("EXPORT_SCHEMA_VERSION %s", tl_col_text(st, 0, NULL));
    else
      why = tl_strdup("table META_DATA_EXPORT has no EXPORT_SCHEMA_VERSION row");
    sqlite3_finalize(st);
    if (!version && !why) return tl_nomem(x->e);
  }
  int rc = add_cap(x, "export_schema_version", "META_DATA_EXPORT", why, version);
  free(why);
  free(version);
  return rc;
}

/* Kernel graphNodeId plus a non-empty CUDA_GRAPH_NODE_EVENTS(graphNodeId, originalGraphNodeId). */
static int graph_node_identity(inv_ctx *x) {
  static const char *const *const kneed[] = {c_graphnode, NULL};
  static const char *const c_orig[] = {"originalGraphNodeId", NULL};
  static const char *const *const gneed[] = {c_graphnode, c_orig, NULL};
  int failed;
  char *why = table_gap(x, KERNEL_TABLE, kneed, &failed);
  if (failed) return TL_ERROR;
  const char *table = "CUDA_GRAPH_NODE_EVENTS";
  if (!why) {
    why = table_gap(x, table, gneed, &failed);
    if (failed) return TL_ERROR;
  } else {
    table = KERNEL_TABLE;
  }
  int rc = add_cap(x, "graph_node_identity", table, why, NULL);
  free(why);
  return rc;
}

/* CUDA events: identity-only tables (no start/timestamp) are usable as nothing. */
static int cuda_events(inv_ctx *x) {
  static const char *const *const need[] = {c_start, c_device, NULL};
  int failed;
  char *why = table_gap(x, "CUPTI_ACTIVITY_KIND_CUDA_EVENT", need, &failed);
  if (failed) return TL_ERROR;
  if (why && strstr(why, "start or timestamp")) {
    free(why);
    why = tl_strdup("table CUPTI_ACTIVITY_KIND_CUDA_EVENT is missing column(s): start or "
                    "timestamp (identity-only event records, skipped)");
    if (!why) return tl_nomem(x->e);
  }
  int rc = add_cap(x, "cuda_events", "CUPTI_ACTIVITY_KIND_CUDA_EVENT", why, NULL);
  free(why);
  return rc;
}

static int inventory(const tl_profile *p, int db_idx, tl_inventory *inv, tl_err *e) {
  static const char *const c_name[] = {"nameId", NULL};
  static const char *const c_names[] = {"shortName", "demangledName", NULL};
  static const char *const c_eventtype[] = {"eventType", NULL};
  static const char *const c_text[] = {"text", "textId", NULL};
  static const char *const c_id[] = {"id", NULL}, *const c_value[] = {"value", NULL};
  static const char *const *const kernel_need[] = {c_start_only, c_end, c_device_only,
                                                   c_stream_only, NULL};
  static const char *const *const names_need[] = {c_names, NULL};
  static const char *const *const runtime_need[] = {c_start, c_end, c_name, NULL};
  static const char *const *const corr_need[] = {c_corr, NULL};
  static const char *const *const memcpy_need[] = {c_start, c_device, c_copykind, NULL};
  static const char *const *const memset_need[] = {c_start, c_device, NULL};
  static const char *const *const sync_need[] = {c_start, c_device, c_synctype, NULL};
  static const char *const *const graph_need[] = {c_start, c_end, c_device, c_graphid,
                                                  c_graphexec, NULL};
  static const char *const *const nvtx_need[] = {c_start, c_end, c_eventtype, c_text, NULL};
  static const char *const *const strings_need[] = {c_id, c_value, NULL};

  const char *path = input_path(p, db_idx);
  sqlite3 *db;
  if (open_db(path, &db, e)) return TL_ERROR;
  inv_ctx x = {db, path, db_idx, inv, e};
  int rc = cap_table(&x, "device_tasks", KERNEL_TABLE, kernel_need, NULL);
  if (!rc) rc = cap_table(&x, "compute_identity", KERNEL_TABLE, names_need, NULL);
  if (!rc) rc = cap_table(&x, "communication_identity", KERNEL_TABLE, names_need, NULL);
  if (!rc) rc = cap_table(&x, "host_api", RUNTIME_TABLE, runtime_need, NULL);
  if (!rc) {
    /* Correlation needs the id on both sides. */
    int failed;
    char *why = table_gap(&x, RUNTIME_TABLE, corr_need, &failed);
    if (!failed && !why) why = table_gap(&x, KERNEL_TABLE, corr_need, &failed);
    rc = failed ? TL_ERROR
                : add_cap(&x, "runtime_device_correlation", RUNTIME_TABLE, why, NULL);
    free(why);
  }
  if (!rc) rc = cap_table(&x, "memcpy", "CUPTI_ACTIVITY_KIND_MEMCPY", memcpy_need, NULL);
  if (!rc) rc = cap_table(&x, "memset", "CUPTI_ACTIVITY_KIND_MEMSET", memset_need, NULL);
  if (!rc) rc = cap_table(&x, "synchronization", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
                          sync_need, NULL);
  if (!rc) rc = cuda_events(&x);
  if (!rc) rc = graph_node_identity(&x);
  if (!rc) rc = cap_table(&x, "graph_trace", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE", graph_need, NULL);
  if (!rc) rc = cap_table(&x, "nvtx", "NVTX_EVENTS", nvtx_need, NULL);
  if (!rc) rc = cap_table(&x, "string_table", "StringIds", strings_need, NULL);
  if (!rc) rc = schema_version(&x);
  tl_sql_close(db);
  return rc;
}

/* A read error counts as found: the reader reports it, with its message. */
static int detect(const tl_sql_probe *f, tl_err *e) {
  return tl_sql_probe_has(f, "CUPTI_ACTIVITY_KIND_KERNEL") &&
         tl_sql_nonempty(f->db, "CUPTI_ACTIVITY_KIND_KERNEL") != 0;
}

const tl_family_def tl_nsys_family = {
    .source_kind = "cuda_nsys_sqlite",
    .name = "Nsight Systems",
    .provider = TL_PROVIDER_CUDA,
    .detect_sqlite = detect,
    .detect_hint = "CUPTI_ACTIVITY_KIND_KERNEL (Nsight Systems export)",
    .layout_hint = "*.db/*.sqlite files with CUPTI_ACTIVITY_KIND_KERNEL",
    .sqlite_files = 1,
    .inventory = inventory,
    .events_open = events_open,
    .calls_open = calls_open,
    .calls_beside = 1,
    .cuda_graph_facts = tl_nsys_cuda_graph_facts,
};
