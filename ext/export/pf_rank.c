/*
** pf_rank.c: the distributed part of the Perfetto export (perfetto.md 8): one timeline per
** rank database, placed on a display clock.
**
**   SELECT traceloom_export_perfetto('ranks.pftrace',
**     '{"ranks":[{"rank":0,"db":"r0.db"},{"rank":1,"db":"r1.db"}],"align":"first_event"}');
**
** Rank databases are analysis databases, opened read-only here (pf_open_analysis_ro; the
** profile readers of ext/source are for profiles). Their atom occurrences are read from
** the public tree views. Alignments: first_event (display = ref_first + (src - rank_first)),
** provider (source timestamps, uncalibrated), or a collective-end affine clock model
** (traceloom.distributed-clock-model/v1 JSONL), validated in full before anything is
** written. No rank identity is inferred from timestamps.
*/
#include "export/pf.h"
#include "util/dbopen.h"
#include "util/json.h"
#include "util/sha256.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLOCK_FORMAT "traceloom.distributed-clock-model/v1"
#define CLOCK_MAX_BYTES (16 << 20)

int pf_open_analysis_ro(const char *path, sqlite3 **out, tl_err *e) {
  /* util/dbopen.c: a file: URI with mode=ro (the path percent-encoded, never parsed for
  ** options), the schema read at once so "not a database" fails here with the path. */
  tl_err inner = {0};
  if (tl_db_open_ro(path, "analysis database", out, &inner) == TL_OK) return TL_OK;
  tl_fail(e, "traceloom_export_perfetto: %s", inner.msg ? inner.msg : "cannot open it");
  e->code = inner.code;
  tl_err_clear(&inner);
  return TL_ERROR;
}

const char *pf_alignment_name(int align) {
  return align == PF_ALIGN_PROVIDER ? "provider_timestamps_uncalibrated"
         : align == PF_ALIGN_CLOCK  ? "collective_end_affine_clock_model"
                                    : "first_timeline_event_per_rank";
}

/* ---- Clock model (traceloom.distributed-clock-model/v1) ---------------------------------- */

/* A decimal number of the record as text (kept for the args) and as long double. */
static int clock_number(const tl_json *rec, const char *key, char *text, size_t cap,
                        long double *out) {
  const tl_json *v = tl_json_get(rec, key);
  const char *t = v ? tl_json_number_text(v) : NULL;
  if (!t || strlen(t) >= cap) return -1;
  snprintf(text, cap, "%s", t);
  char *end;
  errno = 0;
  *out = strtold(t, &end);
  return *end || errno || !isfinite(*out) ? -1 : 0;
}

static const char *clock_string(const tl_json *rec, const char *key) {
  const tl_json *v = tl_json_get(rec, key);
  size_t n;
  return v ? tl_json_str(v, &n) : NULL;
}

static int64_t rank_index(const pf_opts *o, int64_t rank) {
  for (size_t i = 0; i < o->ranks.n; i++)
    if (o->ranks.v[i].rank == rank) return (int64_t)i;
  return -1;
}

