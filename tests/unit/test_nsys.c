/*
** test_nsys.c: the Nsight Systems SQLite reader (ext/source/nsys.c) through discovery and
** the whole-profile cursors, on the exports tests/fixtures/make_nsys.py builds under
** fixtures/nsys/. Expected values come from the builder's rows (inputs.md sections 6, 9, 10),
** e.g. step s of nsys_basic starts at 2000000000 + s*1000000 ns and uses correlation ids
** 100*(s+1) + {1 memcpy, 2 memset, 10..15 kernels, 30 event record, 40 stream sync}.
*/
#include "tl_check.h"

#include "source/source.h"

#include <stdlib.h>
#include <string.h>

#define BASE 2000000000ll
#define GTID ((1ll << 56) | (4242ll << 24) | 4250ll)

typedef struct rows {
  tl_strpool *pool;
  tl_profile prof;
  TL_VEC(tl_event_row) ev;
  TL_VEC(tl_call_row) calls;
  int64_t dropped;
} rows;

static const char *S(const rows *r, uint32_t id) { return tl_strpool_str(r->pool, id); }

static void discover(rows *r, const char *fixture) {
  memset(r, 0, sizeof *r);
  r->pool = tl_strpool_new();
  ck_assert_ptr_nonnull(r->pool);
  char *path = tl_fixture(fixture);
  tl_err e = {0};
  int rc = tl_profile_discover(path, "auto", &r->prof, &e);
  ck_assert_msg(rc == TL_OK, "discover %s: %s", path, e.msg ? e.msg : "");
  ck_assert_int_eq(r->prof.inputs.n, 1);
  ck_assert_ptr_eq(r->prof.inputs.v[0].family, tl_family_by_source_kind("cuda_nsys_sqlite"));
  free(path);
}

/* Reads every event (or call); returns the error text of a failing read, else NULL. */
static char *read_events(rows *r, const tl_event_filter *f) {
  tl_err e = {0};
  tl_cursor *c;
  if (tl_events_open(&r->prof, f, r->pool, &c, &e)) return tl_err_take(&e);
  tl_event_row row;
  int rc;
  while ((rc = c->next(c, &row, &e)) == 1) ck_assert_int_eq(TL_VEC_PUSH(&r->ev, row), 0);
  r->dropped = c->dropped_rows;
  c->close(c);
  return rc < 0 ? tl_err_take(&e) : NULL;
}

static char *read_calls(rows *r) {
  tl_err e = {0};
  tl_cursor *c;
  if (tl_calls_open(&r->prof, r->pool, &c, &e)) return tl_err_take(&e);
  tl_call_row row;
  int rc;
  while ((rc = c->next(c, &row, &e)) == 1) ck_assert_int_eq(TL_VEC_PUSH(&r->calls, row), 0);
  c->close(c);
  return rc < 0 ? tl_err_take(&e) : NULL;
}

static void rows_free(rows *r) {
  TL_VEC_FREE(&r->ev);
  TL_VEC_FREE(&r->calls);
  tl_profile_free(&r->prof);
  tl_strpool_free(r->pool);
}

static void load(rows *r, const char *fixture) {
  discover(r, fixture);
  char *err = read_events(r, NULL);
  ck_assert_msg(err == NULL, "events: %s", err ? err : "");
  err = read_calls(r);
  ck_assert_msg(err == NULL, "calls: %s", err ? err : "");
}

static void check_event(const rows *r, size_t i, const char *table, int64_t rowid,
                        int64_t start, int64_t end, uint32_t stream, tl_kind kind,
                        const char *name, const char *op_type, const char *task_type,
                        int64_t corr) {
  ck_assert_uint_lt(i, r->ev.n);
  const tl_event_row *e = &r->ev.v[i];
  ck_assert_str_eq(e->source_table, table);
  ck_assert_int_eq(e->source_rowid, rowid);
  ck_assert_int_eq(e->source_id, r->prof.inputs.v[0].primary_file);
  ck_assert_int_eq(e->db_idx, 0);
  ck_assert_int_eq(e->start_ns, start);
  ck_assert_int_eq(e->end_ns, end);
  ck_assert_uint_eq(e->device_id, 0);
  ck_assert_uint_eq(e->stream_id, stream);
  ck_assert_str_eq(tl_kind_name(e->kind), tl_kind_name(kind));
  ck_assert_str_eq(S(r, e->name), name);
  ck_assert_str_eq(S(r, e->op_type), op_type);
  ck_assert_str_eq(S(r, e->task_type), task_type);
  ck_assert_int_eq(e->correlation_id, corr);
  ck_assert_int_eq(e->task_id, corr);
  ck_assert_int_eq(e->context_id, 1);
  ck_assert_int_eq(e->model_id, TL_ABSENT);
  ck_assert_int_eq(e->global_task_id, TL_ABSENT);
}

