/*
** test_context.c: scheduler context import (context-observer.md sections 2, 3, 5 and 7)
** through the C API: every validation rule of tl_context_load on small JSONL files
** written here, and the identity chain of tl_context_link on the generated fixtures of
** tests/fixtures/make_context_gen.py (expected steps come from the generator's
** ground_truth.json, not from this code).
*/
#include "tl_check.h"
#include "context/context.h"
#include "util/json.h"
#include "recover/recover.h"
#include "replay/replay.h"
#include "relate/relate.h"
#include "trace/trace.h"
#include "embedded.h"
#include "publish/publish.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------ JSONL texts */

#define HDR(p) "\"schema\":\"traceloom.scheduler.v1\",\"run_id\":\"r1\",\"producer_id\":\"" p "\""
#define REQ(id, n)                                                                              \
  "{\"request_id\":\"" id "\",\"scheduled_tokens\":" #n ",\"scheduled_token_start\":0,"          \
  "\"scheduled_token_start_basis\":\"scheduler_output_num_computed_tokens\",\"payload_kind\":"   \
  "\"new\",\"computed_tokens_after_schedule\":" #n ",\"prompt_tokens\":" #n "}"

static const char SCHED[] =
    "{\"type\":\"session\",\"metadata\":{\"runtime\":\"vllm\",\"role\":\"scheduler\"}," HDR("s1") "}\n"
    "{\"type\":\"step\",\"step_id\":\"a1\",\"ordinal\":0,\"observed_monotonic_ns\":5,"
    "\"total_scheduled_tokens\":3,\"requests\":[" REQ("q1", 3) "],\"cache\":{\"observation_phase\":"
    "\"after_schedule\",\"free_blocks\":9,\"pool_blocks\":10},\"resumed_request_ids\":null,"
    "\"finished_request_ids\":[],\"preempted_request_ids\":null," HDR("s1") "}\n"
    "{\"type\":\"step\",\"step_id\":\"a2\",\"ordinal\":1,\"observed_monotonic_ns\":6,"
    "\"total_scheduled_tokens\":0,\"requests\":[],\"cache\":{\"observation_phase\":"
    "\"after_schedule\",\"free_blocks\":null,\"pool_blocks\":10},\"resumed_request_ids\":null,"
    "\"finished_request_ids\":[\"a\",\"b\"],\"preempted_request_ids\":null," HDR("s1") "}\n"
    "{\"type\":\"summary\",\"written_records\":2,\"dropped_records\":0," HDR("s1") "}\n";

static const char WORKER[] =
    "{\"type\":\"session\",\"metadata\":{\"runtime\":\"vllm\",\"role\":\"worker\"}," HDR("w1") "}\n"
    "{\"type\":\"execution\",\"execution_id\":\"x1\",\"step_id\":\"a1\",\"marker\":"
    "\"traceloom.execution.x1\",\"phase\":\"execute_model\",\"worker_rank\":0,\"process_id\":7,"
    "\"status\":\"returned\",\"marker_state\":\"emitted\"," HDR("w1") "}\n"
    "{\"type\":\"execution\",\"execution_id\":\"x2\",\"step_id\":\"zz\",\"marker\":"
    "\"traceloom.execution.x2\",\"worker_rank\":null,\"process_id\":7,"
    "\"status\":\"raised\",\"marker_state\":\"unavailable\"," HDR("w1") "}\n"
    "{\"type\":\"summary\",\"written_records\":2,\"dropped_records\":0," HDR("w1") "}\n";

static char tmpdir[64];
static int nfiles;

static void setup(void) {
  strcpy(tmpdir, "/tmp/tl_context_XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(tmpdir));
  nfiles = 0;
}

static void teardown(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  ck_assert_int_eq(system(cmd), 0);
}

/* Writes n bytes to a new file in tmpdir; returns its malloc'd path. */
static char *put(const char *text, size_t n) {
  char *path = tl_mprintf("%s/f%d.jsonl", tmpdir, nfiles++);
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(text, 1, n, f), n);
  fclose(f);
  return path;
}

