/*
** test_split.c: the Ascend split SQLite reader (ext/source/msprof_split.c).
**
** Expected values are counted by hand from the fixture scripts under
** ../shared/fixtures/ascend_sqlite (split_golden and exact_hlt/split), following
** inputs.md sections 5 and 9.1:
**
**   split_golden/device_0/sqlite/ascend_task.sql  4 AscendTask rows, the 4th with -1 times
**     row 1  stream 3 task 99  100+60   AI_CORE     conn 700 -> TaskInfo linear/MatMul/MIX_AIC
**     row 2  stream 3 task 100 170+40   EVENT_WAIT  conn 701 (device type UNKNOWN)  -> sync
**     row 3  stream 4 task 101 220+40   FFTS_PLUS / SDMA conn 702 + HCCLTaskSingleDevice
**            (hcom_allReduce__golden_0, hcom_allReduce_) -> task type SDMA, communication
**   host/sqlite/hccl.sql  HCCLOP index_id 55, hcom_allReduce_, conn 702, REAL begin/end 9000
**     -> one op event on the envelope of row 3: 220..260 on stream 4
**   host/sqlite/api_event.sql  ApiData (1, 2, 10, aclrtSynchronizeStream) -> 10..20 ns
**
**   exact_hlt/split: 70 AscendTask rows (14 MODEL_EXECUTE, 14 NOTIFY_WAIT, 14 NOTIFY_RECORD,
**   28 KERNEL_AIVEC, each kernel with a TaskInfo row), ApiData 15 rows, first (90, 95, 1000,
**   aclmdlRIExecuteAsync, thread 1), last (1490, 1500, 9999,
**   aclrtSynchronizeStreamWithTimeout).
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "source/source.h"
#include "util/sqlite_api.h"
#include "tl_check.h"

/* ---------------------------------------------------------------- helpers */

typedef struct ev {
  char table[40];
  int64_t rowid;
  uint32_t device, stream;
  int64_t start, end;
  tl_kind kind;
  char name[64], op_name[64], op_type[64], task_type[64], compute_task_type[64];
  char comm_name[64], comm_task_type[64];
  int64_t task_id, global_task_id, correlation_id, context_id, model_id, op_id;
} ev;

typedef struct call {
  char table[40];
  int64_t rowid;
  tl_provider provider;
  char api_name[64], api_type[64];
  int64_t start, end, process_id, thread_id, global_tid, device_id, correlation_id;
} call;

static void copy_str(char *dst, size_t cap, const tl_strpool *pool, uint32_t id) {
  snprintf(dst, cap, "%s", tl_strpool_str(pool, id));
}


/* Reads every event of the profile (all inputs) through the whole-profile cursor. */
static ev *read_events(const tl_profile *p, size_t *n, int64_t *dropped) {
  tl_strpool *pool = tl_strpool_new();
  tl_cursor *c;
  tl_err e = {0};
  ck_assert_msg(tl_events_open(p, NULL, pool, &c, &e) == TL_OK, "open: %s", e.msg);
  size_t cap = 16;
  ev *v = malloc(cap * sizeof *v);
  *n = 0;
  tl_event_row r;
  int rc;
  while ((rc = c->next(c, &r, &e)) == 1) {
    if (*n == cap) v = realloc(v, (cap *= 2) * sizeof *v);
    ev *x = &v[(*n)++];
    memset(x, 0, sizeof *x);
    snprintf(x->table, sizeof x->table, "%s", r.source_table);
    x->rowid = r.source_rowid;
    x->device = r.device_id;
    x->stream = r.stream_id;
    x->start = r.start_ns;
    x->end = r.end_ns;
    x->kind = r.kind;
    copy_str(x->name, sizeof x->name, pool, r.name);
    copy_str(x->op_name, sizeof x->op_name, pool, r.op_name);
    copy_str(x->op_type, sizeof x->op_type, pool, r.op_type);
    copy_str(x->task_type, sizeof x->task_type, pool, r.task_type);
    copy_str(x->compute_task_type, sizeof x->compute_task_type, pool, r.compute_task_type);
    copy_str(x->comm_name, sizeof x->comm_name, pool, r.comm_name);
    copy_str(x->comm_task_type, sizeof x->comm_task_type, pool, r.comm_task_type);
    x->task_id = r.task_id;
    x->global_task_id = r.global_task_id;
    x->correlation_id = r.correlation_id;
    x->context_id = r.context_id;
    x->model_id = r.model_id;
    x->op_id = r.op_id;
  }
  ck_assert_msg(rc == 0, "next: %s", e.msg);
  if (dropped) *dropped = c->dropped_rows;
  c->close(c);
  tl_strpool_free(pool);
  return v;
}

