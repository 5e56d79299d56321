/*
** test_perfetto_gz.c: the parallel gzip writer (ext/export/gzpar.c) and the Perfetto export
** that uses it, in process, so that `make test-asan` checks the worker threads (deflate, the
** side reader of a database file, the second protobuf part), the readers and their error
** paths for leaks and undefined behaviour; and the placing of two parts written at once.
*/
#include "tl_check.h"
#include "sqlite-traceloom.h"
#include "util/sqlite_api.h"
#include "export/gzpar.h"
#include "export/perfetto.h"
#include "export/pf.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>


/* Repetitive but not constant text of n bytes, a few chunks long. */
static char *sample(size_t n) {
  char *p = malloc(n);
  ck_assert_ptr_nonnull(p);
  for (size_t i = 0; i < n; i++) p[i] = "{\"ph\":\"X\",\"ts\":0123456789}\n"[(i * 7 + i / 4099) % 27];
  return p;
}

static char *read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *p = malloc((size_t)len + 1);
  ck_assert_ptr_nonnull(p);
  *n = fread(p, 1, (size_t)len, f);
  fclose(f);
  return p;
}

/* Compresses data with nthreads workers, in uneven writes; returns the file's bytes. */
static char *gz_with(const char *data, size_t n, int nthreads, size_t *out_n) {
  char path[] = "/tmp/tl_gzpar_XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  tl_err e = {0};
  tl_gzpar *g;
  ck_assert_int_eq(tl_gzpar_open(&g, fd, 1, nthreads, path, &e), TL_OK);
  for (size_t off = 0, step = 1; off < n; off += step, step = step * 3 + 1) {
    if (off + step > n) step = n - off;
    ck_assert_msg(tl_gzpar_write(g, data + off, step, &e) == TL_OK, "%s", e.msg);
  }
  ck_assert_msg(tl_gzpar_finish(g, &e) == TL_OK, "%s", e.msg);
  tl_gzpar_free(g);
  close(fd);
  char *out = read_file(path, out_n);
  unlink(path);
  return out;
}

/* One gzip member (nothing after its trailer) whose content is data. */
static void check_member(const char *gz, size_t gz_n, const char *data, size_t n) {
  z_stream z;
  memset(&z, 0, sizeof z);
  ck_assert_int_eq(inflateInit2(&z, 16 + 15), Z_OK);
  char *out = malloc(n + 16);
  z.next_in = (Bytef *)(uintptr_t)gz;
  z.avail_in = (uInt)gz_n;
  z.next_out = (Bytef *)out;
  z.avail_out = (uInt)(n + 16);
  ck_assert_int_eq(inflate(&z, Z_FINISH), Z_STREAM_END);
  ck_assert_uint_eq(z.avail_in, 0);
  ck_assert_uint_eq(z.total_out, n);
  ck_assert(memcmp(out, data, n) == 0);
  inflateEnd(&z);
  free(out);
}

START_TEST(gzpar_roundtrip_and_thread_independent) {
  /* 3.5 chunks, an exact multiple of the chunk size, and nothing at all. */
  size_t sizes[] = {TL_GZPAR_CHUNK * 7 / 2, TL_GZPAR_CHUNK * 2, 0};
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
    size_t n = sizes[k];
    char *data = sample(n + 1);
    size_t n1, n3;
    char *g1 = gz_with(data, n, 1, &n1), *g3 = gz_with(data, n, 3, &n3);
    check_member(g1, n1, data, n);
    ck_assert_uint_eq(n1, n3);
    ck_assert(memcmp(g1, g3, n1) == 0);
    free(g1);
    free(g3);
    free(data);
  }
}
END_TEST

START_TEST(gzpar_write_error_is_reported) {
  int fd = open("/dev/full", O_WRONLY);
  if (fd < 0) return; /* no /dev/full: nothing to test here */
  tl_err e = {0};
  tl_gzpar *g = NULL;
  int rc = tl_gzpar_open(&g, fd, 1, 2, "/dev/full", &e);
  char *data = sample(TL_GZPAR_CHUNK * 3);
  if (rc == TL_OK) rc = tl_gzpar_write(g, data, TL_GZPAR_CHUNK * 3, &e);
  if (rc == TL_OK) rc = tl_gzpar_finish(g, &e);
  ck_assert_int_eq(rc, TL_ERROR);
  ck_assert_msg(e.msg && strstr(e.msg, "cannot write '/dev/full'"), "%s", e.msg ? e.msg : "?");
  tl_gzpar_free(g);
  tl_err_clear(&e);
  free(data);
  close(fd);
}
END_TEST

/* Exports to dir/name with TRACELOOM_EXPORT_THREADS=threads; returns the file's bytes. */
static char *export_with(sqlite3 *db, const char *dir, const char *name, const char *threads,
                         int64_t *events, size_t *n) {
  char path[128];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  setenv("TRACELOOM_EXPORT_THREADS", threads, 1);
  tl_err e = {0};
  *events = 0;
  ck_assert_msg(tl_export_perfetto(db, path, NULL, events, &e) == TL_OK, "%s", e.msg);
  unsetenv("TRACELOOM_EXPORT_THREADS");
  char *p = read_file(path, n);
  unlink(path);
  return p;
}

