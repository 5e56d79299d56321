/*
** test_kineto.c: the Kineto Chrome-trace reader (ext/source/kineto.c, kineto_json.c):
** exact microsecond -> nanosecond conversion, the streaming tokenizer's errors, and the
** reader through discovery and the whole-profile cursors on the traces
** tests/fixtures/make_kineto.py writes under fixtures/kineto/. Expected values come from the
** builder's text: kernel k of step s has ts BASE_US + s*1000 + 10*(k+1) + 0.123 us, dur 5.5
** us, correlation 100*(s+1) + 10 + k; traceEvents holds 2 metadata events, then 18 per step.
*/
#include "tl_check.h"

#include "source/kineto_json.h"
#include "source/source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BASE_US 1712345678901ll

/* ------------------------------------------------------------------ numbers */

static int64_t ns_of(const char *s, int *rounded) {
  int64_t v = -777;
  int r = 0;
  ck_assert_msg(tl_kineto_us_to_ns(s, strlen(s), &v, &r) == TL_OK, "convert %s", s);
  if (rounded) *rounded = r;
  return v;
}

START_TEST(us_to_ns_exact) {
  int r;
  ck_assert_int_eq(ns_of("1712345678901.234", &r), 1712345678901234ll);
  ck_assert_int_eq(r, 0);
  ck_assert_int_eq(ns_of("5117255223248.595", NULL), 5117255223248595ll);
  ck_assert_int_eq(ns_of("0", NULL), 0);
  ck_assert_int_eq(ns_of("0.5", NULL), 500);
  ck_assert_int_eq(ns_of("5.500", NULL), 5500);
  ck_assert_int_eq(ns_of("-1.5", NULL), -1500);
  ck_assert_int_eq(ns_of("1e3", NULL), 1000000);
  ck_assert_int_eq(ns_of("1.25E+2", NULL), 125000);
  ck_assert_int_eq(ns_of("2.0000", &r), 2000);
  ck_assert_int_eq(r, 0); /* a trailing zero is no lost precision */
  /* The largest value: INT64_MAX ns. A double would already be off here. */
  ck_assert_int_eq(ns_of("9223372036854775.807", NULL), INT64_MAX);
}
END_TEST

START_TEST(us_to_ns_half_even) {
  int r;
  ck_assert_int_eq(ns_of("2.0005", &r), 2000); /* 2000.5 -> even 2000 */
  ck_assert_int_eq(r, 1);
  ck_assert_int_eq(ns_of("2.0015", &r), 2002); /* 2001.5 -> even 2002 */
  ck_assert_int_eq(r, 1);
  ck_assert_int_eq(ns_of("2.00051", &r), 2001); /* above the half */
  ck_assert_int_eq(ns_of("2.00049999", &r), 2000);
  ck_assert_int_eq(r, 1);
  ck_assert_int_eq(ns_of("1.5e-3", NULL), 2); /* 1.5 ns */
  ck_assert_int_eq(ns_of("2.5e-3", NULL), 2); /* 2.5 ns */
  ck_assert_int_eq(ns_of("4e-4", &r), 0);     /* 0.4 ns */
  ck_assert_int_eq(r, 1);
  ck_assert_int_eq(ns_of("6e-4", NULL), 1);
  ck_assert_int_eq(ns_of("-2.0015", NULL), -2002);
}
END_TEST

START_TEST(us_to_ns_rejects) {
  static const char *const bad[] = {"",   "-",   "01",   "1.",  ".5", "1.2.3", "1e",
                                    "+1", "0x1", "1e+", "9223372036854775.808", "1e400", NULL};
  for (int i = 0; bad[i]; i++) {
    int64_t v;
    int r;
    ck_assert_msg(tl_kineto_us_to_ns(bad[i], strlen(bad[i]), &v, &r) == TL_ERROR, "accepted '%s'",
                  bad[i]);
  }
  int64_t v;
  ck_assert_int_eq(tl_kineto_int("7", 1, &v), TL_OK);
  ck_assert_int_eq(v, 7);
  ck_assert_int_eq(tl_kineto_int("7.0", 3, &v), TL_OK);
  ck_assert_int_eq(v, 7);
  ck_assert_int_eq(tl_kineto_int("-3", 2, &v), TL_OK);
  ck_assert_int_eq(v, -3);
  ck_assert_int_eq(tl_kineto_int("7.5", 3, &v), TL_ERROR);
}
END_TEST

