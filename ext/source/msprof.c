/*
** msprof.c: the Ascend monolithic reader (msprof_*.db, torch-npu ascend_pytorch_profiler_*.db).
**
** inputs.md section 3. Device events come from TASK (one per row) and then from
** COMMUNICATION_OP (one communication event per op); host runtime calls from CANN_API.
** Names in these tables are ids into STRING_IDS; an id missing from the string table
** decodes to its decimal text. Compute identity joins COMPUTE_TASK_INFO and communication
** identity COMMUNICATION_TASK_INFO, both by globalTaskId, through in-memory hash maps
** (the source has no indexes and must not get any).
**
** Reader order: TASK in rowid order, then COMMUNICATION_OP in rowid order.
*/
#include "source/readers.h"
#include "source/sqlsrc.h"
#include "source/strtab.h"
#include "util/i64map.h"
#include "util/sort.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const task_required[] = {"startNs", "endNs", "deviceId", "streamId",
                                            "taskId", "globalTaskId", "connectionId",
                                            "taskType", NULL};
static const char *const string_ids_required[] = {"id", "value", NULL};
static const char *const compute_required[] = {"globalTaskId", "name", "opType", "taskType",
                                               NULL};
static const char *const comm_task_required[] = {"globalTaskId", "name", NULL};
static const char *const comm_op_required[] = {"startNs", "endNs", "deviceId", "connectionId",
                                               "opName", "opId", NULL};
static const char *const cann_required[] = {"startNs", "endNs", "connectionId", "name", NULL};
static const char *const pytorch_required[] = {"name", "startNs", "endNs", "globalTid", NULL};

/* ------------------------------------------------------------------ shared state */

/* Decoding context for one database: STRING_IDS id -> interned pool id. */
#define SMALL_IDS 65536

typedef struct msprof_db {
  sqlite3 *db;
  const char *path;
  tl_strpool *pool;
  tl_strtab names;   /* STRING_IDS */
  uint32_t *small;   /* decode cache for ids < SMALL_IDS: pool id + 1, 0 = not cached */
} msprof_db;

/* STRING_IDS: every value interned as it is read (the pool's order is the table's). Without
** the table (or its columns) names decode to decimal strings. */
static const tl_strtab_spec tl_msprof_string_ids = {"STRING_IDS", "id", "value", 0, 0, 0, 1, NULL, NULL};

static int open_db(const tl_profile *p, int db_idx, tl_strpool *pool, msprof_db *m, tl_err *e) {
  memset(m, 0, sizeof *m);
  m->path = p->inputs.v[db_idx].path;
  m->pool = pool;
  if (tl_sql_open_ro(m->path, &m->db, e)) return TL_ERROR;
  m->small = calloc(SMALL_IDS, sizeof *m->small);
  if (!m->small) return tl_nomem(e);
  return tl_strtab_load(m->db, m->path, &tl_msprof_string_ids, pool, &m->names, e);
}

static void close_db(msprof_db *m) {
  tl_sql_close(m->db);
  tl_strtab_free(&m->names);
  free(m->small);
  m->small = NULL;
  m->db = NULL;
}

/* decode(m, v): the string of a name column's value: text as it is, an id through the string
** table, an id missing there as its decimal text, absent for NULL. Returns TL_STR_NOMEM on
** out-of-memory. */
static uint32_t decode_value(msprof_db *m, sqlite3_value *v) {
  int type = sqlite3_value_type(v);
  if (type == SQLITE_NULL) return TL_STR_NONE;
  if (type == SQLITE_TEXT) {
    /* Some exports store names as text; use them as they are. */
    const char *t = (const char *)sqlite3_value_text(v);
    return tl_strpool_intern(m->pool, t ? t : "", t ? (size_t)sqlite3_value_bytes(v) : 0);
  }
  int64_t id = tl_value_i64(v, 0);
  /* Name ids repeat on every row (task types, operator names): cache the small ones. */
  if (id >= 0 && id < SMALL_IDS && m->small && m->small[id]) return m->small[id] - 1;
  uint32_t out = tl_strtab_lookup(&m->names, m->pool, id, NULL);
  if (out == TL_STR_NOMEM) {
    char buf[24];
    int n = snprintf(buf, sizeof buf, "%lld", (long long)id);
    out = tl_strpool_intern(m->pool, buf, (size_t)n);
    if (out == TL_STR_NOMEM) return out;
  }
  if (id >= 0 && id < SMALL_IDS && m->small) m->small[id] = out + 1;
  return out;
}

/* decode_value of column col (-1: absent). */
static uint32_t decode(msprof_db *m, sqlite3_stmt *st, int col) {
  return col < 0 ? TL_STR_NONE : decode_value(m, sqlite3_column_value(st, col));
}

/* Each column of the current row fetched once: the readers below look at most twice. */
static void fetch_row(sqlite3_stmt *st, sqlite3_value **v, int n) {
  for (int i = 0; i < n; i++) v[i] = sqlite3_column_value(st, i);
}

static int64_t normalize_model_id(int64_t v) {
  return (v < 0 || v == 4294967295LL) ? TL_ABSENT : v;
}

/* Optional column expression: the quoted column when present, else the fallback literal. */
static const char *opt_col(const tl_columns *c, const char *name, const char *fallback) {
  return tl_columns_find(c, name, 0) >= 0 ? name : fallback;
}

/* ------------------------------------------------------------------ kind rules */

static int key_in(const char *key, const char *const *list) {
  for (int i = 0; list[i]; i++)
    if (strcmp(key, list[i]) == 0) return 1;
  return 0;
}