/* text with the first occurrence of from replaced by to (malloc'd). */
static char *subst(const char *text, const char *from, const char *to) {
  const char *at = strstr(text, from);
  ck_assert_msg(at != NULL, "fixture text lacks %s", from);
  return tl_mprintf("%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
}

/* Loads the given texts as files; fails unless the error holds every needle. */
static void rejects(const char *const *texts, size_t n, const char *n1, const char *n2,
                    const char *n3) {
  char *paths[4];
  for (size_t i = 0; i < n; i++) paths[i] = put(texts[i], strlen(texts[i]));
  tl_context *c = NULL;
  tl_err e = {0};
  int rc = tl_context_load((const char *const *)paths, n, &c, &e);
  ck_assert_msg(rc != TL_OK, "accepted, expected: %s", n1);
  ck_assert_ptr_null(c);
  const char *needles[] = {n1, n2, n3};
  for (int k = 0; k < 3; k++)
    if (needles[k]) ck_assert_msg(strstr(e.msg, needles[k]), "'%s' lacks '%s'", e.msg, needles[k]);
  if (n) ck_assert_msg(strstr(e.msg, paths[n - 1]) || strstr(e.msg, tmpdir), "%s names no file", e.msg);
  tl_err_clear(&e);
  for (size_t i = 0; i < n; i++) free(paths[i]);
}

static void rejects_sched(const char *from, const char *to, const char *n1, const char *n2,
                          const char *n3) {
  char *t = subst(SCHED, from, to);
  const char *texts[] = {t};
  rejects(texts, 1, n1, n2, n3);
  free(t);
}

static void rejects_worker(const char *from, const char *to, const char *n1, const char *n2,
                           const char *n3) {
  char *t = subst(WORKER, from, to);
  const char *texts[] = {SCHED, t};
  rejects(texts, 2, n1, n2, n3);
  free(t);
}

/* ------------------------------------------------------------------ loading */

START_TEST(valid_files_load) {
  char *p[2] = {put(SCHED, strlen(SCHED)), put(WORKER, strlen(WORKER))};
  tl_context *c = NULL;
  tl_err e = {0};
  ck_assert_msg(tl_context_load((const char *const *)p, 2, &c, &e) == TL_OK, "%s", e.msg);
  ck_assert_uint_eq(c->sources.n, 2);
  ck_assert_uint_eq(c->records.n, 8);
  ck_assert_uint_eq(c->steps.n, 2);
  ck_assert_uint_eq(c->requests.n, 1);
  ck_assert_uint_eq(c->execs.n, 2);
  ck_assert_int_eq(c->sources.v[0].capture, TL_CAPTURE_CLOSED);
  ck_assert_int_eq(c->sources.v[0].size, (int64_t)strlen(SCHED));
  /* execution x1 refers to step a1 (index 0); x2 to an absent step: missing_step */
  ck_assert_uint_eq(c->execs.v[0].step, 0);
  ck_assert_uint_eq(c->execs.v[1].step, TL_CTX_NONE);
  ck_assert_int_eq(c->execs.v[1].phase, TL_PHASE_EXECUTE_MODEL); /* absent -> execute_model */
  ck_assert_int_eq(c->execs.v[1].raised, 1);
  ck_assert_int_eq(c->execs.v[1].has & TL_CTX_HAS_RANK, 0);
  /* the empty decision: no requests, 0 tokens, free_blocks null */
  ck_assert_int_eq(c->steps.v[1].nrequests, 0);
  ck_assert_int_eq(c->steps.v[1].has, TL_CTX_HAS_POOL);
  ck_assert_str_eq(tl_ctx_str(c, c->steps.v[1].scheduler_id), "s1");
  ck_assert_str_eq(tl_ctx_str(c, c->steps.v[0].cache_json),
                   "{\"observation_phase\":\"after_schedule\",\"free_blocks\":9,\"pool_blocks\":10}");
  /* the record keeps the line verbatim, without its newline */
  const tl_ctx_record *r = &c->records.v[3];
  ck_assert_int_eq(r->type, TL_REC_SUMMARY);
  ck_assert_uint_eq(r->line_no, 4);
  ck_assert_int_eq(strncmp(c->sources.v[0].text + r->off, "{\"type\":\"summary\"", 17), 0);
  ck_assert_int_eq(c->sources.v[0].text[r->off + r->len], '\n');
  char *canon = realpath(p[1], NULL);
  ck_assert_str_eq(tl_context_source_path(c, 1), canon);
  free(canon);
  tl_context_free(c);
  free(p[0]), free(p[1]);
}
END_TEST

START_TEST(capture_states) {
  /* no summary: unclosed (still importable); dropped_records > 0: dropped_records */
  char *unclosed = strdup(SCHED);
  *strstr(unclosed, "{\"type\":\"summary\"") = 0;
  char *dropped = subst(SCHED, "\"dropped_records\":0", "\"dropped_records\":3");
  char *p[2] = {put(unclosed, strlen(unclosed)), put(dropped, strlen(dropped))};
  free(dropped);
  tl_context *c = NULL;
  tl_err e = {0};
  const char *one[] = {p[0]};
  ck_assert_msg(tl_context_load(one, 1, &c, &e) == TL_OK, "%s", e.msg);
  ck_assert_int_eq(c->sources.v[0].capture, TL_CAPTURE_UNCLOSED);
  ck_assert_uint_eq(c->steps.n, 2);
  tl_context_free(c);
  const char *two[] = {p[1]};
  ck_assert_msg(tl_context_load(two, 1, &c, &e) == TL_OK, "%s", e.msg);
  ck_assert_int_eq(c->sources.v[0].capture, TL_CAPTURE_DROPPED);
  tl_context_free(c);
  free(unclosed), free(p[0]), free(p[1]);
}
END_TEST

START_TEST(rejects_file_level) {
  /* nonexistent, directory, empty, torn last line, line over 1 MiB, duplicate path */
  char *missing = tl_mprintf("%s/nope.jsonl", tmpdir);
  const char *m[] = {missing};
  tl_context *c = NULL;
  tl_err e = {0};
  ck_assert_int_ne(tl_context_load(m, 1, &c, &e), TL_OK);
  ck_assert_msg(strstr(e.msg, "cannot open context input") && strstr(e.msg, "nope.jsonl"), "%s", e.msg);
  tl_err_clear(&e);
  free(missing);
  const char *d[] = {tmpdir};
  ck_assert_int_ne(tl_context_load(d, 1, &c, &e), TL_OK);
  ck_assert_msg(strstr(e.msg, "context must be a regular JSONL file of at most 256 MiB"), "%s", e.msg);
  tl_err_clear(&e);
  const char *empty[] = {""};
  rejects(empty, 1, "empty or unreadable context file", NULL, NULL);
  char *torn = strdup(SCHED);
  torn[strlen(torn) - 1] = 0;
  const char *t[] = {torn};
  rejects(t, 1, "context record lacks terminating newline", "line 4", NULL);
  free(torn);
  size_t big = 1024 * 1024 + 1;
  char *huge = malloc(strlen(SCHED) + big + 2);
  strcpy(huge, SCHED);
  memset(huge + strlen(SCHED), ' ', big);
  strcpy(huge + strlen(SCHED) + big, "\n");
  const char *h[] = {huge};
  rejects(h, 1, "context record exceeds 1 MiB", "line 5", NULL);
  free(huge);
  char *p = put(SCHED, strlen(SCHED));
  char *link = tl_mprintf("%s/link.jsonl", tmpdir);
  ck_assert_int_eq(symlink(p, link), 0);
  const char *dup[] = {p, link};
  ck_assert_int_ne(tl_context_load(dup, 2, &c, &e), TL_OK);
  ck_assert_msg(strstr(e.msg, "duplicate context input"), "%s", e.msg);
  tl_err_clear(&e);
  free(p), free(link);
}
END_TEST

START_TEST(rejects_identity_and_structure) {
  const char *bad_json[] = {"{\"type\":\"session\",\n"};
  rejects(bad_json, 1, "invalid context JSON, schema version, or identity type", "line 1", NULL);
  const char *array[] = {"[1]\n"};
  rejects(array, 1, "invalid context JSON, schema version, or identity type", "line 1", NULL);
  rejects_sched("\"schema\":\"traceloom.scheduler.v1\"", "\"schema\":\"traceloom.scheduler.v2\"",
                "invalid context JSON, schema version, or identity type", "line 1", "field schema");
  rejects_sched("\"run_id\":\"r1\"", "\"run_id\":1", "invalid context JSON, schema version, or identity type",
                "line 1", "field run_id");
  rejects_sched("\"producer_id\":\"s1\"", "\"producer_id\":\"s 1\"", "invalid context identity", "line 1",
                "field producer_id");
  /* the first line is a step */
  rejects_sched("{\"type\":\"session\",\"metadata\":{\"runtime\":\"vllm\",\"role\":\"scheduler\"}," HDR("s1") "}\n",
                "", "context must begin with a session", "line 1", NULL);
  rejects_sched("\"metadata\":{\"runtime\":\"vllm\",\"role\":\"scheduler\"}", "\"metadata\":[]",
                "invalid session metadata", "line 1", "field metadata");
  /* line 2 declares another producer; a second session */
  rejects_sched("\"ordinal\":0,\"observed_monotonic_ns\":5,\"total_scheduled_tokens\":3,\"requests\":[" REQ("q1", 3)
                "],\"cache\":{\"observation_phase\":\"after_schedule\",\"free_blocks\":9,\"pool_blocks\":10},"
                "\"resumed_request_ids\":null,\"finished_request_ids\":[],\"preempted_request_ids\":null," HDR("s1"),
                "\"ordinal\":0,\"observed_monotonic_ns\":5,\"total_scheduled_tokens\":3,\"requests\":[" REQ("q1", 3)
                "],\"cache\":{\"observation_phase\":\"after_schedule\",\"free_blocks\":9,\"pool_blocks\":10},"
                "\"resumed_request_ids\":null,\"finished_request_ids\":[],\"preempted_request_ids\":null," HDR("s2"),
                "context producer identity changes within file", "line 2", "field producer_id");
  rejects_sched("{\"type\":\"step\",\"step_id\":\"a2\"", "{\"type\":\"session\",\"metadata\":{}," HDR("s1")
                "}\n{\"type\":\"step\",\"step_id\":\"a2\"",
                "context producer identity changes within file", "line 3", "field type");
  rejects_sched("{\"type\":\"step\",\"step_id\":\"a2\"", "{\"type\":\"steps\",\"step_id\":\"a2\"",
                "unknown context record type", "line 3", "field type");
  /* a record after the summary */
  char *after = tl_mprintf("%s%s", SCHED, strstr(SCHED, "{\"type\":\"step\",\"step_id\":\"a2\""));
  char *after2 = subst(after, "\"step_id\":\"a2\",\"ordinal\":1,\"observed_monotonic_ns\":6,\"total_scheduled_tokens\":0,\"requests\":[],\"cache\":{\"observation_phase\":\"after_schedule\",\"free_blocks\":null,\"pool_blocks\":10},\"resumed_request_ids\":null,\"finished_request_ids\":[\"a\",\"b\"],\"preempted_request_ids\":null,\"schema\":\"traceloom.scheduler.v1\",\"run_id\":\"r1\",\"producer_id\":\"s1\"}\n{\"type\":\"summary\"",
                       "\"step_id\":\"a2\",\"ordinal\":1,\"observed_monotonic_ns\":6,\"total_scheduled_tokens\":0,\"requests\":[],\"cache\":{\"observation_phase\":\"after_schedule\",\"free_blocks\":null,\"pool_blocks\":10},\"resumed_request_ids\":null,\"finished_request_ids\":[\"a\",\"b\"],\"preempted_request_ids\":null,\"schema\":\"traceloom.scheduler.v1\",\"run_id\":\"r1\",\"producer_id\":\"s1\"}\n{\"type\":\"summary\"");
  const char *aft[] = {after2};
  rejects(aft, 1, "context contains records after summary", "line 5", NULL);
  free(after), free(after2);
  rejects_sched("\"written_records\":2", "\"written_records\":3",
                "context summary counts do not match records", "line 4", "field written_records");
  rejects_sched("\"dropped_records\":0", "\"dropped_records\":-1",
                "context summary counts do not match records", "line 4", "field dropped_records");
  /* duplicate identities across files: the same (run, producer) session twice */
  const char *two[] = {SCHED, SCHED};
  rejects(two, 2, "duplicate or invalid context record identity", "line 1", "field producer_id");
}
END_TEST

START_TEST(rejects_step_fields) {
  rejects_sched("\"free_blocks\":9", "\"free_blocks\":-1", "invalid cache counter", "line 2",
                "field cache.free_blocks");
  rejects_sched("\"pool_blocks\":10", "\"pool_blocks\":1.5", "invalid cache counter", "line 2",
                "field cache.pool_blocks");
  rejects_sched("\"observation_phase\":\"after_schedule\"", "\"observation_phase\":\"before_schedule\"",
                "invalid scheduler step or unsupported cache observation phase", "line 2",
                "field cache.observation_phase");
  rejects_sched("\"ordinal\":0", "\"ordinal\":-1",
                "invalid scheduler step or unsupported cache observation phase", "line 2", "field ordinal");
  rejects_sched("\"step_id\":\"a1\"", "\"step_id\":\"\"",
                "invalid scheduler step or unsupported cache observation phase", "line 2", "field step_id");
  rejects_sched("\"finished_request_ids\":[\"a\",\"b\"]", "\"finished_request_ids\":[\"b\",\"a\"]",
                "invalid scheduler step or unsupported cache observation phase", "line 3",
                "field finished_request_ids");
  rejects_sched("\"finished_request_ids\":[]", "\"finished_request_ids\":null",
                "invalid scheduler step or unsupported cache observation phase", "line 2",
                "field finished_request_ids");
  rejects_sched("\"total_scheduled_tokens\":3", "\"total_scheduled_tokens\":4",
                "scheduled token total does not equal request sum", "line 2",
                "field total_scheduled_tokens");
  rejects_sched("\"payload_kind\":\"new\"", "\"payload_kind\":\"old\"", "invalid scheduled request",
                "line 2", "field requests[0].payload_kind");
  rejects_sched("\"requests\":[" REQ("q1", 3) "]", "\"requests\":[1]", "invalid scheduled request",
                "line 2", "field requests[0]");
  rejects_sched("\"prompt_tokens\":3", "\"prompt_tokens\":true", "invalid scheduled request", "line 2",
                "field requests[0].prompt_tokens");
  /* a request twice in one step; an ordinal twice for one scheduler; a step id twice */
  rejects_sched("\"total_scheduled_tokens\":3,\"requests\":[" REQ("q1", 3) "]",
                "\"total_scheduled_tokens\":6,\"requests\":[" REQ("q1", 3) "," REQ("q1", 3) "]",
                "UNIQUE constraint failed: traceloom_scheduler_request", "line 2",
                "field requests[1].request_id");
  rejects_sched("\"ordinal\":1", "\"ordinal\":0", "UNIQUE constraint failed: traceloom_scheduler_step",
                "line 3", "field ordinal");
  rejects_sched("\"step_id\":\"a2\"", "\"step_id\":\"a1\"", "duplicate or invalid context record identity",
                "line 3", "field step_id");
  /* more than 4096 requests */
  tl_buf b = {0};
  tl_buf_puts(&b, "\"total_scheduled_tokens\":0,\"requests\":[");
  for (int i = 0; i < 4097; i++) tl_buf_printf(&b, "%s" REQ("r%d", 0), i ? "," : "", i);
  tl_buf_puts(&b, "]");
  rejects_sched("\"total_scheduled_tokens\":0,\"requests\":[]", b.p,
                "invalid scheduler step or unsupported cache observation phase", "line 3", "field requests");
  tl_buf_free(&b);
}
END_TEST

START_TEST(rejects_execution_fields) {
  rejects_worker("\"marker\":\"traceloom.execution.x1\"", "\"marker\":\"traceloom.execution.x9\"",
                 "invalid context execution or marker identity", "line 2", "field marker");
  rejects_worker("\"phase\":\"execute_model\"", "\"phase\":\"decode\"",
                 "invalid context execution or marker identity", "line 2", "field phase");
  rejects_worker("\"status\":\"returned\"", "\"status\":\"ok\"",
                 "invalid context execution or marker identity", "line 2", "field status");
  rejects_worker("\"marker_state\":\"emitted\"", "\"marker_state\":\"lost\"",
                 "invalid context execution or marker identity", "line 2", "field marker_state");
  rejects_worker("\"process_id\":7,\"status\":\"returned\"", "\"status\":\"returned\"",
                 "invalid context execution or marker identity", "line 2", "field process_id");
  rejects_worker("\"worker_rank\":0", "\"worker_rank\":\"0\"",
                 "invalid context execution or marker identity", "line 2", "field worker_rank");
  /* the same execution id in two worker files */
  char *w2 = subst(WORKER, HDR("w1"), HDR("w2"));
  for (char *p; (p = strstr(w2, "\"producer_id\":\"w1\"")) != NULL;) p[16] = '2';
  const char *texts[] = {SCHED, WORKER, w2};
  rejects(texts, 3, "duplicate or invalid context record identity", "line 2", "field execution_id");
  free(w2);
}
END_TEST

/* ------------------------------------------------------------------ linking */

typedef struct linked {
  tl_profile p;
  tl_trace t;
  tl_relations rel;
  tl_replay r;
  tl_context *c;
  tl_json *truth;
} linked;

static void link_fixture(const char *dir, const char *ctxdir, const char *const *files, size_t n,
                         linked *L) {
  memset(L, 0, sizeof *L);
  char *path = tl_fixture(dir);
  tl_err e = {0};
  ck_assert_msg(tl_profile_discover(path, NULL, &L->p, &e) == TL_OK, "%s", e.msg);
  ck_assert_msg(tl_trace_load(&L->p, &L->t, NULL, NULL, &e) == TL_OK, "%s", e.msg);
  ck_assert_msg(tl_relate(&L->t, &L->rel, &e) == TL_OK, "%s", e.msg);
  ck_assert_msg(tl_replay_build(&L->t, &L->p, &L->r, &e) == TL_OK, "%s", e.msg);
  ck_assert_msg(tl_replay_promote(&L->t, &L->r, &e) == TL_OK, "%s", e.msg);
  char *paths[4];
  for (size_t i = 0; i < n; i++) paths[i] = tl_mprintf("%s/%s/%s", path, ctxdir, files[i]);
  ck_assert_msg(tl_context_load((const char *const *)paths, n, &L->c, &e) == TL_OK, "%s", e.msg);
  ck_assert_msg(tl_context_link(L->c, &L->t, &L->rel, &L->p, &L->r, &e) == TL_OK, "%s", e.msg);
  char *gt = tl_mprintf("%s/ground_truth.json", path);
  FILE *f = fopen(gt, "rb");
  ck_assert_ptr_nonnull(f);
  static char buf[1 << 20];
  size_t len = fread(buf, 1, sizeof buf, f);
  fclose(f);
  ck_assert_msg(tl_json_parse(buf, len, &L->truth, &e) == TL_OK, "%s", e.msg);
  for (size_t i = 0; i < n; i++) free(paths[i]);
  free(gt), free(path);
}

static void unlink_fixture(linked *L) {
  tl_context_free(L->c);
  tl_json_free(L->truth);
  tl_replay_free(&L->r);
  TL_VEC_FREE(&L->rel);
  tl_trace_free(&L->t);
  tl_profile_free(&L->p);
}

/* The step ordinal of the launch whose host connection id is conn (ground truth). */
static int64_t truth_launch_step(const tl_json *truth, int64_t conn) {
  const tl_json *ranks = tl_json_get(truth, "ranks");
  const tl_json *list = tl_json_get(tl_json_get(tl_json_at(ranks, 0), "graph"), "launch_list");
  for (size_t i = 0; i < tl_json_len(list); i++) {
    int64_t c, s;
    tl_json_i64(tl_json_get(tl_json_at(list, i), "connection_id"), &c);
    if (c != conn) continue;
    tl_json_i64(tl_json_get(tl_json_at(list, i), "step"), &s);
    return s;
  }
  return -1;
}

static const char *const GRAPH_FILES[] = {"scheduler.jsonl", "worker0.jsonl"};

START_TEST(graph_every_launch_and_member_has_its_step) {
  linked L;
  link_fixture("context_gen/graph", "context", GRAPH_FILES, 2, &L);
  tl_context_stats s;
  tl_context_get_stats(L.c, &s);
  /* 2 prefill + 4 decode steps, one execution each; odd steps (1, 3, 5) use the queue */
  ck_assert_uint_eq(s.steps, 6);
  ck_assert_uint_eq(s.executions, 6);
  ck_assert_uint_eq(s.markers, 6);
  ck_assert_uint_eq(s.supported_markers, 6);
  ck_assert_uint_eq(s.queue_rows, 6);
  ck_assert_uint_eq(s.queue_pairs, 3);
  ck_assert_uint_eq(s.events_ambiguous, 0);
  /* head + 3 layers + tail = 5 launches per decode step, all exact */
  size_t launches = 0, members = 0;
  for (size_t k = 0; k < L.r.launches.n; k++) {
    const tl_graph_launch *l = &L.r.launches.v[k];
    int64_t step = truth_launch_step(L.truth, l->correlation_id);
    ck_assert_int_ge(step, 2);
    ck_assert_uint_ne(l->unit, TL_REPLAY_NONE);
    ck_assert_uint_eq(tl_context_event_partition(L.c, l->control[0]), (uint32_t)step);
    ck_assert_uint_eq(tl_context_event_partition(L.c, l->control[1]), (uint32_t)step);
    ck_assert_uint_eq(tl_context_event_partition(L.c, l->anchor_event), (uint32_t)step);
    for (uint32_t m = 0; m < l->nmembers; m++, members++)
      ck_assert_uint_eq(tl_context_event_partition(L.c, L.r.members.v[l->first_member + m].event),
                        (uint32_t)step);
    launches++;
  }
  ck_assert_uint_eq(launches, 20);
  int64_t body = 0;
  const tl_json *list =
      tl_json_get(tl_json_get(tl_json_at(tl_json_get(L.truth, "ranks"), 0), "graph"), "launch_list");
  for (size_t i = 0; i < tl_json_len(list); i++) {
    int64_t m;
    tl_json_i64(tl_json_get(tl_json_at(list, i), "member_tasks"), &m);
    body += m;
  }
  ck_assert_uint_eq(members, (size_t)body);
  /* eager steps 0 and 1: every task launched by a host call has its step; time order */
  uint32_t last = 0, seen = 0;
  for (size_t i = 0; i < L.r.n_real_events; i++) {
    if (tl_i64col_get(&L.t.ev.model_id, i) != TL_ABSENT || !tl_event_is_device_work(&L.t, i))
      continue;
    uint32_t part = tl_context_event_partition(L.c, i);
    ck_assert_msg(part <= 1, "eager event %zu has partition %u", i, part);
    ck_assert_uint_ge(part, last);
    last = part;
    seen |= 1u << part;
  }
  ck_assert_uint_eq(seen, 3);
  unlink_fixture(&L);
}
END_TEST

START_TEST(open_captures_give_no_partition) {
  /* the same evidence with an unclosed or dropped_records worker file: every step stays
  ** linked, but no partition is known (step-constrained recovery needs closed files) */
  const char *dirs[] = {"context_unclosed", "context_dropped"};
  for (int k = 0; k < 2; k++) {
    linked L;
    link_fixture("context_gen/graph", dirs[k], GRAPH_FILES, 2, &L);
    tl_context_stats s;
    tl_context_get_stats(L.c, &s);
    ck_assert_uint_eq(s.supported_markers, 6);
    ck_assert_uint_gt(s.events_single_step, 0);
    ck_assert_uint_eq(s.events_partitioned, 0);
    unlink_fixture(&L);
  }
}
END_TEST

START_TEST(typed_states) {
  linked L;
  link_fixture("context_gen/states", "context", GRAPH_FILES, 2, &L);
  tl_context_stats s;
  tl_context_get_stats(L.c, &s);
  /* 9 executions: steps 3 (twice), 4 and 5 keep one marker each; step 0 has two rows */
  ck_assert_uint_eq(s.executions, 9);
  ck_assert_uint_eq(s.supported_markers, 4);
  ck_assert_uint_eq(s.markers, 6);
  ck_assert_uint_eq(s.events_ambiguous, 1);
  /* the body member that also has a direct call in step 5 has no partition; the other
  ** members of its launch keep step 4; the step-3 launches (ambiguous scope) have none */
  for (size_t k = 0; k < L.r.launches.n; k++) {
    const tl_graph_launch *l = &L.r.launches.v[k];
    int64_t step = truth_launch_step(L.truth, l->correlation_id);
    for (uint32_t m = 0; m < l->nmembers; m++) {
      uint32_t ev = L.r.members.v[l->first_member + m].event;
      uint32_t want = step >= 4 ? (uint32_t)step : TL_RECOVER_NO_PARTITION;
      if (tl_i64col_get(&L.t.ev.global_task_id, ev) == 104) want = TL_RECOVER_NO_PARTITION;
      ck_assert_uint_eq(tl_context_event_partition(L.c, ev), want);
    }
    ck_assert_uint_eq(tl_context_event_partition(L.c, l->anchor_event),
                      step >= 4 ? (uint32_t)step : TL_RECOVER_NO_PARTITION);
  }
  unlink_fixture(&L);
}
END_TEST

START_TEST(anchor_partition_follows_events) {
  linked L;
  link_fixture("context_gen/graph", "context", GRAPH_FILES, 2, &L);
  /* the events of three anchors: two launch anchors and a real event */
  uint32_t ev[3] = {L.r.launches.v[0].anchor_event, 0, L.r.launches.v[19].anchor_event};
  uint32_t *part = NULL;
  tl_err e = {0};
  ck_assert_int_eq(tl_context_partition_events(L.c, ev, 3, &part, &e), TL_OK);
  ck_assert_uint_eq(part[0], 2);   /* first decode step */
  ck_assert_uint_eq(part[1], tl_context_event_partition(L.c, 0));
  ck_assert_uint_eq(part[2], 5);   /* last decode step */
  free(part);
  unlink_fixture(&L);
}
END_TEST

static int64_t count_rows(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st;
  ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
  ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
  int64_t n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return n;
}

START_TEST(publish_writes_the_host_chain) {
  /* The published schema and views on an empty analysis database, then the context rows. */
  linked L;
  link_fixture("context_gen/graph", "context", GRAPH_FILES, 2, &L);
  sqlite3 *db;
  ck_assert_int_eq(sqlite3_open(":memory:", &db), SQLITE_OK);
  const char *const dirs[] = {"sql/schema/", "sql/derive/"};
  for (int d = 0; d < 2; d++)
    for (const tl_embedded_file *f = tl_embedded_files; f->name; f++)
      if (strncmp(f->name, dirs[d], strlen(dirs[d])) == 0)
        ck_assert_msg(sqlite3_exec(db, f->text, NULL, NULL, NULL) == SQLITE_OK, "%s: %s", f->name,
                      sqlite3_errmsg(db));
  tl_err e = {0};
  /* the views as the analysis makes them (the text id columns first: publish.c) */
  tl_publication pub = {.db = db};
  ck_assert_msg(tl_publish_views(&pub, 1, 0, 0, &e) == TL_OK, "%s", e.msg);
  ck_assert_msg(tl_context_publish(db, L.c, &e) == TL_OK, "%s", e.msg);
  ck_assert_int_eq(count_rows(db, "SELECT count(*) FROM traceloom_context_source WHERE capture_state = 'closed'"), 2);
  ck_assert_int_eq(count_rows(db, "SELECT count(*) FROM traceloom_context_record WHERE json_valid(raw_json)"), 16);
  ck_assert_int_eq(count_rows(db, "SELECT count(*) FROM traceloom_scheduler_step"), 6);
  ck_assert_int_eq(count_rows(db, "SELECT count(*) FROM traceloom_scheduler_request"), 48);
  ck_assert_int_eq(count_rows(db, "SELECT count(*) FROM traceloom_v_execution_context "
                                  "WHERE support_state = 'supported_marker'"), 6);
  ck_assert_int_eq(count_rows(db, "SELECT count(*) FROM traceloom_context_queue_pair"), 3);
  /* every step is marked: each runtime call of the profile is claimed by exactly one execution */
  ck_assert_int_eq(count_rows(db, "SELECT count(*) FROM traceloom_context_runtime_call "
                                  "WHERE support_state = 'supported_host_scope'"), (int64_t)L.t.calls.n);
  ck_assert_int_eq(count_rows(db, "SELECT count(DISTINCT runtime_call_id) FROM traceloom_context_runtime_call"),
                   (int64_t)L.t.calls.n);
  ck_assert_int_eq(count_rows(db, "SELECT count(*) FROM traceloom_context_queue_runtime"),
                   count_rows(db, "SELECT count(*) FROM traceloom_context_runtime_call "
                                  "WHERE association_basis = 'task_queue_connection'"));
  /* no events were published here: nothing device-side */
  ck_assert_int_eq(count_rows(db, "SELECT count(*) FROM traceloom_context_device_assignment"), 0);
  sqlite3_close(db);
  unlink_fixture(&L);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("context");
  TCase *load = tcase_create("load");
  tcase_add_checked_fixture(load, setup, teardown);
  tcase_add_test(load, valid_files_load);
  tcase_add_test(load, capture_states);
  tcase_add_test(load, rejects_file_level);
  tcase_add_test(load, rejects_identity_and_structure);
  tcase_add_test(load, rejects_step_fields);
  tcase_add_test(load, rejects_execution_fields);
  suite_add_tcase(s, load);
  TCase *link = tcase_create("link");
  tcase_set_timeout(link, 60);
  tcase_add_test(link, graph_every_launch_and_member_has_its_step);
  tcase_add_test(link, open_captures_give_no_partition);
  tcase_add_test(link, typed_states);
  tcase_add_test(link, anchor_partition_follows_events);
  tcase_add_test(link, publish_writes_the_host_chain);
  suite_add_tcase(s, link);
  return s;
}

TL_CHECK_MAIN(suite)