/*
** Reads and validates the whole receipt before anything is written. Fails closed on a
** malformed, non-ASCII or oversized file, an unknown rank, scale <= 0, records that
** disagree on status / marker_contract / target_clock_domain, or not exactly one
** metric=end record per non-reference rank.
*/
static int load_clock_model(const pf_opts *o, pf_ranks *c, tl_err *e) {
  const char *path = o->clock_model;
  FILE *f = fopen(path, "rb");
  if (!f)
    return tl_fail(e, "traceloom_export_perfetto: cannot open clock model '%s': %s", path,
                   strerror(errno));
  char *data = malloc(CLOCK_MAX_BYTES + 1);
  size_t n = data ? fread(data, 1, CLOCK_MAX_BYTES + 1, f) : 0;
  int rd_err = ferror(f);
  fclose(f);
  if (!data) return tl_nomem(e);
  if (rd_err) {
    free(data);
    return tl_fail(e, "traceloom_export_perfetto: cannot read clock model '%s'", path);
  }
  if (n > CLOCK_MAX_BYTES) {
    free(data);
    return tl_fail(e, "traceloom_export_perfetto: clock model '%s' is larger than 16 MiB", path);
  }
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)data[i] >= 0x80 || data[i] == 0) {
      free(data);
      return tl_fail(e, "traceloom_export_perfetto: clock model '%s' is not ASCII (byte %zu)",
                     path, i);
    }
  tl_sha256 sh;
  uint8_t d[32];
  tl_sha256_init(&sh);
  tl_sha256_update(&sh, data, n);
  tl_sha256_final(&sh, d);
  tl_sha256_hex(d, c->clock_sha);
  size_t nr = o->ranks.n;
  c->clock = calloc(nr, sizeof *c->clock);
  int *seen = calloc(nr, sizeof *seen);
  int rc = c->clock && seen ? TL_OK : tl_nomem(e);
  const char *target_domain = NULL;
  tl_json *docs[2] = {NULL, NULL}; /* keeps the first end record's strings alive */
  int64_t ref_rank = -1, line = 0;
  for (size_t pos = 0; rc == TL_OK && pos < n;) {
    size_t eol = pos;
    while (eol < n && data[eol] != '\n') eol++;
    line++;
    size_t a = pos, b = eol;
    pos = eol + 1;
    while (a < b && (data[a] == ' ' || data[a] == '\t' || data[a] == '\r')) a++;
    while (b > a && (data[b - 1] == ' ' || data[b - 1] == '\t' || data[b - 1] == '\r')) b--;
    if (a == b) continue;
    tl_json *rec = NULL;
    tl_err pe = {0};
    if (tl_json_parse(data + a, b - a, &rec, &pe)) {
      rc = tl_fail(e, "traceloom_export_perfetto: clock model '%s' line %lld is not JSON: %s",
                   path, (long long)line, pe.msg ? pe.msg : "?");
      tl_err_clear(&pe);
      break;
    }
    int keep = 0;
    const char *fmt = clock_string(rec, "format"), *metric = clock_string(rec, "metric");
    const char *status = clock_string(rec, "status"), *marker = clock_string(rec, "marker_contract");
    const char *tdom = clock_string(rec, "target_clock_domain");
    int64_t rank, rrank;
    int flat = tl_json_type_of(rec) == TL_JSON_OBJECT;
    for (size_t i = 0; flat && i < tl_json_len(rec); i++) {
      tl_json_type t = tl_json_type_of(tl_json_value_at(rec, i));
      flat = t != TL_JSON_OBJECT && t != TL_JSON_ARRAY;
    }
    pf_clock m;
    memset(&m, 0, sizeof m);
    if (!flat || !fmt || strcmp(fmt, CLOCK_FORMAT) != 0 || !metric || !status || !marker ||
        !tdom || !clock_string(rec, "source_clock_domain") || !tl_json_get(rec, "rank") ||
        tl_json_i64(tl_json_get(rec, "rank"), &rank) || !tl_json_get(rec, "reference_rank") ||
        tl_json_i64(tl_json_get(rec, "reference_rank"), &rrank) ||
        (strcmp(status, "candidate_only") != 0 && strcmp(status, "calibrated") != 0) ||
        clock_number(rec, "scale", m.scale_text, sizeof m.scale_text, &m.scale) ||
        clock_number(rec, "reference_source_ns", m.ref_source_text, sizeof m.ref_source_text,
                     &m.ref_source) ||
        clock_number(rec, "reference_target_ns", m.ref_target_text, sizeof m.ref_target_text,
                     &m.ref_target)) {
      rc = tl_fail(e, "traceloom_export_perfetto: clock model '%s' line %lld: expected a flat "
                      "object with format \"" CLOCK_FORMAT "\", integer rank and reference_rank, "
                      "metric, status (candidate_only|calibrated), source_clock_domain, "
                      "target_clock_domain, marker_contract and decimal scale, "
                      "reference_source_ns, reference_target_ns",
                   path, (long long)line);
    } else if (ref_rank >= 0 && rrank != ref_rank) {
      rc = tl_fail(e, "traceloom_export_perfetto: clock model '%s' line %lld: reference_rank %lld "
                      "disagrees with %lld", path, (long long)line, (long long)rrank,
                   (long long)ref_rank);
    } else if (rank_index(o, rank) < 0 || rank_index(o, rrank) < 0) {
      rc = tl_fail(e, "traceloom_export_perfetto: clock model '%s' line %lld names rank %lld, "
                      "which is not among the exported ranks", path, (long long)line,
                   (long long)(rank_index(o, rank) < 0 ? rank : rrank));
    } else if (!(m.scale > 0)) {
      rc = tl_fail(e, "traceloom_export_perfetto: clock model '%s' line %lld: scale must be > 0",
                   path, (long long)line);
    } else if (strcmp(metric, "end") == 0 && rank != rrank) {
      int64_t ri = rank_index(o, rank);
      ref_rank = rrank;
      if (seen[ri]) {
        rc = tl_fail(e, "traceloom_export_perfetto: clock model '%s' has more than one "
                        "metric=end record for rank %lld", path, (long long)rank);
      } else if (c->clock_status && (strcmp(c->clock_status, status) != 0 ||
                                     strcmp(c->clock_marker, marker) != 0 ||
                                     strcmp(target_domain, tdom) != 0)) {
        rc = tl_fail(e, "traceloom_export_perfetto: clock model '%s' line %lld disagrees with "
                        "earlier records on status, marker_contract or target_clock_domain",
                     path, (long long)line);
      } else {
        seen[ri] = 1;
        c->clock[ri] = m;
        if (!c->clock_status) {
          c->clock_status = tl_strdup(status);
          c->clock_marker = tl_strdup(marker);
          target_domain = tdom;
          docs[0] = rec, keep = 1;
          if (!c->clock_status || !c->clock_marker) rc = tl_nomem(e);
        }
      }
    } else {
      ref_rank = rrank; /* other metrics are recorded by the producer but not applied */
    }
    if (!keep) tl_json_free(rec);
  }
  if (rc == TL_OK && ref_rank < 0)
    rc = tl_fail(e, "traceloom_export_perfetto: clock model '%s' has no metric=end record", path);
  for (size_t i = 0; rc == TL_OK && i < nr; i++) {
    if (o->ranks.v[i].rank == ref_rank) {
      c->clock[i].identity = 1;
    } else if (!seen[i]) {
      rc = tl_fail(e, "traceloom_export_perfetto: clock model '%s' has no metric=end record for "
                      "rank %lld", path, (long long)o->ranks.v[i].rank);
    }
  }
  c->clock_reference_rank = ref_rank;
  tl_json_free(docs[0]);
  free(seen);
  free(data);
  return rc;
}

