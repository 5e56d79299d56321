/*
** publish_idle.c: the idle-evidence stage's options, inputs and tables (idle.h,
** sql/schema/61_idle.sql), inside the caller's savepoint.
**
** Per Ascend input (db_idx) one run: E1 to E4 (rules.c, timeline.c), the clock models of its
** devices from the marker TSV (clock.c, read by source/clock_markers.c), the host evidence
** (host.c), then every row with its lineage. The events' connection ids and source rows and
** the runtime calls were published and freed before this stage: they are read back from
** traceloom_event and traceloom_runtime_call. Explained idle is also attributed to the anchor
** whose prelude window (the uncovered time before it on its device) holds it.
*/
#include "idle/idle_int.h"
#include "publish/publish.h"
#include "util/buf.h"
#include "util/sha256.h"
#include "util/timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE TL_IDLE_NONE

/* ------------------------------------------------------------------ options */

void tl_idle_options_free(tl_idle_options *o) {
  free(o->clock_markers);
  memset(o, 0, sizeof *o);
}

int tl_idle_options_parse(const tl_json *v, tl_idle_options *o, tl_err *e) {
  memset(o, 0, sizeof *o);
  o->collection = TL_COLLECTION_UNKNOWN, o->epsilon_multiplier = 1.0, o->minimum_evidence_ns = 1;
  if (!v) return TL_OK;
  int b = tl_json_bool(v);
  if (b >= 0) {
    o->enabled = b;
    return TL_OK;
  }
  if (tl_json_type_of(v) != TL_JSON_OBJECT)
    return tl_fail(e, "analyze option \"idle_evidence\" must be true, false or an object, e.g. "
                      "{\"idle_evidence\": {\"collection_status\": \"complete\"}}");
  o->enabled = 1;
  for (size_t i = 0; i < tl_json_len(v); i++) {
    const char *key = tl_json_key_at(v, i);
    const tl_json *x = tl_json_value_at(v, i);
    if (strcmp(key, "collection_status") == 0) {
      const char *s = tl_json_str(x, NULL);
      int k = -1;
      for (int c = 0; s && c <= TL_COLLECTION_INVALID; c++)
        if (strcmp(s, tl_collection_name(c)) == 0) k = c;
      if (k < 0) {
        tl_idle_options_free(o);
        return tl_fail(e, "idle_evidence option \"collection_status\" must be complete, incomplete, "
                          "unknown or invalid");
      }
      o->collection = (tl_collection)k;
    } else if (strcmp(key, "clock_markers") == 0) {
      const char *s = tl_json_str(x, NULL);
      if (!s || !*s) {
        tl_idle_options_free(o);
        return tl_fail(e, "idle_evidence option \"clock_markers\" must be the path of a marker TSV");
      }
      free(o->clock_markers);
      if (!(o->clock_markers = tl_strdup(s))) return tl_nomem(e);
    } else if (strcmp(key, "clock_markers_synthetic") == 0) {
      int s = tl_json_bool(x);
      if (s < 0) {
        tl_idle_options_free(o);
        return tl_fail(e, "idle_evidence option \"clock_markers_synthetic\" must be true or false");
      }
      o->markers_synthetic = s;
    } else if (strcmp(key, "epsilon_multiplier") == 0) {
      double d;
      if (tl_json_double(x, &d) || !(d >= 0 && d <= 1000)) {
        tl_idle_options_free(o);
        return tl_fail(e, "idle_evidence option \"epsilon_multiplier\" must be a number from 0 to 1000");
      }
      o->epsilon_multiplier = d;
    } else if (strcmp(key, "minimum_evidence_duration_ns") == 0) {
      int64_t n;
      if (tl_json_i64(x, &n) || n < 0) {
        tl_idle_options_free(o);
        return tl_fail(e, "idle_evidence option \"minimum_evidence_duration_ns\" must be an integer >= 0");
      }
      o->minimum_evidence_ns = n;
    } else {
      tl_idle_options_free(o);
      return tl_fail(e, "unknown idle_evidence option \"%s\": expected collection_status, clock_markers, "
                        "clock_markers_synthetic, epsilon_multiplier or minimum_evidence_duration_ns",
                     key);
    }
  }
  return TL_OK;
}

/* ------------------------------------------------------------------ inputs read back */

/* The connection (correlation) ids of the db's events, as published: per event, TL_ABSENT
** when none. Evidence links cite events by number; their source rows follow from the event. */
typedef struct sources {
  int64_t *conn;
} sources;

static void sources_free(sources *s) {
  free(s->conn);
  memset(s, 0, sizeof *s);
}

