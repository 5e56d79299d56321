/*
** events.c: the traceloom_events(path) table-valued function.
**
**   SELECT kind, count(*) FROM traceloom_events('PROF_0/msprof_0.db') GROUP BY kind;
**   SELECT * FROM traceloom_events('profile.sqlite') WHERE device_id = 0
**     AND start_ns >= 1700000000000000000 AND start_ns < 1700000001000000000;
**
** The normalized device events of a profile (inputs.md section 9.1), streamed straight
** from the source through the same reader cursor the analysis uses: nothing is copied.
** event_id is the dense index of the event in reader order, the n of `event-<n>` in
** traceloom_event, whatever constraints a query adds.
**
** xBestIndex contract:
**   - `profile = ?` (the hidden first argument) is required; without it the plan is
**     rejected with SQLITE_CONSTRAINT.
**   - `device_id = ?` and `start_ns` / `end_ns` with >, >=, <, <= are passed to xFilter
**     (idxNum bit mask, argv in bit order) and skip rows early. SQLite still re-checks
**     them (omit = 0), so non-integer comparison values keep SQL semantics.
*/
#include "vtab/vtab_common.h"
#include "source/source.h"

#include <stdlib.h>
#include <string.h>

enum {
  COL_EVENT_ID, COL_DB_IDX, COL_SOURCE_PATH, COL_SOURCE_TABLE, COL_SOURCE_ROWID, COL_DEVICE_ID,
  COL_STREAM_ID, COL_START_NS, COL_END_NS, COL_KIND, COL_NAME, COL_OP_TYPE, COL_TASK_TYPE,
  COL_CORRELATION_ID, COL_MODEL_ID, COL_OP_NAME, COL_COMPUTE_TASK_TYPE, COL_COMM_NAME,
  COL_COMM_TASK_TYPE, COL_TASK_ID, COL_GLOBAL_TASK_ID, COL_CONTEXT_ID, COL_GRAPH_NODE_ID,
  COL_OP_ID, COL_PROFILE
};

static const char schema[] =
    "CREATE TABLE x(event_id INTEGER, db_idx INTEGER, source_path TEXT, source_table TEXT, "
    "source_rowid INTEGER, device_id INTEGER, stream_id INTEGER, start_ns INTEGER, "
    "end_ns INTEGER, kind TEXT, name TEXT, op_type TEXT, task_type TEXT, correlation_id INTEGER, "
    "model_id INTEGER, op_name TEXT, compute_task_type TEXT, comm_name TEXT, "
    "comm_task_type TEXT, task_id INTEGER, global_task_id INTEGER, context_id INTEGER, "
    "graph_node_id INTEGER, op_id INTEGER, profile HIDDEN)";

/* Filter bits, in argv order after the profile argument. */
enum {
  F_DEVICE_EQ = 1 << 0,
  F_START_GT = 1 << 1, F_START_GE = 1 << 2, F_START_LT = 1 << 3, F_START_LE = 1 << 4,
  F_END_GT = 1 << 5, F_END_GE = 1 << 6, F_END_LT = 1 << 7, F_END_LE = 1 << 8,
  F_COUNT = 9
};

typedef struct events_cursor {
  sqlite3_vtab_cursor base;
  tl_profile profile;
  int have_profile;
  tl_strpool *pool;
  tl_cursor *cur;
  tl_event_row row;
  int64_t event_id; /* index of the current row in reader order */
  int eof;
  int flags;        /* F_* bits with integer values */
  int64_t val[F_COUNT];
} events_cursor;

/* xConnect: declares the columns; the module is eponymous-only (no xCreate). */
static int ev_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                      sqlite3_vtab **out, char **err) {
  (void)aux, (void)argc, (void)argv;
  return tl_vtab_connect(db, schema, out, err);
}