/* ------------------------------------------------------------------ tokenizer */

static char *write_tmp(const char *text) {
  char *path = strdup("/tmp/tl_kineto_XXXXXX");
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  FILE *f = fdopen(fd, "w");
  fputs(text, f);
  fclose(f);
  return path;
}

START_TEST(tokenizer_tokens_and_escapes) {
  char *path = write_tmp(" {\"a\\u00e9\\\"\\n\": [1.5e3, -0, true, false, null, \"\\ud83d\\ude00\"]}");
  tl_jreader r;
  tl_err e = {0};
  ck_assert_int_eq(tl_jr_open(&r, path, &e), TL_OK);
  static const tl_jtok want[] = {TL_JT_LBRACE, TL_JT_STRING, TL_JT_COLON, TL_JT_LBRACK,
                                 TL_JT_NUMBER, TL_JT_COMMA,  TL_JT_NUMBER, TL_JT_COMMA,
                                 TL_JT_TRUE,   TL_JT_COMMA,  TL_JT_FALSE, TL_JT_COMMA,
                                 TL_JT_NULL,   TL_JT_COMMA,  TL_JT_STRING, TL_JT_RBRACK,
                                 TL_JT_RBRACE, TL_JT_EOF};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    tl_jtok t;
    ck_assert_int_eq(tl_jr_next(&r, &t, &e), TL_OK);
    ck_assert_int_eq(t, want[i]);
    if (i == 0) ck_assert_int_eq(r.tok_offset, 1);
    if (i == 1) ck_assert_str_eq(r.text.p, "a\xc3\xa9\"\n");
    if (i == 4) ck_assert_str_eq(r.text.p, "1.5e3");
    if (i == 14) ck_assert_str_eq(r.text.p, "\xf0\x9f\x98\x80"); /* U+1F600 from a pair */
  }
  tl_jr_close(&r);
  unlink(path);
  free(path);
}
END_TEST

START_TEST(tokenizer_skip_mismatch) {
  /* Offsets: '{' 0, '[' 6, '}' 10 closes the array opened at 6: expected ']'. */
  char *path = write_tmp("{\"k\": [1, }");
  tl_jreader r;
  tl_err e = {0};
  ck_assert_int_eq(tl_jr_open(&r, path, &e), TL_OK);
  tl_jtok t;
  for (int i = 0; i < 4; i++) ck_assert_int_eq(tl_jr_next(&r, &t, &e), TL_OK);
  ck_assert_int_eq(t, TL_JT_LBRACK);
  ck_assert_int_eq(tl_jr_skip(&r, t, &e), TL_ERROR);
  ck_assert_ptr_nonnull(strstr(e.msg, "at byte 10: expected ']', found '}'"));
  tl_err_clear(&e);
  tl_jr_close(&r);
  unlink(path);
  free(path);
}
END_TEST

/* ------------------------------------------------------------------ reader */

typedef struct rows {
  tl_strpool *pool;
  tl_profile prof;
  TL_VEC(tl_event_row) ev;
  TL_VEC(tl_call_row) calls;
  int64_t dropped;
} rows;

static const char *S(const rows *r, uint32_t id) { return tl_strpool_str(r->pool, id); }

static char *load(rows *r, const char *fixture) {
  memset(r, 0, sizeof *r);
  r->pool = tl_strpool_new();
  char *path = tl_fixture(fixture);
  tl_err e = {0};
  int drc = tl_profile_discover(path, "auto", &r->prof, &e);
  free(path);
  if (drc) return tl_err_take(&e);
  tl_cursor *c;
  if (tl_events_open(&r->prof, NULL, r->pool, &c, &e)) return tl_err_take(&e);
  tl_event_row row;
  int rc;
  while ((rc = c->next(c, &row, &e)) == 1) ck_assert_int_eq(TL_VEC_PUSH(&r->ev, row), 0);
  r->dropped = c->dropped_rows;
  c->close(c);
  if (rc < 0) return tl_err_take(&e);
  if (tl_calls_open(&r->prof, r->pool, &c, &e)) return tl_err_take(&e);
  tl_call_row crow;
  while ((rc = c->next(c, &crow, &e)) == 1) ck_assert_int_eq(TL_VEC_PUSH(&r->calls, crow), 0);
  c->close(c);
  return rc < 0 ? tl_err_take(&e) : NULL;
}