static int read_events(sqlite3 *db, size_t n, int db_idx, sources *s, tl_err *e) {
  if (!(s->conn = malloc((n ? n : 1) * sizeof *s->conn))) return tl_nomem(e);
  for (size_t i = 0; i < n; i++) s->conn[i] = TL_ABSENT;
  sqlite3_stmt *st;
  if (tl_pub_prepare(db, "SELECT event_n, correlation_id FROM main.traceloom_event_core WHERE db_idx = ?1", &st, e))
    return TL_ERROR;
  sqlite3_bind_int(st, 1, db_idx);
  int r;
  while ((r = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t ev = sqlite3_column_int64(st, 0);
    if (ev >= 0 && (size_t)ev < n && sqlite3_column_type(st, 1) != SQLITE_NULL)
      s->conn[ev] = sqlite3_column_int64(st, 1);
  }
  int rc = r == SQLITE_DONE ? TL_OK : tl_fail(e, "reading the published events: %s", sqlite3_errmsg(db));
  sqlite3_finalize(st);
  return rc;
}

/* The allowlisted host API calls of the db, with their source rows. */
typedef struct api_source {
  char *table;
  int64_t key;
  char *name;
} api_source;
typedef TL_VEC(api_source) api_sources;

static int read_apis(sqlite3 *db, int db_idx, tl_idle_host *h, api_sources *src, tl_err *e) {
  sqlite3_stmt *st;
  if (tl_pub_prepare(db,
                     "SELECT call_n, start_ns, end_ns, api_name, correlation_id, source_table, source_key "
                     "FROM main.traceloom_runtime_call WHERE db_idx = ?1 ORDER BY call_n",
                     &st, e))
    return TL_ERROR;
  sqlite3_bind_int(st, 1, db_idx);
  int rc = TL_OK, r;
  while (rc == TL_OK && (r = sqlite3_step(st)) == SQLITE_ROW) {
    const char *pattern = NULL;
    const char *name = (const char *)sqlite3_column_text(st, 3);
    int family = tl_idle_host_api_family(name, &pattern);
    if (!family) continue;
    tl_idle_api a;
    memset(&a, 0, sizeof a);
    a.call = (uint32_t)sqlite3_column_int64(st, 0);
    a.start = sqlite3_column_int64(st, 1), a.end = sqlite3_column_int64(st, 2);
    a.connection = sqlite3_column_type(st, 4) == SQLITE_NULL ? TL_ABSENT : sqlite3_column_int64(st, 4);
    a.family = (uint8_t)family, a.pattern = pattern;
    api_source x = {tl_strdup((const char *)sqlite3_column_text(st, 5)), sqlite3_column_int64(st, 6),
                    tl_strdup(name)};
    if (!x.table || !x.name || TL_VEC_PUSH(&h->apis, a) || TL_VEC_PUSH(src, x)) {
      free(x.table), free(x.name);
      rc = tl_nomem(e);
    }
  }
  if (rc == TL_OK && r != SQLITE_DONE) rc = tl_fail(e, "reading the published runtime calls: %s", sqlite3_errmsg(db));
  sqlite3_finalize(st);
  return rc;
}

/* ------------------------------------------------------------------ rows */

static const char *const STATUS_NAME[] = {"ok", "no_productive_span", "invalid_input", "empty_input"};
static const char *const CANDIDATE_STATUS[] = {"possible_only", "non_robust_delay"};

/* The millions of intervals, stream states, explanations and evidence links are written BATCH
** rows to an INSERT (a VALUES list of BATCH rows): SQLite's cost per statement (the cursor
** opened and closed, the program started and halted, the reset) is paid once per batch, not
** per row (on the 1M-task profile a 64-row INSERT into a WITHOUT ROWID table took about 0.55 of
** the one-row statement's CPU per row; bench/RESULTS.md, "idle25"). A row's values wait in
** cells until the batch is full; the rows left at the end are written one by one. A text cell
** points at a string that outlives the batch (a host call's table, a marker id) or at the row's
** own copy (ids, keys: at most two per row, each under 96 bytes). */
#define BATCH 64
#define BATCH_COLS 14

typedef struct bcell {
  int64_t i;
  const char *s;
  int len;
  uint8_t kind; /* 0 NULL, 1 integer, 2 text */
} bcell;

typedef struct batch {
  sqlite3_stmt *many, *one;
  const char *table;
  int ncol, n;
  bcell cell[BATCH][BATCH_COLS];
  char text[BATCH][2][96];
} batch;

/* One run's prepared statements and batches. */
typedef struct writer {
  sqlite3 *db;
  sqlite3_stmt *interval, *state, *expl, *link, *cand, *model, *marker, *api, *tlink, *anchor, *meta;
  batch *b_interval, *b_state, *b_expl, *b_link;
  const char *run_id, *source_kind;
  int db_idx;
  const api_sources *apis_src;
  const tl_idle_host *host;
  char owner[96], gap[96]; /* the ids being spelled (copied into the batches) */
} writer;

static const char *SQL[] = {
    "INSERT INTO traceloom_device_interval_core(db_idx, device_id, interval_order, start_ns, duration_ns, idle, "
    "source_count, interval_id) VALUES(?1,?2,?3,?4,?5,?6,?7,?8)",
    "INSERT INTO traceloom_stream_state_core(db_idx, device_id, stream_id, state_order, start_ns, duration_ns, state, "
    "source_count, stream_count, scan_complete, state_id) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)",
    "INSERT INTO traceloom_idle_explanation_core(db_idx, device_id, explanation_order, gap_order, start_ns, duration_ns, "
    "category, level, relation, alignment, source_count, idle_explanation_id, gap_interval_id) "
    "VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13)",
    "INSERT INTO traceloom_evidence_link_core(owner_kind_n, owner_id, db_idx, evidence_ordinal, event_n, "
    "source_table, source_key, relation, level, overlap_start_ns, overlap_end_ns, stream_id, state, rule_n) "
    "VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14)",
    "INSERT INTO traceloom_idle_candidate VALUES(?1,?2,?3,?4,?5,?6,'correlated',?7,?8,?9,?10,?11,?12)",
    "INSERT INTO traceloom_clock_model VALUES(?1,?2,?3,?4,'profiler_host','caller_clock_realtime','device',"
    "'composed_affine',?5,?6,?7,?8,?9,'theil_sen_median','1',0,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,"
    "'record_api_midpoint_to_record_bracket_midpoint','record_sync_bracket_midpoint_to_task_start',?22)",
    "INSERT INTO traceloom_clock_marker VALUES(?1,?2,'clock_marker_tsv','clock_markers',?2,?3,?4,?5,?6,?7,?8,"
    "?9,?10,?11,?12,?13)",
    "INSERT INTO traceloom_host_api_event VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,'profiler_host',"
    "'" TL_IDLE_CONTRACT "')",
    "INSERT INTO traceloom_task_api_link VALUES(?1,?2,?3,?4,?5,?6)",
    "INSERT INTO traceloom_anchor_idle_explanation_core VALUES(?1,?2,?3,?4,?5,?6,?7,?8)",
    "INSERT INTO traceloom_run_metadata VALUES(?1,?2,?3,?4,'" TL_IDLE_CONTRACT "',?5,?6,'" TL_IDLE_ATTRIBUTION
    "',?7,?8,?9,?10,?11,?12,?13)",
};

/* The batch of one-row statement sql (an INSERT .. VALUES(?1, .., ?ncol)) into table. */
static int batch_open(sqlite3 *db, const char *sql, sqlite3_stmt *one, const char *table, int ncol, batch **out,
                      tl_err *e) {
  batch *b = calloc(1, sizeof *b);
  if (!b) return tl_nomem(e);
  *out = b;
  b->one = one, b->table = table, b->ncol = ncol;
  const char *values = strstr(sql, "VALUES");
  tl_buf q = {0};
  tl_buf_append(&q, sql, (size_t)(values - sql));
  tl_buf_puts(&q, "VALUES");
  for (int r = 0; r < BATCH; r++)
    for (int c = 0; c < ncol; c++) tl_buf_puts(&q, c == 0 ? (r ? ",(?" : "(?") : c + 1 == ncol ? ",?)" : ",?");
  tl_buf_append(&q, "", 1);
  int rc = q.oom ? tl_nomem(e) : tl_pub_prepare(db, q.p, &b->many, e);
  tl_buf_free(&q);
  return rc;
}

static bcell *bc(batch *b, int col) { return &b->cell[b->n][col - 1]; }
static void b_null(batch *b, int col) { bc(b, col)->kind = 0; }
static void b_int(batch *b, int col, int64_t v) {
  bcell *c = bc(b, col);
  c->kind = 1, c->i = v;
}
static void b_opt(batch *b, int col, int64_t v) {
  if (v >= 0) b_int(b, col, v);
  else b_null(b, col);
}
/* A text that outlives the batch. */
static void b_text(batch *b, int col, const char *s) {
  bcell *c = bc(b, col);
  c->kind = 2, c->s = s, c->len = -1;
}
/* A text copied into the row's slot (0 or 1). */
static void b_copy(batch *b, int col, int slot, const char *s) {
  bcell *c = bc(b, col);
  size_t n = strlen(s);
  if (n >= sizeof b->text[0][0]) n = sizeof b->text[0][0] - 1; /* never: ids and keys are shorter */
  memcpy(b->text[b->n][slot], s, n);
  c->kind = 2, c->s = b->text[b->n][slot], c->len = (int)n;
}

static void bind_cell(sqlite3_stmt *st, int param, const bcell *c) {
  if (c->kind == 1) sqlite3_bind_int64(st, param, c->i);
  else if (c->kind == 2) sqlite3_bind_text(st, param, c->s, c->len, SQLITE_STATIC);
  else sqlite3_bind_null(st, param);
}

/* The rows pending, written: a whole batch by its statement, fewer one by one. */
static int batch_flush(sqlite3 *db, batch *b, tl_err *e) {
  int rc = TL_OK;
  if (b->n == BATCH) {
    for (int r = 0; r < BATCH; r++)
      for (int c = 0; c < b->ncol; c++) bind_cell(b->many, r * b->ncol + c + 1, &b->cell[r][c]);
    rc = tl_pub_step(db, b->many, b->table, e);
  } else {
    for (int r = 0; rc == TL_OK && r < b->n; r++) {
      for (int c = 0; c < b->ncol; c++) bind_cell(b->one, c + 1, &b->cell[r][c]);
      rc = tl_pub_step(db, b->one, b->table, e);
    }
  }
  b->n = 0;
  return rc;
}

/* The current row is complete. */
static int batch_row(sqlite3 *db, batch *b, tl_err *e) {
  return ++b->n == BATCH ? batch_flush(db, b, e) : TL_OK;
}

static int writer_open(writer *w, tl_err *e) {
  sqlite3_stmt **st[] = {&w->interval, &w->state, &w->expl, &w->link, &w->cand, &w->model,
                         &w->marker, &w->api, &w->tlink, &w->anchor, &w->meta};
  for (size_t i = 0; i < sizeof st / sizeof st[0]; i++)
    if (tl_pub_prepare(w->db, SQL[i], st[i], e)) return TL_ERROR;
  if (batch_open(w->db, SQL[0], w->interval, "traceloom_device_interval_core", 8, &w->b_interval, e) ||
      batch_open(w->db, SQL[1], w->state, "traceloom_stream_state_core", 11, &w->b_state, e) ||
      batch_open(w->db, SQL[2], w->expl, "traceloom_idle_explanation_core", 13, &w->b_expl, e) ||
      batch_open(w->db, SQL[3], w->link, "traceloom_evidence_link_core", 14, &w->b_link, e))
    return TL_ERROR;
  return TL_OK;
}

/* Every batch's pending rows written (before the run's rows are done). */
static int writer_flush(writer *w, tl_err *e) {
  batch *b[] = {w->b_interval, w->b_state, w->b_expl, w->b_link};
  int rc = TL_OK;
  for (size_t i = 0; rc == TL_OK && i < sizeof b / sizeof b[0]; i++) rc = batch_flush(w->db, b[i], e);
  return rc;
}

static void writer_close(writer *w) {
  sqlite3_stmt *st[] = {w->interval, w->state, w->expl, w->link, w->cand, w->model,
                        w->marker, w->api, w->tlink, w->anchor, w->meta};
  for (size_t i = 0; i < sizeof st / sizeof st[0]; i++) sqlite3_finalize(st[i]);
  batch *b[] = {w->b_interval, w->b_state, w->b_expl, w->b_link};
  for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) {
    if (b[i]) sqlite3_finalize(b[i]->many);
    free(b[i]);
  }
}

