/*
** msprof_split.c: the Ascend split SQLite reader (inputs.md section 5).
**
** A split profile is a PROF_* directory whose data lives in many small databases:
**
**   device_N/sqlite/ascend_task.db         AscendTask            device tasks (required)
**   device_N/sqlite/hccl_single_device.db  HCCLTaskSingleDevice  communication identity
**                                          HCCLOpSingleDevice    communication ops (fallback)
**   host/sqlite/ge_info.db                 TaskInfo              compute identity
**   host/sqlite/hccl.db                    HCCLOP                communication ops (preferred)
**   host/sqlite/runtime.db                 HostTask              fallback host task type
**   host/sqlite/api_event.db               ApiData               host runtime calls
**   host/sqlite/stream_info.db             CaptureStreamInfo     capture streams
**
** Discovery lists every such file in tl_profile.files (role TL_FILE_SPLIT_PART, sorted by
** path); this reader finds its tables by name in those files, so a table in an unexpected
** file is still found. It yields the same normalized events as the monolithic reader
** (msprof.c) would for the same run:
**
**   1. every AscendTask row with start_time >= 0 and duration >= 0, device files in path
**      order, rows in rowid order; identity comes from in-memory indexes of TaskInfo
**      (keyed device, stream, task, context) and HCCLTaskSingleDevice (same key, device
**      from the path), built once when the cursor opens;
**   2. then one event per communication op (HCCLOP, else HCCLOpSingleDevice). Op begin/end
**      times may be on the host clock and are ignored: an op's geometry is the envelope of
**      the AscendTask rows with the same (device, connection_id) that carry HCCL identity,
**      accumulated while step 1 streams.
**
** Host runtime calls come from ApiData, whose start/end are 10 ns ticks.
** Usage: through tl_msprof_split_family (source.h).
*/
#include "source/readers.h"
#include "source/sqlsrc.h"
#include "util/i64map.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- the tables */

enum {
  T_ASCEND_TASK = 0,
  T_TASK_INFO,
  T_HCCL_TASK,
  T_HCCL_OP,
  T_HCCL_OP_SD,
  T_HOST_TASK,
  T_API_DATA,
  T_CAPTURE_STREAM,
  T_COUNT
};

static const char *const table_names[T_COUNT] = {
    "AscendTask", "TaskInfo", "HCCLTaskSingleDevice", "HCCLOP",
    "HCCLOpSingleDevice", "HostTask", "ApiData", "CaptureStreamInfo"};

/* Where each table is expected, for messages about a missing table. */
static const char *const table_homes[T_COUNT] = {
    "device_*/sqlite/ascend_task.db", "host/sqlite/ge_info.db",
    "device_*/sqlite/hccl_single_device.db", "host/sqlite/hccl.db",
    "device_*/sqlite/hccl_single_device.db", "host/sqlite/runtime.db",
    "host/sqlite/api_event.db", "host/sqlite/stream_info.db"};

static const char *const cols_ascend_task[] = {
    "start_time", "duration", "device_task_type", "stream_id", "task_id", "context_id",
    "connection_id", "host_task_type", NULL};
static const char *const cols_task_info[] = {
    "device_id", "stream_id", "task_id", "context_id", "op_name", "op_type", "task_type", NULL};
static const char *const cols_hccl_task[] = {
    "stream_id", "task_id", "context_id", "op_name", "hccl_name", NULL};
static const char *const cols_hccl_op[] = {"device_id", "op_name", "op_type", "connection_id",
                                           NULL};
static const char *const cols_hccl_op_sd[] = {"op_name", "op_type", "connection_id", NULL};
static const char *const cols_host_task[] = {"connection_id", "task_type", NULL};
static const char *const cols_api_data[] = {"start", "end", "connection_id", "id", NULL};
/* CaptureStreamInfo also needs stream_id or the legacy model_stream_id (section 4). */
static const char *const cols_capture_stream[] = {"device_id", "model_id", NULL};

static const char *const *const table_columns[T_COUNT] = {
    cols_ascend_task, cols_task_info, cols_hccl_task, cols_hccl_op,
    cols_hccl_op_sd, cols_host_task, cols_api_data, cols_capture_stream};

/* One known table found in one file of the profile. */
typedef struct split_table {
  int kind;          /* T_* */
  int source_id;     /* index into tl_profile.files */
  uint32_t device_id; /* N for device_N/ files, else 0 (section 5) */
  tl_columns cols;
  char *missing;     /* "a, b" when required columns are missing, else NULL */
  int64_t rows;      /* count(*) */
} split_table;

typedef struct split_catalog {
  const tl_profile *p;
  int db_idx;
  TL_VEC(split_table) t; /* in file (path) order, then table-name order */
} split_catalog;

static void catalog_free(split_catalog *c) {
  for (size_t i = 0; i < c->t.n; i++) {
    tl_columns_free(&c->t.v[i].cols);
    free(c->t.v[i].missing);
  }
  TL_VEC_FREE(&c->t);
}

static const char *table_path(const split_catalog *c, const split_table *t) {
  return c->p->files.v[t->source_id].path;
}

static int known_table(const char *name) {
  for (int k = 0; k < T_COUNT; k++)
    if (strcmp(name, table_names[k]) == 0) return k;
  return -1;
}