/* round_half_even(ref_target + scale * (src - ref_source)) in long double (64-bit mantissa). */
static int clock_map(const pf_clock *m, int64_t src, int64_t *out) {
  if (m->identity) {
    *out = src;
    return 0;
  }
  long double x = m->ref_target + m->scale * ((long double)src - m->ref_source);
  long double r = nearbyintl(x); /* default rounding mode: to nearest, ties to even */
  if (!isfinite(r) || r < -9.2e18L || r > 9.2e18L) return -1;
  *out = (int64_t)r;
  return 0;
}


/* ---- Rank timelines ------------------------------------------------------------------- */

typedef TL_VEC(size_t) sizevec;

int pf_ranks_prepare(const pf_opts *o, pf_ranks *r, tl_err *e) {
  memset(r, 0, sizeof *r);
  size_t n = o->ranks.n;
  if (!n) return TL_OK;
  r->sha = calloc(n, sizeof *r->sha);
  r->first = calloc(n, sizeof *r->first);
  if (!r->sha || !r->first) return tl_nomem(e);
  for (size_t i = 0; i < n; i++) {
    if (!(r->sha[i] = malloc(65))) return tl_nomem(e);
    if (tl_sha256_file(o->ranks.v[i].db, r->sha[i], NULL, e)) return TL_ERROR;
  }
  if (o->align == PF_ALIGN_CLOCK) return load_clock_model(o, r, e);
  return TL_OK;
}

void pf_ranks_free(const pf_opts *o, pf_ranks *r) {
  for (size_t i = 0; r->sha && i < o->ranks.n; i++) free(r->sha[i]);
  free(r->sha);
  free(r->first);
  free(r->clock);
  free(r->clock_status);
  free(r->clock_marker);
  memset(r, 0, sizeof *r);
}