/* inputs.md 9.1, tried in order; the first match decides. Shared by the split reader. */
tl_kind tl_ascend_kind(const char *task_type, int has_comm_identity, int has_compute_identity) {
  static const char *const control[] = {"NOTIFY_RECORD", "NOTIFY_WAIT", "EVENT_RECORD",
                                        "CAPTURE_RECORD", "CAPTURE_WAIT", "WRITE_VALUE",
                                        "MEM_WRITE_VALUE", "MODEL_MAINTAINCE",
                                        "MODEL_MAINTENANCE", NULL};
  static const char *const data_move[] = {"MEMCPY", "MEMCPY_ASYNC", "SDMA", NULL};
  char key[128];
  tl_task_type_key(task_type, key, sizeof key);
  if (has_comm_identity) return TL_KIND_COMMUNICATION;
  if (strcmp(key, "MODEL_EXECUTE") == 0) return TL_KIND_GRAPH_LAUNCH;
  if (key_in(key, control)) return TL_KIND_CONTROL;
  if (key_in(key, data_move)) return TL_KIND_DATA_MOVE;
  if (strcmp(key, "EVENT_WAIT") == 0) return TL_KIND_SYNC;
  if (has_compute_identity) return TL_KIND_COMPUTE;
  return TL_KIND_OTHER;
}

/* ------------------------------------------------------------------ events cursor */

typedef struct identity {
  uint32_t a, b, c; /* compute: op_name, op_type, compute_task_type; comm: name, type, - */
} identity;

/* The time an op's tasks overlap it on one stream. */
typedef struct stream_overlap {
  uint32_t stream;
  int64_t overlap; /* > 0 once a task counted; 0: the slot is unused */
} stream_overlap;

typedef struct comm_op {
  int64_t rowid, start, end, conn, op_id;
  int64_t next_same_conn; /* chain of ops sharing a connectionId, -1 ends */
  /* Per-stream overlap sums, kept inline for the first stream: an op's tasks nearly always
  ** run on one stream, and a vector per op (16 slots at first) cost 270 bytes an op, 345 MB
  ** at the peak of a 10M-row profile. Other streams, rarely, in `more`. */
  stream_overlap first;
  stream_overlap *more;
  uint32_t nmore;
  uint32_t device, name, type;
  uint32_t best_stream;   /* primary stream: largest overlapped duration, ties -> smaller id */
} comm_op;

typedef struct msprof_events {
  tl_cursor base;
  msprof_db m;
  int db_idx, source_id;
  sqlite3_stmt *task, *ops_stmt;
  int phase;                      /* 0 = TASK, 1 = COMMUNICATION_OP, 2 = done */
  /* globalTaskId -> (compute index + 1) | (comm index + 1) << 32, as a sorted array
  ** searched from the last hit: TASK rows come in near globalTaskId order, so lookups
  ** walk the array sequentially instead of probing a hash table at random. */
  TL_VEC(int64_t) load_key;  /* while loading: (globalTaskId, packed half) in load order */
  TL_VEC(uint64_t) load_val;
  int64_t *ident_key;
  uint64_t *ident_val;
  size_t nident, ident_pos;
  TL_VEC(identity) compute, comm;
  TL_VEC(comm_op) ops;
  uint8_t *kind_cache;            /* (task type id < SMALL_IDS, comm, compute) -> kind + 1 */
  tl_i64map ops_by_conn;          /* connectionId -> first op index */
  uint64_t *ops_filter;           /* bit set of hashed op connectionIds: most tasks miss */
  int64_t last_conn, last_first;  /* the last lookup in ops_by_conn: an op's tasks come in a
                                     row (last_first -1: none; last_conn TL_ABSENT: unset) */
  size_t next_op;
} msprof_events;

/* Frees what an events reader holds, not the reader itself (a helper's is embedded). */
static void events_free(msprof_events *me) {
  sqlite3_finalize(me->task);
  sqlite3_finalize(me->ops_stmt);
  close_db(&me->m);
  TL_VEC_FREE(&me->load_key), TL_VEC_FREE(&me->load_val);
  free(me->ident_key), free(me->ident_val), free(me->kind_cache);
  free(me->ops_filter);
  TL_VEC_FREE(&me->compute);
  TL_VEC_FREE(&me->comm);
  for (size_t i = 0; i < me->ops.n; i++) free(me->ops.v[i].more);
  TL_VEC_FREE(&me->ops);
  tl_i64map_free(&me->ops_by_conn);
}

static void events_close(tl_cursor *c) {
  events_free((msprof_events *)c);
  free(c);
}

/* 1 when keys[lo, hi) are in order. */
static int ascending(const int64_t *keys, size_t lo, size_t hi) {
  for (size_t i = lo + 1; i < hi; i++)
    if (keys[i] < keys[i - 1]) return 0;
  return 1;
}

/* order[] = the load order of the pairs sorted by globalTaskId, stably. The compute pairs
** [0, ncompute) and the communication pairs after them each come in order as msprof writes
** them (COMPUTE_TASK_INFO in rowid order, the communication runs ascending): then one merge;
** otherwise a radix sort. */
static int sort_loaded(const int64_t *keys, size_t n, size_t ncompute, uint32_t *order) {
  if (ascending(keys, 0, ncompute) && ascending(keys, ncompute, n)) {
    size_t i = 0, j = ncompute, k = 0;
    while (i < ncompute && j < n) order[k++] = (uint32_t)(keys[j] < keys[i] ? j++ : i++);
    while (i < ncompute) order[k++] = (uint32_t)i++;
    while (j < n) order[k++] = (uint32_t)j++;
    return 0;
  }
  uint64_t *ord = malloc((n ? n : 1) * sizeof *ord);
  if (!ord) return -1;
  for (size_t i = 0; i < n; i++) ord[i] = tl_order_i64(keys[i]), order[i] = (uint32_t)i;
  int rc = tl_radix_sort_u64(ord, order, n);
  free(ord);
  return rc;
}

/* Sorts the loaded (globalTaskId, half) pairs into the lookup arrays. The sort is stable,
** so among rows of one globalTaskId the first loaded wins, per half. */
static int finish_identity(msprof_events *me, size_t ncompute) {
  size_t n = me->load_key.n;
  uint32_t *order = malloc((n ? n : 1) * sizeof *order);
  me->ident_key = malloc((n ? n : 1) * sizeof *me->ident_key);
  me->ident_val = malloc((n ? n : 1) * sizeof *me->ident_val);
  int rc = -1;
  if (!order || !me->ident_key || !me->ident_val) goto out;
  if (sort_loaded(me->load_key.v, n, ncompute, order)) goto out;
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    int64_t k = me->load_key.v[order[i]];
    uint64_t v = me->load_val.v[order[i]];
    if (m && me->ident_key[m - 1] == k) {
      uint64_t have = me->ident_val[m - 1];
      if (!(have & 0xffffffffu)) have |= v & 0xffffffffu;
      if (!(have >> 32)) have |= v & ~(uint64_t)0xffffffffu;
      me->ident_val[m - 1] = have;
    } else {
      me->ident_key[m] = k, me->ident_val[m] = v, m++;
    }
  }
  me->nident = m;
  TL_VEC_FREE(&me->load_key), TL_VEC_FREE(&me->load_val);
  rc = 0;
