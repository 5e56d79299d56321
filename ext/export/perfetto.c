/*
** perfetto.c: traceloom_export_perfetto(path [, options_json]), the analysis as a timeline
** that ui.perfetto.dev, trace_processor and chrome://tracing open (spec: perfetto.md;
** docs/PERFETTO.md says what this version draws).
**
**   SELECT traceloom_export_perfetto('analysis.perfetto.json.gz');     -- Chrome JSON, gzip
**   SELECT traceloom_export_perfetto('analysis.perfetto-trace');       -- Perfetto protobuf
**   SELECT traceloom_export_perfetto('t.pftrace', '{"ranks":[{"rank":0,"db":"r0.db"},
**                                     {"rank":1,"db":"r1.db"}], "align":"first_event"}');
**
** The steps (pf.h): options and output checks here; read the published relations
** (pf_read.c) and rank databases (pf_rank.c); lay out slices, flows and tracks
** (pf_layout.c); write one format (pf_json.c or pf_proto.c) through the atomic output file
** (pf_out.c). The format follows the path (".perfetto-trace" / ".pftrace", optionally
** ".gz": protobuf; anything else JSON) unless the "format" option says json or protobuf.
** Options: "ranks", "align" (first_event | provider) or "clock_model", "format",
** "no_raw_provider". Option errors, clock-model errors and refused outputs fail before the
** output file is opened; the analysis database is only read.
*/
#include "export/perfetto.h"
#include "export/pf.h"
#include "util/json.h"
#include "util/timing.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- Options ------------------------------------------------------------------------ */