/* The atom occurrences of rank ri as PF_ROW_RANK rows (source clock). *ref_kv collects the
** kv indices of display_reference_anchor_ns, set once rank 0 is read. */
static int read_rank(const pf_opts *o, pf_ranks *rk, size_t ri, pf_analysis *a,
                     sizevec *ref_kv, tl_err *e) {
  const pf_rank *r = &o->ranks.v[ri];
  sqlite3 *db = NULL;
  if (pf_open_analysis_ro(r->db, &db, e)) return TL_ERROR;
  char *what = tl_mprintf("rank %lld database '%s'", (long long)r->rank, r->db);
  int err = what ? pf_check_timeline(db, what, e) : tl_nomem(e);
  free(what);
  sqlite3_stmt *st = NULL;
  if (!err && !pf_has_relation(db, "traceloom_viz_node"))
    err = tl_fail(e, "traceloom_export_perfetto: rank %lld database '%s' has no relation "
                     "traceloom_viz_node", (long long)r->rank, r->db);
  if (!err && sqlite3_prepare_v2(
                  db,
                  "SELECT o.node_id, o.local_node_id, v.label, o.occurrence_idx, o.db_idx, "
                  "o.device_id, o.view_name, o.repeat_context, v.depth, v.category, "
                  "o.anchor_start_idx, o.anchor_end_idx, o.anchor_count, o.start_ns, o.end_ns, "
                  "o.compute_us, o.comm_us, o.idle_us, o.total_us, o.self_us, o.aux_us, "
                  "o.aux_events FROM traceloom_tree_node_occurrence o JOIN traceloom_viz_node v "
                  "ON v.node_id = o.node_id AND v.db_idx = o.db_idx AND v.device_id = o.device_id "
                  "AND v.view_name = o.view_name WHERE (v.node_type = 'Atom' OR (v.node_type IS "
                  "NULL AND v.kind NOT IN ('seq', 'repeat'))) AND o.start_ns IS NOT NULL AND "
                  "o.end_ns IS NOT NULL ORDER BY o.start_ns, o.end_ns, o.db_idx, o.device_id, "
                  "o.node_id, o.occurrence_idx",
                  -1, &st, NULL) != SQLITE_OK)
    err = tl_fail(e, "traceloom_export_perfetto: cannot read rank %lld database '%s': %s",
                  (long long)r->rank, r->db, sqlite3_errmsg(db));
  static const int costs[] = {PF_K_compute_us, PF_K_comm_us, PF_K_idle_us,
                              PF_K_total_us,   PF_K_self_us, PF_K_aux_us};
  const char *alias = pf_alignment_name(o->align);
  int64_t n = 0;
  int rc = SQLITE_DONE, bad = 0;
#define TXT(i) ((const char *)sqlite3_column_text(st, (i)))
  while (!err && !bad && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t s0 = sqlite3_column_int64(st, 13), e0 = sqlite3_column_int64(st, 14);
    if (n++ == 0) {
      rk->first[ri] = s0;
      if (r->rank == 0) rk->ref_first = s0;
    }
    size_t off = a->kv.n;
    bad |= pf_kv_str(a, PF_K_semantic_kind, "distributed_traceloom_timeline_event") |
           pf_kv_i64(a, PF_K_rank, r->rank) | pf_kv_str(a, PF_K_source_timeline_db, r->db) |
           pf_kv_str(a, PF_K_source_timeline_db_sha256, rk->sha[ri]) |
           pf_kv_str(a, PF_K_alignment, alias) |
           pf_kv_i64(a, PF_K_display_reference_rank,
                     o->align == PF_ALIGN_CLOCK ? rk->clock_reference_rank : 0) |
           pf_kv_i64(a, PF_K_source_start_ns, s0) | pf_kv_i64(a, PF_K_source_end_ns, e0) |
           pf_kv_str(a, PF_K_node_id, TXT(0)) | pf_kv_str(a, PF_K_local_node_id, TXT(1)) |
           pf_kv_i64(a, PF_K_occurrence_idx, sqlite3_column_int64(st, 3)) |
           pf_kv_i64(a, PF_K_database_index, sqlite3_column_int64(st, 4)) |
           pf_kv_i64(a, PF_K_device_id, sqlite3_column_int64(st, 5)) |
           pf_kv_str(a, PF_K_view_name, TXT(6)) | pf_kv_str(a, PF_K_repeat_context, TXT(7)) |
           pf_kv_i64n(a, PF_K_tree_depth, sqlite3_column_int64(st, 8),
                      sqlite3_column_type(st, 8) == SQLITE_NULL) |
           pf_kv_str(a, PF_K_event_category, TXT(9)) |
           pf_kv_i64(a, PF_K_anchor_start_idx, sqlite3_column_int64(st, 10)) |
           pf_kv_i64(a, PF_K_anchor_end_idx, sqlite3_column_int64(st, 11)) |
           pf_kv_i64(a, PF_K_anchor_count, sqlite3_column_int64(st, 12));
    for (int k = 0; k < 6; k++) {
      double x = sqlite3_column_double(st, 15 + k) * 1000.0;
      bad |= pf_kv_us(a, costs[k], isfinite(x) && fabs(x) < 9e18 ? llround(x) : 0);
      if (k == 4) bad |= pf_kv_i64(a, PF_K_aux_events, sqlite3_column_int64(st, 21));
    }
    if (o->align == PF_ALIGN_FIRST_EVENT) {
      bad |= pf_kv_i64(a, PF_K_source_anchor_ns, rk->first[ri]);
      bad |= TL_VEC_PUSH(ref_kv, a->kv.n) | pf_kv_i64(a, PF_K_display_reference_anchor_ns, 0);
    } else if (o->align == PF_ALIGN_CLOCK) {
      const pf_clock *m = &rk->clock[ri];
      bad |= pf_kv_str(a, PF_K_clock_model_status, m->identity ? "reference_identity" : rk->clock_status) |
             pf_kv_str(a, PF_K_clock_model_marker_contract, rk->clock_marker) |
             pf_kv_str(a, PF_K_clock_model_metric, "end") |
             pf_kv_str(a, PF_K_clock_model_scale, m->identity ? NULL : m->scale_text) |
             pf_kv_str(a, PF_K_clock_model_reference_source_ns, m->identity ? NULL : m->ref_source_text) |
             pf_kv_str(a, PF_K_clock_model_reference_target_ns, m->identity ? NULL : m->ref_target_text) |
             pf_kv_str(a, PF_K_clock_model_receipt_sha256, rk->clock_sha);
    }
    const char *label = TXT(2) ? TXT(2) : TXT(1);
    pf_row_slice row = {.kind = PF_ROW_RANK, .a = r->rank, .b = (int64_t)ri, .start = s0,
                        .end = e0 > s0 ? e0 : s0, .kv_off = off, .kv_n = a->kv.n - off};
    row.name = tl_strpool_intern_cstr(a->pool, label ? label : "");
    bad |= row.name == TL_STR_NOMEM || TL_VEC_PUSH(&a->rows, row);
  }
#undef TXT
  if (bad) err = tl_nomem(e);
  if (!err && rc != SQLITE_DONE)
    err = tl_fail(e, "traceloom_export_perfetto: reading rank %lld database '%s' failed: %s",
                  (long long)r->rank, r->db, sqlite3_errmsg(db));
  if (!err && n == 0)
    err = tl_fail(e, "traceloom_export_perfetto: rank %lld database '%s' has no atom "
                     "occurrence (traceloom_tree_node_occurrence of an Atom node)",
                  (long long)r->rank, r->db);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return err;
}