static void bind_str(sqlite3_stmt *st, int col, const char *s) {
  if (s) sqlite3_bind_text(st, col, s, -1, SQLITE_TRANSIENT);
  else sqlite3_bind_null(st, col);
}


/* Ids are spelled per row (millions): by hand, at a fraction of snprintf's cost. */
static char *put_s(char *p, const char *s) {
  while (*s) *p++ = *s++;
  return p;
}

static char *put_u(char *p, uint64_t v) {
  char t[20];
  int n = 0;
  do t[n++] = (char)('0' + v % 10), v /= 10;
  while (v);
  while (n) *p++ = t[--n];
  return p;
}

/* "<kind>-d<db_idx>-dev<device_id>-" into out (96 bytes hold every id: the longest is a
** stream state's, 14 + 4 numbers of at most 20 digits and 5 separators), the end returned. */
static char *put_device(char *out, const char *kind, int db_idx, uint32_t device_id) {
  char *p = put_s(out, kind);
  p = put_u(put_s(p, "-d"), (uint64_t)db_idx);
  return put_s(put_u(put_s(p, "-dev"), device_id), "-");
}

/* The owners of evidence links (traceloom_evidence_link_core.owner_kind_n), the levels and the
** relations, as the views name them (sql/views/64_idle.sql). */
enum { OWNER_INTERVAL = 0, OWNER_STATE, OWNER_EXPLANATION, OWNER_CANDIDATE, OWNER_CLOCK_MODEL };
enum { LEVEL_DIRECT = 0, LEVEL_CORRELATED, LEVEL_NONE };
enum { REL_COVERAGE = 0, REL_ABSENCE, REL_CONNECTION, REL_OVERLAP, REL_NONE };

/* A link of owner (kind, id) citing device event s->event (or, with it NONE, host call
** s->call). */
static int link(writer *w, int kind, const char *owner_id, int ordinal, const tl_idle_src *s, int relation,
                int level, int extent, int64_t os, int64_t oe, int64_t stream, int state, tl_err *e) {
  batch *b = w->b_link;
  b_int(b, 1, kind);
  b_copy(b, 2, 0, owner_id);
  b_int(b, 3, w->db_idx);
  b_int(b, 4, ordinal);
  if (s->event != NONE) {
    b_int(b, 5, s->event); /* table and key follow from the event */
    b_null(b, 6), b_null(b, 7);
  } else {
    const api_source *x = NULL;
    for (size_t k = 0; k < w->host->apis.n; k++)
      if (w->host->apis.v[k].call == s->call) x = &w->apis_src->v[k];
    char key[32];
    snprintf(key, sizeof key, "%lld", (long long)(x ? x->key : -1));
    b_null(b, 5);
    b_text(b, 6, x ? x->table : ""); /* the host calls' tables live as long as the run */
    b_copy(b, 7, 1, key);
  }
  b_int(b, 8, relation);
  b_int(b, 9, level);
  if (extent && oe > os) b_int(b, 10, os), b_int(b, 11, oe);
  else b_null(b, 10), b_null(b, 11);
  b_opt(b, 12, stream);
  b_opt(b, 13, state);
  b_opt(b, 14, s->event != NONE && s->rule != NONE ? (int64_t)s->rule : -1);
  return batch_row(w->db, b, e);
}

/* The numbers 0 .. n - 1 in the order of their decimal spellings (0, 1, 10, 11, .., 2, 20, ..):
** the order of the text ids that end in them. Intervals, stream states and explanations are
** WITHOUT ROWID tables keyed by those ids (sql/schema/61_idle.sql): rows written in key order
** are appended to the B-tree (full pages, no rebalancing), and their evidence links, written
** right after each owner, follow the same order, so the audit's owner lookups walk the key
** order too. */
typedef struct lex_order {
  uint64_t n, cur;
  int started, done;
} lex_order;

static int lex_next(lex_order *o, uint64_t *out) {
  if (o->done || !o->n) return 0;
  if (!o->started) {
    o->started = 1;
    o->cur = 0;
    *out = 0;
    if (o->n == 1) o->done = 1;
    return 1;
  }
  uint64_t c = o->cur;
  if (c == 0) c = 1;
  else if (c * 10 < o->n) c *= 10;
  else {
    while (c % 10 == 9 || c + 1 >= o->n) {
      c /= 10;
      if (!c) {
        o->done = 1;
        return 0;
      }
    }
    c++;
  }
  o->cur = *out = c;
  return 1;
}

/* Decimal spellings compared as text ("10" < "9"), for the order of ids that hold a number
** followed by '-' (which sorts before every digit). */
static int dec_cmp(uint64_t a, uint64_t b) {
  char x[24], y[24];
  snprintf(x, sizeof x, "%llu", (unsigned long long)a);
  snprintf(y, sizeof y, "%llu", (unsigned long long)b);
  return strcmp(x, y);
}

/* One stream's states: a run of the device's state rows (they come grouped by stream). */
typedef struct stream_run {
  uint32_t stream;
  size_t first, count;
} stream_run;

static int cmp_stream_run(const void *a, const void *b) {
  return dec_cmp(((const stream_run *)a)->stream, ((const stream_run *)b)->stream);
}

static int write_interval(writer *w, const tl_idle_device *d, size_t i, tl_err *e) {
  const tl_idle_interval *x = &d->intervals.v[i];
  char *id = w->owner;
  *put_u(put_device(id, "device-interval", w->db_idx, d->device_id), i) = 0;
  batch *b = w->b_interval;
  b_int(b, 1, w->db_idx);
  b_int(b, 2, d->device_id);
  b_int(b, 3, (int64_t)i);
  b_int(b, 4, x->start), b_int(b, 5, x->end - x->start);
  b_int(b, 6, x->kind);
  b_int(b, 7, x->nsrc);
  b_copy(b, 8, 0, id);
  int rc = batch_row(w->db, b, e);
  for (uint32_t k = 0; rc == TL_OK && k < x->nsrc; k++)
    rc = link(w, OWNER_INTERVAL, id, (int)k, &d->interval_src.v[x->first_src + k], REL_NONE, LEVEL_NONE, 0, 0,
              0, -1, -1, e);
  return rc;
}