START_TEST(export_gz_equals_plain_and_errors_clean_up) {
  char dir[] = "/tmp/tl_pfgz_XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char dbpath[64];
  snprintf(dbpath, sizeof dbpath, "%s/a.db", dir);
  /* A database file, so that the export's side reader opens a second connection. */
  sqlite3 *db = NULL;
  ck_assert_int_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
  char *err = NULL;
  ck_assert_msg(sqlite3_traceloom_init(db, &err, NULL) == SQLITE_OK, "init: %s", err ? err : "?");
  char *fixture = tl_fixture("gen/ascend_s5_l3_k6");
  sqlite3_stmt *st;
  ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT traceloom_analyze(?1)", -1, &st, NULL), SQLITE_OK);
  sqlite3_bind_text(st, 1, fixture, -1, SQLITE_TRANSIENT);
  ck_assert_msg(sqlite3_step(st) == SQLITE_ROW, "%s", sqlite3_errmsg(db));
  sqlite3_finalize(st);
  free(fixture);

  /* JSON, plain and gzip, with the side reader and without: the same bytes. */
  int64_t n1 = 0, n2 = 0, n3 = 0;
  size_t pn, gn, sn;
  char *p = export_with(db, dir, "t.json", "2", &n1, &pn);
  char *g = export_with(db, dir, "t.json.gz", "2", &n2, &gn);
  char *q = export_with(db, dir, "s.json", "1", &n3, &sn);
  ck_assert_int_gt(n1, 0);
  ck_assert_int_eq(n1, n2);
  ck_assert_int_eq(n1, n3);
  check_member(g, gn, p, pn);
  ck_assert_uint_eq(sn, pn);
  ck_assert(memcmp(q, p, pn) == 0);
  free(p), free(g), free(q);

  /* Protobuf: lanes split between two encoding threads, or encoded in turn: the same
  ** bytes; the first byte is Trace.packet (field 1, length-delimited). */
  p = export_with(db, dir, "t.pftrace", "2", &n2, &pn);
  q = export_with(db, dir, "s.pftrace", "1", &n3, &sn);
  ck_assert_int_eq(n2, n1);
  ck_assert_int_eq(n3, n1);
  ck_assert_uint_gt(pn, 0);
  ck_assert_int_eq((unsigned char)p[0], 0x0a);
  ck_assert_uint_eq(sn, pn);
  ck_assert(memcmp(q, p, pn) == 0);
  /* Through gzip the worker's part comes back from a file of its own: the same bytes. */
  g = export_with(db, dir, "t.pftrace.gz", "2", &n3, &gn);
  ck_assert_int_eq(n3, n1);
  check_member(g, gn, p, pn);
  free(p), free(q), free(g);

  /* An output directory that does not exist: a clear error, nothing written. */
  char missing[96];
  snprintf(missing, sizeof missing, "%s/no/such/dir/t.json.gz", dir);
  tl_err e = {0};
  int64_t n4 = -1;
  ck_assert_int_eq(tl_export_perfetto(db, missing, NULL, &n4, &e), TL_ERROR);
  ck_assert_msg(e.msg && strstr(e.msg, "cannot create a temporary file"), "%s", e.msg);
  ck_assert_int_eq(n4, 0);
  tl_err_clear(&e);

  sqlite3_close(db);
  unlink(dbpath);
  ck_assert_int_eq(rmdir(dir), 0); /* no temporary or part file left */
}
END_TEST

/* Appends text to o and flushes it (force). */
static void put(pf_out *o, const char *text) {
  tl_buf_append(&o->b, text, strlen(text));
  ck_assert_int_eq(pf_out_flush(o, 1), TL_OK);
}

/* Two parts of a file written at once (pf_out.c, the protobuf's two encoding threads): the
** later part's bytes flushed before the earlier part ends are held, then written after it by
** the earlier part's writer; those flushed after go straight to their place; and the file
** goes on in order after both. Driven step by step here, so that every case happens. */
START_TEST(parts_are_placed_in_order) {
  char path[] = "/tmp/tl_pfplace_XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  tl_err e = {0};
  pf_out late = {.fd = fd, .path = path, .e = &e}, early = late;
  put(&late, "head|");
  pf_place place;
  ck_assert_int_eq(pf_place_open(&place, &late), TL_OK);
  put(&late, "late-1|");
  put(&late, "late-2|");
  ck_assert_int_eq(place.held, 14); /* the earlier part's length is not known yet */
  early.place = &place, early.at = 5, early.from = 0;
  put(&early, "early-1|");
  put(&early, "early-2|");
  ck_assert_int_eq(pf_place_settle(&place, early.at + early.written, &early), TL_OK);
  put(&late, "late-3|");
  ck_assert_int_eq(pf_place_close(&place, &late, TL_OK), TL_OK);
  put(&late, "tail");
  tl_buf_free(&late.b);
  tl_buf_free(&early.b);
  size_t n;
  char *got = read_file(path, &n);
  const char *want = "head|early-1|early-2|late-1|late-2|late-3|tail";
  ck_assert_uint_eq(n, strlen(want));
  ck_assert(memcmp(got, want, n) == 0);
  ck_assert_int_eq(late.written, (int64_t)n);
  free(got);

  /* The earlier part failed: the held part's file is closed, and the close says so. */
  ck_assert_int_eq(ftruncate(fd, 0), 0);
  ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
  pf_out again = {.fd = fd, .path = path, .e = &e};
  ck_assert_int_eq(pf_place_open(&place, &again), TL_OK);
  put(&again, "held|");
  ck_assert_int_eq(pf_place_close(&place, &again, TL_ERROR), TL_ERROR);
  ck_assert_ptr_null(again.place);
  tl_buf_free(&again.b);
  tl_err_clear(&e);
  close(fd);
  unlink(path);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("perfetto_gz");
  TCase *tc = tcase_create("gz");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, gzpar_roundtrip_and_thread_independent);
  tcase_add_test(tc, gzpar_write_error_is_reported);
  tcase_add_test(tc, export_gz_equals_plain_and_errors_clean_up);
  tcase_add_test(tc, parts_are_placed_in_order);
  suite_add_tcase(s, tc);
  return s;
}

TL_CHECK_MAIN(suite)