static call *read_calls(const tl_profile *p, size_t *n) {
  tl_strpool *pool = tl_strpool_new();
  tl_cursor *c;
  tl_err e = {0};
  ck_assert_msg(tl_calls_open(p, pool, &c, &e) == TL_OK, "open: %s", e.msg);
  size_t cap = 16;
  call *v = malloc(cap * sizeof *v);
  *n = 0;
  tl_call_row r;
  int rc;
  while ((rc = c->next(c, &r, &e)) == 1) {
    if (*n == cap) v = realloc(v, (cap *= 2) * sizeof *v);
    call *x = &v[(*n)++];
    memset(x, 0, sizeof *x);
    snprintf(x->table, sizeof x->table, "%s", r.source_table);
    x->rowid = r.source_rowid;
    x->provider = r.provider;
    copy_str(x->api_name, sizeof x->api_name, pool, r.api_name);
    copy_str(x->api_type, sizeof x->api_type, pool, r.api_type);
    x->start = r.start_ns;
    x->end = r.end_ns;
    x->process_id = r.process_id;
    x->thread_id = r.thread_id;
    x->global_tid = r.global_tid;
    x->device_id = r.device_id;
    x->correlation_id = r.correlation_id;
  }
  ck_assert_msg(rc == 0, "next: %s", e.msg);
  c->close(c);
  tl_strpool_free(pool);
  return v;
}

static const tl_inventory_row *find_cap(const tl_inventory *inv, const char *capability) {
  for (size_t i = 0; i < inv->n; i++)
    if (inv->v[i].capability && strcmp(inv->v[i].item, "capability") == 0 &&
        strcmp(inv->v[i].capability, capability) == 0)
      return &inv->v[i];
  ck_abort_msg("no capability row %s", capability);
  return NULL;
}

static size_t count_kind(const ev *v, size_t n, tl_kind k) {
  size_t c = 0;
  for (size_t i = 0; i < n; i++) c += v[i].kind == k;
  return c;
}

/* ---------------------------------------------------------------- split_golden */

START_TEST(golden_discovered_as_split) {
  tl_profile p;
  tl_discover_fixture("split_golden/split", &p);
  ck_assert_uint_eq(p.inputs.n, 1);
  ck_assert_ptr_eq(p.inputs.v[0].family, &tl_msprof_split_family);
  ck_assert_int_eq(p.inputs.v[0].primary_file, -1);
  tl_profile_free(&p);
}
END_TEST

