/*
** report.c: traceloom_compare_report([options_json]), the comparison as Markdown.
**
**   SELECT traceloom_compare_report();
**   SELECT traceloom_compare_report('{"top": 10, "symbols": 5}');
**
** Reads the published traceloom_compare_* relations of the calling connection (plain SQL:
** the same numbers any client can query) and renders, per tree pair: the end-to-end delta
** and its split (per-iteration changes, iteration counts, added and removed work), the
** alignment, the ranked changes with their paths, per-unit figures, share of the delta and
** noise status, and the kernel summary of the whole tree by change.
*/
#include "compare/compare.h"
#include "util/buf.h"
#include "util/json.h"

#include <string.h>

typedef struct report_opts {
  int64_t top;      /* ranked changes per pair; 0: all stored */
  int64_t symbols;  /* kernel summary rows per pair */
} report_opts;

static int parse_opts(const char *json, report_opts *o, tl_err *e) {
  o->top = 0;
  o->symbols = 10;
  if (!json || !*json) return TL_OK;
  tl_json *doc;
  if (tl_json_parse(json, strlen(json), &doc, e)) return TL_ERROR;
  int rc = tl_json_type_of(doc) == TL_JSON_OBJECT
               ? TL_OK
               : tl_fail(e, "traceloom_compare_report options must be a JSON object");
  for (size_t i = 0; rc == TL_OK && i < tl_json_len(doc); i++) {
    const char *k = tl_json_key_at(doc, i);
    int64_t v;
    if (tl_json_i64(tl_json_value_at(doc, i), &v) || v < 0)
      rc = tl_fail(e, "traceloom_compare_report option \"%s\" must be a non-negative integer", k);
    else if (strcmp(k, "top") == 0)
      o->top = v;
    else if (strcmp(k, "symbols") == 0)
      o->symbols = v;
    else
      rc = tl_fail(e, "unknown traceloom_compare_report option \"%s\": expected top or symbols", k);
  }
  tl_json_free(doc);
  return rc;
}

static int prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, tl_err *e) {
  if (sqlite3_prepare_v2(db, sql, -1, st, NULL) != SQLITE_OK)
    return tl_fail(e, "traceloom_compare_report needs a published comparison "
                      "(SELECT traceloom_compare(...) first): %s", sqlite3_errmsg(db));
  return TL_OK;
}

static const char *text(sqlite3_stmt *st, int col) {
  const char *s = (const char *)sqlite3_column_text(st, col);
  return s ? s : "";
}

/* A number, or a dash for NULL. */
static void num(tl_buf *b, sqlite3_stmt *st, int col, const char *fmt) {
  if (sqlite3_column_type(st, col) == SQLITE_NULL)
    tl_buf_puts(b, "-");
  else
    tl_buf_printf(b, fmt, sqlite3_column_double(st, col));
}

/* A Markdown table cell: | and newlines would break the row. Each " > " part (a node path's
** labels) is written as tl_buf_display_label writes a label: a raw C++ kernel name by its
** qualified name. */
static void cell(tl_buf *b, const char *s) {
  tl_buf part = {0};
  for (;;) {
    const char *sep = strstr(s, " > ");
    size_t n = sep ? (size_t)(sep - s) : strlen(s);
    part.n = 0;
    tl_buf_display_label(&part, s, n);
    for (size_t i = 0; i < part.n; i++) {
      if (part.p[i] == '|')
        tl_buf_puts(b, "\\|");
      else if (part.p[i] == '\n')
        tl_buf_puts(b, " ");
      else
        tl_buf_append(b, part.p + i, 1);
    }
    if (!sep) break;
    tl_buf_puts(b, " > ");
    s = sep + 3;
  }
  tl_buf_free(&part);
}

/* One Markdown table row from a statement, column by column as the descriptors say. */
typedef enum cell_kind { CELL_TEXT, CELL_NUM, CELL_PCT, CELL_ARROW } cell_kind;
typedef struct cell_def {
  cell_kind kind;
  int col;
  const char *fmt; /* numbers; CELL_ARROW: two columns col and col + 1, "a -> b" */
} cell_def;