out:
  free(order);
  return rc;
}

/* The packed identity of a globalTaskId, 0 when none. Gallops from the last hit. */
static uint64_t find_identity(msprof_events *me, int64_t gtid) {
  const int64_t *k = me->ident_key;
  size_t n = me->nident, pos = me->ident_pos;
  if (!n) return 0;
  size_t lo, hi;
  if (pos < n && k[pos] <= gtid) {
    if (k[pos] == gtid) return me->ident_val[pos];
    size_t step = 1;
    lo = pos;
    while (lo + step < n && k[lo + step] <= gtid) lo += step, step *= 2;
    hi = lo + step < n ? lo + step : n;
  } else {
    lo = 0;
    hi = pos < n ? pos : n;
  }
  while (lo < hi) { /* first index with key >= gtid in [lo, hi) */
    size_t mid = lo + (hi - lo) / 2;
    if (k[mid] < gtid) lo = mid + 1; else hi = mid;
  }
  if (lo < n && k[lo] == gtid) {
    me->ident_pos = lo + 1 < n ? lo + 1 : lo;
    return me->ident_val[lo];
  }
  me->ident_pos = lo < n ? lo : n - 1;
  return 0;
}

/* Distinct identities, each stored once: millions of tasks repeat a few thousand operator
** (name, type, task type) triples, so a row keeps the index of its triple (in the packed
** half) rather than 12 bytes of its own. An open-addressing table of index + 1. */
typedef struct identity_set {
  uint32_t *slots;
  size_t nslots;
} identity_set;

static size_t identity_hash(const identity *id) {
  uint64_t h = ((uint64_t)id->a << 32 | id->b) * 0x9E3779B97F4A7C15ull;
  h ^= (h >> 29) ^ (uint64_t)id->c * 0xBF58476D1CE4E5B9ull;
  return (size_t)(h ^ (h >> 31));
}

/* The index + 1 of id in vec, appended when new; 0 on out-of-memory. */
static uint32_t identity_intern(identity_set *set, void *vec_, const identity *id) {
  TL_VEC(identity) *vec = vec_;
  if ((vec->n + 1) * 2 > set->nslots) {
    size_t n = set->nslots ? set->nslots * 2 : 256;
    uint32_t *slots = calloc(n, sizeof *slots);
    if (!slots) return 0;
    for (size_t i = 0; i < vec->n; i++) {
      size_t j = identity_hash(&vec->v[i]) & (n - 1);
      while (slots[j]) j = (j + 1) & (n - 1);
      slots[j] = (uint32_t)i + 1;
    }
    free(set->slots);
    set->slots = slots, set->nslots = n;
  }
  size_t j = identity_hash(id) & (set->nslots - 1);
  for (; set->slots[j]; j = (j + 1) & (set->nslots - 1)) {
    const identity *x = &vec->v[set->slots[j] - 1];
    if (x->a == id->a && x->b == id->b && x->c == id->c) return set->slots[j];
  }
  if (vec->n >= UINT32_MAX - 1 || TL_VEC_PUSH(vec, *id)) return 0;
  return set->slots[j] = (uint32_t)vec->n;
}

/* Loads globalTaskId -> identity into the low (compute) or high (comm) half of the
** identity map. The first row of a globalTaskId wins. */
static int load_identity(msprof_events *me, const char *sql, int shift, void *vec_, int ncols,
                         tl_err *e) {
  sqlite3_stmt *st;
  if (tl_sql_prepare(me->m.db, me->m.path, sql, &st, e)) return TL_ERROR;
  identity_set set = {NULL, 0};
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    sqlite3_value *v[4];
    fetch_row(st, v, ncols);
    if (sqlite3_value_type(v[0]) == SQLITE_NULL) continue;
    int64_t gtid = sqlite3_value_int64(v[0]);
    identity id = {decode_value(&me->m, v[1]), decode_value(&me->m, v[2]),
                   ncols > 3 ? decode_value(&me->m, v[3]) : TL_STR_NONE};
    uint32_t ix = id.a == TL_STR_NOMEM || id.b == TL_STR_NOMEM || id.c == TL_STR_NOMEM
                      ? 0 : identity_intern(&set, vec_, &id);
    if (!ix || TL_VEC_PUSH(&me->load_key, gtid) ||
        TL_VEC_PUSH(&me->load_val, (uint64_t)ix << shift)) {
      sqlite3_finalize(st);
      free(set.slots);
      return tl_nomem(e);
    }
  }
  free(set.slots);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE)
    return tl_fail(e, "failed to read identity rows from '%s': %s (sql: %s)", me->m.path,
                   sqlite3_errmsg(me->m.db), sql);
  return TL_OK;
}

/* decode() of an integer id whose string is in the pool already (the string table's are,
** interned at load; or cached): TL_STR_NOMEM where decode() would intern. */
static uint32_t decode_known(msprof_db *m, int64_t id) {
  if (id >= 0 && id < SMALL_IDS && m->small[id]) return m->small[id] - 1;
  return tl_strtab_lookup(&m->names, m->pool, id, NULL);
}

