/*
** rules.c: loading and validating rule manifests and rules configs (see rules.h, classify.h).
**
** tl_rules_load builds the effective rules in three steps:
**   1. each policy stage starts from its built-in manifest (rules/<stage>.yaml, compiled into the
**      extension), or from the manifest named by TRACELOOM_CLASSIFICATION_RULES,
**      TRACELOOM_SYMBOL_RULES or TRACELOOM_EVENT_RECONCILIATION_RULES;
**   2. a rules config, when given, extends, overrides or replaces stages and sets the grammar
**      hints (macro_matching, structure, replay_structure);
**   3. the merged stages are validated again as a whole and a digest is taken.
** Every problem is reported as "<file>:<line>: <key path>: expected <what>, got <value>", and
** nothing is returned unless the whole configuration is valid, so an invalid config never
** changes an analysis.
*/
#include "classify/classify.h"
#include "classify/yamldoc.h"
#include "embedded.h"
#include "util/sha256.h"
#include "util/buf.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_RULES_BYTES (1024 * 1024)

/* ------------------------------------------------------------------ small helpers */

/* snprintf for key paths and names: truncation only shortens a message. */
static void pathf(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void pathf(char *buf, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, cap, fmt, ap);
  va_end(ap);
}

static void strlist_free(tl_rule_names *l) {
  for (size_t i = 0; i < l->n; i++) free(l->v[i]);
  TL_VEC_FREE(l);
}

static char *lower_dup(const char *s) {
  char *d = tl_strdup(s);
  if (d)
    for (char *p = d; *p; p++) *p = (char)tolower((unsigned char)*p);
  return d;
}

char *tl_task_type_normalize(const char *s) {
  size_t n = strlen(s);
  char *out = malloc(n + 1);
  if (!out) return NULL;
  tl_task_type_key(s, out, n + 1);
  return out;
}

static void sha_hex_of(const void *data, size_t n, char hex[65]) {
  tl_sha256 s;
  uint8_t d[32];
  tl_sha256_init(&s);
  tl_sha256_update(&s, data, n);
  tl_sha256_final(&s, d);
  tl_sha256_hex(d, hex);
}

/* ------------------------------------------------------------------ freeing */

static void meta_free(tl_policy_meta *m) {
  free(m->manifest_schema), free(m->policy_id), free(m->policy_version);
}

static void class_rule_free(tl_class_rule *r) {
  free(r->rule_id), free(r->pattern), free(r->required_fields), free(r->note), free(r->key);
}

static void class_policy_free(tl_class_policy *p) {
  meta_free(&p->meta);
  free(p->provider_scopes), free(p->fallback_identity_role), free(p->fallback_cost_treatment);
  free(p->fallback_context_treatment), free(p->fallback_provenance_treatment);
  free(p->missing_evidence_behavior);
  for (size_t i = 0; i < p->rules.n; i++) class_rule_free(&p->rules.v[i]);
  TL_VEC_FREE(&p->rules);
  memset(p, 0, sizeof *p);
}

static void symbol_rule_free(tl_symbol_rule *r) {
  free(r->rule_id), free(r->provider_scope), free(r->pattern), free(r->structural_symbol);
  free(r->note);
  for (size_t i = 0; i < r->nalts; i++) free(r->alts[i]);
  free(r->alts);
}

static void symbol_policy_free(tl_symbol_policy *p) {
  meta_free(&p->meta);
  for (size_t i = 0; i < p->rules.n; i++) symbol_rule_free(&p->rules.v[i]);
  TL_VEC_FREE(&p->rules);
  memset(p, 0, sizeof *p);
}

static void reconcile_rule_free(tl_reconcile_rule *r) {
  free(r->rule_id), free(r->provider_scope), free(r->source_domain), free(r->task_type);
  free(r->task_op_type), free(r->communication_op_name_prefix), free(r->identity_policy);
  free(r->note), free(r->min_contained_fraction);
}

static void reconcile_policy_free(tl_reconcile_policy *p) {
  meta_free(&p->meta);
  free(p->unmatched_behavior);
  free(p->description);
  for (size_t i = 0; i < p->rules.n; i++) reconcile_rule_free(&p->rules.v[i]);
  TL_VEC_FREE(&p->rules);
  memset(p, 0, sizeof *p);
}

static void macro_free(tl_macro_matching *m) {
  for (size_t i = 0; i < m->ordered.n; i++)
    free(m->ordered.v[i].id), free(m->ordered.v[i].before), free(m->ordered.v[i].after);
  for (size_t i = 0; i < m->suffix.n; i++) free(m->suffix.v[i].id), free(m->suffix.v[i].marker);
  TL_VEC_FREE(&m->ordered);
  TL_VEC_FREE(&m->suffix);
  memset(m, 0, sizeof *m);
}

static void structure_rules_free(tl_structure_rules *s) {
  free(s->id), free(s->begin), free(s->end), free(s->label), free(s->boundary_label);
  for (size_t i = 0; i < s->labels.n; i++) {
    free(s->labels.v[i].label);
    strlist_free(&s->labels.v[i].contains_any);
  }
  TL_VEC_FREE(&s->labels);
  strlist_free(&s->end_predecessors);
  strlist_free(&s->end_sequence);
  for (size_t i = 0; i < s->compositions.n; i++) {
    free(s->compositions.v[i].label);
    strlist_free(&s->compositions.v[i].sequence);
  }
  TL_VEC_FREE(&s->compositions);
  memset(s, 0, sizeof *s);
}

void tl_rules_free(tl_rules *r) {
  if (!r) return;
  class_policy_free(&r->cls);
  symbol_policy_free(&r->sym);
  reconcile_policy_free(&r->rec);
  macro_free(&r->macro);
  structure_rules_free(&r->structure);
  structure_rules_free(&r->replay_structure);
  for (size_t i = 0; i < r->origins.n; i++) free(r->origins.v[i].name);
  TL_VEC_FREE(&r->origins);
  free(r->config_name);
  free(r);
}

const char *tl_rules_digest(const tl_rules *r) { return r->digest; }

/* ------------------------------------------------------------------ located errors */

typedef struct ctx {
  tl_rules *r;
  int origin;       /* index of the file being read */
  tl_err *e;
} ctx;

static const char *origin_name(const ctx *c, int origin) { return c->r->origins.v[origin].name; }

/* "<file>:<line>: <path>: <message>" */
static int bad(ctx *c, int line, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int bad(ctx *c, int line, const char *path, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return tl_fail(c->e, "%s:%d: %s: %s", origin_name(c, c->origin), line, path, msg);
}

/* Joins a key path: "rules[3]" + "priority" -> "rules[3].priority". */
static const char *join(char *buf, size_t cap, const char *base, const char *key) {
  if (!base || !*base)
    pathf(buf, cap, "%s", key);
  else
    pathf(buf, cap, "%s.%s", base, key);
  return buf;
}

static int expect_type(ctx *c, const tl_ynode *n, tl_ytype t, const char *path, const char *what) {
  if (n->type == t) return TL_OK;
  return bad(c, n->line, path, "expected %s, got a %s", what, tl_ytype_name(n->type));
}

/* Refuses keys outside allowed (a NULL-terminated list). */
static int check_keys(ctx *c, const tl_ynode *m, const char *path, const char *const *allowed) {
  for (size_t i = 0; i < m->n; i++) {
    int ok = 0;
    for (const char *const *a = allowed; *a; a++)
      if (strcmp(*a, m->keys[i]) == 0) ok = 1;
    if (ok) continue;
    tl_buf b = {0};
    for (const char *const *a = allowed; *a; a++) tl_buf_printf(&b, "%s%s", a == allowed ? "" : ", ", *a);
    char kp[256];
    int rc = bad(c, m->key_lines[i], join(kp, sizeof kp, path, m->keys[i]),
                 "unknown key (expected one of: %s)", b.p ? b.p : "");
    tl_buf_free(&b);
    return rc;
  }
  return TL_OK;
}

/* A scalar value: *out is NULL when the key is absent and not required. Rule files hold
** single-line scalars only. */
static int get_scalar(ctx *c, const tl_ynode *m, const char *path, const char *key, int required,
                      const tl_ynode **out) {
  char kp[256];
  join(kp, sizeof kp, path, key);
  const tl_ynode *v = tl_ymap_get(m, key);
  *out = NULL;
  if (!v) {
    if (required) return bad(c, m->line, kp, "missing required key");
    return TL_OK;
  }
  if (v->type != TL_Y_SCALAR)
    return bad(c, v->line, kp, "expected a single-line scalar, got a %s", tl_ytype_name(v->type));
  if (v->block || memchr(v->text, '\n', v->len))
    return bad(c, v->line, kp, "expected a single-line scalar, got a multi-line string");
  if (memchr(v->text, 0, v->len))
    return bad(c, v->line, kp, "expected text without NUL characters");
  *out = v;
  return TL_OK;
}

/* Required and non-empty. */
static int get_text(ctx *c, const tl_ynode *m, const char *path, const char *key, const tl_ynode **out) {
  if (get_scalar(c, m, path, key, 1, out)) return TL_ERROR;
  char kp[256];
  if ((*out)->len == 0) return bad(c, (*out)->line, join(kp, sizeof kp, path, key), "expected a non-empty value");
  return TL_OK;
}

static int one_of(ctx *c, const tl_ynode *v, const char *path, const char *key,
                  const char *const *values, int *idx) {
  for (int i = 0; values[i]; i++)
    if (strcmp(values[i], v->text) == 0) {
      *idx = i;
      return TL_OK;
    }
  tl_buf b = {0};
  for (int i = 0; values[i]; i++) tl_buf_printf(&b, "%s%s", i ? " | " : "", values[i]);
  char kp[256];
  int rc = bad(c, v->line, join(kp, sizeof kp, path, key), "expected %s, got '%s'", b.p ? b.p : "",
               v->text);
  tl_buf_free(&b);
  return rc;
}

static int parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out) {
  if (!*s) return -1;
  errno = 0;
  char *end;
  long long v = strtoll(s, &end, 10);
  if (errno || *end || v < lo || v > hi || isspace((unsigned char)*s)) return -1;
  *out = v;
  return 0;
}

static int get_priority(ctx *c, const tl_ynode *m, const char *path, int32_t *out) {
  const tl_ynode *v;
  if (get_scalar(c, m, path, "priority", 1, &v)) return TL_ERROR;
  int64_t p;
  char kp[256];
  if (parse_i64(v->text, INT32_MIN, INT32_MAX, &p))
    return bad(c, v->line, join(kp, sizeof kp, path, "priority"),
               "expected a 32-bit integer, got '%s'", v->text);
  *out = (int32_t)p;
  return TL_OK;
}