static int write_state(writer *w, const tl_idle_device *d, size_t i, uint64_t order, tl_err *e) {
  const tl_idle_state_row *x = &d->states.v[i];
  char *id = w->owner;
  *put_u(put_s(put_u(put_s(put_device(id, "stream-state", w->db_idx, d->device_id), "s"), x->stream), "-"),
         order) = 0;
  batch *b = w->b_state;
  b_int(b, 1, w->db_idx);
  b_int(b, 2, d->device_id);
  b_int(b, 3, x->stream);
  b_int(b, 4, (int64_t)order);
  b_int(b, 5, x->start), b_int(b, 6, x->end - x->start);
  b_int(b, 7, x->state);
  b_int(b, 8, x->nsrc);
  b_int(b, 9, d->stream_count);
  b_int(b, 10, d->scan_complete);
  b_copy(b, 11, 0, id);
  int rc = batch_row(w->db, b, e);
  for (uint32_t k = 0; rc == TL_OK && k < x->nsrc; k++) {
    const tl_idle_src *s = &d->state_src.v[x->first_src + k];
    rc = link(w, OWNER_STATE, id, (int)k, s, REL_NONE, LEVEL_NONE, 0, 0, 0, x->stream, s->state, e);
  }
  return rc;
}

static int write_explanation(writer *w, const tl_idle_events *ev, const tl_idle_device *d, size_t i, tl_err *e) {
  const tl_trace *t = ev->t;
  const tl_idle_expl *x = &d->expl.v[i];
  char *id = w->owner, *gap_id = w->gap;
  *put_u(put_device(id, "idle-explanation", w->db_idx, d->device_id), i) = 0;
  *put_u(put_device(gap_id, "device-interval", w->db_idx, d->device_id), x->gap) = 0;
  batch *b = w->b_expl;
  b_int(b, 1, w->db_idx);
  b_int(b, 2, d->device_id);
  b_int(b, 3, (int64_t)i);
  b_int(b, 4, x->gap);
  b_int(b, 5, x->start), b_int(b, 6, x->end - x->start);
  b_int(b, 7, x->category);
  b_int(b, 8, x->level);
  b_int(b, 9, x->relation);
  b_int(b, 10, x->alignment);
  b_int(b, 11, x->nsrc);
  b_copy(b, 12, 0, id);
  b_copy(b, 13, 1, gap_id);
  int rc = batch_row(w->db, b, e);
  int ordinal = 0;
  for (uint32_t k = 0; rc == TL_OK && k < x->nsrc; k++) {
    const tl_idle_src *s = &d->expl_src.v[x->first_src + k];
    if (x->category <= TL_IC_RUNTIME) {
      int64_t os = t->ev.start_ns[s->event] > x->start ? t->ev.start_ns[s->event] : x->start;
      int64_t oe = tl_events_end(&t->ev, s->event) < x->end ? tl_events_end(&t->ev, s->event) : x->end;
      rc = link(w, OWNER_EXPLANATION, id, ordinal++, s, REL_COVERAGE, LEVEL_DIRECT, 1, os, oe, -1, -1, e);
    } else if (x->category == TL_IC_HOST_SYNC || x->category == TL_IC_QUEUED) {
      int rel = x->category == TL_IC_HOST_SYNC ? REL_OVERLAP : REL_CONNECTION;
      tl_idle_src host = *s;
      host.event = NONE; /* the host call */
      rc = link(w, OWNER_EXPLANATION, id, ordinal++, &host, rel, LEVEL_CORRELATED, 1, x->start, x->end, -1, -1,
                e);
      if (rc == TL_OK && x->category == TL_IC_QUEUED && s->event != NONE) {
        tl_idle_src task = *s;
        task.call = NONE, task.rule = ev->rule[s->event];
        rc = link(w, OWNER_EXPLANATION, id, ordinal++, &task, rel, LEVEL_CORRELATED, 1, x->start, x->end, -1,
                  -1, e);
      }
    } else {
      rc = link(w, OWNER_EXPLANATION, id, ordinal++, s, REL_NONE, LEVEL_NONE, 0, 0, 0, -1, -1, e);
    }
  }
  return rc;
}

/* A device's intervals, stream states and explanations, each in the order of its id. */
static int write_device(writer *w, const tl_idle_events *ev, const tl_idle_device *d, tl_err *e) {
  int rc = TL_OK;
  uint64_t i;
  for (lex_order o = {d->intervals.n, 0, 0, 0}; rc == TL_OK && lex_next(&o, &i);)
    rc = write_interval(w, d, (size_t)i, e);
  TL_VEC(stream_run) runs = {0};
  for (size_t k = 0; rc == TL_OK && k < d->states.n; k++) {
    if (runs.n && runs.v[runs.n - 1].stream == d->states.v[k].stream) {
      runs.v[runs.n - 1].count++;
      continue;
    }
    stream_run r = {d->states.v[k].stream, k, 1};
    if (TL_VEC_PUSH(&runs, r)) rc = tl_nomem(e);
  }
  if (rc == TL_OK && runs.n) qsort(runs.v, runs.n, sizeof *runs.v, cmp_stream_run);
  for (size_t r = 0; rc == TL_OK && r < runs.n; r++)
    for (lex_order o = {runs.v[r].count, 0, 0, 0}; rc == TL_OK && lex_next(&o, &i);)
      rc = write_state(w, d, runs.v[r].first + (size_t)i, i, e);
  TL_VEC_FREE(&runs);
  for (lex_order o = {d->expl.n, 0, 0, 0}; rc == TL_OK && lex_next(&o, &i);)
    rc = write_explanation(w, ev, d, (size_t)i, e);
  return rc;
}

static int write_host(writer *w, const tl_idle_events *ev, const tl_idle_devices *devs, tl_err *e) {
  const tl_idle_host *h = w->host;
  char id[96], gap_id[96], api_id[64], trace[32];
  int rc = TL_OK;
  for (size_t k = 0; rc == TL_OK && k < h->apis.n; k++) {
    const tl_idle_api *a = &h->apis.v[k];
    const api_source *x = &w->apis_src->v[k];
    snprintf(api_id, sizeof api_id, "host-api-event-d%d-%u", w->db_idx, a->call);
    char key[32], call_id[48];
    snprintf(key, sizeof key, "%lld", (long long)x->key);
    snprintf(call_id, sizeof call_id, "runtime-call-%u", a->call);
    sqlite3_stmt *st = w->api;
    bind_str(st, 1, api_id);
    bind_str(st, 2, w->run_id);
    sqlite3_bind_int(st, 3, w->db_idx);
    bind_str(st, 4, w->source_kind);
    bind_str(st, 5, x->table);
    bind_str(st, 6, key);
    bind_str(st, 7, call_id);
    bind_str(st, 8, x->name);
    bind_str(st, 9, a->family == 1 ? "host_sync" : "enqueue");
    bind_str(st, 10, a->pattern);
    sqlite3_bind_int64(st, 11, a->start), sqlite3_bind_int64(st, 12, a->end);
    if (a->connection >= 0) sqlite3_bind_int64(st, 13, a->connection);
    else sqlite3_bind_null(st, 13);
    if (a->has_device) sqlite3_bind_int64(st, 14, a->device_id);
    else sqlite3_bind_null(st, 14);
    rc = tl_pub_step(w->db, st, "traceloom_host_api_event", e);
    for (uint32_t j = 0; rc == TL_OK && j < (a->ntargets ? a->ntargets : 1); j++) {
      st = w->tlink;
      bind_str(st, 1, w->run_id);
      bind_str(st, 2, api_id);
      if (a->ntargets) {
        uint32_t task = h->targets.v[a->first_target + j];
        snprintf(trace, sizeof trace, "event-%u", task);
        bind_str(st, 3, trace);
        sqlite3_bind_int64(st, 4, tl_events_device_id(&ev->t->ev, task));
      } else {
        sqlite3_bind_null(st, 3);
        if (a->has_device) sqlite3_bind_int64(st, 4, a->device_id);
        else sqlite3_bind_null(st, 4);
      }
      if (a->connection >= 0) sqlite3_bind_int64(st, 5, a->connection);
      else sqlite3_bind_null(st, 5);
      bind_str(st, 6, tl_link_status_name(a->link_status));
      rc = tl_pub_step(w->db, st, "traceloom_task_api_link", e);
    }
  }
  for (size_t k = 0; rc == TL_OK && k < h->candidates.n; k++) {
    const tl_idle_candidate *c = &h->candidates.v[k];
    snprintf(id, sizeof id, "idle-candidate-d%d-%zu", w->db_idx, k);
    snprintf(gap_id, sizeof gap_id, "device-interval-d%d-dev%u-%u", w->db_idx, c->device_id, c->gap_index);
    int sync = c->category == TL_IC_HOST_SYNC;
    sqlite3_stmt *st = w->cand;
    bind_str(st, 1, id);
    bind_str(st, 2, w->run_id);
    bind_str(st, 3, gap_id);
    sqlite3_bind_int(st, 4, w->db_idx);
    sqlite3_bind_int64(st, 5, c->device_id);
    bind_str(st, 6, tl_idle_category_name(c->category));
    bind_str(st, 7, sync ? "temporal_overlap" : "exact_connection_id");
    bind_str(st, 8, CANDIDATE_STATUS[c->status]);
    bind_str(st, 9, sync ? "host synchronization overlap exists only inside the uncertainty window"
                         : "enqueue-to-task delay is not positive outside clock uncertainty");
    bind_str(st, 10, tl_alignment_name(c->alignment));
    sqlite3_bind_int64(st, 11, c->src.overlap_start), sqlite3_bind_int64(st, 12, c->src.overlap_end);
    rc = tl_pub_step(w->db, st, "traceloom_idle_candidate", e);
    tl_idle_src host = c->src;
    host.event = NONE;
    if (rc == TL_OK)
      rc = link(w, OWNER_CANDIDATE, id, 0, &host, sync ? REL_OVERLAP : REL_CONNECTION,
                LEVEL_CORRELATED, 1, c->src.overlap_start, c->src.overlap_end, -1, -1, e);
  }
  (void)devs;
  return rc;
}