/* COMMUNICATION_TASK_INFO has a row per task of a communication op, and a task's identity is
** MIN(name), MIN(taskType) over its rows (GROUP BY globalTaskId): a query that sorts the
** table. msprof writes the rows grouped by globalTaskId in ascending order, so one scan in
** rowid order folds each run in C instead, for the same identities in the same order. A value
** that is not an integer id already in the pool (what decode() would intern) or a
** globalTaskId out of order gives up: 0, nothing kept, and the caller runs the query. */
static int load_comm_runs(msprof_events *me, int has_type, tl_err *e) {
  const char *sql = has_type ? "SELECT globalTaskId, name, taskType FROM COMMUNICATION_TASK_INFO "
                               "ORDER BY rowid"
                             : "SELECT globalTaskId, name, NULL FROM COMMUNICATION_TASK_INFO "
                               "ORDER BY rowid";
  sqlite3_stmt *st;
  if (tl_sql_prepare(me->m.db, me->m.path, sql, &st, e)) return -1;
  size_t nkeys = me->load_key.n;
  identity_set set = {NULL, 0};
  int rc, fast = 0, nomem = 0, have = 0;
  int64_t gtid = 0, min[2] = {0, 0};
  int seen[2] = {0, 0};
  for (;;) {
    rc = sqlite3_step(st);
    int64_t g = 0;
    if (rc == SQLITE_ROW) {
      sqlite3_value *v = sqlite3_column_value(st, 0);
      if (sqlite3_value_type(v) == SQLITE_NULL) continue; /* its group is skipped */
      if (sqlite3_value_type(v) != SQLITE_INTEGER) break;
      g = sqlite3_value_int64(v);
      if (have && g < gtid) break;
    }
    if (have && (rc != SQLITE_ROW || g != gtid)) { /* the run of gtid ends */
      identity id = {seen[0] ? decode_known(&me->m, min[0]) : TL_STR_NONE,
                     seen[1] ? decode_known(&me->m, min[1]) : TL_STR_NONE, TL_STR_NONE};
      if (id.a == TL_STR_NOMEM || id.b == TL_STR_NOMEM) break;
      uint32_t ix = identity_intern(&set, &me->comm, &id);
      if (!ix || TL_VEC_PUSH(&me->load_key, gtid) ||
          TL_VEC_PUSH(&me->load_val, (uint64_t)ix << 32)) {
        nomem = 1;
        break;
      }
      have = 0;
    }
    if (rc != SQLITE_ROW) {
      fast = rc == SQLITE_DONE;
      break;
    }
    if (!have) have = 1, gtid = g, seen[0] = seen[1] = 0;
    int k;
    for (k = 0; k < 2; k++) {
      sqlite3_value *v = sqlite3_column_value(st, 1 + k);
      if (sqlite3_value_type(v) == SQLITE_NULL) continue;
      if (sqlite3_value_type(v) != SQLITE_INTEGER) break;
      int64_t x = sqlite3_value_int64(v);
      if (!seen[k] || x < min[k]) min[k] = x, seen[k] = 1;
    }
    if (k < 2) break;
  }
  int failed = rc != SQLITE_ROW && rc != SQLITE_DONE;
  if (failed)
    tl_fail(e, "failed to read identity rows from '%s': %s (sql: %s)", me->m.path,
            sqlite3_errmsg(me->m.db), sql);
  sqlite3_finalize(st);
  free(set.slots);
  if (nomem) return tl_nomem(e), -1;
  if (failed) return -1;
  if (!fast) me->load_key.n = me->load_val.n = nkeys, me->comm.n = 0;
  return fast;
}

#define OPS_FILTER_BITS (1u << 20)

static uint32_t ops_filter_bit(int64_t conn) {
  uint64_t x = (uint64_t)conn * 0x9E3779B97F4A7C15ull;
  return (uint32_t)(x >> 44) & (OPS_FILTER_BITS - 1);
}

static int load_comm_ops(msprof_events *me, const tl_columns *cols, tl_err *e) {
  char *sql = tl_mprintf(
      "SELECT rowid, opName, %s, startNs, endNs, deviceId, connectionId, opId "
      "FROM COMMUNICATION_OP WHERE startNs IS NOT NULL AND endNs IS NOT NULL AND endNs > startNs "
      "ORDER BY rowid",
      opt_col(cols, "opType", "NULL"));
  if (!sql) return tl_nomem(e);
  sqlite3_stmt *st;
  int rc = tl_sql_prepare(me->m.db, me->m.path, sql, &st, e);
  free(sql);
  if (rc) return rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    comm_op op;
    memset(&op, 0, sizeof op);
    op.rowid = sqlite3_column_int64(st, 0);
    op.name = decode(&me->m, st, 1);
    op.type = decode(&me->m, st, 2);
    op.start = tl_col_i64(st, 3, INT64_MIN);
    op.end = tl_col_i64(st, 4, INT64_MIN);
    int64_t device = tl_col_i64(st, 5, -1);
    /* Text or fractional times pass the SQL filter; they are no interval: skip, counted. */
    if (op.start == INT64_MIN || op.end == INT64_MIN || op.end <= op.start || device < 0 ||
        device > UINT32_MAX - 1) {
      me->base.dropped_rows++;
      continue;
    }
    op.device = (uint32_t)device;
    op.conn = tl_col_i64(st, 6, TL_ABSENT);
    op.op_id = tl_col_i64(st, 7, TL_ABSENT);
    op.best_stream = TL_NO_STREAM;
    op.next_same_conn = -1;
    if (op.name == TL_STR_NOMEM || op.type == TL_STR_NOMEM) break;
    int64_t *first = tl_i64map_get(&me->ops_by_conn, op.conn);
    size_t idx = me->ops.n;
    if (TL_VEC_PUSH(&me->ops, op)) break;
    if (first) {
      /* Append to the end of the chain so chains stay in rowid order. */
      int64_t j = *first;
      while (me->ops.v[j].next_same_conn >= 0) j = me->ops.v[j].next_same_conn;
      me->ops.v[j].next_same_conn = (int64_t)idx;
    } else if (tl_i64map_put(&me->ops_by_conn, op.conn, (int64_t)idx)) {
      break;
    }
  }
  sqlite3_finalize(st);
  if (rc == SQLITE_ROW) return tl_nomem(e);
  if (rc != SQLITE_DONE)
    return tl_fail(e, "failed to read COMMUNICATION_OP in '%s': %s", me->m.path,
                   sqlite3_errmsg(me->m.db));
  me->ops_filter = calloc(OPS_FILTER_BITS / 64, sizeof *me->ops_filter);
  if (!me->ops_filter) return tl_nomem(e);
  for (size_t i = 0; i < me->ops.n; i++) {
    uint32_t bit = ops_filter_bit(me->ops.v[i].conn);
    me->ops_filter[bit >> 6] |= 1ull << (bit & 63);
  }
  return TL_OK;
}