/* Lists the known tables of every file of the input, with their columns and row counts. */
static int catalog_load(const tl_profile *p, int db_idx, split_catalog *c, tl_err *e) {
  memset(c, 0, sizeof *c);
  c->p = p;
  c->db_idx = db_idx;
  for (size_t f = 0; f < p->files.n; f++) {
    const tl_source_file *sf = &p->files.v[f];
    if (sf->db_idx != db_idx || sf->role != TL_FILE_SPLIT_PART) continue;
    sqlite3 *db;
    if (tl_sql_open_ro(sf->path, &db, e)) goto fail;
    tl_names names;
    if (tl_sql_tables(db, sf->path, &names, e)) {
      tl_sql_close(db);
      goto fail;
    }
    int rc = TL_OK;
    for (size_t i = 0; i < names.n && rc == TL_OK; i++) {
      int kind = known_table(names.v[i]);
      if (kind < 0) continue;
      split_table t;
      memset(&t, 0, sizeof t);
      t.kind = kind;
      t.source_id = (int)f;
      t.device_id = sf->device_id >= 0 ? (uint32_t)sf->device_id : 0;
      if ((rc = tl_sql_columns(db, sf->path, names.v[i], &t.cols, e)) != TL_OK) break;
      int complete = tl_columns_have(&t.cols, table_columns[kind], 0, &t.missing);
      if (kind == T_CAPTURE_STREAM && tl_columns_find(&t.cols, "stream_id", 0) < 0 &&
          tl_columns_find(&t.cols, "model_stream_id", 0) < 0) {
        char *m = tl_mprintf("%s%sstream_id (or model_stream_id)", t.missing ? t.missing : "",
                             t.missing ? ", " : "");
        free(t.missing);
        t.missing = m;
        complete = 0;
      }
      if (!complete && !t.missing) rc = tl_nomem(e);
      if (rc == TL_OK) {
        t.rows = tl_sql_count(db, sf->path, names.v[i], e);
        if (t.rows < 0) rc = TL_ERROR;
      }
      if (rc == TL_OK && TL_VEC_PUSH(&c->t, t)) rc = tl_nomem(e);
      if (rc != TL_OK) {
        tl_columns_free(&t.cols);
        free(t.missing);
      }
    }
    tl_names_free(&names);
    tl_sql_close(db);
    if (rc) goto fail;
  }
  return TL_OK;
fail:
  catalog_free(c);
  return TL_ERROR;
}

/* Tables of one kind: count, and whether every one of them is complete. */
static size_t catalog_count(const split_catalog *c, int kind, int *all_complete) {
  size_t n = 0;
  int ok = 1;
  for (size_t i = 0; i < c->t.n; i++) {
    if (c->t.v[i].kind != kind) continue;
    n++;
    if (c->t.v[i].missing) ok = 0;
  }
  if (all_complete) *all_complete = ok;
  return n;
}

/* Why tables of a kind are unusable (malloc'd), or NULL when all present ones are complete
** and at least one exists. */
static char *catalog_reason(const split_catalog *c, int kind) {
  int complete;
  if (catalog_count(c, kind, &complete) == 0)
    return tl_mprintf("missing table %s (expected %s:%s under %s)", table_names[kind],
                      table_homes[kind], table_names[kind], c->p->inputs.v[c->db_idx].path);
  if (complete) return NULL;
  for (size_t i = 0; i < c->t.n; i++) {
    const split_table *t = &c->t.v[i];
    if (t->kind == kind && t->missing)
      return tl_mprintf("table %s in '%s' is missing column(s): %s", table_names[kind],
                        table_path(c, t), t->missing);
  }
  return NULL;
}

/* The select-list text of an optional column: its quoted name, or "NULL". malloc'd. */
static char *opt_col(const tl_columns *cols, const char *name) {
  return tl_columns_find(cols, name, 0) >= 0 ? tl_sql_quote_ident(name) : tl_strdup("NULL");
}

/* ---------------------------------------------------------------- shared helpers */

/* Task (device, stream, task, context) and connection (device, connection) keys. */
typedef struct key4 {
  int64_t k[4];
} key4;

/* An open-addressing map from key4 to a dense index; the first put of a key wins. */
typedef struct key4_map {
  key4 *keys;
  int64_t *vals; /* -1 = empty slot */
  size_t n, cap;
} key4_map;

static size_t key4_slot(const key4 *k, size_t cap) {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < 4; i++) {
    h ^= (uint64_t)k->k[i];
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  return (size_t)h & (cap - 1);
}

static int64_t key4_get(const key4_map *m, const key4 *k) {
  if (!m->cap) return -1;
  for (size_t i = key4_slot(k, m->cap);; i = (i + 1) & (m->cap - 1)) {
    if (m->vals[i] < 0) return -1;
    if (memcmp(&m->keys[i], k, sizeof *k) == 0) return m->vals[i];
  }
}

/* Inserts key -> val unless the key is present. Returns 0, or -1 on out-of-memory. */
static int key4_put_first(key4_map *m, const key4 *k, int64_t val) {
  if ((m->n + 1) * 2 > m->cap) {
    size_t cap = m->cap ? m->cap * 2 : 64;
    key4 *keys = malloc(cap * sizeof *keys);
    int64_t *vals = malloc(cap * sizeof *vals);
    if (!keys || !vals) {
      free(keys), free(vals);
      return -1;
    }
    for (size_t i = 0; i < cap; i++) vals[i] = -1;
    for (size_t i = 0; i < m->cap; i++) {
      if (m->vals[i] < 0) continue;
      size_t j = key4_slot(&m->keys[i], cap);
      while (vals[j] >= 0) j = (j + 1) & (cap - 1);
      keys[j] = m->keys[i], vals[j] = m->vals[i];
    }
    free(m->keys), free(m->vals);
    m->keys = keys, m->vals = vals, m->cap = cap;
  }
  size_t i = key4_slot(k, m->cap);
  while (m->vals[i] >= 0) {
    if (memcmp(&m->keys[i], k, sizeof *k) == 0) return 0;
    i = (i + 1) & (m->cap - 1);
  }
  m->keys[i] = *k, m->vals[i] = val, m->n++;
  return 0;
}

static void key4_free(key4_map *m) {
  free(m->keys), free(m->vals);
  memset(m, 0, sizeof *m);
}

static key4 task_key(int64_t device, int64_t stream, int64_t task, int64_t context) {
  key4 k = {{device, stream, task, context}};
  return k;
}

