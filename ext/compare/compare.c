/*
** compare.c: traceloom_compare(base_path [, options_json]), the comparison driver.
**
**   SELECT traceloom_compare('runs/a/analysis.db');      -- in runs/b/analysis.db
**   SELECT traceloom_compare('a.db', '{"new": "b.db", "top": 30}');
**
** read (both analyses, read-only, into plain arrays: read.c) -> align (align.c) -> effects
** and ranking (effects.c) -> publish (publish_compare.c). Options (a JSON object; unknown keys
** are an error):
**   new       the new analysis's file; default: the calling connection's main database
**   top       ranked changes kept per tree pair, 1..100000, default 20
**   noise_z   how many standard errors a per-unit change must exceed to be significant,
**             >= 0, default 2
**   match     "auto" (symbols, then semantic families) or "symbol" (symbols only)
**   families  a traceloom-compare-families-v1 YAML file replacing the built-in table
*/
#include "compare/compare.h"
#include "compare/compare_int.h"
#include "util/buf.h"
#include "util/json.h"
#include "util/timing.h"
#include "util/dbopen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void options_free(cmp_options *o) {
  free(o->new_path), free(o->families), free(o->canonical);
  memset(o, 0, sizeof *o);
}

static int string_option(const tl_json *v, const char *key, char **out, tl_err *e) {
  size_t n;
  const char *s = tl_json_str(v, &n);
  if (!s || !n || strlen(s) != n)
    return tl_fail(e, "traceloom_compare option \"%s\" must be a non-empty path string", key);
  return (*out = tl_strdup(s)) ? TL_OK : tl_nomem(e);
}

static int parse_options(const char *json, cmp_options *o, tl_err *e) {
  memset(o, 0, sizeof *o);
  o->top = 20;
  o->noise_z = 2.0;
  tl_json *doc = NULL;
  int rc = TL_OK;
  if (json && *json) {
    if (tl_json_parse(json, strlen(json), &doc, e)) return TL_ERROR;
    if (tl_json_type_of(doc) != TL_JSON_OBJECT)
      rc = tl_fail(e, "traceloom_compare options must be a JSON object");
  }
  for (size_t i = 0; rc == TL_OK && doc && i < tl_json_len(doc); i++) {
    const char *k = tl_json_key_at(doc, i);
    const tl_json *v = tl_json_value_at(doc, i);
    if (strcmp(k, "new") == 0) {
      rc = string_option(v, k, &o->new_path, e);
    } else if (strcmp(k, "families") == 0) {
      rc = string_option(v, k, &o->families, e);
    } else if (strcmp(k, "top") == 0) {
      if (tl_json_i64(v, &o->top) || o->top < 1 || o->top > 100000)
        rc = tl_fail(e, "traceloom_compare option \"top\" must be an integer from 1 to 100000");
    } else if (strcmp(k, "noise_z") == 0) {
      if (tl_json_double(v, &o->noise_z) || !(o->noise_z >= 0) || o->noise_z > 1e6)
        rc = tl_fail(e, "traceloom_compare option \"noise_z\" must be a number from 0 to 1e6");
    } else if (strcmp(k, "match") == 0) {
      const char *m = tl_json_str(v, NULL);
      if (m && strcmp(m, "auto") == 0)
        o->symbols_only = 0;
      else if (m && strcmp(m, "symbol") == 0)
        o->symbols_only = 1;
      else
        rc = tl_fail(e, "traceloom_compare option \"match\" must be \"auto\" or \"symbol\"");
    } else {
      rc = tl_fail(e, "unknown traceloom_compare option \"%s\": expected new, top, noise_z, "
                      "match or families", k);
    }
  }
  tl_json_free(doc);
  if (rc != TL_OK) return rc;
  /* Canonical form, as stored in traceloom_compare_run. */
  tl_buf b = {0};
  tl_buf_printf(&b, "{\"match\":\"%s\",\"noise_z\":%.17g,\"top\":%lld",
                o->symbols_only ? "symbol" : "auto", o->noise_z, (long long)o->top);
  if (o->families) tl_buf_puts(&b, ",\"families\":"), tl_buf_json_string(&b, o->families, strlen(o->families));
  if (o->new_path) tl_buf_puts(&b, ",\"new\":"), tl_buf_json_string(&b, o->new_path, strlen(o->new_path));
  tl_buf_puts(&b, "}");
  if (b.oom) return tl_buf_free(&b), tl_nomem(e);
  o->canonical = b.p;
  return TL_OK;
}

