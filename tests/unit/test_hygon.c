/*
** test_hygon.c: the Hygon hipprof reader (ext/source/hygon.c).
**
** Fixture: tests/fixtures/make_hygon.py materializes $TRACELOOM_BUILD/fixtures/hygon/.
** Expected values are read off the rows of that script (B = 1712345678901234567 ns):
**
**   HIPOPS_4242 rows (rowid: begin, end, dev, queue, Name -> STR_TABLE, _Index)
**     1: B+2000..B+2500  0/0  Cijk_Alik_Bljk_BBH_MT256x256x16_MI250  1  -> MatMul, HIP_KERNEL
**     2: B+2600..B+2900  0/0  flash_fwd_kernel_bf16                  2  -> FlashAttention
**     3: B+2950..B+3000  0/1  Cijk_B_PostGSU                         2  -> unlifted (helper)
**     4: B+3100..B+3150  1/0  my_custom_decode_kernel                4  -> unclassified
**     5: end = start, 6: end < start                                    -> dropped
**     7: B+3400..B+3450  0/0  Name 99 (no STR_TABLE row)            6  -> hip_kernel_99
**     8: B+3500..B+3520  0/0  direct_copy_kernel                     7  -> unlifted (helper)
**   HIPCOPY_4242 row 1: B+1500..B+1600 0/2 Kind 1 _Index 3 Bytes 4096 MemoryType 2;
**                row 2: end < start -> dropped
**   HIP_4242: 3 calls (hipLaunchKernel x2, hipMemcpyAsync), a 4th of zero length dropped.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/source.h"
#include "tl_check.h"

#define B 1712345678901234567LL

typedef struct ev {
  char table[40];
  int64_t rowid;
  uint32_t device, stream;
  int64_t start, end, task_id, global_task_id, correlation_id;
  tl_kind kind;
  char name[80], op_name[80], op_type[80], task_type[40];
} ev;


static ev *read_events(const tl_profile *p, size_t *n, int64_t *dropped) {
  tl_strpool *pool = tl_strpool_new();
  tl_cursor *c;
  tl_err e = {0};
  ck_assert_msg(tl_events_open(p, NULL, pool, &c, &e) == TL_OK, "open: %s", e.msg);
  ev *v = calloc(64, sizeof *v);
  *n = 0;
  tl_event_row r;
  int rc;
  while ((rc = c->next(c, &r, &e)) == 1) {
    ck_assert_uint_lt(*n, 64);
    ev *x = &v[(*n)++];
    snprintf(x->table, sizeof x->table, "%s", r.source_table);
    x->rowid = r.source_rowid;
    x->device = r.device_id;
    x->stream = r.stream_id;
    x->start = r.start_ns;
    x->end = r.end_ns;
    x->task_id = r.task_id;
    x->global_task_id = r.global_task_id;
    x->correlation_id = r.correlation_id;
    x->kind = r.kind;
    snprintf(x->name, sizeof x->name, "%s", tl_strpool_str(pool, r.name));
    snprintf(x->op_name, sizeof x->op_name, "%s", tl_strpool_str(pool, r.op_name));
    snprintf(x->op_type, sizeof x->op_type, "%s", tl_strpool_str(pool, r.op_type));
    snprintf(x->task_type, sizeof x->task_type, "%s", tl_strpool_str(pool, r.task_type));
  }
  ck_assert_msg(rc == 0, "next: %s", e.msg);
  *dropped = c->dropped_rows;
  c->close(c);
  tl_strpool_free(pool);
  return v;
}

static void check_kernel(const ev *x, int64_t rowid, uint32_t dev, uint32_t queue,
                         int64_t start, int64_t end, const char *name, const char *op_type,
                         const char *task_type, int64_t index) {
  ck_assert_str_eq(x->table, "HIPOPS_4242");
  ck_assert_int_eq(x->rowid, rowid);
  ck_assert_uint_eq(x->device, dev);
  ck_assert_uint_eq(x->stream, queue);
  ck_assert_int_eq(x->start, start);
  ck_assert_int_eq(x->end, end);
  ck_assert_int_eq(x->kind, TL_KIND_COMPUTE);
  ck_assert_str_eq(x->name, name);
  ck_assert_str_eq(x->op_name, name);
  ck_assert_str_eq(x->op_type, op_type);
  ck_assert_str_eq(x->task_type, task_type);
  ck_assert_int_eq(x->task_id, index);
  ck_assert_int_eq(x->global_task_id, index);
  ck_assert_int_eq(x->correlation_id, TL_ABSENT);
}

START_TEST(discovered_as_hygon) {
  tl_profile p;
  tl_discover_fixture("hygon/hipprof.db", &p);
  ck_assert_uint_eq(p.inputs.n, 1);
  ck_assert_ptr_eq(p.inputs.v[0].family, tl_family_by_source_kind("hygon_sqlite"));
  tl_profile_free(&p);
}
END_TEST

START_TEST(events) {
  tl_profile p;
  tl_discover_fixture("hygon/hipprof.db", &p);
  size_t n;
  int64_t dropped;
  ev *v = read_events(&p, &n, &dropped);
  ck_assert_uint_eq(n, 7);
  ck_assert_int_eq(dropped, 3);
  check_kernel(&v[0], 1, 0, 0, B + 2000, B + 2500, "Cijk_Alik_Bljk_BBH_MT256x256x16_MI250",
               "MatMul", "HIP_KERNEL", 1);
  check_kernel(&v[1], 2, 0, 0, B + 2600, B + 2900, "flash_fwd_kernel_bf16", "FlashAttention",
               "HIP_KERNEL", 2);
  /* helper kernels are not lifted: a HIP_KERNEL under its own name, as the reference reads it */
  check_kernel(&v[2], 3, 0, 1, B + 2950, B + 3000, "Cijk_B_PostGSU", "Cijk_B_PostGSU",
               "HIP_KERNEL", 2);
  check_kernel(&v[3], 4, 1, 0, B + 3100, B + 3150, "my_custom_decode_kernel",
               "my_custom_decode_kernel", "HIP_KERNEL", 4);
  check_kernel(&v[4], 7, 0, 0, B + 3400, B + 3450, "hip_kernel_99", "hip_kernel_99",
               "HIP_KERNEL", 6);
  check_kernel(&v[5], 8, 0, 0, B + 3500, B + 3520, "direct_copy_kernel", "direct_copy_kernel",
               "HIP_KERNEL", 7);
  ck_assert_str_eq(v[6].table, "HIPCOPY_4242");
  ck_assert_int_eq(v[6].rowid, 1);
  ck_assert_uint_eq(v[6].device, 0);
  ck_assert_uint_eq(v[6].stream, 2);
  ck_assert_int_eq(v[6].start, B + 1500);
  ck_assert_int_eq(v[6].end, B + 1600);
  ck_assert_int_eq(v[6].kind, TL_KIND_DATA_MOVE);
  ck_assert_str_eq(v[6].name, "hip_copy kind=1 memory_type=2 bytes=4096");
  ck_assert_str_eq(v[6].op_type, "DataMove");
  ck_assert_str_eq(v[6].task_type, "MEMCPY");
  ck_assert_int_eq(v[6].task_id, 3);
  free(v);
  tl_profile_free(&p);
}
END_TEST

