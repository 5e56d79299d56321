/*
** options.c: the analysis options (see options.h).
**
** Each option is one row of the table below: its key, the function that reads its value
** and the message a wrong value gets. The parser walks the object once; every failure
** leaves through the same cleanup.
*/
#include "analyze/options.h"
#include "util/json.h"
#include "util/buf.h"
#include "source/source.h"
#include "idle/idle.h"

#include <stdlib.h>
#include <string.h>

/* Result of an option reader: the value is taken, wrong, memory ran out, or wrong with
** the reader's own message already in the error (a nested option object). */
enum { OPT_OK = 0, OPT_BAD, OPT_NOMEM, OPT_FAILED };

static int read_threads(const tl_json *v, tl_options *o, tl_err *e) {
  (void)e;
  int64_t n;
  if (tl_json_i64(v, &n) || n < 1 || n > 256) return OPT_BAD;
  o->threads = (int)n;
  return OPT_OK;
}

static int read_source_kind(const tl_json *v, tl_options *o, tl_err *e) {
  (void)e;
  const char *s = tl_json_str(v, NULL);
  if (!s || (strcmp(s, "auto") != 0 && !tl_family_by_source_kind(s))) return OPT_BAD;
  free(o->source_kind);
  o->source_kind = tl_strdup(s);
  return o->source_kind ? OPT_OK : OPT_NOMEM;
}

static int read_rules_config(const tl_json *v, tl_options *o, tl_err *e) {
  (void)e;
  const char *s = NULL;
  if (tl_json_type_of(v) != TL_JSON_NULL) {
    s = tl_json_str(v, NULL);
    if (!s || !*s) return OPT_BAD;
  }
  free(o->rules_config);
  o->rules_config = s ? tl_strdup(s) : NULL;
  return s && !o->rules_config ? OPT_NOMEM : OPT_OK;
}

static int read_context(const tl_json *v, tl_options *o, tl_err *e) {
  (void)e;
  if (tl_json_type_of(v) != TL_JSON_ARRAY) return OPT_BAD;
  for (size_t k = 0; k < tl_json_len(v); k++) {
    const char *s = tl_json_str(tl_json_at(v, k), NULL);
    if (!s || !*s) return OPT_BAD;
  }
  for (size_t k = 0; k < o->ncontext; k++) free(o->context[k]);
  free(o->context);
  o->ncontext = 0;
  o->context = calloc(tl_json_len(v) + 1, sizeof *o->context);
  if (!o->context) return OPT_NOMEM;
  for (size_t k = 0; k < tl_json_len(v); k++) {
    o->context[k] = tl_strdup(tl_json_str(tl_json_at(v, k), NULL));
    if (!o->context[k]) return OPT_NOMEM;
    o->ncontext = k + 1;
  }
  return OPT_OK;
}

static int read_step_markers(const tl_json *v, tl_options *o, tl_err *e) {
  (void)e;
  const char *s = tl_json_str(v, NULL);
  if (!s) return OPT_BAD;
  free(o->step_markers);
  o->step_markers = tl_strdup(s);
  return o->step_markers ? OPT_OK : OPT_NOMEM;
}

static int read_flag(const tl_json *v, int *out, int invert) {
  int b = tl_json_bool(v);
  if (b < 0) return OPT_BAD;
  *out = invert ? !b : b;
  return OPT_OK;
}
static int read_embed_raw(const tl_json *v, tl_options *o, tl_err *e) {
  (void)e;
  return read_flag(v, &o->embed_raw, 0);
}
static int read_text_id_indexes(const tl_json *v, tl_options *o, tl_err *e) {
  (void)e;
  return read_flag(v, &o->text_id_indexes, 0);
}
static int read_evidence_role_structure(const tl_json *v, tl_options *o, tl_err *e) {
  (void)e;
  return read_flag(v, &o->evidence_role_structure, 0);
}
static int read_graph_replay(const tl_json *v, tl_options *o, tl_err *e) {
  (void)e;
  return read_flag(v, &o->no_graph_replay, 1);
}
static int read_progress(const tl_json *v, tl_options *o, tl_err *e) {
  (void)e;
  return read_flag(v, &o->progress, 0);
}

/* {"idle_evidence": {...}}: checked now by ext/idle's own parser, kept as compact JSON for
** the idle stage (which parses it again after the structure). */
static int read_idle_evidence(const tl_json *v, tl_options *o, tl_err *e) {
  tl_idle_options io;
  int bad = tl_idle_options_parse(v, &io, e);
  tl_idle_options_free(&io);
  if (bad) return OPT_FAILED;
  tl_buf text = {0};
  tl_json_write(v, &text);
  if (text.oom) return tl_buf_free(&text), OPT_NOMEM;
  free(o->idle_evidence);
  o->idle_evidence = text.p;
  return OPT_OK;
}

typedef struct option_def {
  const char *key;
  /* OPT_FAILED only from a reader that wrote its own message into e */
  int (*read)(const tl_json *v, tl_options *o, tl_err *e);
  const char *expected; /* the message of a wrong value (NULL: built by bad_value) */
} option_def;