static const char *const rope_demangled =
    "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(const long*, c10::BFloat16*, "
    "c10::BFloat16*, const c10::BFloat16*, int, long, long, int, int, int)";
static const char *const gemm_name =
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
    "execute_segment_k_off_kernel__5x_cublas";
static const char *const nccl_name = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL";

static void check_basic_events(const rows *r) {
  ck_assert_int_eq(r->ev.n, 18 + 3 + 3 + 3 + 3);
  const char *K = "CUPTI_ACTIVITY_KIND_KERNEL";
  for (int s = 0; s < 3; s++) {
    int64_t b = BASE + s * 1000000ll, c = 100 * (s + 1);
    size_t i = (size_t)s * 6;
    check_event(r, i + 0, K, 6 * s + 1, b + 30000, b + 45000, 7, TL_KIND_COMPUTE,
                "rms_norm_kernel", "CudaRmsNorm", "CUDA_KERNEL", c + 10);
    check_event(r, i + 1, K, 6 * s + 2, b + 50000, b + 65000, 7, TL_KIND_COMPUTE, gemm_name,
                "CudaMatMul", "CUDA_KERNEL", c + 11);
    check_event(r, i + 2, K, 6 * s + 3, b + 70000, b + 85000, 7, TL_KIND_COMPUTE,
                "flash_fwd_splitkv_kernel", "CudaFlashAttention", "CUDA_KERNEL", c + 12);
    /* shortName "kernel" is generic: the demangled name is the label. */
    check_event(r, i + 3, K, 6 * s + 4, b + 90000, b + 105000, 7, TL_KIND_COMPUTE,
                rope_demangled, "CudaRope", "CUDA_KERNEL", c + 13);
    /* An NCCL collective keeps its label and is communication. */
    check_event(r, i + 4, K, 6 * s + 5, b + 110000, b + 125000, 20, TL_KIND_COMMUNICATION,
                nccl_name, nccl_name, "CUDA_COLLECTIVE_KERNEL", c + 14);
    ck_assert_str_eq(S(r, r->ev.v[i + 4].comm_name), nccl_name);
    ck_assert_str_eq(S(r, r->ev.v[i + 4].comm_task_type), "CUDA_COLLECTIVE_KERNEL");
    check_event(r, i + 5, K, 6 * s + 6, b + 130000, b + 145000, 7, TL_KIND_COMPUTE,
                "vectorized_elementwise_kernel", "CudaAux:Pointwise", "CUDA_KERNEL_AUX",
                c + 15);
    ck_assert_uint_eq(r->ev.v[i].comm_name, TL_STR_NONE);
    ck_assert_str_eq(S(r, r->ev.v[i].op_name), "rms_norm_kernel");
    ck_assert_int_eq(r->ev.v[i].graph_node_id, TL_ABSENT);

    char label[64];
    snprintf(label, sizeof label, "CudaMemcpy kind=1 bytes=%d", 4096 * (s + 1));
    check_event(r, 18 + s, "CUPTI_ACTIVITY_KIND_MEMCPY", s + 1, b + 10000, b + 14000, 7,
                TL_KIND_DATA_MOVE, label, "", "CUDA_MEMCPY_AUX", c + 1);
    /* Step 1's memset has end == start: an aux row then lasts 1 ns. */
    check_event(r, 21 + s, "CUPTI_ACTIVITY_KIND_MEMSET", s + 1, b + 17000,
                s == 1 ? b + 17001 : b + 18000, 7, TL_KIND_DATA_MOVE, "CudaMemset bytes=1024",
                "", "CUDA_MEMSET_AUX", c + 2);
    check_event(r, 24 + s, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", s + 1, b + 210500,
                b + 399000, 7, TL_KIND_SYNC, "STREAM_SYNCHRONIZE", "", "CUDA_SYNC_AUX", c + 40);
    /* CUDA events have one timestamp and no end. */
    check_event(r, 27 + s, "CUPTI_ACTIVITY_KIND_CUDA_EVENT", s + 1, b + 205000, b + 205001, 7,
                TL_KIND_CONTROL, "CudaEvent event=77", "", "CUDA_EVENT_AUX", c + 30);
  }
}