/* A task on (device, connectionId) overlapping an op links to it; its overlap counts for
** the op's primary stream. */
static int link_task_to_ops(msprof_events *me, uint32_t device, uint32_t stream, int64_t conn,
                            int64_t start, int64_t end) {
  uint32_t bit = ops_filter_bit(conn);
  if (!(me->ops_filter[bit >> 6] & (1ull << (bit & 63)))) return 0;
  if (conn != me->last_conn) {
    int64_t *first = tl_i64map_get(&me->ops_by_conn, conn);
    me->last_conn = conn, me->last_first = first ? *first : -1;
  }
  for (int64_t j = me->last_first; j >= 0; j = me->ops.v[j].next_same_conn) {
    comm_op *op = &me->ops.v[j];
    if (op->device != device) continue;
    int64_t lo = start > op->start ? start : op->start;
    int64_t hi = end < op->end ? end : op->end;
    if (hi <= lo) continue;
    stream_overlap *so = NULL;
    if (op->first.overlap == 0 || op->first.stream == stream) {
      so = &op->first;
    } else {
      for (uint32_t k = 0; k < op->nmore && !so; k++)
        if (op->more[k].stream == stream) so = &op->more[k];
      if (!so) {
        stream_overlap *m = realloc(op->more, (op->nmore + 1) * sizeof *m);
        if (!m) return -1;
        op->more = m;
        so = &m[op->nmore++];
        so->overlap = 0;
      }
    }
    so->stream = stream;
    so->overlap += hi - lo;
  }
  return 0;
}

static void finish_comm_ops(msprof_events *me) {
  for (size_t i = 0; i < me->ops.n; i++) {
    comm_op *op = &me->ops.v[i];
    int64_t best = 0; /* no stream overlapped: best_stream stays TL_NO_STREAM */
    for (uint32_t k = 0; k <= op->nmore; k++) {
      const stream_overlap *so = k ? &op->more[k - 1] : &op->first;
      if (so->overlap > best || (so->overlap == best && best > 0 && so->stream < op->best_stream))
        best = so->overlap, op->best_stream = so->stream;
    }
  }
}

static void row_defaults(tl_event_row *r, int db_idx, int source_id) {
  memset(r, 0, sizeof *r);
  r->db_idx = db_idx;
  r->source_id = source_id;
  r->stream_id = TL_NO_STREAM;
  r->task_id = r->global_task_id = r->correlation_id = r->context_id = r->model_id = TL_ABSENT;
  r->graph_node_id = r->op_id = TL_ABSENT;
}

static int events_next(tl_cursor *c, void *row_, tl_err *e) {
  msprof_events *me = (msprof_events *)c;
  tl_event_row *r = row_;
  while (me->phase == 0) {
    int rc = sqlite3_step(me->task);
    if (rc == SQLITE_DONE) {
      finish_comm_ops(me);
      me->phase = 1;
      break;
    }
    if (rc != SQLITE_ROW)
      return tl_fail(e, "failed to read TASK in '%s': %s", me->m.path, sqlite3_errmsg(me->m.db)),
             -1;
    /* rowid, startNs, endNs, deviceId, streamId, taskId, globalTaskId, connectionId,
    ** contextId, taskType, modelId */
    sqlite3_value *v[11];
    fetch_row(me->task, v, 11);
    row_defaults(r, me->db_idx, me->source_id);
    r->source_table = "TASK";
    r->source_rowid = sqlite3_value_int64(v[0]);
    /* NULL, text or fractional times, or an end before the start: no interval, counted. */
    r->start_ns = tl_value_i64(v[1], INT64_MIN);
    r->end_ns = tl_value_i64(v[2], INT64_MIN);
    if (r->start_ns == INT64_MIN || r->end_ns == INT64_MIN || r->end_ns < r->start_ns) {
      me->base.dropped_rows++;
      continue;
    }
    /* A task without an integer device cannot be placed on a device: dropped, counted. */
    int64_t device = tl_value_i64(v[3], -1);
    if (device < 0 || device > UINT32_MAX - 1) {
      me->base.dropped_rows++;
      continue;
    }
    r->device_id = (uint32_t)device;
    int64_t stream = tl_value_i64(v[4], TL_ABSENT);
    r->stream_id = stream < 0 || stream > UINT32_MAX ? TL_NO_STREAM : (uint32_t)stream;
    r->task_id = tl_value_i64(v[5], TL_ABSENT);
    r->global_task_id = tl_value_i64(v[6], TL_ABSENT);
    r->correlation_id = tl_value_i64(v[7], TL_ABSENT);
    r->context_id = tl_value_i64(v[8], TL_ABSENT);
    r->name = r->task_type = decode_value(&me->m, v[9]);
    r->model_id = normalize_model_id(tl_value_i64(v[10], TL_ABSENT));
    if (r->name == TL_STR_NOMEM) return tl_nomem(e), -1;
    int has_comm = 0, has_compute = 0;
    if (sqlite3_value_type(v[6]) != SQLITE_NULL) {
      uint64_t packed = find_identity(me, r->global_task_id);
      uint32_t ci = (uint32_t)packed, mi = (uint32_t)(packed >> 32);
      if (ci) {
        identity *id = &me->compute.v[ci - 1];
        r->op_name = id->a, r->op_type = id->b, r->compute_task_type = id->c;
        has_compute = r->op_name != TL_STR_NONE || r->op_type != TL_STR_NONE;
      }
      if (mi) {
        identity *id = &me->comm.v[mi - 1];
        r->comm_name = id->a, r->comm_task_type = id->b;
        has_comm = r->comm_name != TL_STR_NONE || r->comm_task_type != TL_STR_NONE;
      }
    }
    size_t kc = (size_t)r->task_type * 4 + (size_t)(has_comm * 2 + has_compute);
    if (r->task_type < SMALL_IDS && me->kind_cache[kc]) {
      r->kind = (tl_kind)(me->kind_cache[kc] - 1);
    } else {
      r->kind = tl_ascend_kind(tl_strpool_str(me->m.pool, r->task_type), has_comm, has_compute);
      if (r->task_type < SMALL_IDS) me->kind_cache[kc] = (uint8_t)(r->kind + 1);
    }
    if (me->ops.n && r->correlation_id != TL_ABSENT &&
        link_task_to_ops(me, r->device_id, r->stream_id, r->correlation_id, r->start_ns,
                         r->end_ns))
      return tl_nomem(e), -1;
    return 1;
  }
  if (me->phase == 1) {
    if (me->next_op < me->ops.n) {
      comm_op *op = &me->ops.v[me->next_op++];
      row_defaults(r, me->db_idx, me->source_id);
      r->source_table = "COMMUNICATION_OP";
      r->source_rowid = op->rowid;
      r->device_id = op->device;
      r->stream_id = op->best_stream;
      r->start_ns = op->start;
      r->end_ns = op->end;
      r->kind = TL_KIND_COMMUNICATION;
      r->name = r->comm_name = op->name;
      r->op_type = r->comm_task_type = op->type;
      r->task_type = tl_strpool_intern_cstr(me->m.pool, "COMMUNICATION_OP");
      if (r->task_type == TL_STR_NOMEM) return tl_nomem(e), -1;
      r->correlation_id = op->conn;
      r->op_id = op->op_id;
      return 1;
    }
    me->phase = 2;
  }
  return 0;
}

