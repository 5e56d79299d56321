/*
** publish_context.c: writes the scheduler-context tables (sql/schema/50_context.sql) on
** the publication connection, inside the caller's savepoint (see publish.h).
**
** Rows come from the loaded files (tl_context_load) and the host side of the link
** (tl_context_link), with prepared statements. The two derived tables are then filled in
** SQL from the published relations, the same way the views read them, so the launch
** candidates and the per-device-work step count are consistent with the views by
** construction:
**   traceloom_context_replay_launch_candidate  direct candidates on a launch's MODEL_EXECUTE
**   traceloom_context_device_assignment        distinct steps per device work
** That needs the views (sql/views) and the graph tables, so this runs after both.
*/
#include "context/context.h"
#include "publish/publish.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const capture_names[] = {"closed", "dropped_records", "unclosed"};
static const char *const record_names[] = {"session", "step", "execution", "summary"};
static const char *const basis_names[] = {"same_thread_host_scope", "task_queue_connection"};

static void bind_pool(sqlite3_stmt *st, int col, const tl_context *c, uint32_t id) {
  tl_bind_str(st, col, c->pool, id);
}

static int publish_files(sqlite3 *db, const tl_context *c, tl_err *e) {
  sqlite3_stmt *src = NULL, *rec = NULL;
  int rc = tl_pub_prepare(db,
                          "INSERT INTO traceloom_context_source(source_id, source_path, sha256, "
                          "size_bytes, capture_state) VALUES (?1, ?2, ?3, ?4, ?5)",
                          &src, e);
  if (rc == TL_OK)
    rc = tl_pub_prepare(db,
                        "INSERT INTO traceloom_context_record(source_id, line_no, record_type, "
                        "run_id, producer_id, raw_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                        &rec, e);
  for (size_t i = 0; rc == TL_OK && i < c->sources.n; i++) {
    const tl_ctx_source *s = &c->sources.v[i];
    sqlite3_bind_int64(src, 1, (int64_t)i + 1);
    sqlite3_bind_text(src, 2, s->path, -1, SQLITE_STATIC);
    sqlite3_bind_text(src, 3, s->sha256, -1, SQLITE_STATIC);
    sqlite3_bind_int64(src, 4, s->size);
    sqlite3_bind_text(src, 5, capture_names[s->capture], -1, SQLITE_STATIC);
    rc = tl_pub_step(db, src, "traceloom_context_source", e);
  }
  for (size_t i = 0; rc == TL_OK && i < c->records.n; i++) {
    const tl_ctx_record *r = &c->records.v[i];
    sqlite3_bind_int64(rec, 1, (int64_t)r->source + 1);
    sqlite3_bind_int64(rec, 2, r->line_no);
    sqlite3_bind_text(rec, 3, record_names[r->type], -1, SQLITE_STATIC);
    bind_pool(rec, 4, c, r->run_id);
    bind_pool(rec, 5, c, r->producer_id);
    sqlite3_bind_text(rec, 6, c->sources.v[r->source].text + r->off, (int)r->len, SQLITE_STATIC);
    rc = tl_pub_step(db, rec, "traceloom_context_record", e);
  }
  sqlite3_finalize(src);
  sqlite3_finalize(rec);
  return rc;
}

static int publish_steps(sqlite3 *db, const tl_context *c, tl_err *e) {
  sqlite3_stmt *st = NULL, *rq = NULL, *ex = NULL;
  int rc = tl_pub_prepare(db,
                          "INSERT INTO traceloom_scheduler_step(run_id, step_id, scheduler_id, "
                          "ordinal, total_scheduled_tokens, scheduled_requests, cache_json, "
                          "free_blocks_after_schedule, pool_blocks_after_schedule, source_id, "
                          "line_no) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                          &st, e);
  if (rc == TL_OK)
    rc = tl_pub_prepare(db,
                        "INSERT INTO traceloom_scheduler_request(run_id, step_id, request_id, "
                        "scheduled_tokens, request_json, source_id, line_no) VALUES (?1, ?2, ?3, "
                        "?4, ?5, ?6, ?7)",
                        &rq, e);
  if (rc == TL_OK)
    rc = tl_pub_prepare(db,
                        "INSERT INTO traceloom_context_execution(run_id, execution_id, step_id, "
                        "marker, worker_rank, phase, execution_status, marker_state, source_id, "
                        "line_no) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                        &ex, e);
  for (size_t i = 0; rc == TL_OK && i < c->steps.n; i++) {
    const tl_ctx_step *s = &c->steps.v[i];
    bind_pool(st, 1, c, s->run_id);
    bind_pool(st, 2, c, s->step_id);
    bind_pool(st, 3, c, s->scheduler_id);
    sqlite3_bind_int64(st, 4, s->ordinal);
    sqlite3_bind_int64(st, 5, s->total_tokens);
    sqlite3_bind_int64(st, 6, s->nrequests);
    bind_pool(st, 7, c, s->cache_json);
    if (s->has & TL_CTX_HAS_FREE) sqlite3_bind_int64(st, 8, s->free_blocks); else sqlite3_bind_null(st, 8);
    if (s->has & TL_CTX_HAS_POOL) sqlite3_bind_int64(st, 9, s->pool_blocks); else sqlite3_bind_null(st, 9);
    sqlite3_bind_int64(st, 10, (int64_t)s->source + 1);
    sqlite3_bind_int64(st, 11, s->line_no);
    rc = tl_pub_step(db, st, "traceloom_scheduler_step", e);
  }
  for (size_t i = 0; rc == TL_OK && i < c->requests.n; i++) {
    const tl_ctx_request *r = &c->requests.v[i];
    bind_pool(rq, 1, c, r->run_id);
    bind_pool(rq, 2, c, r->step_id);
    bind_pool(rq, 3, c, r->request_id);
    sqlite3_bind_int64(rq, 4, r->scheduled_tokens);
    bind_pool(rq, 5, c, r->request_json);
    sqlite3_bind_int64(rq, 6, (int64_t)r->source + 1);
    sqlite3_bind_int64(rq, 7, r->line_no);
    rc = tl_pub_step(db, rq, "traceloom_scheduler_request", e);
  }
  for (size_t i = 0; rc == TL_OK && i < c->execs.n; i++) {
    const tl_ctx_exec *x = &c->execs.v[i];
    bind_pool(ex, 1, c, x->run_id);
    bind_pool(ex, 2, c, x->execution_id);
    bind_pool(ex, 3, c, x->step_id);
    bind_pool(ex, 4, c, x->marker);
    if (x->has & TL_CTX_HAS_RANK) sqlite3_bind_int64(ex, 5, x->worker_rank); else sqlite3_bind_null(ex, 5);
    sqlite3_bind_text(ex, 6, x->phase == TL_PHASE_SAMPLE_TOKENS ? "sample_tokens" : "execute_model",
                      -1, SQLITE_STATIC);
    sqlite3_bind_text(ex, 7, x->raised ? "raised" : "returned", -1, SQLITE_STATIC);
    sqlite3_bind_text(ex, 8, x->marker_emitted ? "emitted" : "unavailable", -1, SQLITE_STATIC);
    sqlite3_bind_int64(ex, 9, (int64_t)x->source + 1);
    sqlite3_bind_int64(ex, 10, x->line_no);
    rc = tl_pub_step(db, ex, "traceloom_context_execution", e);
  }
  sqlite3_finalize(st);
  sqlite3_finalize(rq);
  sqlite3_finalize(ex);
  return rc;
}

static const char *file_path(const tl_context *c, int source_id) {
  return source_id >= 0 && (size_t)source_id < c->file_paths.n ? c->file_paths.v[source_id] : "";
}

static void bind_key(sqlite3_stmt *st, int col, int64_t v) {
  char buf[24];
  int n = snprintf(buf, sizeof buf, "%lld", (long long)v);
  sqlite3_bind_text(st, col, buf, n, SQLITE_TRANSIENT);
}

static void bind_call(sqlite3_stmt *st, int col, uint32_t call) {
  char buf[40];
  int n = snprintf(buf, sizeof buf, "runtime-call-%u", call);
  sqlite3_bind_text(st, col, buf, n, SQLITE_TRANSIENT);
}

static int publish_host(sqlite3 *db, const tl_context *c, tl_err *e) {
  sqlite3_stmt *mk = NULL, *q = NULL, *pr = NULL, *qr = NULL, *cand = NULL, *call = NULL;
  int rc = tl_pub_prepare(db,
                          "INSERT INTO traceloom_context_marker(execution_id, source_id, "
                          "source_path, source_table, source_key, marker_name, start_ns, end_ns, "
                          "global_tid) VALUES (?1, ?2, ?3, 'PYTORCH_API', ?4, ?5, ?6, ?7, ?8)",
                          &mk, e);
  if (rc == TL_OK)
    rc = tl_pub_prepare(db,
                        "INSERT INTO traceloom_context_task_queue(source_id, source_path, "
                        "source_key, queue_kind, start_ns, end_ns, global_tid, connection_id) "
                        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                        &q, e);
  if (rc == TL_OK)
    rc = tl_pub_prepare(db,
                        "INSERT INTO traceloom_context_queue_pair(source_id, source_path, "
                        "enqueue_key, dequeue_key, connection_id, enqueue_start_ns, "
                        "enqueue_end_ns, enqueue_tid, dequeue_start_ns, dequeue_end_ns, "
                        "dequeue_tid) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                        &pr, e);
  if (rc == TL_OK)
    rc = tl_pub_prepare(db,
                        "INSERT INTO traceloom_context_queue_runtime(execution_id, "
                        "runtime_call_id, source_id, enqueue_key, dequeue_key, connection_id) "
                        "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                        &qr, e);
  if (rc == TL_OK)
    rc = tl_pub_prepare(db,
                        "INSERT INTO traceloom_context_runtime_candidate(execution_id, "
                        "runtime_call_id, association_basis) VALUES (?1, ?2, ?3)",
                        &cand, e);
  if (rc == TL_OK)
    rc = tl_pub_prepare(db,
                        "INSERT INTO traceloom_context_runtime_call(execution_id, "
                        "runtime_call_id, association_basis, support_state) VALUES (?1, ?2, ?3, "
                        "?4)",
                        &call, e);
  for (size_t i = 0; rc == TL_OK && i < c->markers.n; i++) {
    const tl_ctx_marker *m = &c->markers.v[i];
    const tl_ctx_exec *x = &c->execs.v[m->exec];
    bind_pool(mk, 1, c, x->execution_id);
    sqlite3_bind_int(mk, 2, m->source_id);
    sqlite3_bind_text(mk, 3, file_path(c, m->source_id), -1, SQLITE_STATIC);
    bind_key(mk, 4, m->rowid);
    bind_pool(mk, 5, c, x->marker);
    sqlite3_bind_int64(mk, 6, m->start_ns);
    sqlite3_bind_int64(mk, 7, m->end_ns);
    bind_key(mk, 8, m->global_tid);
    rc = tl_pub_step(db, mk, "traceloom_context_marker", e);
  }
  for (size_t i = 0; rc == TL_OK && i < c->queue.n; i++) {
    const tl_ctx_queue *r = &c->queue.v[i];
    sqlite3_bind_int(q, 1, r->source_id);
    sqlite3_bind_text(q, 2, file_path(c, r->source_id), -1, SQLITE_STATIC);
    bind_key(q, 3, r->rowid);
    sqlite3_bind_text(q, 4, r->dequeue ? "dequeue" : "enqueue", -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 5, r->start_ns);
    sqlite3_bind_int64(q, 6, r->end_ns);
    sqlite3_bind_int64(q, 7, r->global_tid);
    sqlite3_bind_int64(q, 8, r->connection_id);
    rc = tl_pub_step(db, q, "traceloom_context_task_queue", e);
  }
  for (size_t i = 0; rc == TL_OK && i < c->pairs.n; i++) {
    const tl_ctx_queue *en = &c->queue.v[c->pairs.v[i].enq], *de = &c->queue.v[c->pairs.v[i].deq];
    sqlite3_bind_int(pr, 1, en->source_id);
    sqlite3_bind_text(pr, 2, file_path(c, en->source_id), -1, SQLITE_STATIC);
    bind_key(pr, 3, en->rowid);
    bind_key(pr, 4, de->rowid);
    sqlite3_bind_int64(pr, 5, en->connection_id);
    sqlite3_bind_int64(pr, 6, en->start_ns);
    sqlite3_bind_int64(pr, 7, en->end_ns);
    sqlite3_bind_int64(pr, 8, en->global_tid);
    sqlite3_bind_int64(pr, 9, de->start_ns);
    sqlite3_bind_int64(pr, 10, de->end_ns);
    sqlite3_bind_int64(pr, 11, de->global_tid);
    rc = tl_pub_step(db, pr, "traceloom_context_queue_pair", e);
  }
  /* Claims are sorted by (execution, call, basis, pair): one candidate per basis, one
  ** audit row per queue pair, one runtime_call row per (execution, call) with the smallest
  ** basis. A call is supported when no other execution claims it. */
  tl_i64map claimer = {0};
  for (size_t i = 0; rc == TL_OK && i < c->claims.n; i++) {
    const tl_ctx_claim *cl = &c->claims.v[i];
    int64_t *v = tl_i64map_get(&claimer, cl->call);
    if (!v)
      rc = tl_i64map_put(&claimer, cl->call, cl->exec) ? tl_nomem(e) : TL_OK;
    else if (*v != (int64_t)cl->exec)
      *v = -1;
  }
  for (size_t i = 0; rc == TL_OK && i < c->claims.n; i++) {
    const tl_ctx_claim *cl = &c->claims.v[i];
    const tl_ctx_claim *prev = i ? &c->claims.v[i - 1] : NULL;
    const tl_ctx_exec *x = &c->execs.v[cl->exec];
    int new_call = !prev || prev->exec != cl->exec || prev->call != cl->call;
    int new_basis = new_call || prev->basis != cl->basis;
    if (cl->basis == TL_BASIS_TASK_QUEUE) {
      const tl_ctx_queue *en = &c->queue.v[c->pairs.v[cl->pair].enq];
      const tl_ctx_queue *de = &c->queue.v[c->pairs.v[cl->pair].deq];
      bind_pool(qr, 1, c, x->execution_id);
      bind_call(qr, 2, cl->call);
      sqlite3_bind_int(qr, 3, en->source_id);
      bind_key(qr, 4, en->rowid);
      bind_key(qr, 5, de->rowid);
      sqlite3_bind_int64(qr, 6, en->connection_id);
      rc = tl_pub_step(db, qr, "traceloom_context_queue_runtime", e);
    }
    if (rc == TL_OK && new_basis) {
      bind_pool(cand, 1, c, x->execution_id);
      bind_call(cand, 2, cl->call);
      sqlite3_bind_text(cand, 3, basis_names[cl->basis], -1, SQLITE_STATIC);
      rc = tl_pub_step(db, cand, "traceloom_context_runtime_candidate", e);
    }
    if (rc == TL_OK && new_call) {
      int64_t *v = tl_i64map_get(&claimer, cl->call);
      bind_pool(call, 1, c, x->execution_id);
      bind_call(call, 2, cl->call);
      sqlite3_bind_text(call, 3, basis_names[cl->basis], -1, SQLITE_STATIC);
      sqlite3_bind_text(call, 4, v && *v >= 0 ? "supported_host_scope" : "ambiguous_execution_scope",
                        -1, SQLITE_STATIC);
      rc = tl_pub_step(db, call, "traceloom_context_runtime_call", e);
    }
  }
  tl_i64map_free(&claimer);
  sqlite3_finalize(mk), sqlite3_finalize(q), sqlite3_finalize(pr);
  sqlite3_finalize(qr), sqlite3_finalize(cand), sqlite3_finalize(call);
  return rc;
}

/* Launch candidates, then the distinct steps per device work (over direct and member
** candidates), from the published relations through the views. A launch candidate is work
** whose event is the launch's execute control (its MODEL_EXECUTE task), found through the
** event itself (traceloom_device_work is a compound view, which a join could only search
** through an automatic index). */
static int publish_derived(sqlite3 *db, tl_err *e) {
  static const char *const sql =
      "INSERT INTO traceloom_context_replay_launch_candidate "
      "WITH d AS MATERIALIZED (SELECT * FROM traceloom_v_context_direct_device_candidate) "
      "SELECT d.run_id, d.step_id, d.execution_id, d.worker_rank, d.phase, d.runtime_call_id, "
      "d.device_work_id, d.device_id, d.event_id, d.start_ns, d.end_ns, d.dur_us, d.symbol, "
      "d.provider_support_state, d.association_basis, gl.launch_id, gl.db_idx, "
      "gl.replay_unit_id, gl.anchor_id, gl.graph_launch_occurrence_id "
      "FROM d CROSS JOIN traceloom_event w ON w.event_id = d.event_id "
      " AND w.device_id = d.device_id "
      "CROSS JOIN traceloom_graph_launch_control lc ON lc.event_id = w.event_id "
      " AND lc.db_idx = w.db_idx AND lc.device_id = w.device_id AND lc.control_kind = 'execute' "
      "CROSS JOIN traceloom_graph_launch gl ON gl.launch_id = lc.launch_id AND gl.db_idx = lc.db_idx "
      " AND gl.device_id = lc.device_id "
      "ORDER BY gl.graph_launch_occurrence_id, d.run_id, d.step_id, d.execution_id, "
      "d.runtime_call_id;"
      "INSERT INTO traceloom_context_device_assignment(device_work_id, step_count) "
      "SELECT device_work_id, count(*) FROM (SELECT DISTINCT device_work_id, run_id, step_id "
      "FROM traceloom_v_context_device_candidate) GROUP BY device_work_id;";
  return tl_pub_exec(db, sql, e);
}

int tl_context_publish(sqlite3 *db, const tl_context *c, tl_err *e) {
  if (!c) return TL_OK;
  int rc = publish_files(db, c, e);
  if (rc == TL_OK) rc = publish_steps(db, c, e);
  if (rc == TL_OK && c->linked) rc = publish_host(db, c, e);
  if (rc == TL_OK && c->linked) rc = publish_derived(db, e);
  return rc;
}