static void rows_free(rows *r) {
  TL_VEC_FREE(&r->ev);
  TL_VEC_FREE(&r->calls);
  tl_profile_free(&r->prof);
  tl_strpool_free(r->pool);
}

static int64_t kernel_start(int s, int k) { return (BASE_US + s * 1000 + 10 * (k + 1)) * 1000 + 123; }

static void check_gpu_basic(const char *fixture) {
  rows r;
  char *err = load(&r, fixture);
  ck_assert_msg(err == NULL, "%s: %s", fixture, err ? err : "");
  ck_assert_int_eq(r.prof.inputs.n, 1);
  ck_assert_ptr_eq(r.prof.inputs.v[0].family, tl_family_by_source_kind("kineto_json"));
  /* 3 steps x (5 kernels + memcpy + memset); the kernel without ts is dropped. */
  ck_assert_int_eq(r.ev.n, 21);
  ck_assert_int_eq(r.dropped, 1);
  for (int s = 0; s < 3; s++)
    for (int k = 0; k < 5; k++) {
      const tl_event_row *x = &r.ev.v[s * 7 + k];
      ck_assert_str_eq(x->source_table, "traceEvents");
      ck_assert_int_eq(x->source_rowid, 2 + s * 18 + 7 + k);
      ck_assert_int_eq(x->start_ns, kernel_start(s, k));
      ck_assert_int_eq(x->end_ns, kernel_start(s, k) + 5500);
      ck_assert_int_eq(x->correlation_id, 100 * (s + 1) + 10 + k);
      ck_assert_int_eq(x->task_id, x->correlation_id);
      ck_assert_int_eq(x->context_id, 1);
      ck_assert_int_eq(x->device_id, 0);
      ck_assert_int_eq(x->stream_id, k == 3 ? 20 : 7);
    }
  static const char *const lifted[] = {"CudaRmsNorm", "CudaMatMul", "CudaFlashAttention",
                                       "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
                                       "CudaAux:Pointwise"};
  for (int k = 0; k < 5; k++) ck_assert_str_eq(S(&r, r.ev.v[7 + k].op_type), lifted[k]);
  ck_assert_int_eq(r.ev.v[3].kind, TL_KIND_COMMUNICATION);
  ck_assert_str_eq(S(&r, r.ev.v[3].task_type), "CUDA_COLLECTIVE_KERNEL");
  ck_assert_str_eq(S(&r, r.ev.v[3].comm_name), "ncclDevKernel_AllReduce_Sum_bf16_RING_LL");
  ck_assert_str_eq(S(&r, r.ev.v[4].name), "void at::native::vectorized_elementwise_kernel<4, \"add\">");
  ck_assert_str_eq(S(&r, r.ev.v[4].task_type), "CUDA_KERNEL_AUX");
  ck_assert_str_eq(S(&r, r.ev.v[0].task_type), "CUDA_KERNEL");
  const tl_event_row *m = &r.ev.v[5];
  ck_assert_int_eq(m->kind, TL_KIND_DATA_MOVE);
  ck_assert_str_eq(S(&r, m->task_type), "CUDA_MEMCPY_AUX");
  ck_assert_str_eq(S(&r, m->name), "Memcpy HtoD (Pageable -> Device)");
  ck_assert_int_eq(m->start_ns, (BASE_US + 60) * 1000 + 123);
  ck_assert_int_eq(m->end_ns, m->start_ns + 3000);
  ck_assert_int_eq(m->correlation_id, 101);
  ck_assert_str_eq(S(&r, r.ev.v[6].task_type), "CUDA_MEMSET_AUX");
  /* Host calls: 7 per step, then cudaGraphLaunch and cuLaunchKernel. */
  ck_assert_int_eq(r.calls.n, 23);
  const tl_call_row *c = &r.calls.v[0];
  ck_assert_int_eq(c->provider, TL_PROVIDER_CUDA);
  ck_assert_str_eq(S(&r, c->api_name), "cudaLaunchKernel");
  ck_assert_str_eq(S(&r, c->api_type), "cuda_runtime");
  ck_assert_int_eq(c->source_rowid, 4);
  ck_assert_int_eq(c->start_ns, (BASE_US + 1) * 1000 + 123);
  ck_assert_int_eq(c->end_ns, c->start_ns + 2000);
  ck_assert_int_eq(c->process_id, 4242);
  ck_assert_int_eq(c->thread_id, 4250);
  ck_assert_int_eq(c->global_tid, (4242ll << 32) | 4250);
  ck_assert_int_eq(c->correlation_id, 110);
  ck_assert_int_eq(c->device_id, TL_ABSENT);
  ck_assert_str_eq(S(&r, r.calls.v[21].api_name), "cudaGraphLaunch");
  ck_assert_int_eq(r.calls.v[21].correlation_id, 399);
  ck_assert_str_eq(S(&r, r.calls.v[22].api_type), "cuda_driver");
  ck_assert_int_eq(r.calls.v[22].thread_id, 4251);
  rows_free(&r);
}