static int list_has(const char *list, const char *item) {
  size_t n = strlen(item);
  for (const char *p = list; *p;) {
    while (*p == ' ' || *p == ',') p++;
    const char *q = p;
    while (*q && *q != ',') q++;
    const char *t = q;
    while (t > p && t[-1] == ' ') t--;
    if ((size_t)(t - p) == n && strncmp(p, item, n) == 0) return 1;
    p = q;
  }
  return 0;
}

/* Checks a comma list against allowed names; returns a bit per allowed name. */
static int comma_list(ctx *c, const tl_ynode *v, const char *path, const char *key,
                      const char *const *allowed, unsigned *bits) {
  *bits = 0;
  char kp[256];
  join(kp, sizeof kp, path, key);
  const char *p = v->text;
  int count = 0;
  while (*p) {
    while (*p == ' ') p++;
    const char *q = p;
    while (*q && *q != ',') q++;
    const char *t = q;
    while (t > p && t[-1] == ' ') t--;
    size_t n = (size_t)(t - p);
    int found = -1;
    for (int i = 0; allowed[i]; i++)
      if (strlen(allowed[i]) == n && strncmp(allowed[i], p, n) == 0) found = i;
    if (found < 0) {
      tl_buf b = {0};
      for (int i = 0; allowed[i]; i++) tl_buf_printf(&b, "%s%s", i ? ", " : "", allowed[i]);
      int rc = bad(c, v->line, kp, "expected a comma list of %s, got '%.*s' in '%s'",
                   b.p ? b.p : "", (int)n, p, v->text);
      tl_buf_free(&b);
      return rc;
    }
    *bits |= 1u << found;
    count++;
    p = *q ? q + 1 : q;
  }
  if (!count) return bad(c, v->line, kp, "expected a non-empty comma list");
  return TL_OK;
}

/* ------------------------------------------------------------------ value tables */

static const char *const SCOPES[] = {"any", "ascend", "cuda", "hygon", NULL};
static const char *const CLASS_FIELDS[] = {"task_type", "blob", "operator", NULL};
static const char *const CLASS_MATCHES[] = {"exact", "contains", "exact_any", NULL};
static const char *const POSITIVE_ROLES[] = {"anchor", "auxiliary", "transparent", NULL};
static const char *const PARTICIPATION[] = {"identity", "excluded", NULL};
static const char *const COSTS[] = {"retained_for_attribution", "retained_as_evidence", NULL};
static const char *const RETAINED[] = {"retained", NULL};
static const char *const MISSING[] = {"continue_or_fallback", NULL};
static const char *const CONCRETE[] = {"apply", "defer_to_identity_rules", NULL};
static const char *const REQUIRED[] = {"source_domain", "provider_scope", "task_type", "blob",
                                       "operator", NULL};
static const char *const TASK_DOMAIN[] = {"task", NULL};
static const char *const FALLBACK_ROLE[] = {"unknown_anchor", NULL};

static const char *const SYM_SCOPES[] = {"ascend", "cuda", "hygon", "provider-neutral", NULL};
static const char *const SYM_DOMAINS[] = {"task", "communication", NULL};
static const char *const SYM_FIELDS[] = {"selected", "any_identity", "op_name", "op_type",
                                         "task_type", "compute_task_type", "comm_name",
                                         "linked_task_name", "linked_task_type", NULL};
static const char *const SYM_MATCHES[] = {"exact", "exact_any", "contains_ci", "contains_any_ci",
                                          "opaque_numeric_instance",
                                          "ascend_kernel_base_exact_any",
                                          "ascend_decorated_kernel", NULL};

static const char *const CLASS_SCHEMA = "traceloom.evidence-role-policy/v1";
static const char *const RECONCILE_SCHEMA = "traceloom.event-reconciliation-policy/v2";

const char *tl_evidence_role_name(tl_evidence_role r) {
  switch (r) {
    case TL_EVIDENCE_ANCHOR: return "anchor";
    case TL_EVIDENCE_AUXILIARY: return "auxiliary";
    case TL_EVIDENCE_TRANSPARENT: return "transparent";
    case TL_EVIDENCE_UNKNOWN_ANCHOR: return "unknown_anchor";
    default: return NULL;
  }
}

const char *tl_scope_name(tl_scope s) { return s < TL_SCOPE_COUNT ? SCOPES[s] : "any"; }
const char *tl_cost_policy_name(tl_cost_policy c) { return COSTS[c ? 1 : 0]; }
const char *tl_class_field_name(tl_class_field f) { return CLASS_FIELDS[f]; }
const char *tl_class_match_name(tl_class_match m) { return CLASS_MATCHES[m]; }
const char *tl_sym_field_name(tl_sym_field f) { return SYM_FIELDS[f]; }
const char *tl_sym_match_name(tl_sym_match m) { return SYM_MATCHES[m]; }

/* ------------------------------------------------------------------ classification */

static const char *const CLASS_META_KEYS[] = {
    "manifest_schema", "policy_id", "policy_version", "provider_scopes",
    "fallback_identity_role", "fallback_cost_treatment", "fallback_context_treatment",
    "fallback_provenance_treatment", "missing_evidence_behavior", NULL};
/* What an extend or override stage may say about itself. */
static const char *const PARTIAL_CLASS_META_KEYS[] = {"policy_id", "policy_version",
                                                      "provider_scopes", NULL};

static int parse_provider_scopes(ctx *c, const tl_ynode *v, const char *path) {
  unsigned bits;
  return comma_list(c, v, path, "provider_scopes", SCOPES, &bits);
}

/* full: a whole manifest or a replaced stage (every key required); otherwise the metadata of
** an extend/override stage. */
static int parse_class_meta(ctx *c, const tl_ynode *m, const char *path, int full,
                            tl_class_policy *p) {
  if (expect_type(c, m, TL_Y_MAP, path, "a mapping")) return TL_ERROR;
  if (check_keys(c, m, path, full ? CLASS_META_KEYS : PARTIAL_CLASS_META_KEYS)) return TL_ERROR;
  const tl_ynode *v[9] = {0};
  char kp[256];
  int idx = 0;
  for (int i = 0; CLASS_META_KEYS[i]; i++) {
    int required = full || i == 1 || i == 2;
    if (get_scalar(c, m, path, CLASS_META_KEYS[i], required, &v[i])) return TL_ERROR;
    if (i == 0 && v[0] && strcmp(v[0]->text, CLASS_SCHEMA) != 0)
      return bad(c, v[0]->line, join(kp, sizeof kp, path, "manifest_schema"),
                 "expected %s, got '%s'", CLASS_SCHEMA, v[0]->text);
  }
  for (int i = 1; i <= 2; i++)
    if (!v[i]->len)
      return bad(c, v[i]->line, join(kp, sizeof kp, path, CLASS_META_KEYS[i]),
                 "expected a non-empty value");
  if (v[3] && parse_provider_scopes(c, v[3], path)) return TL_ERROR;
  if (v[4] && one_of(c, v[4], path, "fallback_identity_role", FALLBACK_ROLE, &idx)) return TL_ERROR;
  if (v[5] && one_of(c, v[5], path, "fallback_cost_treatment", COSTS, &idx)) return TL_ERROR;
  p->fallback_cost = v[5] ? (uint8_t)idx : TL_COSTP_RETAINED_FOR_ATTRIBUTION;
  if (v[6] && one_of(c, v[6], path, "fallback_context_treatment", RETAINED, &idx)) return TL_ERROR;
  if (v[7] && one_of(c, v[7], path, "fallback_provenance_treatment", RETAINED, &idx)) return TL_ERROR;
  if (v[8] && one_of(c, v[8], path, "missing_evidence_behavior", MISSING, &idx)) return TL_ERROR;
  char **dst[9] = {&p->meta.manifest_schema, &p->meta.policy_id, &p->meta.policy_version,
                   &p->provider_scopes, &p->fallback_identity_role, &p->fallback_cost_treatment,
                   &p->fallback_context_treatment, &p->fallback_provenance_treatment,
                   &p->missing_evidence_behavior};
  for (int i = 0; i < 9; i++)
    if (v[i] && !(*dst[i] = tl_strdup(v[i]->text))) return tl_nomem(c->e);
  return TL_OK;
}

/* An exact_any pattern of task types: each '|'-separated alternative normalized. */
static char *task_types_normalize(const char *pattern) {
  tl_buf b = {0};
  for (const char *p = pattern;;) {
    const char *bar = strchr(p, '|');
    size_t len = bar ? (size_t)(bar - p) : strlen(p);
    char *alt = malloc(len + 1), *key = NULL;
    if (alt) memcpy(alt, p, len), alt[len] = 0, key = tl_task_type_normalize(alt);
    if (key) tl_buf_printf(&b, "%s%s", p == pattern ? "" : "|", key);
    free(alt);
    if (!key) b.oom = 1;
    free(key);
    if (!bar || b.oom) break;
    p = bar + 1;
  }
  if (b.oom) {
    tl_buf_free(&b);
    return NULL;
  }
  return b.p ? b.p : tl_strdup("");
}

static const char *const CLASS_RULE_KEYS[] = {
    "rule_id", "priority", "provider_scope", "source_domain", "field", "match", "pattern",
    "role", "required_fields", "structural_participation", "cost_treatment",
    "context_treatment", "provenance_treatment", "missing_evidence_behavior",
    "concrete_identity_behavior", "note", NULL};