/* xBestIndex: see the contract in the header comment. */
static int ev_best_index(sqlite3_vtab *vt, sqlite3_index_info *info) {
  (void)vt;
  int rc = tl_vtab_require_path(info, COL_PROFILE);
  if (rc != SQLITE_OK) return rc;
  int slot[F_COUNT];
  for (int b = 0; b < F_COUNT; b++) slot[b] = -1;
  for (int i = 0; i < info->nConstraint; i++) {
    const struct sqlite3_index_constraint *c = &info->aConstraint[i];
    if (!c->usable) continue;
    int bit = -1;
    if (c->iColumn == COL_DEVICE_ID && c->op == SQLITE_INDEX_CONSTRAINT_EQ) bit = 0;
    if (c->iColumn == COL_START_NS || c->iColumn == COL_END_NS) {
      int base = c->iColumn == COL_START_NS ? 1 : 5;
      switch (c->op) {
        case SQLITE_INDEX_CONSTRAINT_GT: bit = base; break;
        case SQLITE_INDEX_CONSTRAINT_GE: bit = base + 1; break;
        case SQLITE_INDEX_CONSTRAINT_LT: bit = base + 2; break;
        case SQLITE_INDEX_CONSTRAINT_LE: bit = base + 3; break;
        default: break;
      }
    }
    if (bit >= 0 && slot[bit] < 0) slot[bit] = i;
  }
  int flags = 0, argv = 2;
  double cost = 1e6;
  for (int b = 0; b < F_COUNT; b++) {
    if (slot[b] < 0) continue;
    flags |= 1 << b;
    info->aConstraintUsage[slot[b]].argvIndex = argv++;
    info->aConstraintUsage[slot[b]].omit = 0;
    cost /= b == 0 ? 8 : 2;
  }
  info->idxNum = flags;
  info->estimatedCost = cost;
  info->estimatedRows = (sqlite3_int64)cost;
  return SQLITE_OK;
}

static int ev_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out) {
  (void)vt;
  return tl_vtab_open_cursor(sizeof(events_cursor), out);
}

static void ev_reset(events_cursor *c) {
  if (c->cur) c->cur->close(c->cur);
  c->cur = NULL;
  if (c->have_profile) tl_profile_free(&c->profile);
  c->have_profile = 0;
  tl_strpool_free(c->pool);
  c->pool = NULL;
}

static int ev_close(sqlite3_vtab_cursor *cur) {
  events_cursor *c = (events_cursor *)cur;
  ev_reset(c);
  sqlite3_free(c);
  return SQLITE_OK;
}

static int row_passes(const events_cursor *c) {
  const tl_event_row *r = &c->row;
  int f = c->flags;
  const int64_t *v = c->val;
  if ((f & F_DEVICE_EQ) && (int64_t)r->device_id != v[0]) return 0;
  if ((f & F_START_GT) && !(r->start_ns > v[1])) return 0;
  if ((f & F_START_GE) && !(r->start_ns >= v[2])) return 0;
  if ((f & F_START_LT) && !(r->start_ns < v[3])) return 0;
  if ((f & F_START_LE) && !(r->start_ns <= v[4])) return 0;
  if ((f & F_END_GT) && !(r->end_ns > v[5])) return 0;
  if ((f & F_END_GE) && !(r->end_ns >= v[6])) return 0;
  if ((f & F_END_LT) && !(r->end_ns < v[7])) return 0;
  if ((f & F_END_LE) && !(r->end_ns <= v[8])) return 0;
  return 1;
}

/* xNext: advances to the next row that passes the pushed-down filters. */
static int ev_next(sqlite3_vtab_cursor *cur) {
  events_cursor *c = (events_cursor *)cur;
  tl_err e = {0};
  for (;;) {
    int rc = c->cur->next(c->cur, &c->row, &e);
    if (rc < 0) {
      tl_vtab_error(cur->pVtab, e.msg);
      tl_err_clear(&e);
      return SQLITE_ERROR;
    }
    if (rc == 0) {
      c->eof = 1;
      return SQLITE_OK;
    }
    c->event_id++;
    if (row_passes(c)) return SQLITE_OK;
  }
}

/* xFilter: argv[0] is the profile path, then the F_* values in bit order. */
static int ev_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr, int argc,
                     sqlite3_value **argv) {
  (void)idxStr;
  events_cursor *c = (events_cursor *)cur;
  ev_reset(c);
  c->eof = 0;
  c->event_id = -1;
  c->flags = 0;
  const char *path = tl_vtab_path_arg("traceloom_events", argc, argv, cur->pVtab);
  if (!path) return SQLITE_ERROR;
  int k = 1;
  for (int b = 0; b < F_COUNT; b++) {
    if (!(idxNum & (1 << b))) continue;
    if (k < argc && sqlite3_value_type(argv[k]) == SQLITE_INTEGER) {
      c->flags |= 1 << b;
      c->val[b] = sqlite3_value_int64(argv[k]);
    }
    k++;
  }
  tl_err e = {0};
  c->pool = tl_strpool_new();
  if (!c->pool) return SQLITE_NOMEM;
  if (tl_profile_discover(path, NULL, &c->profile, &e) == TL_OK) {
    c->have_profile = 1;
    /* No filter reaches the readers: a reader that skipped rows would shift the dense
    ** event ids, which must equal traceloom_event's event-<n> whatever the query asks. */
    tl_events_open(&c->profile, NULL, c->pool, &c->cur, &e);
  }
  if (e.msg) {
    tl_vtab_error(cur->pVtab, e.msg);
    tl_err_clear(&e);
    return SQLITE_ERROR;
  }
  return ev_next(cur);
}