START_TEST(gpu_basic_plain) { check_gpu_basic("kineto/gpu_basic.pt.trace.json"); }
END_TEST

START_TEST(gpu_basic_gzip) { check_gpu_basic("kineto/gpu_basic.pt.trace.json.gz"); }
END_TEST

START_TEST(cpu_only_plane) {
  rows r;
  char *err = load(&r, "kineto/cpu_only.pt.trace.json");
  ck_assert_msg(err == NULL, "%s", err ? err : "");
  /* 4 steps x (linear, addmm, relu) of the main thread tid 100; tid 50's aten::empty, the
  ** ProfilerStep#N ranges and python_function events are not operators. */
  ck_assert_int_eq(r.ev.n, 12);
  ck_assert_int_eq(r.calls.n, 0);
  static const char *const names[] = {"aten::linear", "aten::addmm", "aten::relu"};
  static const int64_t relu_dur[] = {2000, 2002, 2001, 2000};
  const int64_t base = 1700000000000000000ll;
  for (int s = 0; s < 4; s++)
    for (int k = 0; k < 3; k++) {
      const tl_event_row *x = &r.ev.v[s * 3 + k];
      ck_assert_str_eq(S(&r, x->name), names[k]);
      ck_assert_str_eq(S(&r, x->op_type), names[k]);
      ck_assert_str_eq(S(&r, x->task_type), "CPU_OP");
      ck_assert_int_eq(x->kind, TL_KIND_COMPUTE);
      ck_assert_int_eq(x->device_id, 0);
      ck_assert_int_eq(x->stream_id, 100);
      ck_assert_int_eq(x->source_rowid, s * 6 + 1 + k);
      ck_assert_int_eq(x->correlation_id, TL_ABSENT);
      int64_t start = base + (int64_t)s * 100000 + (k == 0 ? 1000 : k == 1 ? 2000 : 20250);
      ck_assert_int_eq(x->start_ns, start);
      ck_assert_int_eq(x->end_ns - x->start_ns, k == 0 ? 10000 : k == 1 ? 8000 : relu_dur[s]);
    }
  rows_free(&r);
}
END_TEST

START_TEST(cpu_tie_smallest_tid) {
  rows r;
  char *err = load(&r, "kineto/cpu_tie.json");
  ck_assert_msg(err == NULL, "%s", err ? err : "");
  ck_assert_int_eq(r.ev.n, 1);
  ck_assert_str_eq(S(&r, r.ev.v[0].name), "aten::b");
  ck_assert_int_eq(r.ev.v[0].stream_id, 20);
  rows_free(&r);
}
END_TEST