static int write_clock(writer *w, const tl_clock_models *models, const tl_clock_markers *markers, tl_err *e) {
  char id[64];
  int rc = TL_OK;
  for (size_t k = 0; rc == TL_OK && k < models->n; k++) {
    const tl_clock_model *m = &models->v[k];
    int fitted = m->alignment == TL_AL_CALIBRATED || m->alignment == TL_AL_SYNTHETIC;
    snprintf(id, sizeof id, "clock-model-d%d-dev%u", w->db_idx, m->device_id);
    sqlite3_stmt *st = w->model;
    bind_str(st, 1, id);
    bind_str(st, 2, w->run_id);
    sqlite3_bind_int(st, 3, w->db_idx);
    sqlite3_bind_int64(st, 4, m->device_id);
    if (fitted) {
      char scale[48];
      snprintf(scale, sizeof scale, "%.12Lf", m->scale); /* fixed: 12 fractional digits */
      bind_str(st, 5, scale);
      sqlite3_bind_double(st, 6, (double)m->offset);
      sqlite3_bind_double(st, 7, (double)m->ref_host);
      sqlite3_bind_double(st, 8, (double)m->ref_device);
      sqlite3_bind_double(st, 9, (double)((m->scale - 1.0L) * 1000000.0L));
    } else {
      for (int c = 5; c <= 9; c++) sqlite3_bind_null(st, c);
    }
    sqlite3_bind_int64(st, 10, (int64_t)m->input);
    sqlite3_bind_int64(st, 11, (int64_t)m->inliers);
    sqlite3_bind_int64(st, 12, (int64_t)m->rejected);
    sqlite3_bind_int64(st, 13, (int64_t)m->fit);
    sqlite3_bind_int64(st, 14, (int64_t)m->validation);
    if (fitted) {
      sqlite3_bind_double(st, 15, (double)m->residual_p50);
      sqlite3_bind_double(st, 16, (double)m->residual_p95);
      sqlite3_bind_double(st, 17, (double)m->residual_max);
      sqlite3_bind_double(st, 18, (double)m->bracket_p95);
      sqlite3_bind_int64(st, 19, (int64_t)m->epsilon_ns);
    } else {
      for (int c = 15; c <= 19; c++) sqlite3_bind_null(st, c);
    }
    bind_str(st, 20, tl_alignment_name(m->alignment));
    sqlite3_bind_int(st, 21, m->has_profiler_mapping);
    bind_str(st, 22, m->reason);
    rc = tl_pub_step(w->db, st, "traceloom_clock_model", e);
    int ordinal = 0;
    for (size_t i = 0; rc == TL_OK && i < markers->n; i++) {
      const tl_marker_row *r = &markers->v[i];
      if (r->device_id != (int64_t)m->device_id) continue;
      batch *b = w->b_link; /* the marker row; its source kind is the view's */
      b_int(b, 1, OWNER_CLOCK_MODEL);
      b_copy(b, 2, 0, id);
      b_int(b, 3, w->db_idx);
      b_int(b, 4, ordinal++);
      b_null(b, 5);
      b_text(b, 6, "clock_markers");
      b_text(b, 7, r->marker_id); /* the markers live as long as the stage */
      b_int(b, 8, REL_NONE);
      b_int(b, 9, LEVEL_NONE);
      for (int c = 10; c <= 14; c++) b_null(b, c);
      rc = batch_row(w->db, b, e);
    }
  }
  for (size_t i = 0; rc == TL_OK && i < markers->n; i++) {
    const tl_marker_row *r = &markers->v[i];
    const tl_clock_model *m = tl_clock_model_for(models, (uint32_t)r->device_id);
    sqlite3_stmt *st = w->marker;
    bind_str(st, 1, w->run_id);
    bind_str(st, 2, r->marker_id);
    int64_t v[] = {r->host_before, r->host_after, r->device_ts, r->host_pid, r->host_tid, r->device_id,
                   r->stream_id, r->connection_id};
    for (int c = 0; c < 8; c++) {
      if ((c == 6 || c == 7) && v[c] < 0) sqlite3_bind_null(st, 3 + c);
      else sqlite3_bind_int64(st, 3 + c, v[c]);
    }
    bind_str(st, 11, r->call_site);
    sqlite3_bind_int64(st, 12, r->return_status);
    bind_str(st, 13, !m ? "other_input" : r->return_status != 0 ? "rejected" : "accepted");
    rc = tl_pub_step(w->db, st, "traceloom_clock_marker", e);
  }
  return rc;
}

/* Explained idle inside each anchor's prelude window [frontier, start) of its device. */
typedef struct attribution {
  uint32_t anchor;
  uint8_t category, level;
  uint64_t slices;
  int64_t ns;
} attribution;

typedef TL_VEC(attribution) attributions;

static int cmp_attribution(const void *a, const void *b) {
  const attribution *x = a, *y = b;
  if (x->anchor != y->anchor) return x->anchor < y->anchor ? -1 : 1;
  if (x->category != y->category) return (int)x->category - (int)y->category;
  return (int)x->level - (int)y->level;
}