static int parse_class_rule(ctx *c, const tl_ynode *m, const char *path, size_t order,
                            tl_class_rule *out) {
  memset(out, 0, sizeof *out);
  if (expect_type(c, m, TL_Y_MAP, path, "a mapping (one rule)")) return TL_ERROR;
  if (check_keys(c, m, path, CLASS_RULE_KEYS)) return TL_ERROR;
  const tl_ynode *id, *scope, *domain, *field, *match, *pattern, *role, *req, *part, *cost, *ctxt,
      *prov, *miss, *conc, *note;
  if (get_text(c, m, path, "rule_id", &id) || get_priority(c, m, path, &out->priority) ||
      get_scalar(c, m, path, "provider_scope", 1, &scope) ||
      get_scalar(c, m, path, "source_domain", 1, &domain) ||
      get_scalar(c, m, path, "field", 1, &field) || get_scalar(c, m, path, "match", 1, &match) ||
      get_text(c, m, path, "pattern", &pattern) || get_scalar(c, m, path, "role", 1, &role) ||
      get_scalar(c, m, path, "required_fields", 1, &req) ||
      get_scalar(c, m, path, "structural_participation", 1, &part) ||
      get_scalar(c, m, path, "cost_treatment", 1, &cost) ||
      get_scalar(c, m, path, "context_treatment", 1, &ctxt) ||
      get_scalar(c, m, path, "provenance_treatment", 1, &prov) ||
      get_scalar(c, m, path, "missing_evidence_behavior", 1, &miss) ||
      get_scalar(c, m, path, "concrete_identity_behavior", 1, &conc) ||
      get_scalar(c, m, path, "note", 0, &note))
    return TL_ERROR;
  int sc = 0, dom = 0, fi = 0, ma = 0, ro = 0, pa = 0, co = 0, x = 0, cb = 0;
  unsigned bits;
  char kp[256];
  if (one_of(c, scope, path, "provider_scope", SCOPES, &sc) ||
      one_of(c, domain, path, "source_domain", TASK_DOMAIN, &dom) ||
      one_of(c, field, path, "field", CLASS_FIELDS, &fi) ||
      one_of(c, match, path, "match", CLASS_MATCHES, &ma))
    return TL_ERROR;
  if (strcmp(role->text, "unknown_anchor") == 0)
    return bad(c, role->line, join(kp, sizeof kp, path, "role"),
               "expected anchor | auxiliary | transparent, got 'unknown_anchor' (the fallback "
               "role is never a positive rule)");
  if (one_of(c, role, path, "role", POSITIVE_ROLES, &ro) ||
      comma_list(c, req, path, "required_fields", REQUIRED, &bits) ||
      one_of(c, part, path, "structural_participation", PARTICIPATION, &pa) ||
      one_of(c, cost, path, "cost_treatment", COSTS, &co) ||
      one_of(c, ctxt, path, "context_treatment", RETAINED, &x) ||
      one_of(c, prov, path, "provenance_treatment", RETAINED, &x) ||
      one_of(c, miss, path, "missing_evidence_behavior", MISSING, &x) ||
      one_of(c, conc, path, "concrete_identity_behavior", CONCRETE, &cb))
    return TL_ERROR;
  /* REQUIRED order: source_domain, provider_scope, task_type, blob, operator. */
  unsigned field_bit = 1u << (2 + fi);
  if (!(bits & field_bit))
    return bad(c, req->line, join(kp, sizeof kp, path, "required_fields"),
               "expected a list that includes the match field '%s', got '%s'", field->text,
               req->text);
  if ((ro == 0) != (pa == 0))
    return bad(c, part->line, join(kp, sizeof kp, path, "structural_participation"),
               "expected %s for role %s, got '%s'", ro == 0 ? "identity" : "excluded",
               role->text, part->text);
  out->scope = (uint8_t)sc, out->field = (uint8_t)fi, out->match = (uint8_t)ma;
  out->role = (uint8_t)(ro == 0   ? TL_EVIDENCE_ANCHOR
                        : ro == 1 ? TL_EVIDENCE_AUXILIARY
                                  : TL_EVIDENCE_TRANSPARENT);
  out->cost = (uint8_t)co, out->defer = (uint8_t)cb;
  out->required = (uint8_t)bits;
  out->line = id->line;
  out->origin = c->origin;
  out->decl_order = order;
  out->rule_id = tl_strdup(id->text);
  out->pattern = tl_strdup(pattern->text);
  out->required_fields = tl_strdup(req->text);
  out->note = note ? tl_strdup(note->text) : NULL;
  out->key = fi != TL_CF_TASK_TYPE   ? lower_dup(pattern->text)
             : ma == TL_CM_EXACT_ANY ? task_types_normalize(pattern->text)
                                     : tl_task_type_normalize(pattern->text);
  if (!out->rule_id || !out->pattern || !out->required_fields || (note && !out->note) || !out->key)
    return tl_nomem(c->e);
  if (!*out->key)
    return bad(c, pattern->line, join(kp, sizeof kp, path, "pattern"),
               "expected a task type with at least one letter or digit, got '%s'", pattern->text);
  return TL_OK;
}

static int parse_class_rules(ctx *c, const tl_ynode *seq, const char *path, size_t first_order,
                             tl_class_policy *p) {
  if (expect_type(c, seq, TL_Y_SEQ, path, "a sequence of rules")) return TL_ERROR;
  for (size_t i = 0; i < seq->n; i++) {
    char ip[256];
    pathf(ip, sizeof ip, "%s[%zu]", path, i);
    tl_class_rule rule;
    int rc = parse_class_rule(c, seq->items[i], ip, first_order + i, &rule);
    if (rc == TL_OK && TL_VEC_PUSH(&p->rules, rule)) rc = tl_nomem(c->e);
    if (rc) {
      class_rule_free(&rule);
      return TL_ERROR;
    }
  }
  return TL_OK;
}

static int by_decision_order(const void *a, const void *b) {
  const tl_class_rule *x = a, *y = b;
  if (x->priority != y->priority) return x->priority > y->priority ? -1 : 1;
  return x->decl_order < y->decl_order ? -1 : x->decl_order > y->decl_order;
}

/* Whole-policy checks, run on the effective (merged) rules. */
static int validate_class_policy(ctx *c, tl_class_policy *p) {
  for (size_t i = 0; i < p->rules.n; i++) {
    const tl_class_rule *a = &p->rules.v[i];
    ctx at = {c->r, a->origin, c->e};
    if (a->scope != TL_SCOPE_ANY && !list_has(p->provider_scopes, "any") &&
        !list_has(p->provider_scopes, SCOPES[a->scope]))
      return bad(&at, a->line, "provider_scope",
                 "expected a scope declared in provider_scopes (%s) of policy %s, got '%s'",
                 p->provider_scopes, p->meta.policy_id, SCOPES[a->scope]);
    for (size_t j = 0; j < i; j++) {
      const tl_class_rule *b = &p->rules.v[j];
      if (strcmp(a->rule_id, b->rule_id) == 0)
        return bad(&at, a->line, "rule_id", "expected a unique rule id, got duplicate '%s' (also at %s:%d)",
                   a->rule_id, origin_name(c, b->origin), b->line);
      if (a->scope == b->scope && a->field == b->field && a->match == b->match &&
          a->priority == b->priority && strcmp(a->key, b->key) == 0)
        return bad(&at, a->line, "pattern",
                   "expected rules of equal precedence to differ, got rule '%s' with the same "
                   "domain, scope, field, match, pattern and priority as '%s' (%s:%d)",
                   a->rule_id, b->rule_id, origin_name(c, b->origin), b->line);
    }
  }
  if (p->rules.n > 1) qsort(p->rules.v, p->rules.n, sizeof *p->rules.v, by_decision_order);
  return TL_OK;
}

/* ------------------------------------------------------------------ symbol normalization */

static const char *const SYM_META_KEYS[] = {"policy_id", "policy_version", NULL};
static const char *const SYM_RULE_KEYS[] = {"priority", "rule_id", "provider_scope",
                                            "source_domain", "field", "match", "pattern",
                                            "structural_symbol", "note", NULL};

static int parse_simple_meta(ctx *c, const tl_ynode *m, const char *path, tl_policy_meta *meta) {
  if (expect_type(c, m, TL_Y_MAP, path, "a mapping")) return TL_ERROR;
  if (check_keys(c, m, path, SYM_META_KEYS)) return TL_ERROR;
  const tl_ynode *id, *ver;
  if (get_text(c, m, path, "policy_id", &id) || get_text(c, m, path, "policy_version", &ver))
    return TL_ERROR;
  if (!(meta->policy_id = tl_strdup(id->text)) || !(meta->policy_version = tl_strdup(ver->text)))
    return tl_nomem(c->e);
  return TL_OK;
}

static int split_alts(ctx *c, tl_symbol_rule *r, int lower, int line, const char *path) {
  size_t n = 1;
  for (const char *p = r->pattern; *p; p++) n += *p == '|';
  r->alts = calloc(n, sizeof *r->alts);
  if (!r->alts) return tl_nomem(c->e);
  const char *p = r->pattern;
  for (size_t i = 0; i < n; i++) {
    const char *q = strchr(p, '|');
    size_t len = q ? (size_t)(q - p) : strlen(p);
    char kp[256];
    if (len == 0)
      return bad(c, line, join(kp, sizeof kp, path, "pattern"),
                 "expected non-empty `|` alternatives, got '%s'", r->pattern);
    char *a = malloc(len + 1);
    if (!a) return tl_nomem(c->e);
    for (size_t k = 0; k < len; k++) a[k] = lower ? (char)tolower((unsigned char)p[k]) : p[k];
    a[len] = 0;
    r->alts[r->nalts++] = a;
    p = q ? q + 1 : p + len;
  }
  return TL_OK;
}