START_TEST(rank_directory) {
  rows r;
  char *err = load(&r, "kineto/ranks");
  ck_assert_msg(err == NULL, "%s", err ? err : "");
  ck_assert_int_eq(r.prof.inputs.n, 2); /* notes.json is no trace */
  ck_assert_ptr_nonnull(strstr(r.prof.inputs.v[0].path, "rank0.pt.trace.json"));
  ck_assert_ptr_nonnull(strstr(r.prof.inputs.v[1].path, "rank1.pt.trace.json.gz"));
  ck_assert_int_eq(r.ev.n, 2);
  ck_assert_int_eq(r.ev.v[1].db_idx, 1);
  ck_assert_int_eq(r.ev.v[1].device_id, 1);
  ck_assert_int_eq(r.ev.v[1].start_ns, 11500);
  rows_free(&r);
}
END_TEST

static void expect_error(const char *fixture, const char *text) {
  rows r;
  char *err = load(&r, fixture);
  ck_assert_msg(err && strstr(err, text), "%s: got '%s', want '%s'", fixture, err ? err : "(none)",
                text);
  free(err);
  rows_free(&r);
}

START_TEST(malformed) {
  expect_error("kineto/bad/bad_comma.json", "at byte 29: expected ',' or ']' in traceEvents, found '{'");
  expect_error("kineto/bad/bad_literal.json", "at byte 35: unknown literal \"tru\"");
  expect_error("kineto/bad/unterminated.json", "at byte 26: unterminated string");
  expect_error("kineto/bad/no_events.json", "has no traceEvents array");
  expect_error("kineto/bad/not_array.json", "at byte 16: expected '[' (traceEvents is an array)");
  expect_error("kineto/bad/truncated.pt.trace.json.gz", "truncated gzip stream in Kineto trace");
}
END_TEST

START_TEST(inventory_rows) {
  tl_profile p;
  tl_err e = {0};
  char *path = tl_fixture("kineto/gpu_basic.pt.trace.json.gz");
  ck_assert_int_eq(tl_profile_discover(path, "kineto_json", &p, &e), TL_OK);
  free(path);
  tl_inventory inv;
  ck_assert_msg(tl_profile_inventory(&p, &inv, &e) == TL_OK, "%s", e.msg ? e.msg : "");
  int seen = 0;
  for (size_t i = 0; i < inv.n; i++) {
    const tl_inventory_row *x = &inv.v[i];
    const char *cap = x->capability ? x->capability : "";
    if (x->table_name && strcmp(x->item, "table") == 0) {
      ck_assert_int_eq(x->row_count, 60);
    } else if (strcmp(cap, "device_plane") == 0) {
      ck_assert_int_eq(x->usable, 1);
      ck_assert_int_eq(x->row_count, 21);
    } else if (strcmp(cap, "cpu_operator_plane") == 0) {
      ck_assert_int_eq(x->usable, 0);
    } else if (strcmp(cap, "rank") == 0) {
      ck_assert_int_eq(x->usable, 1);
      ck_assert_int_eq(x->row_count, 1);
      ck_assert_ptr_nonnull(strstr(x->detail, "world_size 2 backend nccl"));
    } else if (strcmp(cap, "device_properties") == 0) {
      ck_assert_ptr_nonnull(strstr(x->detail, "name=NVIDIA H100 80GB HBM3"));
    } else if (strcmp(cap, "graph_launch") == 0) {
      ck_assert_int_eq(x->row_count, 1);
    } else {
      continue;
    }
    seen++;
  }
  ck_assert_int_eq(seen, 6);
  tl_inventory_free(&inv);
  tl_profile_free(&p);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("kineto");
  TCase *t = tcase_create("reader");
  tcase_add_test(t, us_to_ns_exact);
  tcase_add_test(t, us_to_ns_half_even);
  tcase_add_test(t, us_to_ns_rejects);
  tcase_add_test(t, tokenizer_tokens_and_escapes);
  tcase_add_test(t, tokenizer_skip_mismatch);
  tcase_add_test(t, gpu_basic_plain);
  tcase_add_test(t, gpu_basic_gzip);
  tcase_add_test(t, cpu_only_plane);
  tcase_add_test(t, cpu_tie_smallest_tid);
  tcase_add_test(t, rank_directory);
  tcase_add_test(t, malformed);
  tcase_add_test(t, inventory_rows);
  suite_add_tcase(s, t);
  return s;
}

TL_CHECK_MAIN(suite)