START_TEST(golden_events) {
  tl_profile p;
  tl_discover_fixture("split_golden/split", &p);
  size_t n;
  int64_t dropped;
  ev *v = read_events(&p, &n, &dropped);
  /* 3 usable AscendTask rows + 1 HCCLOP op; the -1 row is dropped and counted. */
  ck_assert_uint_eq(n, 4);
  ck_assert_int_eq(dropped, 1);

  ck_assert_str_eq(v[0].table, "AscendTask");
  ck_assert_int_eq(v[0].rowid, 1);
  ck_assert_uint_eq(v[0].device, 0);
  ck_assert_uint_eq(v[0].stream, 3);
  ck_assert_int_eq(v[0].start, 100);
  ck_assert_int_eq(v[0].end, 160);
  ck_assert_int_eq(v[0].kind, TL_KIND_COMPUTE);
  ck_assert_str_eq(v[0].name, "AI_CORE");
  ck_assert_str_eq(v[0].task_type, "AI_CORE");
  ck_assert_str_eq(v[0].op_name, "linear");
  ck_assert_str_eq(v[0].op_type, "MatMul");
  ck_assert_str_eq(v[0].compute_task_type, "MIX_AIC");
  ck_assert_int_eq(v[0].global_task_id, 0); /* synthetic: TaskInfo rowid 1 - 1 */
  ck_assert_int_eq(v[0].task_id, 99);
  ck_assert_int_eq(v[0].correlation_id, 700);
  ck_assert_int_eq(v[0].context_id, 0);
  ck_assert_int_eq(v[0].model_id, 2);

  ck_assert_int_eq(v[1].rowid, 2);
  ck_assert_int_eq(v[1].start, 170);
  ck_assert_int_eq(v[1].end, 210);
  ck_assert_str_eq(v[1].name, "EVENT_WAIT"); /* host_task_type; device type is UNKNOWN */
  ck_assert_int_eq(v[1].kind, TL_KIND_SYNC);
  ck_assert_str_eq(v[1].op_type, "");
  ck_assert_int_eq(v[1].global_task_id, TL_ABSENT);

  ck_assert_int_eq(v[2].rowid, 3);
  ck_assert_uint_eq(v[2].stream, 4);
  ck_assert_int_eq(v[2].start, 220);
  ck_assert_int_eq(v[2].end, 260);
  ck_assert_str_eq(v[2].name, "SDMA"); /* HCCL identity: the device task type wins */
  ck_assert_int_eq(v[2].kind, TL_KIND_COMMUNICATION);
  ck_assert_str_eq(v[2].comm_name, "hcom_allReduce__golden_0");
  ck_assert_str_eq(v[2].comm_task_type, "hcom_allReduce_");
  ck_assert_int_eq(v[2].correlation_id, 702);

  /* HCCLOP begin/end (9000.0, 9001.0) are ignored: geometry is the task envelope. */
  ck_assert_str_eq(v[3].table, "HCCLOP");
  ck_assert_int_eq(v[3].rowid, 1);
  ck_assert_uint_eq(v[3].device, 0);
  ck_assert_uint_eq(v[3].stream, 4);
  ck_assert_int_eq(v[3].start, 220);
  ck_assert_int_eq(v[3].end, 260);
  ck_assert_int_eq(v[3].kind, TL_KIND_COMMUNICATION);
  ck_assert_str_eq(v[3].name, "hcom_allReduce_");
  ck_assert_str_eq(v[3].op_type, "hcom_allReduce_");
  ck_assert_int_eq(v[3].op_id, 55);
  ck_assert_int_eq(v[3].correlation_id, 702);
  free(v);
  tl_profile_free(&p);
}
END_TEST

START_TEST(golden_calls) {
  tl_profile p;
  tl_discover_fixture("split_golden/split", &p);
  size_t n;
  call *v = read_calls(&p, &n);
  ck_assert_uint_eq(n, 1);
  ck_assert_str_eq(v[0].table, "ApiData");
  ck_assert_int_eq(v[0].rowid, 1);
  ck_assert_int_eq(v[0].provider, TL_PROVIDER_ASCEND);
  ck_assert_str_eq(v[0].api_name, "aclrtSynchronizeStream");
  ck_assert_str_eq(v[0].api_type, "cann_api");
  ck_assert_int_eq(v[0].start, 10); /* 1 tick x 10 ns */
  ck_assert_int_eq(v[0].end, 20);
  ck_assert_int_eq(v[0].correlation_id, 10);
  ck_assert_int_eq(v[0].thread_id, TL_ABSENT);
  ck_assert_int_eq(v[0].device_id, TL_ABSENT);
  free(v);
  tl_profile_free(&p);
}
END_TEST