static int parse_symbol_rule(ctx *c, const tl_ynode *m, const char *path, tl_symbol_rule *out) {
  memset(out, 0, sizeof *out);
  if (expect_type(c, m, TL_Y_MAP, path, "a mapping (one rule)")) return TL_ERROR;
  if (check_keys(c, m, path, SYM_RULE_KEYS)) return TL_ERROR;
  const tl_ynode *id, *scope, *domain, *field, *match, *pattern, *symbol, *note;
  if (get_priority(c, m, path, &out->priority) || get_text(c, m, path, "rule_id", &id) ||
      get_text(c, m, path, "provider_scope", &scope) ||
      get_text(c, m, path, "source_domain", &domain) || get_text(c, m, path, "field", &field) ||
      get_text(c, m, path, "match", &match) || get_text(c, m, path, "pattern", &pattern) ||
      get_text(c, m, path, "structural_symbol", &symbol) || get_text(c, m, path, "note", &note))
    return TL_ERROR;
  int sc = 0, dom = 0, fi = 0, ma = 0;
  char kp[256];
  if (one_of(c, scope, path, "provider_scope", SYM_SCOPES, &sc) ||
      one_of(c, domain, path, "source_domain", SYM_DOMAINS, &dom) ||
      one_of(c, field, path, "field", SYM_FIELDS, &fi) ||
      one_of(c, match, path, "match", SYM_MATCHES, &ma))
    return TL_ERROR;
  int task_only = fi == TL_SF_TASK_TYPE || fi == TL_SF_COMPUTE_TASK_TYPE || fi == TL_SF_COMM_NAME;
  int comm_only = fi == TL_SF_LINKED_TASK_NAME || fi == TL_SF_LINKED_TASK_TYPE;
  if ((dom == TL_SD_TASK && comm_only) || (dom == TL_SD_COMMUNICATION && task_only))
    return bad(c, field->line, join(kp, sizeof kp, path, "field"),
               "expected a field of the %s domain, got '%s'", domain->text, field->text);
  int kernel_base = strcmp(symbol->text, "{kernel_base}") == 0;
  if (ma == TL_SM_ASCEND_DECORATED_KERNEL) {
    if (sc != 0 || dom != TL_SD_TASK || strcmp(pattern->text, "*") != 0 || !kernel_base)
      return bad(c, match->line, join(kp, sizeof kp, path, "match"),
                 "expected ascend_decorated_kernel only with provider_scope ascend, "
                 "source_domain task, pattern '*' and structural_symbol {kernel_base}");
  } else if (kernel_base) {
    return bad(c, symbol->line, join(kp, sizeof kp, path, "structural_symbol"),
               "expected a symbol name ({kernel_base} needs match ascend_decorated_kernel)");
  } else if (strchr(symbol->text, '{') || strchr(symbol->text, '}')) {
    return bad(c, symbol->line, join(kp, sizeof kp, path, "structural_symbol"),
               "expected a symbol name without braces, got '%s'", symbol->text);
  }
  out->domain = (uint8_t)dom, out->field = (uint8_t)fi, out->match = (uint8_t)ma;
  out->kernel_base = (uint8_t)kernel_base;
  out->line = id->line, out->origin = c->origin;
  if (!(out->rule_id = tl_strdup(id->text)) || !(out->provider_scope = tl_strdup(scope->text)) ||
      !(out->pattern = tl_strdup(pattern->text)) ||
      !(out->structural_symbol = tl_strdup(symbol->text)) || !(out->note = tl_strdup(note->text)))
    return tl_nomem(c->e);
  int lower = ma == TL_SM_CONTAINS_CI || ma == TL_SM_CONTAINS_ANY_CI;
  int multi = ma == TL_SM_EXACT_ANY || ma == TL_SM_CONTAINS_ANY_CI ||
              ma == TL_SM_ASCEND_KERNEL_BASE_EXACT_ANY;
  if (multi) return split_alts(c, out, lower, pattern->line, path);
  out->alts = calloc(1, sizeof *out->alts);
  if (!out->alts || !(out->alts[0] = lower ? lower_dup(pattern->text) : tl_strdup(pattern->text)))
    return tl_nomem(c->e);
  out->nalts = 1;
  return TL_OK;
}

static int parse_symbol_rules(ctx *c, const tl_ynode *seq, const char *path, tl_symbol_policy *p) {
  if (expect_type(c, seq, TL_Y_SEQ, path, "a sequence of rules")) return TL_ERROR;
  for (size_t i = 0; i < seq->n; i++) {
    char ip[256];
    pathf(ip, sizeof ip, "%s[%zu]", path, i);
    tl_symbol_rule rule;
    int rc = parse_symbol_rule(c, seq->items[i], ip, &rule);
    if (rc == TL_OK && TL_VEC_PUSH(&p->rules, rule)) rc = tl_nomem(c->e);
    if (rc) {
      symbol_rule_free(&rule);
      return TL_ERROR;
    }
  }
  return TL_OK;
}

static int validate_symbol_policy(ctx *c, const tl_symbol_policy *p) {
  for (size_t i = 0; i < p->rules.n; i++) {
    const tl_symbol_rule *a = &p->rules.v[i];
    ctx at = {c->r, a->origin, c->e};
    for (size_t j = 0; j < i; j++) {
      const tl_symbol_rule *b = &p->rules.v[j];
      if (strcmp(a->rule_id, b->rule_id) == 0)
        return bad(&at, a->line, "rule_id", "expected a unique rule id, got duplicate '%s' (also at %s:%d)",
                   a->rule_id, origin_name(c, b->origin), b->line);
      if (a->priority == b->priority && a->domain == b->domain && a->field == b->field &&
          a->match == b->match && strcasecmp(a->provider_scope, b->provider_scope) == 0 &&
          strcasecmp(a->pattern, b->pattern) == 0)
        return bad(&at, a->line, "pattern",
                   "expected rules of equal precedence to differ, got rule '%s' with the same "
                   "scope, domain, field, match, pattern and priority as '%s' (%s:%d)",
                   a->rule_id, b->rule_id, origin_name(c, b->origin), b->line);
    }
  }
  return TL_OK;
}

/* ------------------------------------------------------------------ event reconciliation */

static const char *const REC_META_KEYS[] = {"manifest_schema", "policy_id", "policy_version",
                                            "unmatched_behavior", "description", NULL};
static const char *const REC_RULE_KEYS[] = {
    "priority", "rule_id", "provider_scope", "source_domain", "task_type",
    "generic_context_id", "concrete_context_id", "min_contained_fraction", "task_op_type",
    "communication_op_name_prefix", "identity_policy", "note", NULL};
static const char *const REC_DOMAINS[] = {"task", "task+communication_op", NULL};
static const char *const INDEPENDENT[] = {"independent", NULL};

static int parse_reconcile_meta(ctx *c, const tl_ynode *m, const char *path, int full,
                                tl_reconcile_policy *p) {
  if (!full) return parse_simple_meta(c, m, path, &p->meta);
  if (expect_type(c, m, TL_Y_MAP, path, "a mapping")) return TL_ERROR;
  if (check_keys(c, m, path, REC_META_KEYS)) return TL_ERROR;
  const tl_ynode *schema, *id, *ver, *unmatched, *desc;
  int x = 0;
  char kp[256];
  if (get_scalar(c, m, path, "manifest_schema", 1, &schema) ||
      get_text(c, m, path, "policy_id", &id) || get_text(c, m, path, "policy_version", &ver) ||
      get_scalar(c, m, path, "unmatched_behavior", 1, &unmatched) ||
      get_scalar(c, m, path, "description", 0, &desc) ||
      one_of(c, unmatched, path, "unmatched_behavior", INDEPENDENT, &x))
    return TL_ERROR;
  if (strcmp(schema->text, RECONCILE_SCHEMA) != 0)
    return bad(c, schema->line, join(kp, sizeof kp, path, "manifest_schema"),
               "expected %s, got '%s'", RECONCILE_SCHEMA, schema->text);
  if (!(p->meta.manifest_schema = tl_strdup(schema->text)) ||
      !(p->meta.policy_id = tl_strdup(id->text)) ||
      !(p->meta.policy_version = tl_strdup(ver->text)) ||
      !(p->unmatched_behavior = tl_strdup(unmatched->text)) ||
      (desc && desc->len && !(p->description = tl_strdup(desc->text))))
    return tl_nomem(c->e);
  return TL_OK;
}

/* "0.99" -> 990000; accepts 0 < f <= 1 with up to 6 decimals. */
static int parse_fraction_ppm(const char *s, int64_t *ppm) {
  int64_t whole = 0, frac = 0;
  int digits = 0;
  const char *p = s;
  if (!isdigit((unsigned char)*p)) return -1;
  while (isdigit((unsigned char)*p)) whole = whole * 10 + (*p++ - '0');
  if (*p == '.') {
    p++;
    if (!isdigit((unsigned char)*p)) return -1;
    while (isdigit((unsigned char)*p)) {
      if (++digits > 6) return -1;
      frac = frac * 10 + (*p++ - '0');
    }
  }
  if (*p || whole > 1) return -1;
  while (digits++ < 6) frac *= 10;
  *ppm = whole * 1000000 + frac;
  return *ppm > 0 && *ppm <= 1000000 ? 0 : -1;
}

static int parse_reconcile_rule(ctx *c, const tl_ynode *m, const char *path, tl_reconcile_rule *out) {
  memset(out, 0, sizeof *out);
  if (expect_type(c, m, TL_Y_MAP, path, "a mapping (one rule)")) return TL_ERROR;
  if (check_keys(c, m, path, REC_RULE_KEYS)) return TL_ERROR;
  const tl_ynode *id, *scope, *domain, *tt, *gen, *conc, *frac, *op, *prefix, *ident, *note;
  if (get_priority(c, m, path, &out->priority) || get_text(c, m, path, "rule_id", &id) ||
      get_scalar(c, m, path, "provider_scope", 1, &scope) ||
      get_scalar(c, m, path, "source_domain", 1, &domain) ||
      get_scalar(c, m, path, "task_type", 1, &tt) ||
      get_scalar(c, m, path, "generic_context_id", 1, &gen) ||
      get_scalar(c, m, path, "concrete_context_id", 1, &conc) ||
      get_scalar(c, m, path, "min_contained_fraction", 1, &frac) ||
      get_scalar(c, m, path, "task_op_type", 1, &op) ||
      get_scalar(c, m, path, "communication_op_name_prefix", 1, &prefix) ||
      get_text(c, m, path, "identity_policy", &ident) || get_text(c, m, path, "note", &note))
    return TL_ERROR;
  int sc = 0, dom = 0;
  char kp[256];
  if (one_of(c, scope, path, "provider_scope", SCOPES, &sc) ||
      one_of(c, domain, path, "source_domain", REC_DOMAINS, &dom))
    return TL_ERROR;
  if (parse_i64(gen->text, -1, 4294967295LL, &out->generic_context_id))
    return bad(c, gen->line, join(kp, sizeof kp, path, "generic_context_id"),
               "expected -1 (not applicable) or a context id 0..4294967295, got '%s'", gen->text);
  if (parse_i64(conc->text, -1, 4294967295LL, &out->concrete_context_id))
    return bad(c, conc->line, join(kp, sizeof kp, path, "concrete_context_id"),
               "expected -1 (not applicable) or a context id 0..4294967295, got '%s'", conc->text);
  if (parse_fraction_ppm(frac->text, &out->min_contained_ppm))
    return bad(c, frac->line, join(kp, sizeof kp, path, "min_contained_fraction"),
               "expected a decimal fraction in (0, 1] with at most 6 decimals, got '%s'", frac->text);
  if (dom == 0 && !tt->len)
    return bad(c, tt->line, join(kp, sizeof kp, path, "task_type"),
               "expected a task type for source_domain task");
  if (dom == 1 && (!op->len || !prefix->len))
    return bad(c, (op->len ? prefix : op)->line,
               join(kp, sizeof kp, path, op->len ? "communication_op_name_prefix" : "task_op_type"),
               "expected a non-empty value for source_domain task+communication_op");
  out->line = id->line, out->origin = c->origin;
  if (!(out->rule_id = tl_strdup(id->text)) || !(out->provider_scope = tl_strdup(scope->text)) ||
      !(out->source_domain = tl_strdup(domain->text)) || !(out->task_type = tl_strdup(tt->text)) ||
      !(out->task_op_type = tl_strdup(op->text)) ||
      !(out->communication_op_name_prefix = tl_strdup(prefix->text)) ||
      !(out->identity_policy = tl_strdup(ident->text)) || !(out->note = tl_strdup(note->text)) ||
      !(out->min_contained_fraction = tl_strdup(frac->text)))
    return tl_nomem(c->e);
  return TL_OK;
}