static int intern(tl_strpool *pool, const char *s, int len, uint32_t *out, tl_err *e) {
  *out = tl_strpool_intern(pool, s, (size_t)len);
  return *out == TL_STR_NOMEM ? tl_nomem(e) : TL_OK;
}

static int intern_col(tl_strpool *pool, sqlite3_stmt *st, int col, uint32_t *out, tl_err *e) {
  int len;
  const char *s = tl_col_text(st, col, &len);
  return intern(pool, s, len, out, e);
}

static int64_t norm_model_id(int64_t v) { return v < 0 || v == 4294967295LL ? TL_ABSENT : v; }

static uint32_t norm_stream(int64_t v) {
  return v < 0 || v >= (int64_t)TL_NO_STREAM ? TL_NO_STREAM : (uint32_t)v;
}

/* ---------------------------------------------------------------- events cursor */

typedef struct compute_info {
  uint32_t op_name, op_type, task_type;
  int64_t global_task_id; /* synthetic: TaskInfo rowid - 1 */
} compute_info;

typedef struct comm_info {
  uint32_t name, task_type;
} comm_info;

typedef struct stream_time {
  uint32_t stream;
  int64_t busy_ns;
} stream_time;

/* The AscendTask rows with HCCL identity of one (device, connection_id). */
typedef struct envelope {
  int64_t start, end;
  int64_t tasks;
  uint32_t task_name, task_type; /* of the first linked task */
  int names_consistent;
  TL_VEC(stream_time) streams;
} envelope;

/* One communication-op row (HCCLOP or HCCLOpSingleDevice). */
typedef struct op_row {
  int source_id;
  const char *table;
  int64_t rowid;
  size_t order; /* read order, the last tie-break */
  uint32_t device;
  int64_t connection_id, op_id;
  uint32_t op_name, op_type;
  int64_t env;   /* envelope index or -1 */
  int64_t start; /* envelope start, the sort key */
} op_row;

typedef struct split_events {
  tl_cursor base;
  split_catalog cat;
  tl_strpool *pool;
  int db_idx;
  uint32_t comm_op_type; /* task type of communication-op events */
  key4_map compute_map;
  TL_VEC(compute_info) compute;
  key4_map comm_map;
  TL_VEC(comm_info) comm;
  tl_i64map host_types; /* connection_id -> strpool id of HostTask.task_type */
  key4_map env_map;     /* (device, connection_id) */
  TL_VEC(envelope) env;

  /* Streaming AscendTask. */
  size_t next_table;   /* next catalog entry to look at */
  const split_table *task_table;
  sqlite3 *db;
  sqlite3_stmt *st;

  /* Then the communication ops. */
  int ops_loaded;
  TL_VEC(op_row) ops;
  size_t op_pos;
} split_events;

static void events_close_db(split_events *c) {
  sqlite3_finalize(c->st);
  tl_sql_close(c->db);
  c->st = NULL;
  c->db = NULL;
}

static void events_close(tl_cursor *base) {
  split_events *c = (split_events *)base;
  events_close_db(c);
  catalog_free(&c->cat);
  key4_free(&c->compute_map);
  TL_VEC_FREE(&c->compute);
  key4_free(&c->comm_map);
  TL_VEC_FREE(&c->comm);
  tl_i64map_free(&c->host_types);
  key4_free(&c->env_map);
  for (size_t i = 0; i < c->env.n; i++) TL_VEC_FREE(&c->env.v[i].streams);
  TL_VEC_FREE(&c->env);
  TL_VEC_FREE(&c->ops);
  free(c);
}

/* Runs sql on the database of table t, calling row() for each result row. */
static int for_each_row(split_events *c, const split_table *t, const char *sql,
                        int (*row)(split_events *, const split_table *, sqlite3_stmt *, tl_err *),
                        tl_err *e) {
  const char *path = table_path(&c->cat, t);
  sqlite3 *db;
  if (tl_sql_open_ro(path, &db, e)) return TL_ERROR;
  sqlite3_stmt *st;
  int rc = tl_sql_prepare(db, path, sql, &st, e);
  if (rc == TL_OK) {
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW)
      if ((rc = row(c, t, st, e)) != TL_OK) break;
    if (rc == TL_OK && s != SQLITE_DONE)
      rc = tl_fail(e, "failed to read table %s in '%s': %s", table_names[t->kind], path,
                   sqlite3_errmsg(db));
    sqlite3_finalize(st);
  }
  tl_sql_close(db);
  return rc;
}

static int task_info_row(split_events *c, const split_table *t, sqlite3_stmt *st, tl_err *e) {
  (void)t;
  compute_info ci;
  if (intern_col(c->pool, st, 5, &ci.op_name, e) || intern_col(c->pool, st, 6, &ci.op_type, e) ||
      intern_col(c->pool, st, 7, &ci.task_type, e))
    return TL_ERROR;
  ci.global_task_id = sqlite3_column_int64(st, 0) - 1;
  key4 k = task_key(tl_col_i64(st, 1, -1), tl_col_i64(st, 2, -1), tl_col_i64(st, 3, -1),
                    tl_col_i64(st, 4, -1));
  if (key4_get(&c->compute_map, &k) >= 0) return TL_OK;
  if (TL_VEC_PUSH(&c->compute, ci) ||
      key4_put_first(&c->compute_map, &k, (int64_t)c->compute.n - 1))
    return tl_nomem(e);
  return TL_OK;
}

static int hccl_task_row(split_events *c, const split_table *t, sqlite3_stmt *st, tl_err *e) {
  comm_info ci;
  if (intern_col(c->pool, st, 3, &ci.name, e) || intern_col(c->pool, st, 4, &ci.task_type, e))
    return TL_ERROR;
  key4 k = task_key(t->device_id, tl_col_i64(st, 0, -1), tl_col_i64(st, 1, -1),
                    tl_col_i64(st, 2, -1));
  if (key4_get(&c->comm_map, &k) >= 0) return TL_OK;
  if (TL_VEC_PUSH(&c->comm, ci) || key4_put_first(&c->comm_map, &k, (int64_t)c->comm.n - 1))
    return tl_nomem(e);
  return TL_OK;
}