START_TEST(golden_inventory) {
  tl_profile p;
  tl_discover_fixture("split_golden/split", &p);
  tl_inventory inv;
  tl_err e = {0};
  ck_assert_msg(tl_profile_inventory(&p, &inv, &e) == TL_OK, "%s", e.msg);
  const tl_inventory_row *r = find_cap(&inv, "device_tasks");
  ck_assert_int_eq(r->usable, 1);
  ck_assert_int_eq(r->row_count, 3);
  r = find_cap(&inv, "device_tasks_dropped");
  ck_assert_int_eq(r->row_count, 1);
  r = find_cap(&inv, "compute_identity");
  ck_assert_int_eq(r->usable, 1);
  ck_assert_str_eq(r->table_name, "TaskInfo");
  ck_assert_int_eq(r->row_count, 1);
  r = find_cap(&inv, "communication_identity");
  ck_assert_int_eq(r->usable, 1);
  ck_assert_int_eq(r->row_count, 1);
  r = find_cap(&inv, "communication_ops");
  ck_assert_int_eq(r->usable, 1);
  ck_assert_str_eq(r->table_name, "HCCLOP"); /* preferred over HCCLOpSingleDevice */
  r = find_cap(&inv, "host_task_type");
  ck_assert_int_eq(r->usable, 1);
  ck_assert_int_eq(r->row_count, 2);
  r = find_cap(&inv, "host_api");
  ck_assert_int_eq(r->usable, 1);
  ck_assert_int_eq(r->row_count, 1);
  r = find_cap(&inv, "capture_streams"); /* split_golden has no stream_info.db */
  ck_assert_int_eq(r->usable, 0);
  ck_assert_ptr_nonnull(strstr(r->detail, "missing table CaptureStreamInfo"));
  tl_inventory_free(&inv);
  tl_profile_free(&p);
}
END_TEST

START_TEST(golden_fallback) {
  /* An unusable monolithic DB (only a metadata table) beside the split tree. */
  tl_profile p;
  tl_discover_fixture("split_golden/fallback", &p);
  ck_assert_uint_eq(p.inputs.n, 1);
  ck_assert_ptr_eq(p.inputs.v[0].family, &tl_msprof_split_family);
  ck_assert_uint_ge(p.warnings.n, 1);
  ck_assert_ptr_nonnull(strstr(p.warnings.v[0], "using Ascend split SQLite fallback"));
  size_t n;
  ev *v = read_events(&p, &n, NULL);
  ck_assert_uint_eq(n, 4);
  free(v);
  tl_profile_free(&p);
}
END_TEST

/* ---------------------------------------------------------------- exact_hlt */

START_TEST(exact_hlt_events_and_calls) {
  tl_profile p;
  tl_discover_fixture("exact_hlt/split", &p);
  ck_assert_ptr_eq(p.inputs.v[0].family, &tl_msprof_split_family);
  size_t n;
  int64_t dropped;
  ev *v = read_events(&p, &n, &dropped);
  ck_assert_uint_eq(n, 70);
  ck_assert_int_eq(dropped, 0);
  size_t with_identity = 0;
  for (size_t i = 0; i < n; i++) with_identity += v[i].op_type[0] != 0;
  ck_assert_uint_eq(with_identity, 28);
  ck_assert_uint_eq(count_kind(v, n, TL_KIND_COMPUTE), 28);
  ck_assert_uint_eq(count_kind(v, n, TL_KIND_GRAPH_LAUNCH), 14);
  ck_assert_uint_eq(count_kind(v, n, TL_KIND_CONTROL), 28);
  ck_assert_uint_eq(count_kind(v, n, TL_KIND_COMMUNICATION), 0);
  /* Row 3: stream 42 task 3 at 116+1, TaskInfo row 1 (PrefillHeadOp). */
  ck_assert_int_eq(v[2].rowid, 3);
  ck_assert_uint_eq(v[2].stream, 42);
  ck_assert_int_eq(v[2].start, 116);
  ck_assert_int_eq(v[2].end, 117);
  ck_assert_str_eq(v[2].op_type, "PrefillHeadOp");
  ck_assert_str_eq(v[2].compute_task_type, "KERNEL_AIVEC");
  ck_assert_int_eq(v[2].global_task_id, 0);
  ck_assert_int_eq(v[2].model_id, 10);
  free(v);

  call *c = read_calls(&p, &n);
  ck_assert_uint_eq(n, 15);
  ck_assert_str_eq(c[0].api_name, "aclmdlRIExecuteAsync");
  ck_assert_int_eq(c[0].start, 900);
  ck_assert_int_eq(c[0].end, 950);
  ck_assert_int_eq(c[0].correlation_id, 1000);
  ck_assert_int_eq(c[0].thread_id, 1);
  ck_assert_str_eq(c[14].api_name, "aclrtSynchronizeStreamWithTimeout");
  ck_assert_int_eq(c[14].start, 14900);
  ck_assert_int_eq(c[14].end, 15000);
  ck_assert_int_eq(c[14].correlation_id, 9999);
  free(c);
  tl_profile_free(&p);
}
END_TEST