static int parse_reconcile_rules(ctx *c, const tl_ynode *seq, const char *path,
                                 tl_reconcile_policy *p) {
  if (expect_type(c, seq, TL_Y_SEQ, path, "a sequence of rules")) return TL_ERROR;
  for (size_t i = 0; i < seq->n; i++) {
    char ip[256];
    pathf(ip, sizeof ip, "%s[%zu]", path, i);
    tl_reconcile_rule rule;
    int rc = parse_reconcile_rule(c, seq->items[i], ip, &rule);
    if (rc == TL_OK && TL_VEC_PUSH(&p->rules, rule)) rc = tl_nomem(c->e);
    if (rc) {
      reconcile_rule_free(&rule);
      return TL_ERROR;
    }
  }
  return TL_OK;
}

static int validate_reconcile_policy(ctx *c, const tl_reconcile_policy *p) {
  for (size_t i = 0; i < p->rules.n; i++)
    for (size_t j = 0; j < i; j++)
      if (strcmp(p->rules.v[i].rule_id, p->rules.v[j].rule_id) == 0) {
        ctx at = {c->r, p->rules.v[i].origin, c->e};
        return bad(&at, p->rules.v[i].line, "rule_id",
                   "expected a unique rule id, got duplicate '%s' (also at %s:%d)",
                   p->rules.v[i].rule_id, origin_name(c, p->rules.v[j].origin),
                   p->rules.v[j].line);
      }
  return TL_OK;
}

/* ------------------------------------------------------------------ stages */

typedef enum stage_kind { ST_CLASS = 0, ST_SYMBOL, ST_RECONCILE } stage_kind;
static const char *const STAGE_NAMES[] = {"classification", "symbol_normalization",
                                          "event_reconciliation", NULL};

/* One stage's policy, whichever kind. */
typedef struct stage {
  stage_kind kind;
  tl_class_policy cls;
  tl_symbol_policy sym;
  tl_reconcile_policy rec;
} stage;

static void stage_free(stage *s) {
  class_policy_free(&s->cls);
  symbol_policy_free(&s->sym);
  reconcile_policy_free(&s->rec);
}

static tl_policy_meta *stage_meta(stage *s) {
  return s->kind == ST_CLASS ? &s->cls.meta : s->kind == ST_SYMBOL ? &s->sym.meta : &s->rec.meta;
}

static int parse_stage_meta(ctx *c, stage *s, const tl_ynode *m, const char *path, int full) {
  switch (s->kind) {
    case ST_CLASS: return parse_class_meta(c, m, path, full, &s->cls);
    case ST_SYMBOL: return parse_simple_meta(c, m, path, &s->sym.meta);
    default: return parse_reconcile_meta(c, m, path, full, &s->rec);
  }
}

static int parse_stage_rules(ctx *c, stage *s, const tl_ynode *seq, const char *path,
                             size_t first_order) {
  switch (s->kind) {
    case ST_CLASS: return parse_class_rules(c, seq, path, first_order, &s->cls);
    case ST_SYMBOL: return parse_symbol_rules(c, seq, path, &s->sym);
    default: return parse_reconcile_rules(c, seq, path, &s->rec);
  }
}

static int validate_stage(ctx *c, stage *s) {
  switch (s->kind) {
    case ST_CLASS: return validate_class_policy(c, &s->cls);
    case ST_SYMBOL: return validate_symbol_policy(c, &s->sym);
    default: return validate_reconcile_policy(c, &s->rec);
  }
}

static int add_origin(tl_rules *r, const char *name, const char *sha, tl_err *e) {
  tl_rule_origin o;
  memset(&o, 0, sizeof o);
  if (!(o.name = tl_strdup(name))) return tl_nomem(e), -1;
  memcpy(o.sha256, sha, 65);
  if (TL_VEC_PUSH(&r->origins, o)) {
    free(o.name);
    tl_nomem(e);
    return -1;
  }
  return (int)r->origins.n - 1;
}

static const char *const MANIFEST_KEYS[] = {"schema", "kind", "metadata", "rules", NULL};

/* A whole manifest (`schema: traceloom-policy-v1`). want < 0 accepts any kind. */
static int parse_manifest(ctx *c, const tl_ynode *root, int want, stage *s) {
  if (expect_type(c, root, TL_Y_MAP, "(document)", "a mapping")) return TL_ERROR;
  if (check_keys(c, root, "", MANIFEST_KEYS)) return TL_ERROR;
  const tl_ynode *schema, *kind, *meta, *rules;
  if (get_scalar(c, root, "", "schema", 1, &schema) || get_scalar(c, root, "", "kind", 1, &kind))
    return TL_ERROR;
  if (strcmp(schema->text, "traceloom-policy-v1") != 0)
    return bad(c, schema->line, "schema", "expected traceloom-policy-v1, got '%s'", schema->text);
  int k = 0;
  static const char *const KINDS[] = {"classification", "symbol_normalization",
                                      "event_reconciliation", NULL};
  if (one_of(c, kind, "", "kind", KINDS, &k)) return TL_ERROR;
  if (want >= 0 && k != want)
    return bad(c, kind->line, "kind", "expected %s for this stage, got '%s'", KINDS[want], kind->text);
  s->kind = (stage_kind)k;
  if (!(meta = tl_ymap_get(root, "metadata"))) return bad(c, root->line, "metadata", "missing required key");
  if (parse_stage_meta(c, s, meta, "metadata", 1)) return TL_ERROR;
  if (!(rules = tl_ymap_get(root, "rules"))) return bad(c, root->line, "rules", "missing required key");
  if (parse_stage_rules(c, s, rules, "rules", 0)) return TL_ERROR;
  tl_policy_meta *m = stage_meta(s);
  m->origin = c->origin;
  memcpy(m->sha256, c->r->origins.v[c->origin].sha256, 65);
  return validate_stage(c, s);
}

/* Moves a stage into the rules (the previous policy of that kind is freed). */
static void install_stage(tl_rules *r, stage *s) {
  switch (s->kind) {
    case ST_CLASS:
      class_policy_free(&r->cls);
      r->cls = s->cls;
      memset(&s->cls, 0, sizeof s->cls);
      break;
    case ST_SYMBOL:
      symbol_policy_free(&r->sym);
      r->sym = s->sym;
      memset(&s->sym, 0, sizeof s->sym);
      break;
    default:
      reconcile_policy_free(&r->rec);
      r->rec = s->rec;
      memset(&s->rec, 0, sizeof s->rec);
  }
}

/* The current policy of a kind, moved out of the rules into a stage (for merging). */
static void take_stage(tl_rules *r, stage_kind k, stage *s) {
  memset(s, 0, sizeof *s);
  s->kind = k;
  if (k == ST_CLASS)
    s->cls = r->cls, memset(&r->cls, 0, sizeof r->cls);
  else if (k == ST_SYMBOL)
    s->sym = r->sym, memset(&r->sym, 0, sizeof r->sym);
  else
    s->rec = r->rec, memset(&r->rec, 0, sizeof r->rec);
}

/* Reads a file (at most 1 MiB) or a compiled-in file. */
typedef struct source_text {
  char *owned;
  const char *text;
  size_t len;
  char sha256[65];
} source_text;

static int read_rules_file(const char *path, source_text *st, tl_err *e) {
  memset(st, 0, sizeof *st);
  FILE *f = fopen(path, "rb");
  if (!f) return tl_fail(e, "cannot open rules file %s: %s", path, strerror(errno));
  char *buf = malloc(MAX_RULES_BYTES + 1);
  if (!buf) {
    fclose(f);
    return tl_nomem(e);
  }
  size_t n = fread(buf, 1, MAX_RULES_BYTES + 1, f);
  int err = ferror(f);
  fclose(f);
  if (err) {
    free(buf);
    return tl_fail(e, "cannot read rules file %s", path);
  }
  if (n > MAX_RULES_BYTES) {
    free(buf);
    return tl_fail(e, "rules file %s is larger than 1 MiB: a rules document must be small", path);
  }
  buf[n] = 0;
  st->owned = buf, st->text = buf, st->len = n;
  sha_hex_of(buf, n, st->sha256);
  return TL_OK;
}

static int bundled_text(const char *name, source_text *st) {
  const tl_embedded_file *f = tl_embedded_find(name);
  if (!f) return -1;
  memset(st, 0, sizeof *st);
  st->text = f->text, st->len = f->len;
  sha_hex_of(f->text, f->len, st->sha256);
  return 0;
}

/* Loads one stage's starting policy: the manifest named by the environment, else built-in. */
static int load_base_stage(tl_rules *r, stage_kind k, tl_err *e) {
  static const char *const ENV[] = {"TRACELOOM_CLASSIFICATION_RULES", "TRACELOOM_SYMBOL_RULES",
                                    "TRACELOOM_EVENT_RECONCILIATION_RULES"};
  static const char *const BUILTIN[] = {"rules/classification.yaml", "rules/symbol_normalization.yaml",
                                        "rules/event_reconciliation.yaml"};
  const char *env = getenv(ENV[k]);
  source_text st;
  char name[300];
  if (env && *env) {
    if (read_rules_file(env, &st, e)) return TL_ERROR;
    pathf(name, sizeof name, "%s", env);
  } else {
    if (bundled_text(BUILTIN[k], &st))
      return tl_fail(e, "the built-in rule manifest %s is missing from this build", BUILTIN[k]);
    pathf(name, sizeof name, "bundled:%s", BUILTIN[k]);
  }
  int origin = add_origin(r, name, st.sha256, e);
  tl_ynode *root = NULL;
  stage s;
  memset(&s, 0, sizeof s);
  int rc = origin < 0 ? TL_ERROR : tl_yaml_parse(name, st.text, st.len, &root, e);
  if (rc == TL_OK) {
    ctx c = {r, origin, e};
    rc = parse_manifest(&c, root, (int)k, &s);
  }
  if (rc == TL_OK) {
    stage_meta(&s)->mode = env && *env ? "env" : "builtin";
    install_stage(r, &s);
  }
  stage_free(&s);
  tl_ynode_free(root);
  free(st.owned);
  return rc;
}