static int ev_eof(sqlite3_vtab_cursor *cur) { return ((events_cursor *)cur)->eof; }

/* xColumn: absent values (-1, no stream) are SQL NULL. */
static int ev_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  events_cursor *c = (events_cursor *)cur;
  const tl_event_row *r = &c->row;
  switch (col) {
    case COL_EVENT_ID: sqlite3_result_int64(ctx, c->event_id); break;
    case COL_DB_IDX: sqlite3_result_int(ctx, r->db_idx); break;
    case COL_SOURCE_PATH:
      sqlite3_result_text(ctx, c->profile.files.v[r->source_id].path, -1, SQLITE_STATIC);
      break;
    case COL_SOURCE_TABLE: sqlite3_result_text(ctx, r->source_table, -1, SQLITE_TRANSIENT); break;
    case COL_SOURCE_ROWID: sqlite3_result_int64(ctx, r->source_rowid); break;
    case COL_DEVICE_ID: sqlite3_result_int64(ctx, r->device_id); break;
    case COL_STREAM_ID:
      if (r->stream_id == TL_NO_STREAM)
        sqlite3_result_null(ctx);
      else
        sqlite3_result_int64(ctx, r->stream_id);
      break;
    case COL_START_NS: sqlite3_result_int64(ctx, r->start_ns); break;
    case COL_END_NS: sqlite3_result_int64(ctx, r->end_ns); break;
    case COL_KIND: sqlite3_result_text(ctx, tl_kind_name(r->kind), -1, SQLITE_STATIC); break;
    case COL_NAME: tl_result_pool_str(ctx, c->pool, r->name); break;
    case COL_OP_TYPE: tl_result_pool_str(ctx, c->pool, r->op_type); break;
    case COL_TASK_TYPE: tl_result_pool_str(ctx, c->pool, r->task_type); break;
    case COL_CORRELATION_ID: tl_result_opt_i64(ctx, r->correlation_id); break;
    case COL_MODEL_ID: tl_result_opt_i64(ctx, r->model_id); break;
    case COL_OP_NAME: tl_result_pool_str(ctx, c->pool, r->op_name); break;
    case COL_COMPUTE_TASK_TYPE: tl_result_pool_str(ctx, c->pool, r->compute_task_type); break;
    case COL_COMM_NAME: tl_result_pool_str(ctx, c->pool, r->comm_name); break;
    case COL_COMM_TASK_TYPE: tl_result_pool_str(ctx, c->pool, r->comm_task_type); break;
    case COL_TASK_ID: tl_result_opt_i64(ctx, r->task_id); break;
    case COL_GLOBAL_TASK_ID: tl_result_opt_i64(ctx, r->global_task_id); break;
    case COL_CONTEXT_ID: tl_result_opt_i64(ctx, r->context_id); break;
    case COL_GRAPH_NODE_ID: tl_result_opt_i64(ctx, r->graph_node_id); break;
    case COL_OP_ID: tl_result_opt_i64(ctx, r->op_id); break;
    default: sqlite3_result_null(ctx); break;
  }
  return SQLITE_OK;
}

static int ev_rowid(sqlite3_vtab_cursor *cur, sqlite_int64 *rowid) {
  *rowid = ((events_cursor *)cur)->event_id;
  return SQLITE_OK;
}

const sqlite3_module tl_events_module = {
    .iVersion = 0,
    .xCreate = NULL, /* eponymous-only */
    .xConnect = ev_connect,
    .xBestIndex = ev_best_index,
    .xDisconnect = tl_vtab_disconnect,
    .xDestroy = NULL,
    .xOpen = ev_open,
    .xClose = ev_close,
    .xFilter = ev_filter,
    .xNext = ev_next,
    .xEof = ev_eof,
    .xColumn = ev_column,
    .xRowid = ev_rowid,
};