START_TEST(calls) {
  tl_profile p;
  tl_discover_fixture("hygon/hipprof.db", &p);
  tl_strpool *pool = tl_strpool_new();
  tl_cursor *c;
  tl_err e = {0};
  ck_assert_msg(tl_calls_open(&p, pool, &c, &e) == TL_OK, "%s", e.msg);
  static const char *const names[3] = {"hipLaunchKernel", "hipLaunchKernel", "hipMemcpyAsync"};
  static const int64_t starts[3] = {B + 1000, B + 1200, B + 1400};
  static const int64_t ends[3] = {B + 1100, B + 1300, B + 1450};
  static const int64_t tids[3] = {4243, 4243, 4244};
  tl_call_row r;
  int i = 0, rc;
  while ((rc = c->next(c, &r, &e)) == 1) {
    ck_assert_int_lt(i, 3);
    ck_assert_str_eq(r.source_table, "HIP_4242");
    ck_assert_int_eq(r.source_rowid, i + 1);
    ck_assert_int_eq(r.provider, TL_PROVIDER_HYGON);
    ck_assert_str_eq(tl_strpool_str(pool, r.api_name), names[i]);
    ck_assert_str_eq(tl_strpool_str(pool, r.api_type), "hip_api");
    ck_assert_int_eq(r.start_ns, starts[i]);
    ck_assert_int_eq(r.end_ns, ends[i]);
    ck_assert_int_eq(r.process_id, 4242);
    ck_assert_int_eq(r.thread_id, tids[i]);
    ck_assert_int_eq(r.correlation_id, TL_ABSENT);
    i++;
  }
  ck_assert_int_eq(rc, 0);
  ck_assert_int_eq(i, 3);
  ck_assert_int_eq(c->dropped_rows, 1);
  c->close(c);
  tl_strpool_free(pool);
  tl_profile_free(&p);
}
END_TEST