static void table_row(tl_buf *b, sqlite3_stmt *st, const cell_def *defs, size_t n) {
  for (size_t k = 0; k < n; k++) {
    const cell_def *d = &defs[k];
    tl_buf_puts(b, "| ");
    if (d->kind == CELL_TEXT) {
      cell(b, sqlite3_column_type(st, d->col) == SQLITE_NULL ? "-" : text(st, d->col));
    } else if (d->kind == CELL_PCT && sqlite3_column_type(st, d->col) != SQLITE_NULL) {
      tl_buf_printf(b, "%.1f%%", 100.0 * sqlite3_column_double(st, d->col));
    } else {
      num(b, st, d->col, d->fmt);
      if (d->kind == CELL_ARROW) tl_buf_puts(b, " -> "), num(b, st, d->col + 1, d->fmt);
    }
    tl_buf_puts(b, " ");
  }
  tl_buf_puts(b, "|\n");
}

static int header(sqlite3 *db, tl_buf *b, tl_err *e) {
  sqlite3_stmt *st;
  if (prepare(db, "SELECT base_path, new_path, options_json, families_source FROM traceloom_compare_run",
              &st, e))
    return TL_ERROR;
  tl_buf_puts(b, "# TraceLoom comparison\n\n");
  if (sqlite3_step(st) == SQLITE_ROW)
    tl_buf_printf(b, "- base: `%s`\n- new: `%s`\n- options: `%s`, families: `%s`\n", text(st, 0),
                  text(st, 1), text(st, 2), text(st, 3));
  sqlite3_finalize(st);
  tl_buf_puts(b, "\nPer-unit figures are per iteration for a Repeat and per occurrence otherwise; "
                 "a change's share is its part of the end-to-end delta.\n");
  return TL_OK;
}

static void split_row(tl_buf *b, const char *what, double us, double delta_us) {
  us += 0.0; /* -0 prints as +0 */
  tl_buf_printf(b, "| %s | %+.3f |", what, us);
  if (delta_us != 0)
    tl_buf_printf(b, " %.1f%% |\n", 100.0 * us / delta_us);
  else
    tl_buf_puts(b, " - |\n");
}

static int ranked(sqlite3 *db, tl_buf *b, int64_t pair, const report_opts *o, tl_err *e) {
  sqlite3_stmt *st;
  if (prepare(db,
              "SELECT rank, change, path, base_units, new_units, base_per_unit_us, "
              "new_per_unit_us, delta_us, share_of_delta, noise FROM traceloom_compare_summary "
              "WHERE pair_id = ?1 AND rank > 0 AND (?2 = 0 OR rank <= ?2) ORDER BY rank",
              &st, e))
    return TL_ERROR;
  sqlite3_bind_int64(st, 1, pair);
  sqlite3_bind_int64(st, 2, o->top);
  tl_buf_puts(b, "\n### Top changes\n\n| # | change | path | units base -> new | base us/unit | "
                 "new us/unit | delta us | share | noise |\n"
                 "|---:|---|---|---|---:|---:|---:|---:|---|\n");
  static const cell_def cols[] = {
      {CELL_NUM, 0, "%.0f"},   {CELL_TEXT, 1, NULL},    {CELL_TEXT, 2, NULL},
      {CELL_ARROW, 3, "%.0f"}, {CELL_NUM, 5, "%.3f"},   {CELL_NUM, 6, "%.3f"},
      {CELL_NUM, 7, "%+.3f"},  {CELL_PCT, 8, NULL},     {CELL_TEXT, 9, NULL},
  };
  int rows = 0;
  for (; sqlite3_step(st) == SQLITE_ROW; rows++) table_row(b, st, cols, sizeof cols / sizeof cols[0]);
  sqlite3_finalize(st);
  if (!rows) tl_buf_puts(b, "| - | no change | | | | | | | |\n");
  return TL_OK;
}