/* "base+ext" provenance for an extended or overridden stage. */
static int merge_meta(ctx *c, tl_policy_meta *base, const tl_policy_meta *ext, const char *mode) {
  char *id = tl_mprintf("%s+%s", base->policy_id, ext->policy_id);
  char *ver = tl_mprintf("%s+%s", base->policy_version, ext->policy_version);
  if (!id || !ver) {
    free(id), free(ver);
    return tl_nomem(c->e);
  }
  free(base->policy_id), free(base->policy_version);
  base->policy_id = id, base->policy_version = ver;
  char both[65 * 2 + 1];
  pathf(both, sizeof both, "%s\n%s", base->sha256, c->r->origins.v[c->origin].sha256);
  sha_hex_of(both, strlen(both), base->sha256);
  base->origin = c->origin;
  base->mode = mode;
  return TL_OK;
}

static size_t stage_rule_count(const stage *s) {
  return s->kind == ST_CLASS ? s->cls.rules.n : s->kind == ST_SYMBOL ? s->sym.rules.n : s->rec.rules.n;
}

static const char *stage_rule_id(const stage *s, size_t i, int *line) {
  if (s->kind == ST_CLASS) return *line = s->cls.rules.v[i].line, s->cls.rules.v[i].rule_id;
  if (s->kind == ST_SYMBOL) return *line = s->sym.rules.v[i].line, s->sym.rules.v[i].rule_id;
  return *line = s->rec.rules.v[i].line, s->rec.rules.v[i].rule_id;
}

static int find_rule(const stage *s, const char *id) {
  int line;
  for (size_t i = 0; i < stage_rule_count(s); i++)
    if (strcmp(stage_rule_id(s, i, &line), id) == 0) return (int)i;
  return -1;
}

/* Moves rule i of ext to the end of base (extend) or over rule at of base (override). */
static int move_rule(stage *base, stage *ext, size_t i, int at) {
  if (base->kind == ST_CLASS) {
    tl_class_rule rule = ext->cls.rules.v[i];
    if (at >= 0) {
      rule.decl_order = base->cls.rules.v[at].decl_order;
      class_rule_free(&base->cls.rules.v[at]);
      base->cls.rules.v[at] = rule;
    } else {
      size_t order = 0;
      for (size_t k = 0; k < base->cls.rules.n; k++)
        if (base->cls.rules.v[k].decl_order >= order) order = base->cls.rules.v[k].decl_order + 1;
      rule.decl_order = order;
      if (TL_VEC_PUSH(&base->cls.rules, rule)) return -1;
    }
    memset(&ext->cls.rules.v[i], 0, sizeof rule);
  } else if (base->kind == ST_SYMBOL) {
    tl_symbol_rule rule = ext->sym.rules.v[i];
    if (at >= 0) {
      symbol_rule_free(&base->sym.rules.v[at]);
      base->sym.rules.v[at] = rule;
    } else if (TL_VEC_PUSH(&base->sym.rules, rule)) {
      return -1;
    }
    memset(&ext->sym.rules.v[i], 0, sizeof rule);
  } else {
    tl_reconcile_rule rule = ext->rec.rules.v[i];
    if (at >= 0) {
      reconcile_rule_free(&base->rec.rules.v[at]);
      base->rec.rules.v[at] = rule;
    } else if (TL_VEC_PUSH(&base->rec.rules, rule)) {
      return -1;
    }
    memset(&ext->rec.rules.v[i], 0, sizeof rule);
  }
  return 0;
}

static const char *const STAGE_KEYS[] = {"mode", "metadata", "rules", NULL};
static const char *const MODES[] = {"extend", "override", "replace", NULL};

/* One policy stage of a rules config: {mode, metadata, rules}. */
static int apply_stage(ctx *c, stage_kind k, const tl_ynode *n) {
  const char *path = STAGE_NAMES[k];
  char kp[256];
  if (expect_type(c, n, TL_Y_MAP, path, "a mapping {mode, metadata, rules}") ||
      check_keys(c, n, path, STAGE_KEYS))
    return TL_ERROR;
  const tl_ynode *modev, *meta = tl_ymap_get(n, "metadata"), *rules = tl_ymap_get(n, "rules");
  int mode = 0;
  if (get_scalar(c, n, path, "mode", 1, &modev) || one_of(c, modev, path, "mode", MODES, &mode))
    return TL_ERROR;
  if (!meta) return bad(c, n->line, join(kp, sizeof kp, path, "metadata"), "missing required key");
  if (!rules) return bad(c, n->line, join(kp, sizeof kp, path, "rules"), "missing required key");
  stage ext, base;
  memset(&ext, 0, sizeof ext);
  memset(&base, 0, sizeof base);
  ext.kind = k;
  char mp[256], rp[256];
  join(mp, sizeof mp, path, "metadata");
  join(rp, sizeof rp, path, "rules");
  int rc = parse_stage_meta(c, &ext, meta, mp, mode == 2);
  if (rc == TL_OK) rc = parse_stage_rules(c, &ext, rules, rp, 0);
  if (rc == TL_OK && mode == 2) { /* replace: the stage is exactly what the config says */
    tl_policy_meta *m = stage_meta(&ext);
    m->origin = c->origin;
    m->mode = "replace";
    memcpy(m->sha256, c->r->origins.v[c->origin].sha256, 65);
    rc = validate_stage(c, &ext);
    if (rc == TL_OK) install_stage(c->r, &ext);
    stage_free(&ext);
    return rc;
  }
  if (rc == TL_OK) take_stage(c->r, k, &base);
  for (size_t i = 0; rc == TL_OK && i < stage_rule_count(&ext); i++) {
    int line;
    const char *id = stage_rule_id(&ext, i, &line);
    int at = find_rule(&base, id);
    if (mode == 0 && at >= 0) {
      int bline;
      stage_rule_id(&base, (size_t)at, &bline);
      int borigin = k == ST_CLASS ? base.cls.rules.v[at].origin
                    : k == ST_SYMBOL ? base.sym.rules.v[at].origin : base.rec.rules.v[at].origin;
      pathf(kp, sizeof kp, "%s.rules[%zu].rule_id", path, i);
      rc = bad(c, line, kp,
               "expected a new rule id (mode extend adds rules), got '%s' which %s:%d already "
               "defines (use mode override to replace it)",
               id, origin_name(c, borigin), bline);
    } else if (mode == 1 && at < 0) {
      pathf(kp, sizeof kp, "%s.rules[%zu].rule_id", path, i);
      rc = bad(c, line, kp,
               "expected the id of an existing %s rule (mode override replaces rules), got '%s'",
               path, id);
    } else if (move_rule(&base, &ext, i, mode == 1 ? at : -1)) {
      rc = tl_nomem(c->e);
    }
  }
  if (rc == TL_OK && k == ST_CLASS && ext.cls.provider_scopes) {
    char *scopes = tl_mprintf("%s,%s", base.cls.provider_scopes, ext.cls.provider_scopes);
    if (!scopes) rc = tl_nomem(c->e);
    free(base.cls.provider_scopes);
    base.cls.provider_scopes = scopes;
  }
  if (rc == TL_OK) rc = merge_meta(c, stage_meta(&base), stage_meta(&ext), MODES[mode]);
  if (rc == TL_OK) rc = validate_stage(c, &base);
  /* The base goes back in either case; on error the whole tl_rules is discarded anyway. */
  install_stage(c->r, &base);
  stage_free(&base);
  stage_free(&ext);
  return rc;
}

/* ------------------------------------------------------------------ grammar hints */

static int get_strlist(ctx *c, const tl_ynode *v, const char *path, size_t min, tl_rule_names *out) {
  if (expect_type(c, v, TL_Y_SEQ, path, "a sequence of names")) return TL_ERROR;
  if (v->n < min)
    return bad(c, v->line, path, "expected at least %zu name%s, got %zu", min, min == 1 ? "" : "s", v->n);
  for (size_t i = 0; i < v->n; i++) {
    const tl_ynode *s = v->items[i];
    char ip[256];
    pathf(ip, sizeof ip, "%s[%zu]", path, i);
    if (s->type != TL_Y_SCALAR || !s->len || s->block || memchr(s->text, '\n', s->len))
      return bad(c, s->line, ip, "expected a non-empty single-line name, got a %s",
                 s->type == TL_Y_SCALAR ? "blank or multi-line value" : tl_ytype_name(s->type));
    char *d = tl_strdup(s->text);
    if (!d || TL_VEC_PUSH(out, d)) {
      free(d);
      return tl_nomem(c->e);
    }
  }
  return TL_OK;
}

static const char *const MACRO_KEYS[] = {"ordered_markers", "suffix_markers", "partition_by", NULL};
static const char *const ORDERED_KEYS[] = {"id", "before", "after", NULL};
static const char *const SUFFIX_KEYS[] = {"id", "marker", NULL};
static const char *const PARTITIONS[] = {"scheduler_step", NULL};

static int marker_id_unique(ctx *c, const tl_macro_matching *m, const tl_ynode *id, const char *path) {
  char kp[256];
  for (size_t i = 0; i < m->ordered.n; i++)
    if (strcmp(m->ordered.v[i].id, id->text) == 0)
      return bad(c, id->line, join(kp, sizeof kp, path, "id"),
                 "expected a marker id unique across ordered and suffix markers, got '%s' again",
                 id->text);
  for (size_t i = 0; i < m->suffix.n; i++)
    if (strcmp(m->suffix.v[i].id, id->text) == 0)
      return bad(c, id->line, join(kp, sizeof kp, path, "id"),
                 "expected a marker id unique across ordered and suffix markers, got '%s' again",
                 id->text);
  return TL_OK;
}