/* Writes the run's anchor attributions and appends them, summed per (anchor, category, level),
** to sums (the nodes' attributions follow from them: write_nodes). */
static int write_anchors(writer *w, const tl_idle_input *in, const tl_idle_devices *devs, attributions *sums,
                         tl_err *e) {
  const tl_anchors *an = in->anchors;
  attributions acc = {0};
  int rc = TL_OK;
  for (size_t g = 0; rc == TL_OK && g < an->groups.n; g++) {
    const tl_anchor_group *gr = &an->groups.v[g];
    if (gr->db_idx != w->db_idx || !gr->count) continue;
    const tl_idle_device *d = NULL;
    for (size_t k = 0; k < devs->n; k++)
      if (devs->v[k].device_id == gr->device_id) d = &devs->v[k];
    if (!d) continue;
    int64_t frontier = tl_anchor_start(an, gr->first);
    size_t x = 0;
    for (size_t k = gr->first; rc == TL_OK && k < gr->first + gr->count; k++) {
      int64_t s = tl_anchor_start(an, k);
      if (s > frontier) {
        while (x < d->expl.n && d->expl.v[x].end <= frontier) x++;
        for (size_t j = x; rc == TL_OK && j < d->expl.n && d->expl.v[j].start < s; j++) {
          const tl_idle_expl *q = &d->expl.v[j];
          int64_t a = q->start > frontier ? q->start : frontier, b = q->end < s ? q->end : s;
          if (b <= a) continue;
          attribution r = {(uint32_t)k, q->category, q->level, 1, b - a};
          if (TL_VEC_PUSH(&acc, r)) rc = tl_nomem(e);
        }
      }
      if (tl_anchor_end(an, k) > frontier) frontier = tl_anchor_end(an, k);
    }
  }
  if (rc == TL_OK && acc.n) qsort(acc.v, acc.n, sizeof *acc.v, cmp_attribution);
  for (size_t i = 0; rc == TL_OK && i < acc.n;) {
    attribution sum = acc.v[i];
    size_t j = i + 1;
    for (; j < acc.n && cmp_attribution(&acc.v[j], &sum) == 0; j++) sum.slices++, sum.ns += acc.v[j].ns;
    const tl_anchor_group *gr = NULL;
    for (size_t g = 0; g < an->groups.n && !gr; g++)
      if (sum.anchor >= an->groups.v[g].first && sum.anchor < an->groups.v[g].first + an->groups.v[g].count)
        gr = &an->groups.v[g];
    sqlite3_stmt *st = w->anchor;
    sqlite3_bind_int64(st, 1, sum.anchor); /* anchor_n: the n of anchor-<n> */
    sqlite3_bind_int(st, 2, w->db_idx);
    sqlite3_bind_int64(st, 3, gr->device_id);
    sqlite3_bind_int64(st, 4, (int64_t)(sum.anchor - gr->first + 1));
    sqlite3_bind_int(st, 5, sum.category);
    sqlite3_bind_int(st, 6, sum.level);
    sqlite3_bind_int64(st, 7, (int64_t)sum.slices);
    sqlite3_bind_int64(st, 8, sum.ns);
    rc = tl_pub_step(w->db, st, "traceloom_anchor_idle_explanation_core", e);
    if (rc == TL_OK && TL_VEC_PUSH(sums, sum)) rc = tl_nomem(e);
    i = j;
  }
  TL_VEC_FREE(&acc);
  return rc;
}

/* ------------------------------------------------------------------ a run */

static int run_status(const tl_idle_devices *devs) {
  if (!devs->n) return 3; /* empty_input */
  int all_none = 1;
  for (size_t k = 0; k < devs->n; k++) {
    if (devs->v[k].status == 2) return 2;
    all_none &= devs->v[k].status == 1;
  }
  return all_none ? 1 : 0;
}

/* The run's canonical metadata (sorted keys, no spaces): its SHA-256 is the run id. */
static int metadata_json(tl_buf *b, int status, const tl_idle_options *o, int db_idx, const tl_idle_devices *devs,
                         const char *sem_sha, const char *host_sha, const char *kind, const char *path) {
  tl_buf_puts(b, "{\"analysis_status\":");
  tl_buf_json_string(b, STATUS_NAME[status], strlen(STATUS_NAME[status]));
  tl_buf_puts(b, ",\"attribution_rule_version\":\"" TL_IDLE_ATTRIBUTION "\",\"collection_status\":");
  tl_buf_json_string(b, tl_collection_name(o->collection), strlen(tl_collection_name(o->collection)));
  tl_buf_printf(b, ",\"contract_version\":\"" TL_IDLE_CONTRACT "\",\"db_idx\":%d,\"devices\":[", db_idx);
  for (size_t k = 0; k < devs->n; k++) {
    const tl_idle_device *d = &devs->v[k];
    tl_buf_printf(b, "%s{\"device_id\":%u,", k ? "," : "", d->device_id);
    if (d->status == 1) tl_buf_puts(b, "\"span_end_ns\":null,\"span_start_ns\":null,");
    else tl_buf_printf(b, "\"span_end_ns\":%lld,\"span_start_ns\":%lld,", (long long)d->span_end, (long long)d->span_start);
    tl_buf_puts(b, "\"status\":");
    tl_buf_json_string(b, STATUS_NAME[d->status], strlen(STATUS_NAME[d->status]));
    tl_buf_puts(b, "}");
  }
  tl_buf_puts(b, "],\"host_api_rules_sha256\":");
  tl_buf_json_string(b, host_sha, strlen(host_sha));
  tl_buf_puts(b, ",\"host_api_rules_version\":");
  tl_buf_json_string(b, tl_idle_host_api_version(), strlen(tl_idle_host_api_version()));
  tl_buf_puts(b, ",\"semantic_rules_sha256\":");
  tl_buf_json_string(b, sem_sha, strlen(sem_sha));
  tl_buf_puts(b, ",\"semantic_rules_version\":");
  tl_buf_json_string(b, tl_idle_semantic_version(), strlen(tl_idle_semantic_version()));
  tl_buf_puts(b, ",\"source_kind\":");
  tl_buf_json_string(b, kind, strlen(kind));
  tl_buf_puts(b, ",\"source_path\":");
  tl_buf_json_string(b, path, strlen(path));
  tl_buf_puts(b, "}");
  return b->oom ? -1 : 0;
}