static int host_task_row(split_events *c, const split_table *t, sqlite3_stmt *st, tl_err *e) {
  (void)t;
  int64_t conn = tl_col_i64(st, 0, TL_ABSENT);
  if (tl_i64map_get(&c->host_types, conn)) return TL_OK;
  uint32_t id;
  if (intern_col(c->pool, st, 1, &id, e)) return TL_ERROR;
  if (tl_i64map_put(&c->host_types, conn, id)) return tl_nomem(e);
  return TL_OK;
}

/* Builds the identity indexes: TaskInfo (compute), HCCLTaskSingleDevice (communication,
** only when every such table is complete), HostTask (fallback task types). */
static int load_indexes(split_events *c, tl_err *e) {
  int task_info_ok, hccl_ok, host_ok;
  catalog_count(&c->cat, T_TASK_INFO, &task_info_ok);
  catalog_count(&c->cat, T_HCCL_TASK, &hccl_ok);
  catalog_count(&c->cat, T_HOST_TASK, &host_ok);
  for (size_t i = 0; i < c->cat.t.n; i++) {
    const split_table *t = &c->cat.t.v[i];
    int rc = TL_OK;
    if (t->kind == T_TASK_INFO && task_info_ok)
      rc = for_each_row(c, t,
                        "SELECT rowid, \"device_id\", \"stream_id\", \"task_id\", \"context_id\", "
                        "\"op_name\", \"op_type\", \"task_type\" FROM \"TaskInfo\" ORDER BY rowid",
                        task_info_row, e);
    else if (t->kind == T_HCCL_TASK && hccl_ok)
      rc = for_each_row(c, t,
                        "SELECT \"stream_id\", \"task_id\", \"context_id\", \"op_name\", "
                        "\"hccl_name\" FROM \"HCCLTaskSingleDevice\" ORDER BY rowid",
                        hccl_task_row, e);
    else if (t->kind == T_HOST_TASK && host_ok)
      rc = for_each_row(c, t,
                        "SELECT \"connection_id\", \"task_type\" FROM \"HostTask\" "
                        "WHERE \"connection_id\" IS NOT NULL ORDER BY rowid",
                        host_task_row, e);
    if (rc) return rc;
  }
  return TL_OK;
}

/* Opens the next AscendTask table (of the filtered device). 0 = opened, 1 = none left. */
static int open_next_task_table(split_events *c, tl_err *e) {
  events_close_db(c);
  while (c->next_table < c->cat.t.n) {
    const split_table *t = &c->cat.t.v[c->next_table++];
    if (t->kind != T_ASCEND_TASK) continue;
    const char *path = table_path(&c->cat, t);
    char *model = opt_col(&t->cols, "model_id");
    char *sql = model ? tl_mprintf("SELECT rowid, \"start_time\", \"duration\", "
                                   "\"device_task_type\", \"stream_id\", \"task_id\", "
                                   "\"context_id\", \"connection_id\", \"host_task_type\", %s "
                                   "FROM \"AscendTask\" ORDER BY rowid",
                                   model)
                      : NULL;
    free(model);
    if (!sql) return tl_nomem(e);
    int rc = tl_sql_open_ro(path, &c->db, e);
    if (rc == TL_OK) rc = tl_sql_prepare(c->db, path, sql, &c->st, e);
    free(sql);
    if (rc) return -1;
    c->task_table = t;
    return 0;
  }
  return 1;
}

static int add_to_envelope(split_events *c, const tl_event_row *r, tl_err *e) {
  key4 k = task_key(r->device_id, r->correlation_id, 0, 0);
  int64_t idx = key4_get(&c->env_map, &k);
  if (idx < 0) {
    envelope en;
    memset(&en, 0, sizeof en);
    en.start = r->start_ns;
    en.end = r->end_ns;
    en.task_name = r->comm_name;
    en.task_type = r->comm_task_type;
    en.names_consistent = 1;
    if (TL_VEC_PUSH(&c->env, en)) return tl_nomem(e);
    idx = (int64_t)c->env.n - 1;
    if (key4_put_first(&c->env_map, &k, idx)) return tl_nomem(e);
  }
  envelope *en = &c->env.v[idx];
  if (r->start_ns < en->start) en->start = r->start_ns;
  if (r->end_ns > en->end) en->end = r->end_ns;
  en->tasks++;
  if (r->comm_name != en->task_name) en->names_consistent = 0;
  size_t s = 0;
  while (s < en->streams.n && en->streams.v[s].stream != r->stream_id) s++;
  if (s == en->streams.n) {
    stream_time st = {r->stream_id, 0};
    if (TL_VEC_PUSH(&en->streams, st)) return tl_nomem(e);
  }
  en->streams.v[s].busy_ns += r->end_ns - r->start_ns;
  return TL_OK;
}