static int kernels(sqlite3 *db, tl_buf *b, int64_t root_key, const report_opts *o, tl_err *e) {
  if (o->symbols == 0) return TL_OK;
  sqlite3_stmt *st;
  if (prepare(db,
              "SELECT symbol, base_symbols, family, base_occurrences, new_occurrences, "
              "base_total_us, new_total_us, delta_total_us, ratio_total FROM traceloom_compare_symbol "
              "WHERE node_key = ?1 ORDER BY abs(delta_total_us) DESC, symbol LIMIT ?2",
              &st, e))
    return TL_ERROR;
  sqlite3_bind_int64(st, 1, root_key);
  sqlite3_bind_int64(st, 2, o->symbols);
  tl_buf_puts(b, "\n### Kernels of the whole tree (symbol summary, largest change first)\n\n"
                 "| symbol | base symbols | family | occurrences base -> new | base us | new us | "
                 "delta us | ratio |\n|---|---|---|---|---:|---:|---:|---:|\n");
  static const cell_def cols[] = {
      {CELL_TEXT, 0, NULL},    {CELL_TEXT, 1, NULL},    {CELL_TEXT, 2, NULL},
      {CELL_ARROW, 3, "%.0f"}, {CELL_NUM, 5, "%.3f"},   {CELL_NUM, 6, "%.3f"},
      {CELL_NUM, 7, "%+.3f"},  {CELL_NUM, 8, "%.3f"},
  };
  while (sqlite3_step(st) == SQLITE_ROW) table_row(b, st, cols, sizeof cols / sizeof cols[0]);
  sqlite3_finalize(st);
  return TL_OK;
}

int tl_compare_report(sqlite3 *db, const char *options_json, char **out, tl_err *e) {
  *out = NULL;
  report_opts o;
  if (parse_opts(options_json, &o, e)) return TL_ERROR;
  tl_buf b = {0};
  sqlite3_stmt *st = NULL;
  int rc = header(db, &b, e);
  if (rc == TL_OK)
    rc = prepare(db,
                 "SELECT t.pair_id, s.path, t.base_total_ns / 1000.0, t.new_total_ns / 1000.0, "
                 "(t.new_total_ns - t.base_total_ns) / 1000.0, s.ratio, t.rate_ns / 1000.0, "
                 "t.count_ns / 1000.0, t.added_ns / 1000.0, t.removed_ns / 1000.0, "
                 "t.nodes_matched, t.nodes_matched_by_family, t.nodes_added, t.nodes_removed, "
                 "t.alignment, t.root_key FROM traceloom_compare_tree t "
                 "JOIN traceloom_compare_summary s ON s.pair_id = t.pair_id AND s.rank = 0 "
                 "ORDER BY t.pair_id",
                 &st, e);
  while (rc == TL_OK && sqlite3_step(st) == SQLITE_ROW) {
    double delta = sqlite3_column_double(st, 4);
    tl_buf_printf(&b, "\n## %s\n\nEnd to end: **%.3f us -> %.3f us** (%+.3f us", text(st, 1),
                  sqlite3_column_double(st, 2), sqlite3_column_double(st, 3), delta);
    if (sqlite3_column_type(st, 5) != SQLITE_NULL)
      tl_buf_printf(&b, ", %+.2f%%", 100.0 * (sqlite3_column_double(st, 5) - 1.0));
    tl_buf_puts(&b, ").\n\n| part of the delta | us | share |\n|---|---:|---:|\n");
    split_row(&b, "per-iteration changes of matched nodes", sqlite3_column_double(st, 6), delta);
    split_row(&b, "iteration counts", sqlite3_column_double(st, 7), delta);
    split_row(&b, "added work", sqlite3_column_double(st, 8), delta);
    split_row(&b, "removed work", -sqlite3_column_double(st, 9), delta);
    tl_buf_printf(&b, "\nAlignment (%s): %lld nodes matched (%lld by semantic family), %lld added, "
                      "%lld removed.\n",
                  text(st, 14), (long long)sqlite3_column_int64(st, 10),
                  (long long)sqlite3_column_int64(st, 11), (long long)sqlite3_column_int64(st, 12),
                  (long long)sqlite3_column_int64(st, 13));
    rc = ranked(db, &b, sqlite3_column_int64(st, 0), &o, e);
    if (rc == TL_OK) rc = kernels(db, &b, sqlite3_column_int64(st, 15), &o, e);
  }
  sqlite3_finalize(st);
  if (rc == TL_OK && b.oom) rc = tl_nomem(e);
  if (rc != TL_OK) {
    tl_buf_free(&b);
    return rc;
  }
  *out = b.p;
  return TL_OK;
}