static int parse_opts(const char *json, pf_opts *o, tl_err *e) {
  o->align = PF_ALIGN_NONE;
  o->format = PF_FORMAT_AUTO;
  if (!json || !*json) return TL_OK;
  tl_json *doc;
  if (tl_json_parse(json, strlen(json), &doc, e)) return TL_ERROR;
  int rc = TL_OK, have_align = 0, have_clock = 0;
  if (tl_json_type_of(doc) != TL_JSON_OBJECT)
    rc = tl_fail(e, "traceloom_export_perfetto options must be a JSON object");
  for (size_t i = 0; rc == TL_OK && i < tl_json_len(doc); i++) {
    const char *k = tl_json_key_at(doc, i);
    const tl_json *v = tl_json_value_at(doc, i);
    if (strcmp(k, "ranks") == 0) {
      if (tl_json_type_of(v) != TL_JSON_ARRAY) {
        rc = tl_fail(e, "traceloom_export_perfetto option \"ranks\" must be an array of "
                        "{\"rank\": R, \"db\": \"path\"}");
        break;
      }
      for (size_t j = 0; rc == TL_OK && j < tl_json_len(v); j++) {
        const tl_json *r = tl_json_at(v, j);
        const tl_json *rk = tl_json_get(r, "rank"), *db = tl_json_get(r, "db");
        int64_t rank;
        size_t dblen;
        const char *dbs = db ? tl_json_str(db, &dblen) : NULL;
        if (!rk || tl_json_i64(rk, &rank) || rank < 0 || !dbs || !*dbs ||
            tl_json_len(r) != 2) {
          rc = tl_fail(e, "traceloom_export_perfetto: ranks[%zu] must be {\"rank\": <non-negative "
                          "integer>, \"db\": \"<analysis db path>\"}", j);
          break;
        }
        for (size_t q = 0; q < o->ranks.n; q++)
          if (o->ranks.v[q].rank == rank)
            rc = tl_fail(e, "traceloom_export_perfetto: rank %lld is given twice", (long long)rank);
        if (rc) break;
        pf_rank pr = {rank, tl_strdup(dbs)};
        if (!pr.db || TL_VEC_PUSH(&o->ranks, pr)) {
          free(pr.db);
          rc = tl_nomem(e);
        }
      }
    } else if (strcmp(k, "align") == 0 || strcmp(k, "distributed_alignment") == 0) {
      size_t n;
      const char *s = tl_json_str(v, &n);
      have_align = 1;
      if (s && (strcmp(s, "first_event") == 0 || strcmp(s, "first-event") == 0))
        o->align = PF_ALIGN_FIRST_EVENT;
      else if (s && strcmp(s, "provider") == 0)
        o->align = PF_ALIGN_PROVIDER;
      else
        rc = tl_fail(e, "traceloom_export_perfetto: unknown alignment mode %s%s%s: expected "
                        "first_event, provider or clock_model",
                     s ? "\"" : "", s ? s : "(not a string)", s ? "\"" : "");
    } else if (strcmp(k, "clock_model") == 0 || strcmp(k, "distributed_clock_model") == 0) {
      size_t n;
      const char *s = tl_json_str(v, &n);
      if (!s || !*s) {
        rc = tl_fail(e, "traceloom_export_perfetto option \"clock_model\" must be the path of a "
                        "clock-model JSONL file");
        break;
      }
      free(o->clock_model);
      if (!(o->clock_model = tl_strdup(s))) rc = tl_nomem(e);
      have_clock = 1;
    } else if (strcmp(k, "format") == 0) {
      size_t n;
      const char *s = tl_json_str(v, &n);
      if (s && strcmp(s, "json") == 0) o->format = PF_FORMAT_JSON;
      else if (s && (strcmp(s, "protobuf") == 0 || strcmp(s, "proto") == 0))
        o->format = PF_FORMAT_PROTO;
      else
        rc = tl_fail(e, "traceloom_export_perfetto: unknown format %s%s%s: expected json or "
                        "protobuf", s ? "\"" : "", s ? s : "(not a string)", s ? "\"" : "");
    } else if (strcmp(k, "no_raw_provider") == 0) {
      /* The raw-provider plane is not exported yet, so there is nothing to switch off. */
    } else {
      rc = tl_fail(e, "unknown traceloom_export_perfetto option \"%s\": expected ranks, align, "
                      "clock_model, format or no_raw_provider", k);
    }
  }
  if (rc == TL_OK && have_clock && have_align)
    rc = tl_fail(e, "traceloom_export_perfetto: a clock model and the alignment option are "
                    "mutually exclusive");
  if (rc == TL_OK && have_clock) o->align = PF_ALIGN_CLOCK;
  if (rc == TL_OK && (have_align || have_clock) && !o->ranks.n)
    rc = tl_fail(e, "traceloom_export_perfetto: alignment options need \"ranks\"");
  if (rc == TL_OK && o->ranks.n) {
    int has0 = 0;
    for (size_t q = 0; q < o->ranks.n; q++) has0 |= o->ranks.v[q].rank == 0;
    if (!has0)
      rc = tl_fail(e, "traceloom_export_perfetto: rank 0 is required in \"ranks\" (it is the "
                      "display reference)");
    if (o->align == PF_ALIGN_NONE) o->align = PF_ALIGN_FIRST_EVENT;
  }
  tl_json_free(doc);
  return rc;
}


/* ---- Output checks ---------------------------------------------------------------------- */

static int same_file(const struct stat *a, const char *path) {
  struct stat s;
  return path && *path && stat(path, &s) == 0 && s.st_dev == a->st_dev && s.st_ino == a->st_ino;
}