static void check_basic_calls(const rows *r) {
  ck_assert_int_eq(r->calls.n, 3 * 10 + 2);
  static const char *const step_apis[10] = {
      "cudaMemcpyAsync_v3020",  "cudaMemsetAsync_v3020",      "cudaLaunchKernel_v7000",
      "cudaLaunchKernel_v7000", "cudaLaunchKernel_v7000",     "cudaLaunchKernel_v7000",
      "cudaLaunchKernelExC_v11060", "cudaLaunchKernel_v7000", "cudaEventRecord_v3020",
      "cudaStreamSynchronize_v3020"};
  static const int corr_off[10] = {1, 2, 10, 11, 12, 13, 14, 15, 30, 40};
  for (size_t i = 0; i < r->calls.n; i++) {
    const tl_call_row *c = &r->calls.v[i];
    ck_assert_str_eq(c->source_table, "CUPTI_ACTIVITY_KIND_RUNTIME");
    ck_assert_int_eq(c->source_rowid, (int64_t)i + 1);
    ck_assert_int_eq(c->provider, TL_PROVIDER_CUDA);
    ck_assert_str_eq(S(r, c->api_type), "cuda_runtime");
    ck_assert_int_eq(c->global_tid, GTID);
    ck_assert_int_eq(c->process_id, 4242);
    ck_assert_int_eq(c->thread_id, 4250);
    ck_assert_int_eq(c->device_id, TL_ABSENT);
    ck_assert_int_eq(c->context_id, TL_ABSENT);
    if (i < 30) {
      int s = (int)i / 10, k = (int)i % 10;
      ck_assert_str_eq(S(r, c->api_name), step_apis[k]);
      ck_assert_int_eq(c->correlation_id, 100 * (s + 1) + corr_off[k]);
    }
  }
  const tl_call_row *first = &r->calls.v[0];
  ck_assert_int_eq(first->start_ns, BASE);
  ck_assert_int_eq(first->end_ns, BASE + 8000);
  const tl_call_row *sync = &r->calls.v[9];
  ck_assert_int_eq(sync->start_ns, BASE + 210000);
  ck_assert_int_eq(sync->end_ns, BASE + 400000);
  ck_assert_str_eq(S(r, r->calls.v[30].api_name), "cudaGetDevice_v3020");
  ck_assert_int_eq(r->calls.v[30].correlation_id, 900);
  /* nameId 9999 is not in StringIds: it decodes to its decimal string; end == start -> +1. */
  ck_assert_str_eq(S(r, r->calls.v[31].api_name), "9999");
  ck_assert_int_eq(r->calls.v[31].start_ns, BASE - 8000);
  ck_assert_int_eq(r->calls.v[31].end_ns, BASE - 7999);
}

START_TEST(basic_events) {
  rows r;
  load(&r, "nsys/nsys_basic.sqlite");
  check_basic_events(&r);
  ck_assert_int_eq(r.dropped, 0);
  rows_free(&r);
}
END_TEST

START_TEST(basic_calls) {
  rows r;
  load(&r, "nsys/nsys_basic.sqlite");
  check_basic_calls(&r);
  rows_free(&r);
}
END_TEST

/* TEXT in the name columns reads exactly like StringIds ids. */
START_TEST(text_names) {
  rows r;
  load(&r, "nsys/nsys_textnames.sqlite");
  check_basic_events(&r);
  check_basic_calls(&r);
  rows_free(&r);
}
END_TEST

START_TEST(device_filter) {
  rows r;
  discover(&r, "nsys/nsys_basic.sqlite");
  tl_event_filter f = {1, 0, 1};
  ck_assert_ptr_null(read_events(&r, &f));
  ck_assert_int_eq(r.ev.n, 30);
  r.ev.n = 0;
  f.device_id = 1;
  ck_assert_ptr_null(read_events(&r, &f));
  ck_assert_int_eq(r.ev.n, 0);
  rows_free(&r);
}
END_TEST