/* The communication side of the events: COMMUNICATION_TASK_INFO's identities (the high half
** of the identity pairs, appended to me->load_key) and the COMMUNICATION_OP ops. */
static int load_comm(msprof_events *me, tl_err *e) {
  tl_columns comm_cols, op_cols = {0};
  if (tl_sql_columns(me->m.db, me->m.path, "COMMUNICATION_TASK_INFO", &comm_cols, e))
    return TL_ERROR;
  int ok = comm_cols.exists && tl_columns_have(&comm_cols, comm_task_required, 0, NULL);
  int comm_has_type = tl_columns_find(&comm_cols, "taskType", 0) >= 0;
  tl_columns_free(&comm_cols);
  int fast = ok ? load_comm_runs(me, comm_has_type, e) : 0;
  if (fast < 0) return TL_ERROR;
  if (ok && !fast && load_identity(me,
                          comm_has_type
                              ? "SELECT globalTaskId, MIN(name), MIN(taskType) FROM "
                                "COMMUNICATION_TASK_INFO GROUP BY globalTaskId ORDER BY globalTaskId"
                              : "SELECT globalTaskId, MIN(name), NULL FROM "
                                "COMMUNICATION_TASK_INFO GROUP BY globalTaskId ORDER BY globalTaskId",
                          32, &me->comm, 3, e))
    return TL_ERROR;
  if (tl_sql_columns(me->m.db, me->m.path, "COMMUNICATION_OP", &op_cols, e)) return TL_ERROR;
  int rc = op_cols.exists && tl_columns_have(&op_cols, comm_op_required, 0, NULL)
               ? load_comm_ops(me, &op_cols, e) : TL_OK;
  tl_columns_free(&op_cols);
  return rc;
}

/* load_comm() on a helper thread, on its own read-only connection with its own string table
** and pool, while the opening thread loads COMPUTE_TASK_INFO (ARCHITECTURE.md Threads).
** Nothing is shared but the profile, read only. */
typedef struct comm_helper {
  const tl_profile *p;
  msprof_events side;   /* the helper's reader state; only its comm fields are taken */
  tl_strpool *pool;
  int rc;
  tl_err err;
  pthread_t thread;
} comm_helper;

static void *comm_helper_run(void *arg) {
  comm_helper *h = arg;
  h->rc = open_db(h->p, h->side.db_idx, h->pool, &h->side.m, &h->err) ||
                  load_comm(&h->side, &h->err) ? TL_ERROR : TL_OK;
  return NULL;
}

/* Starts load_comm() of input db_idx on a helper thread; NULL when no thread (or memory) can
** be had: then the opening thread loads it in turn. */
static comm_helper *comm_helper_start(const tl_profile *p, int db_idx) {
  comm_helper *h = calloc(1, sizeof *h);
  if (!h) return NULL;
  h->p = p;
  h->side.db_idx = db_idx;
  h->side.last_conn = TL_ABSENT, h->side.last_first = -1;
  h->pool = tl_strpool_new();
  if (h->pool && pthread_create(&h->thread, NULL, comm_helper_run, h) == 0) return h;
  tl_strpool_free(h->pool);
  free(h);
  return NULL;
}

/* Joins the helper and moves what it loaded into me, its strings interned into me's pool in
** the order it interned them: after COMPUTE_TASK_INFO's, as a read in turn interns them, so
** every id is the same. rc is the opening thread's own result so far: its error comes first,
** as in a read in turn (which would not have reached the communication tables). */
static int comm_helper_join(comm_helper *h, msprof_events *me, int rc, tl_err *e) {
  pthread_join(h->thread, NULL);
  msprof_events *side = &h->side;
  if (rc == TL_OK && h->rc != TL_OK)
    rc = tl_err_pass(e, &h->err, "reading the communication tables failed");
  uint32_t *remap = rc == TL_OK ? tl_strpool_merge(me->m.pool, h->pool) : NULL;
  if (rc == TL_OK && !remap) rc = tl_nomem(e);
  size_t n = side->load_key.n;
  if (rc == TL_OK && (TL_VEC_RESERVE(&me->load_key, me->load_key.n + n) ||
                      TL_VEC_RESERVE(&me->load_val, me->load_val.n + n)))
    rc = tl_nomem(e);
  if (rc == TL_OK) {
    if (n) {
      memcpy(me->load_key.v + me->load_key.n, side->load_key.v, n * sizeof *side->load_key.v);
      memcpy(me->load_val.v + me->load_val.n, side->load_val.v, n * sizeof *side->load_val.v);
    }
    me->load_key.n += n, me->load_val.n += n;
    for (size_t i = 0; i < side->comm.n; i++) {
      identity *id = &side->comm.v[i];
      id->a = remap[id->a], id->b = remap[id->b], id->c = remap[id->c];
    }
    for (size_t i = 0; i < side->ops.n; i++)
      side->ops.v[i].name = remap[side->ops.v[i].name],
      side->ops.v[i].type = remap[side->ops.v[i].type];
    /* me's communication fields are still empty: they are moved whole */
    me->comm = side->comm, me->ops = side->ops, me->ops_by_conn = side->ops_by_conn;
    me->ops_filter = side->ops_filter;
    me->base.dropped_rows += side->base.dropped_rows;
    memset(&side->comm, 0, sizeof side->comm), memset(&side->ops, 0, sizeof side->ops);
    memset(&side->ops_by_conn, 0, sizeof side->ops_by_conn);
    side->ops_filter = NULL;
  }
  free(remap);
  events_free(side);
  tl_err_clear(&h->err);
  tl_strpool_free(h->pool);
  free(h);
  return rc;
}