static int run_db(sqlite3 *db, const tl_idle_input *in, int db_idx, const tl_clock_markers *markers,
                  attributions *sums, tl_timer *tm, tl_err *e) {
  const tl_trace *t = in->trace;
  const tl_idle_options *o = in->options;
  const tl_input *input = &t->profile->inputs.v[db_idx];
  const char *kind = tl_family_source_kind(input->family);
  sources src;
  memset(&src, 0, sizeof src);
  tl_idle_devices devs = {0};
  tl_idle_host host;
  memset(&host, 0, sizeof host);
  api_sources apis_src = {0};
  tl_clock_models models = {0};
  TL_VEC(uint32_t) devices = {0};
  tl_buf meta = {0};
  writer w;
  memset(&w, 0, sizeof w);
  size_t n = in->nreal;
  tl_idle_events ev = {t, n, (uint16_t)db_idx, calloc(n ? n : 1, 1), malloc((n ? n : 1) * sizeof(uint32_t)),
                       calloc(n ? n : 1, 1), NULL};
  int rc = ev.role && ev.rule && ev.is_op ? TL_OK : tl_nomem(e);
  if (rc == TL_OK) rc = read_events(db, n, db_idx, &src, e);
  ev.conn = src.conn;
  tl_timer_mark(tm, "read back");
  /* E1, once per label */
  uint8_t *label_role = NULL;
  uint32_t *label_rule = NULL;
  if (rc == TL_OK) {
    size_t nl = t->labels.n ? t->labels.n : 1;
    label_role = malloc(nl), label_rule = malloc(nl * sizeof *label_rule);
    if (!label_role || !label_rule) rc = tl_nomem(e);
    else memset(label_role, 0xff, nl);
  }
  for (size_t i = 0; rc == TL_OK && i < n; i++) {
    if (tl_events_db_idx(&t->ev, i) != db_idx) continue;
    ev.is_op[i] = (uint8_t)tl_label_is_comm_op(t, tl_event_label(t, i));
    uint32_t l = t->ev.label[i];
    if (label_role[l] == 0xff) tl_idle_classify(t, i, &label_role[l], &label_rule[l]);
    ev.role[i] = ev.is_op[i] ? TL_IR_COMM : label_role[l];
    ev.rule[i] = ev.is_op[i] ? NONE : label_rule[l];
  }
  free(label_role), free(label_rule);
  if (rc == TL_OK) rc = tl_idle_timelines(&ev, &devs, e);
  /* clock models for the devices, host evidence, then E4 */
  for (size_t k = 0; rc == TL_OK && k < devs.n; k++)
    if (TL_VEC_PUSH(&devices, devs.v[k].device_id)) rc = tl_nomem(e);
  if (rc == TL_OK && o->clock_markers)
    rc = tl_clock_fit(markers, devices.v, devices.n, o->markers_synthetic, o->epsilon_multiplier, &models, e);
  if (rc == TL_OK) rc = read_apis(db, db_idx, &host, &apis_src, e);
  if (rc == TL_OK) rc = tl_idle_host_build(&ev, &host, &models, &devs, o, e);
  int status = run_status(&devs);
  int allow = o->collection == TL_COLLECTION_COMPLETE && status != 2;
  for (size_t k = 0; rc == TL_OK && k < devs.n; k++) {
    const tl_clock_model *m = tl_clock_model_for(&models, devs.v[k].device_id);
    uint8_t unattributed = !o->clock_markers ? TL_AL_NOT_REQUIRED : m ? m->alignment : TL_AL_UNCALIBRATED;
    rc = tl_idle_explain(&ev, &devs.v[k], &host.evidence, allow, unattributed, e);
  }
  tl_timer_mark(tm, "E1 to E4 and host evidence");
  /* the run */
  char sem_sha[65], host_sha[65], run_id[65];
  tl_idle_semantic_sha256(sem_sha);
  tl_idle_host_api_sha256(host_sha);
  if (rc == TL_OK && metadata_json(&meta, status, o, db_idx, &devs, sem_sha, host_sha, kind, input->path))
    rc = tl_nomem(e);
  if (rc == TL_OK) {
    tl_sha256 s;
    uint8_t d[32];
    tl_sha256_init(&s);
    tl_sha256_update(&s, meta.p, meta.n);
    tl_sha256_final(&s, d);
    tl_sha256_hex(d, run_id);
    w.db = db, w.run_id = run_id, w.source_kind = kind, w.db_idx = db_idx, w.apis_src = &apis_src, w.host = &host;
    rc = writer_open(&w, e);
  }
  if (rc == TL_OK) {
    sqlite3_stmt *st = w.meta;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t k = 0; k < devs.n; k++)
      if (devs.v[k].status != 1) {
        if (devs.v[k].span_start < lo) lo = devs.v[k].span_start;
        if (devs.v[k].span_end > hi) hi = devs.v[k].span_end;
      }
    bind_str(st, 1, run_id);
    bind_str(st, 2, STATUS_NAME[status]);
    if (lo <= hi) sqlite3_bind_int64(st, 3, lo), sqlite3_bind_int64(st, 4, hi);
    else sqlite3_bind_null(st, 3), sqlite3_bind_null(st, 4);
    bind_str(st, 5, tl_idle_semantic_version());
    bind_str(st, 6, sem_sha);
    bind_str(st, 7, tl_idle_host_api_version());
    bind_str(st, 8, host_sha);
    bind_str(st, 9, tl_collection_name(o->collection));
    sqlite3_bind_int(st, 10, db_idx);
    bind_str(st, 11, kind);
    bind_str(st, 12, input->path);
    sqlite3_bind_text(st, 13, meta.p, (int)meta.n, SQLITE_STATIC);
    rc = tl_pub_step(db, st, "traceloom_run_metadata", e);
  }
  for (size_t k = 0; rc == TL_OK && k < devs.n; k++)
    rc = write_device(&w, &ev, &devs.v[k], e);
  if (rc == TL_OK) rc = write_host(&w, &ev, &devs, e);
  if (rc == TL_OK && o->clock_markers) rc = write_clock(&w, &models, markers, e);
  if (rc == TL_OK) rc = write_anchors(&w, in, &devs, sums, e);
  if (rc == TL_OK) rc = writer_flush(&w, e);
  writer_close(&w);
  tl_timer_mark(tm, "rows");
  tl_buf_free(&meta);
  for (size_t k = 0; k < apis_src.n; k++) free(apis_src.v[k].table), free(apis_src.v[k].name);
  TL_VEC_FREE(&apis_src), TL_VEC_FREE(&models), TL_VEC_FREE(&devices);
  tl_idle_host_free(&host);
  tl_idle_devices_free(&devs);
  sources_free(&src);
  free(ev.role), free(ev.rule), free(ev.is_op);
  return rc;
}

static const char *level_name(uint32_t c) { return (const char *[]){"direct", "correlated", "none"}[c]; }
static const char *category_name(uint32_t c) { return tl_idle_category_name((int)c); }
static const char *state_name(uint32_t c) { return tl_idle_state_name((int)c); }
static const char *relation_name(uint32_t c) {
  return (const char *[]){"device_event_coverage", "complete_absence_observation", "exact_connection_id",
                          "temporal_overlap", "none"}[c];
}
static uint32_t level_count(void) { return 3; }
static uint32_t relation_count(void) { return REL_NONE + 1; }
static uint32_t category_count(void) { return TL_IC_UNATTRIBUTED + 1; }
static uint32_t state_count(void) { return TL_IS_AMBIGUOUS + 1; }

/* traceloom_idle_name: per kind, the names of codes 0 .. count() - 1. */
static const struct {
  const char *kind;
  uint32_t (*count)(void);
  const char *(*name)(uint32_t code);
} CODE_NAMES[] = {
    {"category", category_count, category_name},
    {"level", level_count, level_name},
    {"relation", relation_count, relation_name},
    {"state", state_count, state_name},
    {"rule", tl_idle_rule_count, tl_idle_rule_id},
};

/* ------------------------------------------------------------------ nodes */

/* (category, level) pairs, as category * 3 + level: the order of their rows. */
#define NCOMBO ((TL_IC_UNATTRIBUTED + 1) * 3)

/* The running sums of one (category, level)'s attributions (anchor order) before anchor a:
** those of the last entry with anchor < a. The search gallops from *hint, the previous answer:
** a node's occurrences come in anchor order, so answers are near each other. */
static void sums_before(const attributions *c, uint32_t a, size_t *hint, uint64_t *slices, int64_t *ns) {
  const attribution *v = c->v;
  size_t n = c->n, h = *hint < n ? *hint : n, lo, hi, step = 1;
  if (h < n && v[h].anchor < a) { /* the answer (entries before a) is above h */
    lo = hi = h + 1;
    while (hi < n && v[hi].anchor < a) {
      lo = hi + 1;
      hi = lo + step < n ? lo + step : n;
      step *= 2;
    }
  } else { /* at or below h */
    lo = hi = h;
    while (lo > 0 && v[lo - 1].anchor >= a) {
      hi = lo - 1;
      lo = hi > step ? hi - step : 0;
      step *= 2;
    }
  }
  while (lo < hi) { /* the answer is in [lo, hi] */
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid].anchor < a) lo = mid + 1;
    else hi = mid;
  }
  *hint = lo;
  *slices = lo ? v[lo - 1].slices : 0;
  *ns = lo ? v[lo - 1].ns : 0;
}

typedef struct node_acc {
  int64_t node_n, db_idx, device_id;
  uint64_t slices[NCOMBO];
  int64_t ns[NCOMBO];
} node_acc;