START_TEST(graph_nodes) {
  rows r;
  load(&r, "nsys/nsys_graph.sqlite");
  /* 1 eager kernel, 3 launches x 3 graph kernels, then 3 graph memcpys. */
  ck_assert_int_eq(r.ev.n, 1 + 9 + 3);
  ck_assert_int_eq(r.ev.v[0].graph_node_id, TL_ABSENT);
  ck_assert_int_eq(r.ev.v[0].correlation_id, 400);
  ck_assert_str_eq(S(&r, r.ev.v[0].op_type), "CudaMatMul");
  static const char *const body_ops[3] = {"CudaMatMul", "CudaRmsNorm", "CudaAux:Pointwise"};
  for (int l = 0; l < 3; l++) {
    int64_t g = 3000000000ll + l * 500000ll;
    for (int j = 0; j < 3; j++) {
      const tl_event_row *k = &r.ev.v[1 + l * 3 + j];
      ck_assert_int_eq(k->graph_node_id, 201 + j);
      ck_assert_int_eq(k->correlation_id, 500 + l);
      ck_assert_uint_eq(k->stream_id, 13);
      ck_assert_int_eq(k->start_ns, g + 10000 + j * 30000);
      ck_assert_str_eq(S(&r, k->op_type), body_ops[j]);
    }
    const tl_event_row *m = &r.ev.v[10 + l];
    ck_assert_str_eq(m->source_table, "CUPTI_ACTIVITY_KIND_MEMCPY");
    ck_assert_int_eq(m->graph_node_id, 204);
    ck_assert_int_eq(m->correlation_id, 500 + l);
    ck_assert_str_eq(S(&r, m->name), "CudaMemcpy kind=8 bytes=2048");
  }
  ck_assert_int_eq(r.calls.n, 4);
  for (int l = 0; l < 3; l++) {
    ck_assert_str_eq(S(&r, r.calls.v[1 + l].api_name), "cudaGraphLaunch_v10000");
    ck_assert_int_eq(r.calls.v[1 + l].correlation_id, 500 + l);
  }
  rows_free(&r);
}
END_TEST

START_TEST(graph_trace) {
  rows r;
  load(&r, "nsys/nsys_graphtrace.sqlite");
  ck_assert_int_eq(r.ev.n, 3);
  for (int l = 0; l < 2; l++) {
    int64_t g = 4000000000ll + l * 500000ll;
    check_event(&r, 1 + l, "CUPTI_ACTIVITY_KIND_GRAPH_TRACE", l + 1, g + 10000, g + 130000, 13,
                TL_KIND_GRAPH_LAUNCH, "CudaGraph graph=5 exec=9", "", "CUDA_GRAPH_TRACE",
                601 + l);
  }
  ck_assert_int_eq(r.calls.n, 3);
  ck_assert_str_eq(S(&r, r.calls.v[2].api_name), "cudaGraphLaunch_v10000");
  rows_free(&r);
}
END_TEST

/* Column names in other letter cases; identity-only CUDA events (no time) are skipped. */
START_TEST(legacy_layout) {
  rows r;
  load(&r, "nsys/nsys_legacy.sqlite");
  ck_assert_int_eq(r.ev.n, 2);
  check_event(&r, 0, "CUPTI_ACTIVITY_KIND_KERNEL", 1, 5000, 5500, 7, TL_KIND_COMPUTE,
              "rms_norm_kernel", "CudaRmsNorm", "CUDA_KERNEL", 10);
  check_event(&r, 1, "CUPTI_ACTIVITY_KIND_KERNEL", 2, 6000, 6500, 7, TL_KIND_COMPUTE, gemm_name,
              "CudaMatMul", "CUDA_KERNEL", 11);
  ck_assert_int_eq(r.calls.n, 0); /* no runtime table: no calls, no error */
  rows_free(&r);
}
END_TEST

/* ------------------------------------------------------------------ errors */

static void expect_events_error(const char *fixture, const char *const *parts) {
  rows r;
  discover(&r, fixture);
  char *err = read_events(&r, NULL);
  ck_assert_msg(err != NULL, "%s: expected an error", fixture);
  for (int i = 0; parts[i]; i++)
    ck_assert_msg(strstr(err, parts[i]) != NULL, "'%s' not in '%s'", parts[i], err);
  ck_assert_msg(strstr(err, r.prof.inputs.v[0].path) != NULL, "no path in '%s'", err);
  free(err);
  rows_free(&r);
}

START_TEST(missing_stream_column) {
  const char *parts[] = {"unsupported CUDA/Nsight kernel schema: missing required column(s): "
                         "streamId",
                         NULL};
  expect_events_error("nsys/nsys_kernel_no_stream.sqlite", parts);
}
END_TEST