/* Fills r from the current AscendTask row. Returns 1 = event, 0 = row dropped, -1 = error. */
static int task_event(split_events *c, tl_event_row *r, tl_err *e) {
  sqlite3_stmt *st = c->st;
  const split_table *t = c->task_table;
  memset(r, 0, sizeof *r);
  r->db_idx = c->db_idx;
  r->source_id = t->source_id;
  r->source_table = "AscendTask";
  r->source_rowid = sqlite3_column_int64(st, 0);
  int64_t start = tl_col_i64(st, 1, -1), duration = tl_col_i64(st, 2, -1), end;
  /* Section 5 keeps rows with start_time >= 0 and duration >= 0; NULL, a value that is
  ** not an exact integer (read as -1) and an overflowing end are dropped alike. */
  if (start < 0 || duration < 0 || __builtin_add_overflow(start, duration, &end)) return 0;
  r->start_ns = start;
  r->end_ns = end;
  r->device_id = t->device_id;
  int64_t raw_stream = tl_col_i64(st, 4, -1);
  r->stream_id = norm_stream(raw_stream);
  r->task_id = tl_col_i64(st, 5, TL_ABSENT);
  r->context_id = tl_col_i64(st, 6, TL_ABSENT);
  r->correlation_id = tl_col_i64(st, 7, TL_ABSENT);
  r->model_id = norm_model_id(tl_col_i64(st, 9, TL_ABSENT));
  r->global_task_id = TL_ABSENT;
  r->graph_node_id = TL_ABSENT;
  r->op_id = TL_ABSENT;

  key4 k = task_key(t->device_id, raw_stream, tl_col_i64(st, 5, -1), tl_col_i64(st, 6, -1));
  int64_t ci = key4_get(&c->compute_map, &k);
  if (ci >= 0) {
    const compute_info *info = &c->compute.v[ci];
    r->op_name = info->op_name;
    r->op_type = info->op_type;
    r->compute_task_type = info->task_type;
    r->global_task_id = info->global_task_id;
  }
  int64_t mi = key4_get(&c->comm_map, &k);
  int has_comm = 0;
  if (mi >= 0) {
    r->comm_name = c->comm.v[mi].name;
    r->comm_task_type = c->comm.v[mi].task_type;
    has_comm = r->comm_name != TL_STR_NONE || r->comm_task_type != TL_STR_NONE;
  }

  /* Task type (section 5): a task with HCCL identity keeps a concrete device task type;
  ** otherwise host_task_type, then HostTask by connection_id, then device_task_type. */
  int dlen, hlen;
  const char *device_type = tl_col_text(st, 3, &dlen);
  const char *host_type = tl_col_text(st, 8, &hlen);
  uint32_t type;
  if (mi >= 0 && dlen > 0 && strcmp(device_type, "UNKNOWN") != 0) {
    if (intern(c->pool, device_type, dlen, &type, e)) return -1;
  } else if (hlen > 0) {
    if (intern(c->pool, host_type, hlen, &type, e)) return -1;
  } else {
    int64_t *ht = tl_i64map_get(&c->host_types, r->correlation_id);
    if (ht && *ht != TL_STR_NONE)
      type = (uint32_t)*ht;
    else if (intern(c->pool, device_type, dlen, &type, e))
      return -1;
  }
  r->name = r->task_type = type;
  r->kind = tl_ascend_kind(tl_strpool_str(c->pool, type), has_comm,
                        r->op_name != TL_STR_NONE || r->op_type != TL_STR_NONE);
  if (mi >= 0 && r->correlation_id >= 0 && add_to_envelope(c, r, e)) return -1;
  return 1;
}

static int op_row_read(split_events *c, const split_table *t, sqlite3_stmt *st, tl_err *e) {
  op_row o;
  memset(&o, 0, sizeof o);
  o.source_id = t->source_id;
  o.table = table_names[t->kind];
  o.rowid = sqlite3_column_int64(st, 0);
  o.order = c->ops.n;
  int64_t index_id = tl_col_i64(st, 1, -1);
  o.op_id = index_id >= 0 ? index_id : o.rowid;
  if (intern_col(c->pool, st, 2, &o.op_name, e) || intern_col(c->pool, st, 3, &o.op_type, e))
    return TL_ERROR;
  o.connection_id = tl_col_i64(st, 4, TL_ABSENT);
  if (t->kind == T_HCCL_OP) {
    int64_t d = tl_col_i64(st, 5, 0);
    o.device = d < 0 || d > (int64_t)UINT32_MAX ? 0 : (uint32_t)d;
  } else {
    o.device = t->device_id;
  }
  key4 k = task_key(o.device, o.connection_id, 0, 0);
  o.env = key4_get(&c->env_map, &k);
  if (TL_VEC_PUSH(&c->ops, o)) return tl_nomem(e);
  return TL_OK;
}