/* Reads one side from a file opened read-only on a private connection. */
static int read_file(cmp_side *s, tl_strpool *pool, const tl_cmp_families *fam, tl_err *e) {
  sqlite3 *db = NULL;
  tl_err inner = {0};
  if (tl_db_open_ro(s->path, "analysis database", &db, &inner)) {
    tl_fail(e, "traceloom_compare: cannot open the %s analysis: %s", s->what,
            inner.msg ? inner.msg : "?");
    tl_err_clear(&inner);
    return TL_ERROR;
  }
  int rc = tl_cmp_read(db, s, pool, fam, e);
  sqlite3_close(db);
  return rc;
}

static void summary_line(const cmp_result *r, char **out) {
  tl_buf b = {0};
  int64_t base = 0, fresh = 0;
  for (size_t k = 0; k < r->pairs.n; k++) {
    const cmp_row *root = &r->rows.v[r->pairs.v[k].row0];
    if (root->b >= 0) base += cmp_node_total(&r->base.nodes.v[root->b]);
    if (root->n >= 0) fresh += cmp_node_total(&r->fresh.nodes.v[root->n]);
  }
  tl_buf_printf(&b, "traceloom_compare: %zu tree pair(s), %zu aligned nodes: %.3f us -> %.3f us "
                    "(%+.3f us",
                r->pairs.n, r->rows.n, base / 1e3, fresh / 1e3, (fresh - base) / 1e3);
  if (base > 0) tl_buf_printf(&b, ", %+.2f%%", 100.0 * (double)(fresh - base) / (double)base);
  tl_buf_puts(&b, ")");
  if (r->ranks.n) {
    const cmp_rank *top = &r->ranks.v[0];
    const cmp_row *row = &r->rows.v[top->row];
    tl_buf_printf(&b, "; top change: %s %.*s (%+.3f us)", tl_cmp_effect_name(top->effect),
                  (int)row->path_len, r->paths ? r->paths + row->path_off : "",
                  top->contribution_ns / 1e3);
  }
  *out = b.oom ? NULL : b.p;
  if (b.oom) tl_buf_free(&b);
}

int tl_compare(sqlite3 *db, const char *base_path, const char *options_json, char **summary,
               tl_err *e) {
  *summary = NULL;
  if (!base_path || !*base_path)
    return tl_fail(e, "traceloom_compare needs the base analysis database's path");
  cmp_options opt;
  if (parse_options(options_json, &opt, e)) return TL_ERROR;
  tl_timer tm;
  tl_timer_start(&tm, "compare");
  tl_cmp_families *fam = NULL;
  cmp_result r;
  memset(&r, 0, sizeof r);
  r.opt = &opt;
  r.base.what = "base", r.base.path = base_path;
  r.fresh.what = "new";
  const char *main_file = sqlite3_db_filename(db, "main");
  r.fresh.path = opt.new_path ? opt.new_path : main_file && *main_file ? main_file : "main";
  int rc = tl_cmp_families_load(opt.families, &fam, e);
  r.families = fam;
  if (rc == TL_OK && !(r.pool = tl_strpool_new())) rc = tl_nomem(e);
  if (rc == TL_OK) rc = read_file(&r.base, r.pool, fam, e);
  tl_timer_mark(&tm, "read base");
  if (rc == TL_OK)
    rc = opt.new_path ? read_file(&r.fresh, r.pool, fam, e) : tl_cmp_read(db, &r.fresh, r.pool, fam, e);
  tl_timer_mark(&tm, "read new");
  if (rc == TL_OK) rc = tl_cmp_align(&r, e);
  tl_timer_mark(&tm, "align");
  if (rc == TL_OK) rc = tl_cmp_effects(&r, e);
  tl_timer_mark(&tm, "effects");
  if (rc == TL_OK) rc = tl_cmp_publish(db, &r, e);
  tl_timer_mark(&tm, "publish");
  /* Published: a summary that cannot be allocated is left NULL, not turned into an error. */
  if (rc == TL_OK) summary_line(&r, summary);
  tl_cmp_side_free(&r.base);
  tl_cmp_side_free(&r.fresh);
  TL_VEC_FREE(&r.pairs);
  TL_VEC_FREE(&r.rows);
  TL_VEC_FREE(&r.ranks);
  free(r.paths);
  tl_strpool_free(r.pool);
  tl_cmp_families_free(fam);
  options_free(&opt);
  return rc;
}