START_TEST(negative_device) {
  /* The builder sets deviceId -1 on the second kernel row. */
  const char *parts[] = {"unsupported CUDA/Nsight deviceId at ordered kernel row 1: -1",
                         "rowid 2", NULL};
  expect_events_error("nsys/nsys_negative_device.sqlite", parts);
}
END_TEST

START_TEST(stringids_without_value) {
  const char *parts[] = {"unsupported CUDA/Nsight StringIds schema: missing required "
                         "column(s): value",
                         NULL};
  expect_events_error("nsys/nsys_stringids_no_value.sqlite", parts);
}
END_TEST

START_TEST(memcpy_without_start) {
  const char *parts[] = {"unsupported CUDA/Nsight CUPTI_ACTIVITY_KIND_MEMCPY schema: missing "
                         "start or timestamp",
                         NULL};
  expect_events_error("nsys/nsys_memcpy_no_start.sqlite", parts);
}
END_TEST

START_TEST(event_end_without_start) {
  const char *parts[] = {"unsupported CUDA/Nsight CUPTI_ACTIVITY_KIND_CUDA_EVENT schema: end "
                         "without start or timestamp",
                         NULL};
  expect_events_error("nsys/nsys_event_end_no_start.sqlite", parts);
}
END_TEST

/* Discovery never makes an input of a DB without kernels; the reader itself, given one
** (an explicit family), names the missing table. */
START_TEST(no_kernel_table) {
  char *path = tl_fixture("nsys/nsys_no_kernel.sqlite");
  tl_profile p;
  tl_err e = {0};
  ck_assert_int_eq(tl_profile_discover(path, "auto", &p, &e), TL_ERROR);
  ck_assert_ptr_nonnull(strstr(e.msg, "CUPTI_ACTIVITY_KIND_KERNEL"));
  tl_err_clear(&e);
  memset(&p, 0, sizeof p);
  tl_input in = {0};
  in.family = tl_family_by_source_kind("cuda_nsys_sqlite");
  in.path = tl_strdup(path);
  in.primary_file = 0;
  ck_assert_int_eq(TL_VEC_PUSH(&p.inputs, in), 0);
  ck_assert_int_eq(tl_profile_add_file(&p, path, 0, TL_FILE_PRIMARY, -1), 0);
  tl_strpool *pool = tl_strpool_new();
  tl_cursor *c = NULL;
  ck_assert_int_eq(tl_family_by_source_kind("cuda_nsys_sqlite")->events_open(&p, 0, NULL, pool, &c, &e), TL_ERROR);
  ck_assert_ptr_null(c);
  ck_assert_msg(strstr(e.msg, "unsupported CUDA/Nsight SQLite export: required table "
                              "CUPTI_ACTIVITY_KIND_KERNEL is missing") != NULL,
                "%s", e.msg);
  ck_assert_ptr_nonnull(strstr(e.msg, path));
  tl_err_clear(&e);
  /* Runtime calls do not need kernels. */
  ck_assert_int_eq(tl_family_by_source_kind("cuda_nsys_sqlite")->calls_open(&p, 0, pool, &c, &e), TL_OK);
  tl_call_row row;
  int n = 0;
  while (c->next(c, &row, &e) == 1) n++;
  c->close(c);
  ck_assert_int_eq(n, 32);
  /* A path that does not exist. */
  free(p.inputs.v[0].path);
  p.inputs.v[0].path = tl_strdup("/nonexistent/nsys.sqlite");
  ck_assert_int_eq(tl_family_by_source_kind("cuda_nsys_sqlite")->events_open(&p, 0, NULL, pool, &c, &e), TL_ERROR);
  ck_assert_str_eq(e.msg, "CUDA/Nsight SQLite DB does not exist: /nonexistent/nsys.sqlite");
  tl_err_clear(&e);
  tl_strpool_free(pool);
  tl_profile_free(&p);
  free(path);
}
END_TEST

/* ------------------------------------------------------------------ inventory */

static const tl_inventory_row *cap(const tl_inventory *inv, const char *name) {
  for (size_t i = 0; i < inv->n; i++)
    if (inv->v[i].capability && strcmp(inv->v[i].item, "capability") == 0 &&
        strcmp(inv->v[i].capability, name) == 0)
      return &inv->v[i];
  ck_abort_msg("capability %s not listed", name);
  return NULL;
}