static const option_def options[] = {
    {"threads", read_threads, "analyze option \"threads\" must be an integer from 1 to 256"},
    {"source_kind", read_source_kind, NULL},
    {"rules_config", read_rules_config,
     "analyze option \"rules_config\" must be a rules file path or a bundled config name "
     "(scheduler-step, deepseekv4, qwen35-serving)"},
    {"context", read_context,
     "analyze option \"context\" must be a JSON array of context JSONL paths, e.g. "
     "{\"context\": [\"scheduler.jsonl\"]}"},
    {"embed_raw", read_embed_raw, "analyze option \"embed_raw\" must be true or false"},
    {"text_id_indexes", read_text_id_indexes,
     "analyze option \"text_id_indexes\" must be true or false"},
    {"evidence_role_structure", read_evidence_role_structure,
     "analyze option \"evidence_role_structure\" must be true or false"},
    {"graph_replay", read_graph_replay, "analyze option \"graph_replay\" must be true or false"},
    {"idle_evidence", read_idle_evidence, NULL},
    {"progress", read_progress, "analyze option \"progress\" must be true or false"},
    {"step_markers", read_step_markers,
     "analyze option \"step_markers\" must be a string: a name pattern of the record_function "
     "/ user_annotation ranges that delimit steps (fnmatch syntax, default \"ProfilerStep#*\"; "
     "\"\" for none)"},
};
enum { NOPTIONS = sizeof options / sizeof options[0] };

/* The message of a wrong value; source_kind lists the families of this build. */
static int bad_value(const option_def *d, tl_err *e) {
  if (d->expected) return tl_fail(e, "%s", d->expected);
  tl_buf b = {0};
  tl_buf_puts(&b, "analyze option \"source_kind\" must be one of auto, ");
  tl_family_kinds_list(&b, ", ");
  int rc = b.oom ? tl_nomem(e) : tl_fail(e, "%s", b.p);
  tl_buf_free(&b);
  return rc;
}

static int unknown_key(const char *key, tl_err *e) {
  tl_buf b = {0};
  for (int i = 0; i < NOPTIONS; i++)
    tl_buf_printf(&b, "%s%s", i == 0 ? "" : i == NOPTIONS - 1 ? " or " : ", ", options[i].key);
  int rc = b.oom ? tl_nomem(e)
                 : tl_fail(e, "unknown analyze option \"%s\": expected %s", key, b.p);
  tl_buf_free(&b);
  return rc;
}

/* The canonical options: the ones that can change a result, in a fixed order. */
static char *canonical_json(const tl_options *o) {
  tl_buf b = {0};
  tl_buf_puts(&b, "{\"source_kind\":");
  tl_buf_json_string(&b, o->source_kind, strlen(o->source_kind));
  if (o->embed_raw) tl_buf_puts(&b, ",\"embed_raw\":true");
  if (o->text_id_indexes) tl_buf_puts(&b, ",\"text_id_indexes\":true");
  if (o->evidence_role_structure) tl_buf_puts(&b, ",\"evidence_role_structure\":true");
  if (o->no_graph_replay) tl_buf_puts(&b, ",\"graph_replay\":false");
  if (o->idle_evidence) tl_buf_puts(&b, ",\"idle_evidence\":"), tl_buf_puts(&b, o->idle_evidence);
  if (o->step_markers) {
    tl_buf_puts(&b, ",\"step_markers\":");
    tl_buf_json_string(&b, o->step_markers, strlen(o->step_markers));
  }
  if (o->ncontext) {
    tl_buf_puts(&b, ",\"context\":[");
    for (size_t k = 0; k < o->ncontext; k++) {
      if (k) tl_buf_puts(&b, ",");
      tl_buf_json_string(&b, o->context[k], strlen(o->context[k]));
    }
    tl_buf_puts(&b, "]");
  }
  tl_buf_puts(&b, "}");
  if (b.oom) tl_buf_free(&b);
  return b.oom ? NULL : b.p;
}

void tl_options_free(tl_options *o) {
  free(o->source_kind);
  free(o->rules_config);
  free(o->idle_evidence);
  free(o->step_markers);
  for (size_t i = 0; i < o->ncontext; i++) free(o->context[i]);
  free(o->context);
  memset(o, 0, sizeof *o);
}

int tl_options_parse(const char *options_json, tl_options *o, char **canonical, tl_err *e) {
  memset(o, 0, sizeof *o);
  o->threads = 2;
  o->progress = -1;
  *canonical = NULL;
  tl_json *doc = NULL;
  int rc = TL_OK;
  if (options_json && *options_json) {
    if (tl_json_parse(options_json, strlen(options_json), &doc, e)) {
      rc = tl_fail(e, "invalid analyze options");
      goto done;
    }
    if (tl_json_type_of(doc) != TL_JSON_OBJECT) {
      rc = tl_fail(e, "analyze options must be a JSON object, e.g. {\"threads\": 2}");
      goto done;
    }
  }
  for (size_t i = 0; rc == TL_OK && i < tl_json_len(doc); i++) {
    const char *key = tl_json_key_at(doc, i);
    const option_def *d = NULL;
    for (int k = 0; k < NOPTIONS && !d; k++)
      if (strcmp(key, options[k].key) == 0) d = &options[k];
    if (!d) {
      rc = unknown_key(key, e);
      break;
    }
    const tl_json *v = tl_json_value_at(doc, i);
    int r = d->read(v, o, e);
    if (r == OPT_BAD) rc = bad_value(d, e);
    else if (r == OPT_NOMEM) rc = tl_nomem(e);
    else if (r == OPT_FAILED) rc = TL_ERROR;
  }
  if (rc == TL_OK && !o->source_kind && !(o->source_kind = tl_strdup("auto"))) rc = tl_nomem(e);
  if (rc == TL_OK && !(*canonical = canonical_json(o))) rc = tl_nomem(e);
done:
  tl_json_free(doc);
  if (rc != TL_OK) tl_options_free(o);
  return rc;
}