/* macro_matching (or the top level of a legacy traceloom-match-rules-v1 document, whose
** other keys the caller has checked). */
static int parse_macro(ctx *c, const tl_ynode *n, const char *path, const char *const *keys) {
  tl_macro_matching *m = &c->r->macro;
  macro_free(m);
  if (expect_type(c, n, TL_Y_MAP, path, "a mapping") || check_keys(c, n, path, keys)) return TL_ERROR;
  char kp[256], ip[256];
  const tl_ynode *om = tl_ymap_get(n, "ordered_markers"), *sm = tl_ymap_get(n, "suffix_markers");
  const tl_ynode *pb;
  if (om) {
    join(kp, sizeof kp, path, "ordered_markers");
    if (expect_type(c, om, TL_Y_SEQ, kp, "a sequence of {id, before, after}")) return TL_ERROR;
    for (size_t i = 0; i < om->n; i++) {
      pathf(ip, sizeof ip, "%s[%zu]", kp, i);
      const tl_ynode *it = om->items[i], *id, *before, *after;
      if (expect_type(c, it, TL_Y_MAP, ip, "a mapping {id, before, after}") ||
          check_keys(c, it, ip, ORDERED_KEYS) || get_text(c, it, ip, "id", &id) ||
          get_text(c, it, ip, "before", &before) || get_text(c, it, ip, "after", &after) ||
          marker_id_unique(c, m, id, ip))
        return TL_ERROR;
      if (strcmp(before->text, after->text) == 0) {
        char ap[256];
        return bad(c, after->line, join(ap, sizeof ap, ip, "after"),
                   "expected a marker different from before ('%s')", before->text);
      }
      tl_ordered_marker o = {tl_strdup(id->text), tl_strdup(before->text), tl_strdup(after->text)};
      if (!o.id || !o.before || !o.after || TL_VEC_PUSH(&m->ordered, o)) {
        free(o.id), free(o.before), free(o.after);
        return tl_nomem(c->e);
      }
    }
  }
  if (sm) {
    join(kp, sizeof kp, path, "suffix_markers");
    if (expect_type(c, sm, TL_Y_SEQ, kp, "a sequence of {id, marker}")) return TL_ERROR;
    for (size_t i = 0; i < sm->n; i++) {
      pathf(ip, sizeof ip, "%s[%zu]", kp, i);
      const tl_ynode *it = sm->items[i], *id, *marker;
      if (expect_type(c, it, TL_Y_MAP, ip, "a mapping {id, marker}") ||
          check_keys(c, it, ip, SUFFIX_KEYS) || get_text(c, it, ip, "id", &id) ||
          get_text(c, it, ip, "marker", &marker) || marker_id_unique(c, m, id, ip))
        return TL_ERROR;
      tl_suffix_marker s = {tl_strdup(id->text), tl_strdup(marker->text)};
      if (!s.id || !s.marker || TL_VEC_PUSH(&m->suffix, s)) {
        free(s.id), free(s.marker);
        return tl_nomem(c->e);
      }
    }
  }
  int x = 0;
  if (get_scalar(c, n, path, "partition_by", 0, &pb)) return TL_ERROR;
  if (pb) {
    if (one_of(c, pb, path, "partition_by", PARTITIONS, &x)) return TL_ERROR;
    m->partition_by_scheduler_step = 1;
  }
  return TL_OK;
}

static const char *const STRUCTURE_KEYS[] = {"unit", "compositions", NULL};
static const char *const UNIT_KEYS[] = {"id", "mode", "begin", "end", "labels", "end_predecessor",
                                        "end_predecessor_any", "end_sequence", "label",
                                        "boundary_label", "name_normalization", NULL};
static const char *const UNIT_MODES[] = {"paired", "end_delimited", "cycle_end", NULL};
static const char *const NAME_NORMALIZATIONS[] = {"exact", "ascend_decorated_kernel", NULL};
static const char *const LABEL_KEYS[] = {"label", "contains_any", NULL};
static const char *const COMPOSITION_KEYS[] = {"label", "sequence", NULL};

static int opt_text(ctx *c, const tl_ynode *m, const char *path, const char *key, char **out) {
  const tl_ynode *v;
  char kp[256];
  if (get_scalar(c, m, path, key, 0, &v)) return TL_ERROR;
  if (!v) return TL_OK;
  if (!v->len) return bad(c, v->line, join(kp, sizeof kp, path, key), "expected a non-empty value");
  if (!(*out = tl_strdup(v->text))) return tl_nomem(c->e);
  return TL_OK;
}

static int forbid(ctx *c, const tl_ynode *m, const char *path, const char *key, const char *why) {
  const tl_ynode *v = tl_ymap_get(m, key);
  char kp[256];
  if (v) return bad(c, v->line, join(kp, sizeof kp, path, key), "not allowed %s", why);
  return TL_OK;
}

static int is_known_label(const tl_structure_rules *s, const char *name) {
  for (size_t i = 0; i < s->labels.n; i++)
    if (strcmp(s->labels.v[i].label, name) == 0) return 1;
  return s->boundary_label && strcmp(s->boundary_label, name) == 0;
}

/* structure (outer timeline, outer = 1) or replay_structure (inside exact replay bodies). */
static int parse_structure(ctx *c, const tl_ynode *n, const char *path, int outer, tl_structure_rules *s) {
  structure_rules_free(s);
  s->present = 1;
  char up[256], kp[256], ip[256];
  if (expect_type(c, n, TL_Y_MAP, path, "a mapping {unit, compositions}") ||
      check_keys(c, n, path, STRUCTURE_KEYS))
    return TL_ERROR;
  const tl_ynode *u = tl_ymap_get(n, "unit"), *comps = tl_ymap_get(n, "compositions");
  join(up, sizeof up, path, "unit");
  if (!u) return bad(c, n->line, up, "missing required key");
  if (expect_type(c, u, TL_Y_MAP, up, "a mapping") || check_keys(c, u, up, UNIT_KEYS)) return TL_ERROR;
  const tl_ynode *id, *modev, *norm, *v;
  int mode = TL_UNIT_PAIRED, x = 0;
  if (get_text(c, u, up, "id", &id) || get_scalar(c, u, up, "mode", 0, &modev) ||
      (modev && one_of(c, modev, up, "mode", UNIT_MODES, &mode)) ||
      get_scalar(c, u, up, "name_normalization", 0, &norm) ||
      (norm && one_of(c, norm, up, "name_normalization", NAME_NORMALIZATIONS, &x)))
    return TL_ERROR;
  s->mode = (uint8_t)mode;
  s->decorated_names = norm && x == 1;
  if (!(s->id = tl_strdup(id->text))) return tl_nomem(c->e);
  if (opt_text(c, u, up, "begin", &s->begin) || opt_text(c, u, up, "end", &s->end) ||
      opt_text(c, u, up, "label", &s->label) ||
      opt_text(c, u, up, "boundary_label", &s->boundary_label))
    return TL_ERROR;
  int line = modev ? modev->line : u->line;
  if (mode == TL_UNIT_CYCLE_END) {
    if (!outer)
      return bad(c, line, join(kp, sizeof kp, up, "mode"),
                 "expected paired | end_delimited inside replay_structure, got 'cycle_end' "
                 "(cycle_end is for the outer timeline only)");
    const char *why = "with mode cycle_end";
    if (forbid(c, u, up, "end", why) || forbid(c, u, up, "labels", why) ||
        forbid(c, u, up, "end_predecessor", why) || forbid(c, u, up, "end_predecessor_any", why) ||
        forbid(c, u, up, "boundary_label", why) || forbid(c, n, path, "compositions", why))
      return TL_ERROR;
    if (!s->label) return bad(c, u->line, join(kp, sizeof kp, up, "label"), "missing required key (mode cycle_end)");
    if (!(v = tl_ymap_get(u, "end_sequence")))
      return bad(c, u->line, join(kp, sizeof kp, up, "end_sequence"), "missing required key (mode cycle_end)");
    if (get_strlist(c, v, join(kp, sizeof kp, up, "end_sequence"), 1, &s->end_sequence)) return TL_ERROR;
    if (s->begin)
      for (size_t i = 0; i < s->end_sequence.n; i++)
        if (strcmp(s->end_sequence.v[i], s->begin) == 0)
          return bad(c, tl_ymap_get(u, "begin")->line, join(kp, sizeof kp, up, "begin"),
                     "expected a begin marker outside end_sequence, got '%s'", s->begin);
    return TL_OK;
  }
  const char *why = "without mode cycle_end";
  if (forbid(c, u, up, "end_sequence", why) || forbid(c, u, up, "label", why)) return TL_ERROR;
  if (!s->end) return bad(c, u->line, join(kp, sizeof kp, up, "end"), "missing required key");
  if (mode == TL_UNIT_PAIRED && !s->begin)
    return bad(c, u->line, join(kp, sizeof kp, up, "begin"), "missing required key (mode paired)");
  if (s->begin && strcmp(s->begin, s->end) == 0)
    return bad(c, tl_ymap_get(u, "end")->line, join(kp, sizeof kp, up, "end"),
               "expected an end marker different from begin ('%s')", s->begin);
  const tl_ynode *ep = tl_ymap_get(u, "end_predecessor"), *epa = tl_ymap_get(u, "end_predecessor_any");
  if (mode != TL_UNIT_END_DELIMITED) {
    why = "without mode end_delimited";
    if (forbid(c, u, up, "end_predecessor", why) || forbid(c, u, up, "end_predecessor_any", why) ||
        forbid(c, u, up, "boundary_label", why))
      return TL_ERROR;
  }
  if (ep && epa)
    return bad(c, epa->line, join(kp, sizeof kp, up, "end_predecessor_any"),
               "not allowed together with end_predecessor (use one of them)");
  if (ep) {
    char *d;
    if (opt_text(c, u, up, "end_predecessor", &d)) return TL_ERROR;
    if (TL_VEC_PUSH(&s->end_predecessors, d)) {
      free(d);
      return tl_nomem(c->e);
    }
  }
  if (epa && get_strlist(c, epa, join(kp, sizeof kp, up, "end_predecessor_any"), 1, &s->end_predecessors))
    return TL_ERROR;
  const tl_ynode *labels = tl_ymap_get(u, "labels");
  if (labels) {
    join(kp, sizeof kp, up, "labels");
    if (expect_type(c, labels, TL_Y_SEQ, kp, "a sequence of {label, contains_any}")) return TL_ERROR;
    for (size_t i = 0; i < labels->n; i++) {
      pathf(ip, sizeof ip, "%s[%zu]", kp, i);
      const tl_ynode *it = labels->items[i], *lv, *ca;
      if (expect_type(c, it, TL_Y_MAP, ip, "a mapping {label, contains_any}") ||
          check_keys(c, it, ip, LABEL_KEYS) || get_text(c, it, ip, "label", &lv))
        return TL_ERROR;
      char lp[256];
      if (strcmp(lv->text, "ambiguous") == 0 || strcmp(lv->text, "unclassified") == 0)
        return bad(c, lv->line, join(lp, sizeof lp, ip, "label"),
                   "expected a label other than the reserved '%s'", lv->text);
      if (is_known_label(s, lv->text))
        return bad(c, lv->line, join(lp, sizeof lp, ip, "label"), "expected a unique label, got '%s' again",
                   lv->text);
      if (!(ca = tl_ymap_get(it, "contains_any")))
        return bad(c, it->line, join(lp, sizeof lp, ip, "contains_any"), "missing required key");
      tl_rule_unit_label ul;
      memset(&ul, 0, sizeof ul);
      if (!(ul.label = tl_strdup(lv->text)) || TL_VEC_PUSH(&s->labels, ul)) {
        free(ul.label);
        return tl_nomem(c->e);
      }
      if (get_strlist(c, ca, join(lp, sizeof lp, ip, "contains_any"), 1,
                      &s->labels.v[s->labels.n - 1].contains_any))
        return TL_ERROR;
    }
  }
  if (s->boundary_label) {
    for (size_t i = 0; i < s->labels.n; i++)
      if (strcmp(s->labels.v[i].label, s->boundary_label) == 0)
        return bad(c, tl_ymap_get(u, "boundary_label")->line, join(kp, sizeof kp, up, "boundary_label"),
                   "expected a label different from the unit labels, got '%s'", s->boundary_label);
    if (!strcmp(s->boundary_label, "ambiguous") || !strcmp(s->boundary_label, "unclassified"))
      return bad(c, tl_ymap_get(u, "boundary_label")->line, join(kp, sizeof kp, up, "boundary_label"),
                 "expected a label other than the reserved '%s'", s->boundary_label);
  }
  if (comps) {
    join(kp, sizeof kp, path, "compositions");
    if (expect_type(c, comps, TL_Y_SEQ, kp, "a sequence of {label, sequence}")) return TL_ERROR;
    for (size_t i = 0; i < comps->n; i++) {
      pathf(ip, sizeof ip, "%s[%zu]", kp, i);
      const tl_ynode *it = comps->items[i], *lv, *seq;
      char lp[256];
      if (expect_type(c, it, TL_Y_MAP, ip, "a mapping {label, sequence}") ||
          check_keys(c, it, ip, COMPOSITION_KEYS) || get_text(c, it, ip, "label", &lv))
        return TL_ERROR;
      for (size_t k = 0; k < s->compositions.n; k++)
        if (strcmp(s->compositions.v[k].label, lv->text) == 0)
          return bad(c, lv->line, join(lp, sizeof lp, ip, "label"),
                     "expected a unique composition label, got '%s' again", lv->text);
      if (!(seq = tl_ymap_get(it, "sequence")))
        return bad(c, it->line, join(lp, sizeof lp, ip, "sequence"), "missing required key");
      tl_rule_composition co;
      memset(&co, 0, sizeof co);
      if (!(co.label = tl_strdup(lv->text)) || TL_VEC_PUSH(&s->compositions, co)) {
        free(co.label);
        return tl_nomem(c->e);
      }
      tl_rule_names *sl = &s->compositions.v[s->compositions.n - 1].sequence;
      if (get_strlist(c, seq, join(lp, sizeof lp, ip, "sequence"), 2, sl)) return TL_ERROR;
      for (size_t k = 0; k < sl->n; k++)
        if (!is_known_label(s, sl->v[k])) {
          pathf(lp, sizeof lp, "%s.sequence[%zu]", ip, k);
          return bad(c, seq->items[k]->line, lp,
                     "expected a unit label or the boundary_label, got '%s'", sl->v[k]);
        }
    }
  }
  return TL_OK;
}