static void inventory_of(const char *fixture, tl_inventory *inv, tl_profile *p) {
  char *path = tl_fixture(fixture);
  tl_err e = {0};
  ck_assert_int_eq(tl_profile_discover(path, "auto", p, &e), TL_OK);
  int rc = tl_profile_inventory(p, inv, &e);
  ck_assert_msg(rc == TL_OK, "%s", e.msg ? e.msg : "");
  free(path);
}

START_TEST(inventory_basic) {
  tl_inventory inv;
  tl_profile p;
  inventory_of("nsys/nsys_basic.sqlite", &inv, &p);
  static const char *const usable[] = {"device_tasks", "compute_identity",
                                       "communication_identity", "host_api",
                                       "runtime_device_correlation", "memcpy", "memset",
                                       "synchronization", "cuda_events", "nvtx", "string_table",
                                       "export_schema_version", NULL};
  for (int i = 0; usable[i]; i++) {
    const tl_inventory_row *r = cap(&inv, usable[i]);
    ck_assert_msg(r->usable == 1, "%s: %s", usable[i], r->detail ? r->detail : "");
    ck_assert_str_eq(r->source_kind, "cuda_nsys_sqlite");
  }
  ck_assert_str_eq(cap(&inv, "export_schema_version")->detail, "EXPORT_SCHEMA_VERSION 3.11.1");
  const tl_inventory_row *g = cap(&inv, "graph_trace");
  ck_assert_int_eq(g->usable, 0);
  ck_assert_str_eq(g->table_name, "CUPTI_ACTIVITY_KIND_GRAPH_TRACE");
  ck_assert_ptr_nonnull(strstr(g->detail, "CUPTI_ACTIVITY_KIND_GRAPH_TRACE is absent"));
  /* Kernels have graphNodeId, but no CUDA_GRAPH_NODE_EVENTS exists. */
  const tl_inventory_row *n = cap(&inv, "graph_node_identity");
  ck_assert_int_eq(n->usable, 0);
  ck_assert_ptr_nonnull(strstr(n->detail, "CUDA_GRAPH_NODE_EVENTS is absent"));
  tl_inventory_free(&inv);
  tl_profile_free(&p);
}
END_TEST

START_TEST(inventory_graph_and_legacy) {
  tl_inventory inv;
  tl_profile p;
  inventory_of("nsys/nsys_graph.sqlite", &inv, &p);
  ck_assert_int_eq(cap(&inv, "graph_node_identity")->usable, 1);
  ck_assert_int_eq(cap(&inv, "memset")->usable, 0);
  tl_inventory_free(&inv);
  tl_profile_free(&p);

  inventory_of("nsys/nsys_legacy.sqlite", &inv, &p);
  ck_assert_int_eq(cap(&inv, "device_tasks")->usable, 1); /* names matched case-insensitively */
  const tl_inventory_row *ev = cap(&inv, "cuda_events");
  ck_assert_int_eq(ev->usable, 0);
  ck_assert_ptr_nonnull(strstr(ev->detail, "identity-only"));
  ck_assert_int_eq(cap(&inv, "export_schema_version")->usable, 0);
  ck_assert_int_eq(cap(&inv, "host_api")->usable, 0);
  tl_inventory_free(&inv);
  tl_profile_free(&p);

  inventory_of("nsys/nsys_kernel_no_stream.sqlite", &inv, &p);
  const tl_inventory_row *d = cap(&inv, "device_tasks");
  ck_assert_int_eq(d->usable, 0);
  ck_assert_ptr_nonnull(strstr(d->detail, "missing column(s): streamId"));
  tl_inventory_free(&inv);
  tl_profile_free(&p);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("nsys");
  TCase *t = tcase_create("reader");
  tcase_add_test(t, basic_events);
  tcase_add_test(t, basic_calls);
  tcase_add_test(t, text_names);
  tcase_add_test(t, device_filter);
  tcase_add_test(t, graph_nodes);
  tcase_add_test(t, graph_trace);
  tcase_add_test(t, legacy_layout);
  tcase_add_test(t, missing_stream_column);
  tcase_add_test(t, negative_device);
  tcase_add_test(t, stringids_without_value);
  tcase_add_test(t, memcpy_without_start);
  tcase_add_test(t, event_end_without_start);
  tcase_add_test(t, no_kernel_table);
  tcase_add_test(t, inventory_basic);
  tcase_add_test(t, inventory_graph_and_legacy);
  suite_add_tcase(s, t);
  return s;
}

TL_CHECK_MAIN(suite)