static int events_open(const tl_profile *p, int db_idx, const tl_event_filter *f,
                       tl_strpool *pool, tl_cursor **out, tl_err *e) {
  /* every row is read (event ids are dense over the whole table): f only gives threads */
  *out = NULL;
  msprof_events *me = calloc(1, sizeof *me);
  if (!me) return tl_nomem(e);
  me->base.next = events_next;
  me->base.close = events_close;
  me->last_conn = TL_ABSENT, me->last_first = -1;
  me->db_idx = db_idx;
  me->source_id = p->inputs.v[db_idx].primary_file;
  tl_columns task_cols = {0};
  char *sql = NULL;
  comm_helper *helper = NULL;
  if (open_db(p, db_idx, pool, &me->m, e)) goto fail;
  if (tl_sql_columns(me->m.db, me->m.path, "TASK", &task_cols, e)) goto fail;
  char *missing = NULL;
  if (!task_cols.exists) {
    tl_fail(e, "Ascend SQLite profile has no TASK table: %s", me->m.path);
    goto fail;
  }
  if (!tl_columns_have(&task_cols, task_required, 0, &missing)) {
    tl_fail(e,
            "Ascend SQLite profile has an incompatible TASK schema: %s (missing column(s): %s)",
            me->m.path, missing ? missing : "?");
    free(missing);
    goto fail;
  }
  if (f && f->threads >= 2) helper = comm_helper_start(p, db_idx);
  int ok = tl_sql_capability(me->m.db, me->m.path, "COMPUTE_TASK_INFO", compute_required, 0,
                             NULL, e);
  int rc = ok < 0 ? TL_ERROR : TL_OK;
  if (rc == TL_OK && ok)
    rc = load_identity(me,
                       "SELECT globalTaskId, name, opType, taskType FROM COMPUTE_TASK_INFO "
                       "ORDER BY rowid",
                       0, &me->compute, 4, e);
  size_t ncompute = me->load_key.n;
  if (helper) rc = comm_helper_join(helper, me, rc, e);
  else if (rc == TL_OK) rc = load_comm(me, e);
  if (rc) goto fail;
  me->kind_cache = calloc((size_t)SMALL_IDS * 4, 1);
  if (finish_identity(me, ncompute) || !me->kind_cache) {
    tl_nomem(e);
    goto fail;
  }
  sql = tl_mprintf(
      "SELECT rowid, startNs, endNs, deviceId, streamId, taskId, globalTaskId, connectionId, "
      "%s, taskType, %s FROM TASK ORDER BY rowid",
      opt_col(&task_cols, "contextId", "NULL"), opt_col(&task_cols, "modelId", "NULL"));
  if (!sql) {
    tl_nomem(e);
    goto fail;
  }
  if (tl_sql_prepare(me->m.db, me->m.path, sql, &me->task, e)) goto fail;
  free(sql);
  tl_columns_free(&task_cols);
  *out = &me->base;
  return TL_OK;
fail:
  free(sql);
  tl_columns_free(&task_cols);
  events_close(&me->base);
  return TL_ERROR;
}

/* ------------------------------------------------------------------ calls cursor */

typedef struct msprof_calls {
  tl_cursor base;
  msprof_db m;
  int db_idx, source_id;
  sqlite3_stmt *st; /* NULL when CANN_API is not usable: no calls */
  uint32_t default_type;
} msprof_calls;

static void calls_close(tl_cursor *c) {
  msprof_calls *mc = (msprof_calls *)c;
  sqlite3_finalize(mc->st);
  close_db(&mc->m);
  free(mc);
}

static int calls_next(tl_cursor *c, void *row_, tl_err *e) {
  msprof_calls *mc = (msprof_calls *)c;
  tl_call_row *r = row_;
  if (!mc->st) return 0;
  /* rowid, startNs, endNs, connectionId, name, globalTid, deviceId, type */
  sqlite3_value *v[8];
  int64_t s0, e0;
  for (;;) {
    int rc = sqlite3_step(mc->st);
    if (rc == SQLITE_DONE) return 0;
    if (rc != SQLITE_ROW)
      return tl_fail(e, "failed to read CANN_API in '%s': %s", mc->m.path,
                     sqlite3_errmsg(mc->m.db)),
             -1;
    fetch_row(mc->st, v, 8);
    /* Text or fractional times pass the SQL filter endNs > startNs: skip, counted. */
    s0 = tl_value_i64(v[1], INT64_MIN), e0 = tl_value_i64(v[2], INT64_MIN);
    if (s0 != INT64_MIN && e0 != INT64_MIN && e0 > s0) break;
    mc->base.dropped_rows++;
  }
  memset(r, 0, sizeof *r);
  r->db_idx = mc->db_idx;
  r->source_id = mc->source_id;
  r->source_table = "CANN_API";
  r->source_rowid = sqlite3_value_int64(v[0]);
  r->provider = TL_PROVIDER_ASCEND;
  r->start_ns = s0;
  r->end_ns = e0;
  r->correlation_id = tl_value_i64(v[3], TL_ABSENT);
  r->api_name = decode_value(&mc->m, v[4]);
  r->global_tid = tl_value_i64(v[5], TL_ABSENT);
  if (r->global_tid != TL_ABSENT) {
    r->process_id = (int64_t)((uint64_t)r->global_tid >> 32);
    r->thread_id = (int64_t)((uint64_t)r->global_tid & 0xffffffffu);
  } else {
    r->process_id = r->thread_id = TL_ABSENT;
  }
  r->device_id = tl_value_i64(v[6], TL_ABSENT);
  r->api_type = sqlite3_value_type(v[7]) == SQLITE_NULL ? mc->default_type
                                                         : decode_value(&mc->m, v[7]);
  r->context_id = TL_ABSENT;
  if (r->api_name == TL_STR_NOMEM || r->api_type == TL_STR_NOMEM) return tl_nomem(e), -1;
  return 1;
}