static int flush_node(sqlite3_stmt *st, sqlite3 *db, node_acc *a, tl_err *e) {
  int rc = TL_OK;
  for (int c = 0; rc == TL_OK && c < NCOMBO; c++) {
    if (!a->slices[c]) continue;
    sqlite3_bind_int64(st, 1, a->node_n);
    sqlite3_bind_int(st, 2, c / 3);
    sqlite3_bind_int(st, 3, c % 3);
    sqlite3_bind_int64(st, 4, a->db_idx);
    sqlite3_bind_int64(st, 5, a->device_id);
    sqlite3_bind_int64(st, 6, (int64_t)a->slices[c]);
    sqlite3_bind_int64(st, 7, a->ns[c]);
    rc = tl_pub_step(db, st, "traceloom_node_idle_explanation_core", e);
  }
  memset(a->slices, 0, sizeof a->slices), memset(a->ns, 0, sizeof a->ns);
  return rc;
}

/* traceloom_node_idle_explanation_core: per tree node, category and level, the explained idle
** of the anchors it covers, summed over its occurrences (each covers the anchors
** [anchor_first_n, anchor_first_n + token_len) of its tree, as traceloom_viz_node_anchor
** lists them). A node repeats its descendants' anchors (a root holds every one), so a view
** joining occurrences to anchors reads anchors x depth rows (3.5 s CPU on the 1M profile, most
** of idle-evidence-audit's root totals); here an occurrence's sum is the difference of two
** running sums per (category, level), found by binary search. Occurrences are node-major
** (traceloom_position_occurrence_core): a node whose occurrences are not contiguous fails. */
static int write_nodes(sqlite3 *db, attributions *sums, tl_err *e) {
  if (!sums->n) return TL_OK;
  attributions cum[NCOMBO];
  memset(cum, 0, sizeof cum);
  int rc = TL_OK;
  for (size_t i = 0; rc == TL_OK && i < sums->n; i++) {
    const attribution *x = &sums->v[i];
    if (TL_VEC_PUSH(&cum[x->category * 3 + x->level], *x)) rc = tl_nomem(e);
  }
  for (int c = 0; rc == TL_OK && c < NCOMBO; c++) {
    if (cum[c].n) qsort(cum[c].v, cum[c].n, sizeof *cum[c].v, cmp_attribution);
    for (size_t k = 1; k < cum[c].n; k++)
      cum[c].v[k].slices += cum[c].v[k - 1].slices, cum[c].v[k].ns += cum[c].v[k - 1].ns;
  }
  sqlite3_stmt *occ = NULL, *st = NULL;
  if (rc == TL_OK)
    rc = tl_pub_prepare(db,
                        "SELECT o.node_n, o.anchor_first_n, n.token_len, n.db_idx, n.device_id "
                        "FROM main.traceloom_position_occurrence_core o "
                        "JOIN main.traceloom_node_core n ON n.node_n = o.node_n ORDER BY o.occurrence_n",
                        &occ, e);
  if (rc == TL_OK)
    rc = tl_pub_prepare(db, "INSERT INTO traceloom_node_idle_explanation_core VALUES(?1,?2,?3,?4,?5,?6,?7)", &st,
                        e);
  node_acc acc;
  memset(&acc, 0, sizeof acc);
  size_t hint[NCOMBO] = {0};
  acc.node_n = -1;
  int r = SQLITE_DONE;
  while (rc == TL_OK && (r = sqlite3_step(occ)) == SQLITE_ROW) {
    int64_t node = sqlite3_column_int64(occ, 0), first = sqlite3_column_int64(occ, 1);
    int64_t end = first + sqlite3_column_int64(occ, 2);
    if (node != acc.node_n) {
      if (node < acc.node_n) {
        rc = tl_fail(e, "idle evidence: the occurrences of node %lld are not node-major", (long long)node);
        break;
      }
      if (acc.node_n >= 0) rc = flush_node(st, db, &acc, e);
      acc.node_n = node, acc.db_idx = sqlite3_column_int64(occ, 3), acc.device_id = sqlite3_column_int64(occ, 4);
    }
    if (first < 0 || end <= first || end > UINT32_MAX) continue;
    for (int c = 0; c < NCOMBO; c++) {
      if (!cum[c].n) continue;
      uint64_t s0, s1;
      int64_t n0, n1;
      sums_before(&cum[c], (uint32_t)first, &hint[c], &s0, &n0);
      sums_before(&cum[c], (uint32_t)end, &hint[c], &s1, &n1);
      acc.slices[c] += s1 - s0, acc.ns[c] += n1 - n0;
    }
  }
  if (rc == TL_OK && r != SQLITE_DONE) rc = tl_fail(e, "reading the tree's occurrences: %s", sqlite3_errmsg(db));
  if (rc == TL_OK && acc.node_n >= 0) rc = flush_node(st, db, &acc, e);
  sqlite3_finalize(occ), sqlite3_finalize(st);
  for (int c = 0; c < NCOMBO; c++) TL_VEC_FREE(&cum[c]);
  return rc;
}

int tl_idle_publish(sqlite3 *db, const tl_idle_input *in, tl_err *e) {
  const tl_idle_options *o = in->options;
  if (!o || !o->enabled) return TL_OK;
  tl_marker_row *rows = NULL;
  size_t nrows = 0;
  int rc = o->clock_markers ? tl_marker_rows_read(o->clock_markers, &rows, &nrows, e) : TL_OK;
  tl_clock_markers markers = {rows, nrows};
  const tl_profile *p = in->trace->profile;
  tl_timer tm;
  tl_timer_start(&tm, "idle");
  /* Intervals, states and explanations are keyed by their text ids (WITHOUT ROWID, written in
  ** key order): a join on the id is a key lookup. Evidence links are looked up by owner only
  ** for explanations (host evidence: 15k of 2.5M links at a million tasks): a partial index,
  ** made before the rows, so that each explanation link enters it as it is written and no
  ** pass reads the other links again (built afterwards, it scanned all 146 MB of them). */
  if (rc == TL_OK)
    rc = tl_pub_exec(db, "CREATE INDEX traceloom_evidence_link_core_explanation "
                         "ON traceloom_evidence_link_core(owner_id) WHERE owner_kind = 'explanation'", e);
  attributions sums = {0};
  for (size_t d = 0; rc == TL_OK && p && d < p->inputs.n; d++) {
    if (tl_family_provider(p->inputs.v[d].family) == TL_PROVIDER_ASCEND)
      rc = run_db(db, in, (int)d, &markers, &sums, &tm, e);
  }
  tl_marker_rows_free(rows, nrows);
  if (rc == TL_OK) rc = write_nodes(db, &sums, e);
  TL_VEC_FREE(&sums);
  tl_timer_mark(&tm, "nodes");
  /* The names of the codes the cores store (the views read them). */
  sqlite3_stmt *st = NULL;
  if (rc == TL_OK) rc = tl_pub_prepare(db, "INSERT INTO traceloom_idle_name VALUES(?1, ?2, ?3)", &st, e);
  for (size_t k = 0; rc == TL_OK && k < sizeof CODE_NAMES / sizeof CODE_NAMES[0]; k++)
    for (uint32_t c = 0; rc == TL_OK && c < CODE_NAMES[k].count(); c++) {
      bind_str(st, 1, CODE_NAMES[k].kind);
      sqlite3_bind_int64(st, 2, c);
      bind_str(st, 3, CODE_NAMES[k].name(c));
      rc = tl_pub_step(db, st, "traceloom_idle_name", e);
    }
  sqlite3_finalize(st);
  /* The idle evidence cites device events by their text id (traceloom_evidence_link and
  ** traceloom_task_api_link .trace_event_id), and the idle-evidence-audit report looks each
  ** citation up with a correlated EXISTS, where SQLite builds no automatic index: without an
  ** event index every one of the millions of links scans the event core. The audit also joins
  ** each anchor's explained idle (741k rows at a million anchors) to traceloom_anchor by its
  ** text id (1.65 -> 0.63 s CPU for that step with the anchor index). So an analysis with idle
  ** evidence indexes both generated text ids (ext/analyze tells tl_publish_views, before the
  ** views; the anchor's index is there in every analysis). */
  tl_timer_mark(&tm, "names");
  return rc;
}