/* Refuses an output that is the analysis DB, a rank DB or an analysed input. */
static int check_output(pf_ctx *c, const char *path) {
  struct stat so;
  if (stat(path, &so) != 0) return TL_OK;
  if (S_ISDIR(so.st_mode))
    return tl_fail(c->e, "traceloom_export_perfetto: output '%s' is a directory", path);
  if (same_file(&so, sqlite3_db_filename(c->db, "main")))
    return tl_fail(c->e, "traceloom_export_perfetto: refusing to overwrite '%s': it is the "
                         "analysis database", path);
  for (size_t i = 0; i < c->opts.ranks.n; i++)
    if (same_file(&so, c->opts.ranks.v[i].db))
      return tl_fail(c->e, "traceloom_export_perfetto: refusing to overwrite '%s': it is the "
                           "rank %lld database", path, (long long)c->opts.ranks.v[i].rank);
  if (!pf_has_relation(c->db, "traceloom_raw_source_database")) return TL_OK;
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(c->db, "SELECT source_path FROM traceloom_raw_source_database", -1, &st,
                         NULL) != SQLITE_OK)
    return TL_OK;
  int hit = 0;
  while (!hit && sqlite3_step(st) == SQLITE_ROW)
    hit = same_file(&so, (const char *)sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  if (hit)
    return tl_fail(c->e, "traceloom_export_perfetto: refusing to overwrite '%s': it is an input "
                         "of the analysis", path);
  return TL_OK;
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}



/* PF_FORMAT_PROTO for ".perfetto-trace" / ".pftrace" (optionally ".gz"), else JSON. */
static int format_of(const char *path, int gzip) {
  size_t n = strlen(path) - (gzip ? 3 : 0);
  static const char *const proto[] = {".perfetto-trace", ".pftrace"};
  for (int k = 0; k < 2; k++) {
    size_t m = strlen(proto[k]);
    if (n >= m && strncmp(path + n - m, proto[k], m) == 0) return PF_FORMAT_PROTO;
  }
  return PF_FORMAT_JSON;
}

/* Frees what the export read and laid out. */
static void *free_export(void *arg) {
  pf_ctx *c = arg;
  pf_analysis_free(&c->a);
  pf_layout_free(&c->l);
  return NULL;
}

/* Every byte is written: the freeing (some 0.05 s of unmapping at 1M tasks) runs on a thread
** of its own while the output is fsync'ed and renamed into place, which waits for the disk
** and the file system (the rename frees an old export's blocks). */
static void free_while_syncing(pf_ctx *c) {
  c->events = (int64_t)(c->l.slices.n + c->l.flows.n);
  c->freeing = pthread_create(&c->freer, NULL, free_export, c) == 0;
}

int tl_export_perfetto(sqlite3 *db, const char *path, const char *options_json, int64_t *events,
                       tl_err *e) {
  *events = 0;
  if (!path || !*path)
    return tl_fail(e, "traceloom_export_perfetto: an output path is required");
  pf_ctx c;
  memset(&c, 0, sizeof c);
  c.db = db;
  c.e = e;
  int rc = parse_opts(options_json, &c.opts, e);
  if (rc == TL_OK) rc = pf_check_timeline(db, "the analysis database", e);
  if (rc == TL_OK) rc = check_output(&c, path);
  if (rc == TL_OK) rc = pf_ranks_prepare(&c.opts, &c.r, e);
  tl_timer tm;
  tl_timer_start(&tm, "export");
  if (rc == TL_OK) rc = pf_read_analysis(db, c.opts.ranks.n > 0, &c.a, e);
  if (rc == TL_OK && c.opts.ranks.n) rc = pf_ranks_read(&c.opts, &c.r, &c.a, e);
  tl_timer_mark(&tm, "read");
  if (rc == TL_OK) rc = pf_layout_build(&c);
  tl_timer_mark(&tm, "layout");
  int gzip = ends_with(path, ".gz");
  int format = c.opts.format != PF_FORMAT_AUTO ? c.opts.format : format_of(path, gzip);
  if (rc == TL_OK)
    rc = pf_out_write_file(&c, path, gzip,
                           format == PF_FORMAT_PROTO ? pf_write_proto : pf_write_json,
                           free_while_syncing);
  tl_timer_mark(&tm, "write");
  if (rc == TL_OK) *events = c.events;
  for (size_t i = 0; i < c.opts.ranks.n; i++) free(c.opts.ranks.v[i].db);
  pf_ranks_free(&c.opts, &c.r);
  TL_VEC_FREE(&c.opts.ranks);
  free(c.opts.clock_model);
  if (c.freeing) pthread_join(c.freer, NULL);
  else free_export(&c);
  return rc;
}