START_TEST(incomplete_task_info) {
  tl_profile p;
  tl_discover_fixture("exact_hlt/mut_incomplete_split_task_info", &p);
  tl_inventory inv;
  tl_err e = {0};
  ck_assert_msg(tl_profile_inventory(&p, &inv, &e) == TL_OK, "%s", e.msg);
  const tl_inventory_row *r = find_cap(&inv, "compute_identity");
  ck_assert_int_eq(r->usable, 0);
  ck_assert_ptr_nonnull(r->detail);
  ck_assert_msg(strstr(r->detail, "op_type") != NULL, "detail: %s", r->detail);
  ck_assert_msg(strstr(r->detail, "ge_info.db") != NULL, "detail: %s", r->detail);
  tl_inventory_free(&inv);
  /* Without compute identity the 28 kernels are unnamed: kind other, never compute. */
  size_t n;
  ev *v = read_events(&p, &n, NULL);
  ck_assert_uint_eq(n, 70);
  ck_assert_uint_eq(count_kind(v, n, TL_KIND_COMPUTE), 0);
  ck_assert_uint_eq(count_kind(v, n, TL_KIND_OTHER), 28);
  free(v);
  tl_profile_free(&p);
}
END_TEST

/* ---------------------------------------------------------------- equivalence */

static int cmp_ev(const void *a, const void *b) {
  const ev *x = a, *y = b;
  if (x->device != y->device) return x->device < y->device ? -1 : 1;
  if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
  int c = strcmp(x->name, y->name);
  return c ? c : strcmp(x->op_type, y->op_type);
}

/* The split tree and its monolithic twin give the same (device, stream, start, end, kind,
** name, op_type) multiset. */
static void check_equivalent(const char *split_rel, const char *mono_rel) {
  tl_profile ps, pm;
  tl_discover_fixture(split_rel, &ps);
  tl_discover_fixture(mono_rel, &pm);
  ck_assert_ptr_eq(ps.inputs.v[0].family, &tl_msprof_split_family);
  ck_assert_ptr_eq(pm.inputs.v[0].family, &tl_msprof_family);
  size_t ns, nm;
  ev *s = read_events(&ps, &ns, NULL), *m = read_events(&pm, &nm, NULL);
  ck_assert_uint_eq(ns, nm);
  qsort(s, ns, sizeof *s, cmp_ev);
  qsort(m, nm, sizeof *m, cmp_ev);
  for (size_t i = 0; i < ns; i++)
    ck_assert_msg(cmp_ev(&s[i], &m[i]) == 0,
                  "event %zu differs: split (%u,%u,%lld,%lld,%d,%s,%s) mono (%u,%u,%lld,%lld,%d,%s,%s)",
                  i, s[i].device, s[i].stream, (long long)s[i].start, (long long)s[i].end,
                  s[i].kind, s[i].name, s[i].op_type, m[i].device, m[i].stream,
                  (long long)m[i].start, (long long)m[i].end, m[i].kind, m[i].name, m[i].op_type);
  free(s);
  free(m);
  tl_profile_free(&ps);
  tl_profile_free(&pm);
}

START_TEST(golden_equivalent_to_monolithic) {
  check_equivalent("split_golden/split", "split_golden/mono");
}
END_TEST