/* ------------------------------------------------------------------ rules configs */

static const char *const CONFIG_KEYS[] = {"schema", "classification", "symbol_normalization",
                                          "event_reconciliation", "macro_matching", "structure",
                                          "replay_structure", NULL};
static const char *const LEGACY_KEYS[] = {"schema", "ordered_markers", "suffix_markers",
                                          "partition_by", NULL};

static int apply_config(ctx *c, const tl_ynode *root) {
  if (expect_type(c, root, TL_Y_MAP, "(document)", "a mapping")) return TL_ERROR;
  const tl_ynode *schema;
  if (get_scalar(c, root, "", "schema", 1, &schema)) return TL_ERROR;
  if (strcmp(schema->text, "traceloom-policy-v1") == 0) {
    /* A bare manifest replaces the stage of its kind. */
    stage s;
    memset(&s, 0, sizeof s);
    int rc = parse_manifest(c, root, -1, &s);
    if (rc == TL_OK) {
      stage_meta(&s)->mode = "replace";
      install_stage(c->r, &s);
    }
    stage_free(&s);
    return rc;
  }
  if (strcmp(schema->text, "traceloom-match-rules-v1") == 0)
    return check_keys(c, root, "", LEGACY_KEYS) || parse_macro(c, root, "", LEGACY_KEYS);
  if (strcmp(schema->text, "traceloom-analysis-rules-v1") != 0)
    return bad(c, schema->line, "schema",
               "expected traceloom-analysis-rules-v1 (or traceloom-match-rules-v1, "
               "traceloom-policy-v1), got '%s'", schema->text);
  if (check_keys(c, root, "", CONFIG_KEYS)) return TL_ERROR;
  for (int k = 0; k < 3; k++) {
    const tl_ynode *n = tl_ymap_get(root, STAGE_NAMES[k]);
    if (n && apply_stage(c, (stage_kind)k, n)) return TL_ERROR;
  }
  const tl_ynode *n;
  if ((n = tl_ymap_get(root, "macro_matching")) && parse_macro(c, n, "macro_matching", MACRO_KEYS))
    return TL_ERROR;
  if ((n = tl_ymap_get(root, "structure")) && parse_structure(c, n, "structure", 1, &c->r->structure))
    return TL_ERROR;
  if ((n = tl_ymap_get(root, "replay_structure")) &&
      parse_structure(c, n, "replay_structure", 0, &c->r->replay_structure))
    return TL_ERROR;
  return TL_OK;
}

/* A path that exists is read; otherwise a bundled config name ("deepseekv4",
** "deepseekv4.yaml" or "configs/deepseekv4.yaml") is looked up in the extension. */
static int load_config(tl_rules *r, const char *config, tl_err *e) {
  source_text st;
  char name[512];
  FILE *probe = fopen(config, "rb");
  int rc;
  if (probe) {
    fclose(probe);
    if (read_rules_file(config, &st, e)) return TL_ERROR;
    pathf(name, sizeof name, "%s", config);
  } else {
    const char *base = strncmp(config, "configs/", 8) == 0 ? config + 8 : config;
    size_t n = strlen(base);
    if (n > 5 && strcmp(base + n - 5, ".yaml") == 0) n -= 5;
    pathf(name, sizeof name, "configs/%.*s.yaml", (int)(n < 200 ? n : 200), base);
    if (strchr(base, '/') || bundled_text(name, &st)) {
      tl_buf list = {0};
      for (const tl_embedded_file *f = tl_embedded_files; f->name; f++)
        if (strncmp(f->name, "configs/", 8) == 0) {
          size_t len = strlen(f->name + 8);
          tl_buf_printf(&list, "%s%.*s", list.n ? ", " : "", (int)(len - 5), f->name + 8);
        }
      rc = tl_fail(e, "rules config not found: %s is neither a readable file nor a bundled config "
                   "(bundled: %s)", config, list.p ? list.p : "none");
      tl_buf_free(&list);
      return rc;
    }
    char bundled[520];
    pathf(bundled, sizeof bundled, "bundled:%s", name);
    pathf(name, sizeof name, "%s", bundled);
  }
  int origin = add_origin(r, name, st.sha256, e);
  tl_ynode *root = NULL;
  rc = origin < 0 ? TL_ERROR : tl_yaml_parse(name, st.text, st.len, &root, e);
  if (rc == TL_OK) {
    ctx c = {r, origin, e};
    rc = apply_config(&c, root);
  }
  if (rc == TL_OK) {
    memcpy(r->config_sha256, st.sha256, 65);
    if (!(r->config_name = tl_strdup(config))) rc = tl_nomem(e);
  }
  tl_ynode_free(root);
  free(st.owned);
  return rc;
}

static int compute_digest(tl_rules *r, tl_err *e) {
  char *text = tl_mprintf("classification:%s\nsymbol_normalization:%s\nevent_reconciliation:%s\n"
                          "config:%s\n",
                          r->cls.meta.sha256, r->sym.meta.sha256, r->rec.meta.sha256,
                          r->config_sha256[0] ? r->config_sha256 : "none");
  if (!text) return tl_nomem(e);
  sha_hex_of(text, strlen(text), r->digest);
  free(text);
  return TL_OK;
}

int tl_rules_load(const char *config_path, tl_rules **out, tl_err *e) {
  *out = NULL;
  tl_rules *r = calloc(1, sizeof *r);
  if (!r) return tl_nomem(e);
  int rc = TL_OK;
  for (int k = 0; rc == TL_OK && k < 3; k++) rc = load_base_stage(r, (stage_kind)k, e);
  if (rc == TL_OK && config_path && *config_path) rc = load_config(r, config_path, e);
  if (rc == TL_OK) rc = compute_digest(r, e);
  if (rc != TL_OK) {
    tl_rules_free(r);
    return TL_ERROR;
  }
  *out = r;
  return TL_OK;
}

/* ------------------------------------------------------------------ provenance */

static void meta_json(tl_buf *b, const char *key, const tl_rules *r, const tl_policy_meta *m) {
  tl_buf_printf(b, "\"%s\":{\"policy_id\":", key);
  tl_buf_json_string(b, m->policy_id, strlen(m->policy_id));
  tl_buf_puts(b, ",\"policy_version\":");
  tl_buf_json_string(b, m->policy_version, strlen(m->policy_version));
  tl_buf_printf(b, ",\"mode\":\"%s\",\"source\":", m->mode ? m->mode : "builtin");
  const char *src = r->origins.v[m->origin].name;
  tl_buf_json_string(b, src, strlen(src));
  tl_buf_printf(b, ",\"sha256\":\"%s\"}", m->sha256);
}

int tl_rules_options_json(const tl_rules *r, tl_buf *b) {
  tl_buf_puts(b, "{\"config\":");
  if (r->config_name) {
    tl_buf_json_string(b, r->config_name, strlen(r->config_name));
    tl_buf_printf(b, ",\"config_sha256\":\"%s\"", r->config_sha256);
  } else {
    tl_buf_puts(b, "null");
  }
  tl_buf_puts(b, ",");
  meta_json(b, "classification", r, &r->cls.meta);
  tl_buf_puts(b, ",");
  meta_json(b, "symbol_normalization", r, &r->sym.meta);
  tl_buf_puts(b, ",");
  meta_json(b, "event_reconciliation", r, &r->rec.meta);
  tl_buf_printf(b, ",\"digest\":\"%s\"}", r->digest);
  return b->oom ? -1 : 0;
}