static int cmp_op(const void *a, const void *b) {
  const op_row *x = a, *y = b;
  if (x->device != y->device) return x->device < y->device ? -1 : 1;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

/* Reads the op rows (HCCLOP when some complete HCCLOP table has rows, else the complete
** HCCLOpSingleDevice tables), drops the ones without a usable envelope and orders the
** rest by (device, envelope start, read order). */
static int load_ops(split_events *c, tl_err *e) {
  int source = T_HCCL_OP_SD;
  for (size_t i = 0; i < c->cat.t.n; i++)
    if (c->cat.t.v[i].kind == T_HCCL_OP && !c->cat.t.v[i].missing && c->cat.t.v[i].rows > 0)
      source = T_HCCL_OP;
  for (size_t i = 0; i < c->cat.t.n; i++) {
    const split_table *t = &c->cat.t.v[i];
    if (t->kind != source || t->missing) continue;
    char *index = opt_col(&t->cols, "index_id");
    char *q = tl_sql_quote_ident(table_names[source]);
    char *sql = index && q ? tl_mprintf("SELECT rowid, %s, \"op_name\", \"op_type\", "
                                        "\"connection_id\"%s FROM %s ORDER BY rowid",
                                        index, source == T_HCCL_OP ? ", \"device_id\"" : "", q)
                           : NULL;
    free(index);
    free(q);
    if (!sql) return tl_nomem(e);
    int rc = for_each_row(c, t, sql, op_row_read, e);
    free(sql);
    if (rc) return rc;
  }
  /* More than one op row per (device, connection_id) makes every one of them ambiguous. */
  key4_map first = {0};
  TL_VEC(int64_t) rows_per_key = {0};
  int rc = TL_OK;
  for (size_t i = 0; i < c->ops.n && rc == TL_OK; i++) {
    key4 k = task_key(c->ops.v[i].device, c->ops.v[i].connection_id, 0, 0);
    int64_t at = key4_get(&first, &k);
    if (at >= 0)
      rows_per_key.v[at]++;
    else if (TL_VEC_PUSH(&rows_per_key, 1) ||
             key4_put_first(&first, &k, (int64_t)rows_per_key.n - 1))
      rc = tl_nomem(e);
  }
  size_t kept = 0;
  for (size_t i = 0; i < c->ops.n && rc == TL_OK; i++) {
    op_row o = c->ops.v[i];
    key4 k = task_key(o.device, o.connection_id, 0, 0);
    const envelope *en = o.env >= 0 ? &c->env.v[o.env] : NULL;
    if (o.connection_id < 0 || !en || en->tasks == 0 || en->end <= en->start ||
        !en->names_consistent || rows_per_key.v[key4_get(&first, &k)] != 1) {
      c->base.dropped_rows++;
      continue;
    }
    o.start = en->start;
    c->ops.v[kept++] = o;
  }
  key4_free(&first);
  TL_VEC_FREE(&rows_per_key);
  if (rc) return rc;
  c->ops.n = kept;
  if (c->ops.n > 1) qsort(c->ops.v, c->ops.n, sizeof *c->ops.v, cmp_op);
  return TL_OK;
}

/* The stream with the largest busy time among an envelope's tasks (tie: smaller id). */
static uint32_t primary_stream(const envelope *en) {
  uint32_t best = TL_NO_STREAM;
  int64_t best_ns = -1;
  for (size_t i = 0; i < en->streams.n; i++) {
    const stream_time *s = &en->streams.v[i];
    if (s->busy_ns > best_ns || (s->busy_ns == best_ns && s->stream < best)) {
      best = s->stream;
      best_ns = s->busy_ns;
    }
  }
  return best;
}

static int events_next(tl_cursor *base, void *out, tl_err *e) {
  split_events *c = (split_events *)base;
  tl_event_row *r = out;
  for (;;) {
    if (!c->ops_loaded) {
      if (!c->st) {
        int rc = open_next_task_table(c, e);
        if (rc < 0) return -1;
        if (rc == 1) {
          events_close_db(c);
          if (load_ops(c, e)) return -1;
          c->ops_loaded = 1;
          continue;
        }
      }
      int s = sqlite3_step(c->st);
      if (s == SQLITE_ROW) {
        int rc = task_event(c, r, e);
        if (rc < 0) return -1;
        if (rc == 1) return 1;
        c->base.dropped_rows++;
        continue;
      }
      if (s != SQLITE_DONE) {
        tl_fail(e, "failed to read table AscendTask in '%s': %s",
                table_path(&c->cat, c->task_table), sqlite3_errmsg(c->db));
        return -1;
      }
      events_close_db(c);
      continue;
    }
    if (c->op_pos >= c->ops.n) return 0;
    const op_row *o = &c->ops.v[c->op_pos++];
    const envelope *en = &c->env.v[o->env];
    memset(r, 0, sizeof *r);
    r->db_idx = c->db_idx;
    r->source_id = o->source_id;
    r->source_table = o->table;
    r->source_rowid = o->rowid;
    r->device_id = o->device;
    r->stream_id = primary_stream(en);
    r->start_ns = en->start;
    r->end_ns = en->end;
    r->kind = TL_KIND_COMMUNICATION;
    /* The same fields as a monolithic COMMUNICATION_OP event (msprof.c). */
    r->name = r->comm_name = o->op_name;
    r->op_type = r->comm_task_type = o->op_type;
    r->task_type = c->comm_op_type;
    r->task_id = r->global_task_id = TL_ABSENT;
    r->correlation_id = o->connection_id;
    r->context_id = r->model_id = r->graph_node_id = TL_ABSENT;
    r->op_id = o->op_id;
    return 1;
  }
}

/* The reference error texts of section 5 when AscendTask is absent or incomplete. */
static int check_required(const split_catalog *cat, tl_err *e) {
  const char *dir = cat->p->inputs.v[cat->db_idx].path;
  if (catalog_count(cat, T_ASCEND_TASK, NULL) == 0)
    return tl_fail(e,
                   "split SQLite profile is missing required "
                   "device_*/sqlite/ascend_task.db:AscendTask table: %s",
                   dir);
  for (size_t i = 0; i < cat->t.n; i++) {
    const split_table *t = &cat->t.v[i];
    if (t->kind == T_ASCEND_TASK && t->missing)
      return tl_fail(e,
                     "split SQLite profile has an incompatible AscendTask schema: %s "
                     "(missing column(s): %s)",
                     table_path(cat, t), t->missing);
  }
  return TL_OK;
}

static int events_open(const tl_profile *p, int db_idx, const tl_event_filter *f,
                       tl_strpool *pool, tl_cursor **out, tl_err *e) {
  *out = NULL;
  split_events *c = calloc(1, sizeof *c);
  if (!c) return tl_nomem(e);
  c->base.next = events_next;
  c->base.close = events_close;
  c->pool = pool;
  c->db_idx = db_idx;
  (void)f; /* every row is read: event ids are dense over the reader order */
  if (catalog_load(p, db_idx, &c->cat, e) || check_required(&c->cat, e) ||
      intern(pool, "COMMUNICATION_OP", 16, &c->comm_op_type, e) || load_indexes(c, e)) {
    events_close(&c->base);
    return TL_ERROR;
  }
  *out = &c->base;
  return TL_OK;
}

/* ---------------------------------------------------------------- calls cursor */

typedef struct split_calls {
  tl_cursor base;
  split_catalog cat;
  tl_strpool *pool;
  int db_idx;
  uint32_t cann_api; /* api_type of rows without a type column value */
  size_t next_table;
  const split_table *table;
  sqlite3 *db;
  sqlite3_stmt *st;
} split_calls;

static void calls_close_db(split_calls *c) {
  sqlite3_finalize(c->st);
  tl_sql_close(c->db);
  c->st = NULL;
  c->db = NULL;
}

static void calls_close(tl_cursor *base) {
  split_calls *c = (split_calls *)base;
  calls_close_db(c);
  catalog_free(&c->cat);
  free(c);
}

/* Opens the next complete ApiData table. 0 = opened, 1 = none left, -1 = error. */
static int open_next_api_table(split_calls *c, tl_err *e) {
  static const char *const optional[] = {"thread_id", "process_id", "device_id", "context_id",
                                         "type"};
  calls_close_db(c);
  while (c->next_table < c->cat.t.n) {
    const split_table *t = &c->cat.t.v[c->next_table++];
    if (t->kind != T_API_DATA || t->missing) continue;
    char *o[5] = {0};
    int ok = 1;
    for (int i = 0; i < 5; i++) ok &= (o[i] = opt_col(&t->cols, optional[i])) != NULL;
    char *sql = ok ? tl_mprintf("SELECT rowid, \"start\", \"end\", \"connection_id\", \"id\", "
                                "%s, %s, %s, %s, %s FROM \"ApiData\" WHERE \"start\" IS NOT NULL "
                                "AND \"end\" IS NOT NULL AND \"end\" > \"start\" ORDER BY rowid",
                                o[0], o[1], o[2], o[3], o[4])
                   : NULL;
    for (int i = 0; i < 5; i++) free(o[i]);
    if (!sql) return tl_nomem(e), -1;
    const char *path = table_path(&c->cat, t);
    int rc = tl_sql_open_ro(path, &c->db, e);
    if (rc == TL_OK) rc = tl_sql_prepare(c->db, path, sql, &c->st, e);
    free(sql);
    if (rc) return -1;
    c->table = t;
    return 0;
  }
  return 1;
}

static int calls_next(tl_cursor *base, void *out, tl_err *e) {
  split_calls *c = (split_calls *)base;
  tl_call_row *r = out;
  for (;;) {
    if (!c->st) {
      int rc = open_next_api_table(c, e);
      if (rc) return rc < 0 ? -1 : 0;
    }
    int s = sqlite3_step(c->st);
    if (s == SQLITE_DONE) {
      calls_close_db(c);
      continue;
    }
    const char *path = table_path(&c->cat, c->table);
    if (s != SQLITE_ROW) {
      tl_fail(e, "failed to read table ApiData in '%s': %s", path, sqlite3_errmsg(c->db));
      return -1;
    }
    sqlite3_stmt *st = c->st;
    memset(r, 0, sizeof *r);
    r->db_idx = c->db_idx;
    r->source_id = c->table->source_id;
    r->source_table = "ApiData";
    r->source_rowid = sqlite3_column_int64(st, 0);
    r->provider = TL_PROVIDER_ASCEND;
    /* ApiData start/end are 10 ns ticks (section 5). A value that is not an exact integer
    ** (INT64_MIN here) or an end before the start drops the row, counted. */
    int64_t start = tl_col_i64(st, 1, INT64_MIN), end = tl_col_i64(st, 2, INT64_MIN);
    if (start == INT64_MIN || end == INT64_MIN || end < start) {
      c->base.dropped_rows++;
      continue;
    }
    if (__builtin_mul_overflow(start, 10, &r->start_ns) ||
        __builtin_mul_overflow(end, 10, &r->end_ns)) {
      tl_fail(e,
              "ApiData row %lld in '%s': start/end ticks (%lld, %lld) overflow int64 "
              "nanoseconds when multiplied by 10",
              (long long)r->source_rowid, path, (long long)start, (long long)end);
      return -1;
    }
    if (intern_col(c->pool, st, 4, &r->api_name, e)) return -1;
    if (sqlite3_column_type(st, 9) == SQLITE_NULL)
      r->api_type = c->cann_api;
    else if (intern_col(c->pool, st, 9, &r->api_type, e))
      return -1;
    r->correlation_id = tl_col_i64(st, 3, TL_ABSENT);
    r->thread_id = tl_col_i64(st, 5, TL_ABSENT);
    r->process_id = tl_col_i64(st, 6, TL_ABSENT);
    int64_t device = tl_col_i64(st, 7, TL_ABSENT);
    r->device_id = device < 0 ? TL_ABSENT : device;
    r->context_id = tl_col_i64(st, 8, TL_ABSENT);
    r->global_tid = TL_ABSENT;
    return 1;
  }
}

static int calls_open(const tl_profile *p, int db_idx, tl_strpool *pool, tl_cursor **out,
                      tl_err *e) {
  *out = NULL;
  split_calls *c = calloc(1, sizeof *c);
  if (!c) return tl_nomem(e);
  c->base.next = calls_next;
  c->base.close = calls_close;
  c->pool = pool;
  c->db_idx = db_idx;
  if (catalog_load(p, db_idx, &c->cat, e) || intern(pool, "cann_api", 8, &c->cann_api, e)) {
    calls_close(&c->base);
    return TL_ERROR;
  }
  *out = &c->base;
  return TL_OK;
}

/* ---------------------------------------------------------------- inventory */

/* Rows of AscendTask that are device events, in one file. */
static int64_t usable_task_rows(const split_catalog *c, const split_table *t, tl_err *e) {
  const char *path = table_path(c, t);
  sqlite3 *db;
  if (tl_sql_open_ro(path, &db, e)) return -1;
  sqlite3_stmt *st;
  int64_t n = -1;
  if (tl_sql_prepare(db, path,
                     "SELECT count(*) FROM \"AscendTask\" WHERE \"start_time\" >= 0 AND "
                     "\"duration\" >= 0",
                     &st, e) == TL_OK) {
    if (sqlite3_step(st) == SQLITE_ROW)
      n = sqlite3_column_int64(st, 0);
    else
      tl_fail(e, "failed to count the rows of table AscendTask in '%s': %s", path,
              sqlite3_errmsg(db));
    sqlite3_finalize(st);
  }
  tl_sql_close(db);
  return n;
}

/* One capability row: usable when every table of the kind is complete and one exists. */
static int add_capability(const split_catalog *c, tl_inventory *inv, const char *capability,
                          int kind, const char *note, tl_err *e) {
  char *reason = catalog_reason(c, kind);
  const char *path = NULL;
  int64_t rows = 0;
  for (size_t i = 0; i < c->t.n; i++) {
    if (c->t.v[i].kind != kind) continue;
    if (!path) path = table_path(c, &c->t.v[i]);
    rows += c->t.v[i].rows;
  }
  int usable = reason == NULL;
  int rc = tl_inventory_add(inv, c->db_idx, "capability", "ascend_sqlite_split",
                            path ? path : c->p->inputs.v[c->db_idx].path, table_names[kind],
                            rows, capability, usable, usable ? note : reason, e);
  free(reason);
  return rc;
}

static int inventory(const tl_profile *p, int db_idx, tl_inventory *inv, tl_err *e) {
  split_catalog c;
  if (catalog_load(p, db_idx, &c, e)) return TL_ERROR;
  int rc = TL_OK;
  const char *dir = p->inputs.v[db_idx].path;

  /* Device tasks: usable rows, and the rows dropped for negative (or absent) times. */
  char *reason = catalog_reason(&c, T_ASCEND_TASK);
  int64_t usable_rows = 0, total_rows = 0;
  const char *task_path = dir;
  for (size_t i = 0; i < c.t.n && rc == TL_OK; i++) {
    const split_table *t = &c.t.v[i];
    if (t->kind != T_ASCEND_TASK) continue;
    if (task_path == dir) task_path = table_path(&c, t);
    total_rows += t->rows;
    if (t->missing) continue;
    int64_t n = usable_task_rows(&c, t, e);
    if (n < 0) rc = TL_ERROR;
    usable_rows += n;
  }
  if (rc == TL_OK)
    rc = tl_inventory_add(inv, db_idx, "capability", "ascend_sqlite_split", task_path,
                          "AscendTask", reason ? 0 : usable_rows, "device_tasks", !reason,
                          reason, e);
  if (rc == TL_OK && !reason) {
    char *detail = tl_mprintf("%lld AscendTask row(s) with start_time < 0 or duration < 0 "
                              "dropped",
                              (long long)(total_rows - usable_rows));
    rc = detail ? tl_inventory_add(inv, db_idx, "capability", "ascend_sqlite_split",
                                   task_path, "AscendTask", total_rows - usable_rows,
                                   "device_tasks_dropped", -1, detail, e)
                : tl_nomem(e);
    free(detail);
  }
  free(reason);

  if (rc == TL_OK)
    rc = add_capability(&c, inv, "compute_identity", T_TASK_INFO,
                        "TaskInfo joined by (device_id, stream_id, task_id, context_id)", e);
  if (rc == TL_OK)
    rc = add_capability(&c, inv, "communication_identity", T_HCCL_TASK,
                        "HCCLTaskSingleDevice joined by (device, stream_id, task_id, "
                        "context_id)",
                        e);
  if (rc == TL_OK) {
    /* HCCLOP is preferred when a complete one has rows; else HCCLOpSingleDevice. */
    int hcclop = 0;
    for (size_t i = 0; i < c.t.n; i++)
      if (c.t.v[i].kind == T_HCCL_OP && !c.t.v[i].missing && c.t.v[i].rows > 0) hcclop = 1;
    if (hcclop) {
      rc = add_capability(&c, inv, "communication_ops", T_HCCL_OP,
                          "HCCLOP (preferred); geometry = envelope of linked AscendTask rows",
                          e);
    } else {
      int sd_complete;
      if (catalog_count(&c, T_HCCL_OP_SD, &sd_complete) > 0 && sd_complete) {
        rc = add_capability(&c, inv, "communication_ops", T_HCCL_OP_SD,
                            "HCCLOpSingleDevice (no usable non-empty HCCLOP); geometry = "
                            "envelope of linked AscendTask rows",
                            e);
      } else {
        char *r1 = catalog_reason(&c, T_HCCL_OP), *r2 = catalog_reason(&c, T_HCCL_OP_SD);
        char *why = tl_mprintf("%s; %s", r1 ? r1 : "HCCLOP has no rows",
                               r2 ? r2 : "HCCLOpSingleDevice unusable");
        rc = why ? tl_inventory_add(inv, db_idx, "capability", "ascend_sqlite_split", dir,
                                    "HCCLOP", 0, "communication_ops", 0, why, e)
                 : tl_nomem(e);
        free(r1), free(r2), free(why);
      }
    }
  }
  if (rc == TL_OK)
    rc = add_capability(&c, inv, "host_task_type", T_HOST_TASK,
                        "HostTask.task_type by connection_id when host_task_type is empty", e);
  if (rc == TL_OK)
    rc = add_capability(&c, inv, "host_api", T_API_DATA,
                        "ApiData runtime calls; start/end are 10 ns ticks", e);
  if (rc == TL_OK)
    rc = add_capability(&c, inv, "capture_streams", T_CAPTURE_STREAM,
                        "CaptureStreamInfo capture streams", e);
  catalog_free(&c);
  return rc;
}

/* Found by its layout only (a PROF_* container with device_N/sqlite/ascend_task.db). */
const tl_family_def tl_msprof_split_family = {
    .source_kind = "ascend_sqlite_split",
    .name = "Ascend split msprof",
    .provider = TL_PROVIDER_ASCEND,
    .layout_hint = "split PROF_*/device_*/sqlite/ascend_task.db with AscendTask",
    .sqlite_files = 1,
    .capture_companion = 1,
    .inventory = inventory,
    .events_open = events_open,
    .calls_open = calls_open,
    .calls_beside = 1,
    .host_marks = tl_msprof_host_marks,
};