START_TEST(exact_hlt_equivalent_to_monolithic) {
  check_equivalent("exact_hlt/split", "exact_hlt/mono");
}
END_TEST

/* ---------------------------------------------------------------- errors */

/* A scratch split profile: PROF_0 under a fresh temporary directory. */
static char *scratch_dir(void) {
  char tmpl[] = "/tmp/tl_split_XXXXXX";
  char *d = mkdtemp(tmpl);
  ck_assert_ptr_nonnull(d);
  char *prof = malloc(strlen(d) + 16);
  sprintf(prof, "%s/PROF_0", d);
  ck_assert_int_eq(mkdir(prof, 0755), 0);
  return prof;
}

static char *make_db(const char *prof, const char *rel, const char *sql) {
  char *path = malloc(strlen(prof) + strlen(rel) + 2);
  sprintf(path, "%s/%s", prof, rel);
  /* mkdir -p of the parents */
  for (char *s = path + strlen(prof) + 1; *s; s++)
    if (*s == '/') {
      *s = 0;
      mkdir(path, 0755);
      *s = '/';
    }
  sqlite3 *db;
  ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
  char *err = NULL;
  ck_assert_msg(sqlite3_exec(db, sql, NULL, NULL, &err) == SQLITE_OK, "%s", err);
  sqlite3_close(db);
  return path;
}

/* A profile holding one split input over the given files (device from device_N/). */
static void split_profile(tl_profile *p, const char *prof, char **files, int nfiles) {
  memset(p, 0, sizeof *p);
  tl_input in;
  memset(&in, 0, sizeof in);
  in.family = &tl_msprof_split_family;
  in.path = strdup(prof);
  in.primary_file = -1;
  in.stream_info_status = "stream_info_missing";
  ck_assert_int_eq(TL_VEC_PUSH(&p->inputs, in), 0);
  p->path = strdup(prof);
  for (int i = 0; i < nfiles; i++) {
    const char *d = strstr(files[i], "/device_");
    ck_assert_int_ge(tl_profile_add_file(p, files[i], 0, TL_FILE_SPLIT_PART, d ? atoi(d + 8) : -1),
                     0);
  }
}

/* Removes the scratch directory that holds PROF_0. */
static void remove_tree(const char *prof, char **files, int nfiles) {
  char cmd[512];
  for (int i = 0; i < nfiles; i++) free(files[i]);
  snprintf(cmd, sizeof cmd, "rm -rf '%.*s'", (int)(strlen(prof) - strlen("/PROF_0")), prof);
  ck_assert_int_eq(system(cmd), 0);
}

static char *open_error(const tl_profile *p, int calls) {
  tl_strpool *pool = tl_strpool_new();
  tl_cursor *c = NULL;
  tl_err e = {0};
  int rc = calls ? tl_msprof_split_family.calls_open(p, 0, pool, &c, &e)
                 : tl_msprof_split_family.events_open(p, 0, NULL, pool, &c, &e);
  if (rc == TL_OK) {
    /* The error may come from the first row instead. */
    union {
      tl_event_row ev;
      tl_call_row call;
    } row;
    while ((rc = c->next(c, &row, &e)) == 1) {
    }
    c->close(c);
    rc = rc < 0 ? TL_ERROR : TL_OK;
  }
  tl_strpool_free(pool);
  ck_assert_int_eq(rc, TL_ERROR);
  return tl_err_take(&e);
}

START_TEST(missing_ascend_task) {
  char *prof = scratch_dir();
  char *files[1] = {make_db(prof, "host/sqlite/api_event.db",
                            "CREATE TABLE ApiData(start, end, connection_id, id);")};
  tl_profile p;
  split_profile(&p, prof, files, 1);
  char *msg = open_error(&p, 0);
  char want[600];
  snprintf(want, sizeof want,
           "split SQLite profile is missing required device_*/sqlite/ascend_task.db:AscendTask "
           "table: %s",
           prof);
  ck_assert_str_eq(msg, want);
  free(msg);
  tl_profile_free(&p);
  remove_tree(prof, files, 1);
  free(prof);
}
END_TEST