START_TEST(inventory) {
  tl_profile p;
  tl_discover_fixture("hygon/hipprof.db", &p);
  tl_inventory inv;
  tl_err e = {0};
  ck_assert_msg(tl_profile_inventory(&p, &inv, &e) == TL_OK, "%s", e.msg);
  int seen = 0;
  for (size_t i = 0; i < inv.n; i++) {
    const tl_inventory_row *r = &inv.v[i];
    if (strcmp(r->item, "capability") != 0 || !r->capability) continue;
    if (strcmp(r->capability, "device_kernels") == 0) {
      ck_assert_str_eq(r->table_name, "HIPOPS_4242");
      ck_assert_int_eq(r->usable, 1);
      ck_assert_int_eq(r->row_count, 8);
      seen |= 1;
    } else if (strcmp(r->capability, "device_copies") == 0) {
      ck_assert_str_eq(r->table_name, "HIPCOPY_4242");
      ck_assert_int_eq(r->usable, 1);
      ck_assert_int_eq(r->row_count, 2);
      seen |= 2;
    } else if (strcmp(r->capability, "host_api") == 0) {
      ck_assert_str_eq(r->table_name, "HIP_4242"); /* HIPTX_4242 is not an API table */
      ck_assert_int_eq(r->row_count, 4);
      seen |= 4;
    } else if (strcmp(r->capability, "string_table") == 0) {
      ck_assert_int_eq(r->usable, 1);
      seen |= 8;
    }
  }
  ck_assert_int_eq(seen, 15);
  tl_inventory_free(&inv);
  tl_profile_free(&p);
}
END_TEST

START_TEST(incomplete_hipops) {
  tl_profile p;
  tl_discover_fixture("hygon/neg_incomplete_hipops.db", &p);
  ck_assert_ptr_eq(p.inputs.v[0].family, tl_family_by_source_kind("hygon_sqlite"));
  tl_strpool *pool = tl_strpool_new();
  tl_cursor *c = NULL;
  tl_err e = {0};
  ck_assert_int_eq(tl_family_by_source_kind("hygon_sqlite")->events_open(&p, 0, NULL, pool, &c, &e), TL_ERROR);
  ck_assert_ptr_null(c);
  ck_assert_ptr_nonnull(strstr(e.msg, "HIPOPS_7"));
  ck_assert_ptr_nonnull(strstr(e.msg, "neg_incomplete_hipops.db"));
  ck_assert_ptr_nonnull(strstr(e.msg, "missing required column(s): dev_id, queue_id"));
  tl_err_clear(&e);
  tl_strpool_free(pool);
  tl_profile_free(&p);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("hygon");
  TCase *t = tcase_create("hygon");
  tcase_add_test(t, discovered_as_hygon);
  tcase_add_test(t, events);
  tcase_add_test(t, calls);
  tcase_add_test(t, inventory);
  tcase_add_test(t, incomplete_hipops);
  suite_add_tcase(s, t);
  return s;
}

TL_CHECK_MAIN(suite)