int pf_ranks_read(const pf_opts *o, pf_ranks *r, pf_analysis *a, tl_err *e) {
  sizevec ref_kv = {0};
  int err = TL_OK;
  size_t first_row = a->rows.n;
  for (size_t i = 0; !err && i < o->ranks.n; i++) err = read_rank(o, r, i, a, &ref_kv, e);
  for (size_t i = 0; !err && i < ref_kv.n; i++) a->kv.v[ref_kv.v[i]].i = r->ref_first;
  TL_VEC_FREE(&ref_kv);
  /* Onto the display clock. */
  for (size_t i = first_row; !err && i < a->rows.n; i++) {
    pf_row_slice *s = &a->rows.v[i];
    if (s->kind != PF_ROW_RANK) continue;
    if (o->align == PF_ALIGN_FIRST_EVENT) {
      int64_t shift = r->ref_first - r->first[s->b];
      s->start += shift, s->end += shift;
    } else if (o->align == PF_ALIGN_CLOCK) {
      int64_t x, z;
      if (clock_map(&r->clock[s->b], s->start, &x) || clock_map(&r->clock[s->b], s->end, &z) ||
          z < x)
        err = tl_fail(e, "traceloom_export_perfetto: the clock model maps a rank %lld slice "
                         "[%lld, %lld) to an invalid interval",
                      (long long)s->a, (long long)s->start, (long long)s->end);
      else
        s->start = x, s->end = z;
    }
  }
  return err;
}