START_TEST(incompatible_ascend_task) {
  char *prof = scratch_dir();
  char *files[1] = {make_db(prof, "device_0/sqlite/ascend_task.db",
                            "CREATE TABLE AscendTask(start_time, duration, stream_id);"
                            "INSERT INTO AscendTask VALUES(1, 2, 3);")};
  tl_profile p;
  split_profile(&p, prof, files, 1);
  char *msg = open_error(&p, 0);
  char want[600];
  snprintf(want, sizeof want, "split SQLite profile has an incompatible AscendTask schema: %s",
           files[0]);
  ck_assert_msg(strncmp(msg, want, strlen(want)) == 0, "got: %s", msg);
  ck_assert_ptr_nonnull(strstr(msg, "device_task_type"));
  ck_assert_ptr_nonnull(strstr(msg, "host_task_type"));
  free(msg);
  tl_profile_free(&p);
  remove_tree(prof, files, 1);
  free(prof);
}
END_TEST

START_TEST(api_ticks_overflow) {
  /* 922337203685477581 x 10 exceeds INT64_MAX (9223372036854775807). */
  char *prof = scratch_dir();
  char *files[1] = {make_db(prof, "host/sqlite/api_event.db",
                            "CREATE TABLE ApiData(start, end, connection_id, id);"
                            "INSERT INTO ApiData VALUES(1, 922337203685477581, 5, 'x');")};
  tl_profile p;
  split_profile(&p, prof, files, 1);
  char *msg = open_error(&p, 1);
  ck_assert_msg(strstr(msg, "overflow") && strstr(msg, files[0]), "got: %s", msg);
  free(msg);
  tl_profile_free(&p);
  remove_tree(prof, files, 1);
  free(prof);
}
END_TEST

START_TEST(op_skip_rules) {
  /* Two HCCLOP rows share (device 0, connection 9): both are ambiguous and skipped. An op
  ** on connection 8 whose linked tasks have different names is skipped. Connection 7 has
  ** one op and two consistent tasks on streams 1 (10 ns) and 2 (30 ns): its envelope is
  ** 100..160 on stream 2. An op with connection -1 is skipped. */
  char *prof = scratch_dir();
  char *files[3] = {
      make_db(prof, "device_0/sqlite/ascend_task.db",
              "CREATE TABLE AscendTask(stream_id, task_id, context_id, start_time, duration,"
              " host_task_type, device_task_type, connection_id);"
              "INSERT INTO AscendTask VALUES(1, 1, 0, 100, 10, 'X', 'SDMA', 7);"
              "INSERT INTO AscendTask VALUES(2, 2, 0, 130, 30, 'X', 'SDMA', 7);"
              "INSERT INTO AscendTask VALUES(1, 3, 0, 200, 10, 'X', 'SDMA', 8);"
              "INSERT INTO AscendTask VALUES(1, 4, 0, 220, 10, 'X', 'SDMA', 8);"
              "INSERT INTO AscendTask VALUES(1, 5, 0, 300, 10, 'X', 'SDMA', 9);"),
      make_db(prof, "device_0/sqlite/hccl_single_device.db",
              "CREATE TABLE HCCLTaskSingleDevice(stream_id, task_id, context_id, op_name,"
              " hccl_name);"
              "INSERT INTO HCCLTaskSingleDevice VALUES(1, 1, 0, 'a', 'h');"
              "INSERT INTO HCCLTaskSingleDevice VALUES(2, 2, 0, 'a', 'h');"
              "INSERT INTO HCCLTaskSingleDevice VALUES(1, 3, 0, 'b', 'h');"
              "INSERT INTO HCCLTaskSingleDevice VALUES(1, 4, 0, 'c', 'h');"
              "INSERT INTO HCCLTaskSingleDevice VALUES(1, 5, 0, 'd', 'h');"),
      make_db(prof, "host/sqlite/hccl.db",
              "CREATE TABLE HCCLOP(device_id, op_name, op_type, connection_id);"
              "INSERT INTO HCCLOP VALUES(0, 'op7', 't', 7);"
              "INSERT INTO HCCLOP VALUES(0, 'op8', 't', 8);"
              "INSERT INTO HCCLOP VALUES(0, 'op9a', 't', 9);"
              "INSERT INTO HCCLOP VALUES(0, 'op9b', 't', 9);"
              "INSERT INTO HCCLOP VALUES(0, 'opm', 't', -1);")};
  tl_profile p;
  split_profile(&p, prof, files, 3);
  size_t n;
  int64_t dropped;
  ev *v = read_events(&p, &n, &dropped);
  ck_assert_uint_eq(n, 6); /* 5 tasks + op7 */
  ck_assert_int_eq(dropped, 4);
  ck_assert_str_eq(v[5].name, "op7");
  ck_assert_int_eq(v[5].start, 100);
  ck_assert_int_eq(v[5].end, 160);
  ck_assert_uint_eq(v[5].stream, 2);
  ck_assert_int_eq(v[5].op_id, 1); /* no index_id column: the rowid */
  ck_assert_str_eq(v[0].name, "SDMA"); /* HCCL identity keeps the device task type */
  free(v);
  tl_profile_free(&p);
  remove_tree(prof, files, 3);
  free(prof);
}
END_TEST