static int calls_open(const tl_profile *p, int db_idx, tl_strpool *pool, tl_cursor **out,
                      tl_err *e) {
  *out = NULL;
  msprof_calls *mc = calloc(1, sizeof *mc);
  if (!mc) return tl_nomem(e);
  mc->base.next = calls_next;
  mc->base.close = calls_close;
  mc->db_idx = db_idx;
  mc->source_id = p->inputs.v[db_idx].primary_file;
  tl_columns cols = {0};
  if (open_db(p, db_idx, pool, &mc->m, e)) goto fail;
  mc->default_type = tl_strpool_intern_cstr(pool, "cann_api");
  if (mc->default_type == TL_STR_NOMEM) {
    tl_nomem(e);
    goto fail;
  }
  if (tl_sql_columns(mc->m.db, mc->m.path, "CANN_API", &cols, e)) goto fail;
  if (cols.exists && tl_columns_have(&cols, cann_required, 0, NULL)) {
    char *sql = tl_mprintf(
        "SELECT rowid, startNs, endNs, connectionId, name, %s, %s, %s FROM CANN_API "
        "WHERE endNs > startNs ORDER BY rowid",
        opt_col(&cols, "globalTid", "NULL"), opt_col(&cols, "deviceId", "NULL"),
        opt_col(&cols, "type", "NULL"));
    if (!sql) {
      tl_nomem(e);
      goto fail;
    }
    int rc = tl_sql_prepare(mc->m.db, mc->m.path, sql, &mc->st, e);
    free(sql);
    if (rc) goto fail;
  }
  tl_columns_free(&cols);
  *out = &mc->base;
  return TL_OK;
fail:
  tl_columns_free(&cols);
  calls_close(&mc->base);
  return TL_ERROR;
}

/* ------------------------------------------------------------------ inventory */

typedef struct capability_spec {
  const char *name, *table;
  const char *const *required;
} capability_spec;

static int inventory(const tl_profile *p, int db_idx, tl_inventory *inv, tl_err *e) {
  static const capability_spec caps[] = {
      {"device_tasks", "TASK", task_required},
      {"string_table", "STRING_IDS", string_ids_required},
      {"compute_identity", "COMPUTE_TASK_INFO", compute_required},
      {"communication_identity", "COMMUNICATION_TASK_INFO", comm_task_required},
      {"communication_ops", "COMMUNICATION_OP", comm_op_required},
      {"host_api", "CANN_API", cann_required},
      {"framework_api", "PYTORCH_API", pytorch_required},
  };
  const char *path = p->inputs.v[db_idx].path;
  const char *kind = tl_family_source_kind(p->inputs.v[db_idx].family);
  sqlite3 *db;
  if (tl_sql_open_ro(path, &db, e)) return TL_ERROR;
  int rc = TL_OK;
  for (size_t i = 0; rc == TL_OK && i < sizeof caps / sizeof caps[0]; i++) {
    char *reason = NULL;
    int ok = tl_sql_capability(db, path, caps[i].table, caps[i].required, 0, &reason, e);
    if (ok < 0)
      rc = TL_ERROR;
    else
      rc = tl_inventory_add(inv, db_idx, "capability", kind, path, caps[i].table, -1,
                            caps[i].name, ok, reason, e);
    free(reason);
  }
  tl_sql_close(db);
  return rc;
}

/* A file is an Ascend monolithic profile when its TASK table has the reader's columns and a
** row; a TASK table without them is an error, not another family. */
static int detect(const tl_sql_probe *f, tl_err *e) {
  if (!tl_sql_probe_has(f, "TASK")) return 0;
  tl_columns cols;
  if (tl_sql_columns(f->db, f->path, "TASK", &cols, e)) return -1;
  char *missing = NULL;
  int ok = tl_columns_have(&cols, task_required, 0, &missing);
  tl_columns_free(&cols);
  if (!ok) {
    tl_fail(e,
            "Ascend SQLite profile has an incompatible TASK schema: %s (table TASK is missing "
            "column(s): %s; expected startNs, endNs, deviceId, streamId, taskId, globalTaskId, "
            "connectionId, taskType)",
            f->path, missing ? missing : "?");
    free(missing);
    return -1;
  }
  int ne = tl_sql_nonempty(f->db, "TASK");
  if (ne < 0) {
    /* no SQLite error code: our own allocation failed */
    if (sqlite3_errcode(f->db) == SQLITE_OK) tl_nomem(e);
    else tl_fail(e, "cannot read table TASK of %s: %s", f->path, sqlite3_errmsg(f->db));
  }
  return ne;
}

const tl_family_def tl_msprof_family = {
    .source_kind = "ascend_sqlite_hot_path",
    .name = "Ascend msprof",
    .provider = TL_PROVIDER_ASCEND,
    .detect_sqlite = detect,
    .detect_hint = "TASK with columns startNs, endNs, deviceId, streamId, taskId, globalTaskId, "
                   "connectionId, taskType (Ascend msprof)",
    .layout_hint = "PROF_*/msprof_*.db with a non-empty TASK table, "
                   "ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_*.db",
    .sqlite_files = 1,
    .capture_companion = 1,
    .calls_beside = 1,
    .inventory = inventory,
    .events_open = events_open,
    .calls_open = calls_open,
    .host_marks = tl_msprof_host_marks,
};