START_TEST(host_task_fallback) {
  /* Empty host_task_type: HostTask by connection_id, else the device task type. */
  char *prof = scratch_dir();
  char *files[2] = {
      make_db(prof, "device_3/sqlite/ascend_task.db",
              "CREATE TABLE AscendTask(stream_id, task_id, context_id, start_time, duration,"
              " host_task_type, device_task_type, connection_id, model_id);"
              "INSERT INTO AscendTask VALUES(1, 1, 0, 10, 5, '', 'AI_CORE', 50, 4294967295);"
              "INSERT INTO AscendTask VALUES(1, 2, 0, 20, 5, NULL, 'MEMCPY_ASYNC', 51, -3);"),
      make_db(prof, "host/sqlite/runtime.db",
              "CREATE TABLE HostTask(connection_id, task_type);"
              "INSERT INTO HostTask VALUES(50, 'NOTIFY_WAIT');")};
  tl_profile p;
  split_profile(&p, prof, files, 2);
  size_t n;
  ev *v = read_events(&p, &n, NULL);
  ck_assert_uint_eq(n, 2);
  ck_assert_uint_eq(v[0].device, 3);
  ck_assert_str_eq(v[0].name, "NOTIFY_WAIT");
  ck_assert_int_eq(v[0].kind, TL_KIND_CONTROL);
  ck_assert_int_eq(v[0].model_id, TL_ABSENT);
  ck_assert_str_eq(v[1].name, "MEMCPY_ASYNC");
  ck_assert_int_eq(v[1].kind, TL_KIND_DATA_MOVE);
  ck_assert_int_eq(v[1].model_id, TL_ABSENT);
  free(v);
  tl_profile_free(&p);
  remove_tree(prof, files, 2);
  free(prof);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("split");
  TCase *t = tcase_create("split");
  tcase_set_timeout(t, 30);
  tcase_add_test(t, golden_discovered_as_split);
  tcase_add_test(t, golden_events);
  tcase_add_test(t, golden_calls);
  tcase_add_test(t, golden_inventory);
  tcase_add_test(t, golden_fallback);
  tcase_add_test(t, exact_hlt_events_and_calls);
  tcase_add_test(t, incomplete_task_info);
  tcase_add_test(t, golden_equivalent_to_monolithic);
  tcase_add_test(t, exact_hlt_equivalent_to_monolithic);
  tcase_add_test(t, missing_ascend_task);
  tcase_add_test(t, incompatible_ascend_task);
  tcase_add_test(t, api_ticks_overflow);
  tcase_add_test(t, op_skip_rules);
  tcase_add_test(t, host_task_fallback);
  suite_add_tcase(s, t);
  return s;
}

TL_CHECK_MAIN(suite)
