/*
** classify.c: evidence roles and structural symbols per label, and their publication
** (see classify.h).
**
** One pass over the events marks which (label, provider scope) pairs occur; each pair is
** then decided once and becomes a class with a dense id. Publishing writes one row per class;
** events reference their class through traceloom_event.role_class_id.
*/
#include "classify/classify.h"
#include "publish/publish.h"
#include "publish/rows.h"
#include "util/buf.h"
#include "util/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tl_scope scope_of(tl_provider p) {
  switch (p) {
    case TL_PROVIDER_ASCEND: return TL_SCOPE_ASCEND;
    case TL_PROVIDER_CUDA: return TL_SCOPE_CUDA;
    case TL_PROVIDER_HYGON: return TL_SCOPE_HYGON;
    default: return TL_SCOPE_ANY;
  }
}

void tl_classification_free(tl_classification *c) {
  if (c->cls)
    for (size_t i = 0; i < c->nlabels * TL_SCOPE_COUNT; i++) free(c->cls[i].candidates);
  free(c->cls);
  free(c->rep), free(c->rep_of); /* a variant shares its class's candidates */
  free(c->db_scope);
  memset(c, 0, sizeof *c);
}

/* Appends s lower-cased, with a separating space before every part but the first. */
static void blob_part(tl_buf *b, const char *s, int first) {
  if (!first) tl_buf_append(b, " ", 1);
  size_t start = b->n;
  tl_buf_puts(b, s);
  if (!b->oom)
    for (size_t i = start; i < b->n; i++)
      if (b->p[i] >= 'A' && b->p[i] <= 'Z') b->p[i] = (char)(b->p[i] - 'A' + 'a');
}

/* Decides one (label, scope). scratch buffers are reused across labels. */
static int classify_label(const tl_trace *t, const tl_rules *r, const tl_label *l, tl_scope scope,
                          tl_label_class *out, tl_buf *blob, tl_buf *op, tl_err *e) {
  const char *op_name = tl_str(t, l->op_name), *op_type = tl_str(t, l->op_type);
  const char *task_type = tl_str(t, l->task_type), *ctt = tl_str(t, l->compute_task_type);
  const char *comm_name = tl_str(t, l->comm_name), *name = tl_str(t, l->name);
  int comm_op = strcmp(task_type, "COMMUNICATION_OP") == 0;
  out->domain = comm_op ? TL_OBS_COMMUNICATION : TL_OBS_TASK;

  if (comm_op) {
    /* Communication ops are their own observations, not tasks: no policy rule applies. */
    out->policy_role = TL_EVIDENCE_NONE;
    out->final_role = TL_EVIDENCE_ANCHOR;
    out->rule = TL_CLASS_RULE_SYSTEM_COMM;
    out->cost = TL_COSTP_RETAINED_FOR_ATTRIBUTION;
  } else {
    /* The label of the blob is the selected identity: op_type, op_name, comm_name, task_type. */
    const char *label = *op_type ? op_type : *op_name ? op_name : *comm_name ? comm_name : task_type;
    tl_buf_reset(blob);
    tl_buf_reset(op);
    int any = *label || *op_name || *op_type || *ctt || *task_type;
    if (any) {
      blob_part(blob, label, 1);
      blob_part(blob, op_name, 0);
      blob_part(blob, op_type, 0);
      blob_part(blob, ctt, 0);
      blob_part(blob, task_type, 0);
    }
    blob_part(op, label, 1);
    char *tt = tl_task_type_normalize(task_type);
    if (!tt || blob->oom || op->oom) {
      free(tt);
      return tl_nomem(e);
    }
    tl_role_input in = {scope, tt, any ? blob->p : "", op->p ? op->p : "", *op_type || *op_name};
    tl_role_decision d;
    tl_decide_role(&r->cls, &in, &d);
    free(tt);
    out->policy_role = out->final_role = (uint8_t)d.role;
    out->rule = d.rule;
    out->cost = (uint8_t)d.cost;
  }

  tl_symbol_input si;
  memset(&si, 0, sizeof si);
  si.provider = scope == TL_SCOPE_ANY ? "" : tl_scope_name(scope);
  if (comm_op) {
    si.domain = TL_SD_COMMUNICATION;
    si.op_name = *op_name ? op_name : *comm_name ? comm_name : name;
    si.op_type = op_type;
  } else {
    si.domain = TL_SD_TASK;
    si.op_name = op_name, si.op_type = op_type, si.task_type = task_type;
    si.compute_task_type = ctt, si.comm_name = comm_name;
  }
  tl_symbol_decision sd;
  if (tl_normalize_symbol(&r->sym, &si, &sd, e)) return TL_ERROR;
  out->symbol_outcome = (uint8_t)sd.outcome;
  out->symbol_rule = sd.rule;
  out->observed_symbol = sd.observed ? tl_strpool_intern_cstr(t->pool, sd.observed) : TL_STR_NONE;
  /* Every event gets a symbol: without any observed identity its raw name stands in. */
  const char *sym = sd.symbol ? sd.symbol : name;
  out->symbol = tl_strpool_intern_cstr(t->pool, sym);
  out->candidates = sd.candidates;
  sd.candidates = NULL;
  tl_symbol_decision_free(&sd);
  if (out->observed_symbol == TL_STR_NOMEM || out->symbol == TL_STR_NOMEM) return tl_nomem(e);
  return TL_OK;
}

/* The (label, scope) class of event i of the trace or of d. */
static size_t class_index(const tl_classification *c, const tl_trace *t, const tl_derived *d,
                          size_t i) {
  size_t j = i;
  const tl_events *ev = tl_events_of(t, d, &j);
  return (size_t)ev->label[j] * TL_SCOPE_COUNT + c->db_scope[tl_events_db_idx(ev, j)];
}

int tl_classify(const tl_trace *t, const tl_derived *d, const tl_rules *r,
                tl_classification *out, tl_err *e) {
  memset(out, 0, sizeof *out);
  size_t n = tl_event_count(t, d);
  out->nlabels = t->labels.n + (d ? d->labels.n : 0);
  out->ndb = t->profile ? t->profile->inputs.n : 0;
  out->cls = calloc(out->nlabels ? out->nlabels * TL_SCOPE_COUNT : 1, sizeof *out->cls);
  out->db_scope = calloc(out->ndb ? out->ndb : 1, 1);
  if (!out->cls || !out->db_scope) {
    tl_classification_free(out);
    return tl_nomem(e);
  }
  for (size_t i = 0; i < out->ndb; i++)
    out->db_scope[i] = (uint8_t)scope_of(tl_family_provider(t->profile->inputs.v[i].family));
  for (size_t i = 0; i < n; i++) {
    size_t j = i;
    const tl_events *ej = tl_events_of(t, d, &j);
    uint16_t db = tl_events_db_idx(ej, j);
    if (db >= out->ndb) {
      tl_classification_free(out);
      return tl_fail(e, "internal error: event-%zu names input %u of %zu", i, db, out->ndb);
    }
    out->cls[class_index(out, t, d, i)].used = 1;
  }
  tl_buf blob = {0}, op = {0};
  int rc = TL_OK;
  for (size_t li = 0; rc == TL_OK && li < out->nlabels; li++)
    for (int s = 0; rc == TL_OK && s < TL_SCOPE_COUNT; s++) {
      tl_label_class *c = &out->cls[li * TL_SCOPE_COUNT + (size_t)s];
      if (c->used)
        rc = classify_label(t, r, tl_label_at(t, d, (uint32_t)li), (tl_scope)s, c, &blob, &op, e);
    }
  tl_buf_free(&blob);
  tl_buf_free(&op);
  if (rc != TL_OK) {
    tl_classification_free(out);
    return rc;
  }
  for (size_t i = 0; i < out->nlabels * TL_SCOPE_COUNT; i++)
    if (out->cls[i].used) out->cls[i].class_id = (uint32_t)out->nclasses++;
  for (size_t i = 0; i < n; i++) {
    tl_label_class *k = &out->cls[class_index(out, t, d, i)];
    k->events++;
    out->events_by_role[k->final_role]++;
  }
  return TL_OK;
}

int tl_classification_event_arrays(const tl_classification *c, const tl_trace *t, uint8_t **role,
                                   uint8_t **cost, uint32_t **symbol, tl_err *e) {
  size_t n = t->ev.n ? t->ev.n : 1;
  uint8_t *ro = role ? malloc(n) : NULL, *co = cost ? malloc(n) : NULL;
  uint32_t *sy = symbol ? malloc(n * sizeof *sy) : NULL;
  if ((role && !ro) || (cost && !co) || (symbol && !sy)) {
    free(ro), free(co), free(sy);
    return tl_nomem(e);
  }
  for (size_t i = 0; i < t->ev.n; i++) {
    const tl_label_class *k = tl_event_class(c, t, i);
    if (ro) ro[i] = k->final_role;
    if (co) co[i] = k->cost;
    if (sy) sy[i] = k->symbol;
  }
  if (role) *role = ro;
  if (cost) *cost = co;
  if (symbol) *symbol = sy;
  return TL_OK;
}

int tl_event_classes_build(const tl_classification *c, const tl_trace *t, const tl_derived *d,
                           tl_event_classes *out, tl_err *e) {
  memset(out, 0, sizeof *out);
  size_t n = tl_event_count(t, d), cap = n ? n : 1;
  out->role = malloc(cap), out->cost = malloc(cap);
  out->symbol = malloc(cap * sizeof *out->symbol);
  out->role_class = malloc(cap * sizeof *out->role_class);
  if (!out->role || !out->cost || !out->symbol || !out->role_class) {
    tl_event_classes_free(out);
    return tl_nomem(e);
  }
  for (size_t i = 0; i < n; i++) {
    const tl_label_class *k = &c->cls[class_index(c, t, d, i)];
    out->role_class[i] = k->class_id;
    if (i < t->ev.n) {
      out->role[i] = k->final_role, out->cost[i] = k->cost, out->symbol[i] = k->symbol;
    } else {
      /* a launch anchor: its symbol is its name, the composition role */
      out->role[i] = TL_EVIDENCE_ANCHOR;
      out->cost[i] = TL_COSTP_RETAINED_FOR_ATTRIBUTION;
      out->symbol[i] = tl_event_label_of(t, d, i)->name;
    }
  }
  return TL_OK;
}

void tl_event_classes_free(tl_event_classes *x) {
  free(x->role), free(x->cost), free(x->symbol), free(x->role_class);
  memset(x, 0, sizeof *x);
}

/* represented[i]: TL_REPRESENTED_BY_COMM (tasks only) or TL_REPRESENTED_BY_RECONCILED (any
** event). A class gets one variant per kind of representation it has. */
static int represents(const tl_label_class *k, uint8_t why) {
  return why == TL_REPRESENTED_BY_RECONCILED || (why == TL_REPRESENTED_BY_COMM && k->domain == TL_OBS_TASK);
}

int tl_classification_represent(tl_classification *c, const tl_trace *t, const tl_derived *d,
                                const uint8_t *represented, uint32_t *role_class, tl_err *e) {
  size_t n = tl_event_count(t, d), nrep = 0;
  for (size_t i = 0; i < n; i++)
    if (represented[i] && represents(&c->cls[class_index(c, t, d, i)], represented[i])) nrep++;
  if (!nrep) return TL_OK;
  /* variant of each (class, kind), +1 (0: none yet); at most one per represented event */
  uint32_t *variant = calloc(c->nlabels * TL_SCOPE_COUNT * 2, sizeof *variant);
  c->rep = calloc(nrep, sizeof *c->rep);
  c->rep_of = calloc(nrep, sizeof *c->rep_of);
  if (!variant || !c->rep || !c->rep_of) {
    free(variant);
    return tl_nomem(e);
  }
  for (size_t i = 0; i < n; i++) {
    size_t ci = class_index(c, t, d, i);
    tl_label_class *k = &c->cls[ci];
    if (!represented[i] || !represents(k, represented[i])) continue;
    size_t vi = ci * 2 + (represented[i] == TL_REPRESENTED_BY_RECONCILED);
    if (!variant[vi]) {
      tl_label_class *v = &c->rep[c->nrep];
      *v = *k;
      v->final_role = TL_EVIDENCE_ANCHOR;
      v->rule = represented[i] == TL_REPRESENTED_BY_RECONCILED ? TL_CLASS_RULE_SYSTEM_RECONCILED
                                                               : TL_CLASS_RULE_SYSTEM_COMM;
      v->class_id = (uint32_t)c->nclasses++;
      v->events = 0;
      c->rep_of[c->nrep] = (uint32_t)ci;
      variant[vi] = (uint32_t)++c->nrep;
    }
    tl_label_class *v = &c->rep[variant[vi] - 1];
    k->events--, v->events++;
    c->events_by_role[k->final_role]--, c->events_by_role[v->final_role]++;
    role_class[i] = v->class_id;
  }
  free(variant);
  return TL_OK;
}

/* ------------------------------------------------------------------ per-event vocabulary */

const char *tl_class_semantic_role(const tl_label_class *c) {
  switch ((tl_evidence_role)c->final_role) {
    case TL_EVIDENCE_ANCHOR: return "anchor";
    case TL_EVIDENCE_AUXILIARY: return "aux";
    case TL_EVIDENCE_TRANSPARENT: return "transparent";
    default: return "raw";
  }
}

const char *tl_class_rule_id(const tl_rules *r, const tl_label_class *c) {
  if (c->rule >= 0) return r->cls.rules.v[c->rule].rule_id;
  return c->rule == TL_CLASS_RULE_SYSTEM_COMM        ? "system.communication_anchor"
         : c->rule == TL_CLASS_RULE_SYSTEM_RECONCILED ? "system.event_reconciliation"
                                                      : "fallback.unknown_observation";
}

const char *tl_class_reason_code(const tl_label_class *c) {
  if (c->rule >= 0) return "matched_positive_rule";
  return c->rule == TL_CLASS_RULE_SYSTEM_COMM        ? "represented_by_communication_anchor"
         : c->rule == TL_CLASS_RULE_SYSTEM_RECONCILED ? "represented_by_reconciled_canonical_anchor"
                                                      : "unmatched_observation_unknown_first";
}

static const char *participation(tl_evidence_role role) {
  switch (role) {
    case TL_EVIDENCE_ANCHOR:
    case TL_EVIDENCE_UNKNOWN_ANCHOR: return "identity";
    case TL_EVIDENCE_AUXILIARY:
    case TL_EVIDENCE_TRANSPARENT: return "excluded";
    default: return "not_applicable";
  }
}

const char *tl_class_policy_participation(const tl_label_class *c) {
  return participation((tl_evidence_role)c->policy_role);
}

const char *tl_class_effective_participation(const tl_label_class *c) {
  return participation((tl_evidence_role)c->final_role);
}

/* ------------------------------------------------------------------ publication */

/* The decisions no manifest rule makes, published after the manifest's rules as rows of
** traceloom_evidence_role_rule so that every decision's rule_id names a row. Each row's id,
** class, domain, match, role, required fields and participation are what the decision is (the
** reference, traceloom 0.1.4, lists the same decisions under the same ids); the notes are ours.
** code: the TL_CLASS_RULE_* a role class carries for it, 0 for system.protected_composite,
** which sql/views/20_classify.sql decides per event inside a promoted replay unit's span. */
typedef struct tl_class_builtin {
  const char *rule_id, *rule_class, *source_domain, *match_field, *match_kind, *role,
      *required_fields, *participation, *note;
  int32_t code;
} tl_class_builtin;

static const tl_class_builtin CLASS_BUILTINS[] = {
    {"fallback.unknown_observation", "fallback", "task", "none", "fallback", NULL, "",
     "identity", "No manifest rule matched the task: it stays an unknown-anchor token",
     TL_CLASS_RULE_FALLBACK},
    {"system.communication_anchor", "provider_relation", "system", "membership", "typed",
     "anchor", "communication_membership", "identity",
     "A communication op, and the task that records it, is decided by its communication anchor",
     TL_CLASS_RULE_SYSTEM_COMM},
    {"system.event_reconciliation", "provider_relation", "system", "membership", "typed",
     "anchor", "event_reconciliation_membership", "identity",
     "The duplicate record of a reconciled pair is represented by the pair's canonical anchor",
     TL_CLASS_RULE_SYSTEM_RECONCILED},
    {"system.protected_composite", "protected_membership", "system", "membership", "typed",
     "protected_boundary", "replay_unit_membership", "atomic_boundary",
     "An event inside a promoted replay unit's span belongs to the unit's atomic boundary", 0},
};

/* The files the classification policy was read from, base manifest first (origins are
** numbered in reading order), comma-separated; NULL when out of memory. */
static char *policy_sources(const tl_rules *r, const tl_class_policy *p) {
  tl_buf b = {0};
  for (size_t o = 0; o < r->origins.n; o++) {
    int used = (int)o == p->meta.origin;
    for (size_t i = 0; !used && i < p->rules.n; i++) used = p->rules.v[i].origin == (int)o;
    if (used) tl_buf_printf(&b, "%s%s", b.n ? "," : "", r->origins.v[o].name);
  }
  if (b.oom || !b.p) {
    free(b.p);
    return NULL;
  }
  return b.p;
}

static const char OVERRIDE_CONTRACT[] =
    "The bundled manifest (or $TRACELOOM_CLASSIFICATION_RULES) is the base; a rules config "
    "(--rules-config) or --extend-classification-rules changes the stage by mode: extend adds "
    "rules under new ids, override replaces rules by id, replace takes the whole stage from "
    "the config; --classification-rule-override is refused";

/* traceloom_evidence_role_rule's columns, written for the manifest's rules and the built-ins */
enum {
  ER_POLICY_ID, ER_POLICY_VERSION, ER_RULE_ID, ER_RULE_CLASS, ER_DECISION_ORDER, ER_PRIORITY,
  ER_DECLARATION_ORDER, ER_PROVIDER_SCOPE, ER_SOURCE_DOMAIN, ER_MATCH_FIELD, ER_MATCH_KIND,
  ER_PATTERN, ER_ROLE, ER_REQUIRED_FIELDS, ER_PARTICIPATION, ER_COST, ER_CONTEXT, ER_PROVENANCE,
  ER_MISSING_EVIDENCE, ER_CONCRETE_IDENTITY, ER_NOTE, ER_SOURCE_MANIFEST, ER_MANIFEST_SHA256,
  ER_SOURCE_LINE, ER_DECIDED_EVENTS, ER_NCOLS
};
static const tl_rows_column rule_columns[ER_NCOLS] = {
    [ER_POLICY_ID] = {"policy_id", 1},
    [ER_POLICY_VERSION] = {"policy_version", 1},
    [ER_RULE_ID] = {"rule_id", 1},
    [ER_RULE_CLASS] = {"rule_class", 1},
    [ER_DECISION_ORDER] = {"decision_order", 0},
    [ER_PRIORITY] = {"priority", 0},
    [ER_DECLARATION_ORDER] = {"declaration_order", 0},
    [ER_PROVIDER_SCOPE] = {"provider_scope", 1},
    [ER_SOURCE_DOMAIN] = {"source_domain", 1},
    [ER_MATCH_FIELD] = {"match_field", 1},
    [ER_MATCH_KIND] = {"match_kind", 1},
    [ER_PATTERN] = {"pattern", 1},
    [ER_ROLE] = {"role", 1},
    [ER_REQUIRED_FIELDS] = {"required_fields", 1},
    [ER_PARTICIPATION] = {"structural_participation", 1},
    [ER_COST] = {"cost_treatment", 1},
    [ER_CONTEXT] = {"context_treatment", 1},
    [ER_PROVENANCE] = {"provenance_treatment", 1},
    [ER_MISSING_EVIDENCE] = {"missing_evidence_behavior", 1},
    [ER_CONCRETE_IDENTITY] = {"concrete_identity_behavior", 1},
    [ER_NOTE] = {"note", 1},
    [ER_SOURCE_MANIFEST] = {"source_manifest", 1},
    [ER_MANIFEST_SHA256] = {"manifest_sha256", 1},
    [ER_SOURCE_LINE] = {"source_line", 0},
    [ER_DECIDED_EVENTS] = {"decided_event_count", 0},
};

/* The policy a rule row belongs to. */
static void bind_rule_policy(sqlite3_stmt *st, const tl_class_policy *p) {
  tl_bind_text(st, TL_PARAM(ER_POLICY_ID), p->meta.policy_id);
  tl_bind_text(st, TL_PARAM(ER_POLICY_VERSION), p->meta.policy_version);
}

static int publish_class_policy(sqlite3 *db, const tl_rules *r, const size_t *rule_events,
                                const size_t *builtin_events, tl_err *e) {
  const tl_class_policy *p = &r->cls;
  const char *src = r->origins.v[p->meta.origin].name;
  sqlite3_stmt *st;
  if (tl_pub_prepare(db,
                     "INSERT INTO traceloom_evidence_role_policy(policy_id, policy_version, "
                     "manifest_schema, manifest_sha256, policy_mode, source_manifest, "
                     "provider_scopes, fallback_identity_role, fallback_cost_treatment, "
                     "fallback_context_treatment, fallback_provenance_treatment, "
                     "missing_evidence_behavior, rule_count, input_format, input_sources, "
                     "effective_config_sha256, config_overrides, config_override_contract) "
                     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, 'yaml', "
                     "?14, ?15, ?16, ?17)",
                     &st, e))
    return TL_ERROR;
  char *sources = policy_sources(r, p);
  char *overrides = NULL;
  int builtin = strcmp(p->meta.mode, "builtin") == 0 || strcmp(p->meta.mode, "env") == 0;
  if (!sources || (!builtin && !(overrides = tl_mprintf("%s:%s", p->meta.mode, src)))) {
    free(sources);
    sqlite3_finalize(st);
    return tl_nomem(e);
  }
  const char *vals[12] = {p->meta.policy_id, p->meta.policy_version, p->meta.manifest_schema,
                          p->meta.sha256, p->meta.mode, src, p->provider_scopes,
                          p->fallback_identity_role, p->fallback_cost_treatment,
                          p->fallback_context_treatment, p->fallback_provenance_treatment,
                          p->missing_evidence_behavior};
  for (int i = 0; i < 12; i++) tl_bind_text(st, i + 1, vals[i]);
  sqlite3_bind_int64(st, 13, (int64_t)p->rules.n);
  tl_bind_text(st, 14, sources);
  /* the effective configuration: the rules config when one was given, else the policy */
  tl_bind_text(st, 15, r->config_name ? r->config_sha256 : p->meta.sha256);
  tl_bind_text(st, 16, overrides);
  tl_bind_text(st, 17, OVERRIDE_CONTRACT);
  int rc = tl_pub_step(db, st, "traceloom_evidence_role_policy", e);
  sqlite3_finalize(st);
  free(sources);
  free(overrides);
  if (rc) return rc;
  if (tl_rows_prepare(db, "INSERT", "traceloom_evidence_role_rule", rule_columns, ER_NCOLS, &st,
                      e))
    return TL_ERROR;
  for (size_t i = 0; rc == TL_OK && i < p->rules.n; i++) {
    const tl_class_rule *x = &p->rules.v[i];
    const tl_rule_origin *o = &r->origins.v[x->origin];
    bind_rule_policy(st, p);
    tl_bind_text(st, TL_PARAM(ER_RULE_ID), x->rule_id);
    tl_bind_text(st, TL_PARAM(ER_RULE_CLASS), "positive_policy");
    sqlite3_bind_int64(st, TL_PARAM(ER_DECISION_ORDER), (int64_t)i + 1);
    sqlite3_bind_int(st, TL_PARAM(ER_PRIORITY), x->priority);
    sqlite3_bind_int64(st, TL_PARAM(ER_DECLARATION_ORDER), (int64_t)x->decl_order);
    tl_bind_text(st, TL_PARAM(ER_PROVIDER_SCOPE), tl_scope_name((tl_scope)x->scope));
    tl_bind_text(st, TL_PARAM(ER_SOURCE_DOMAIN), "task");
    tl_bind_text(st, TL_PARAM(ER_MATCH_FIELD), tl_class_field_name((tl_class_field)x->field));
    tl_bind_text(st, TL_PARAM(ER_MATCH_KIND), tl_class_match_name((tl_class_match)x->match));
    tl_bind_text(st, TL_PARAM(ER_PATTERN), x->pattern);
    tl_bind_text(st, TL_PARAM(ER_ROLE), tl_evidence_role_name((tl_evidence_role)x->role));
    tl_bind_text(st, TL_PARAM(ER_REQUIRED_FIELDS), x->required_fields);
    tl_bind_text(st, TL_PARAM(ER_PARTICIPATION),
                 x->role == TL_EVIDENCE_ANCHOR ? "identity" : "excluded");
    tl_bind_text(st, TL_PARAM(ER_COST), tl_cost_policy_name((tl_cost_policy)x->cost));
    tl_bind_text(st, TL_PARAM(ER_CONTEXT), "retained");
    tl_bind_text(st, TL_PARAM(ER_PROVENANCE), "retained");
    tl_bind_text(st, TL_PARAM(ER_MISSING_EVIDENCE), "continue_or_fallback");
    tl_bind_text(st, TL_PARAM(ER_CONCRETE_IDENTITY),
                 x->defer ? "defer_to_identity_rules" : "apply");
    tl_bind_text(st, TL_PARAM(ER_NOTE), x->note);
    tl_bind_text(st, TL_PARAM(ER_SOURCE_MANIFEST), o->name);
    tl_bind_text(st, TL_PARAM(ER_MANIFEST_SHA256), o->sha256);
    sqlite3_bind_int(st, TL_PARAM(ER_SOURCE_LINE), x->line);
    sqlite3_bind_int64(st, TL_PARAM(ER_DECIDED_EVENTS), (int64_t)rule_events[i]);
    rc = tl_pub_step(db, st, "traceloom_evidence_role_rule", e);
  }
  /* the built-in decisions: the fallback is tried after every manifest rule, the system
  ** decisions by membership before any (order 0); their treatments are the policy's */
  for (size_t i = 0; rc == TL_OK && i < sizeof CLASS_BUILTINS / sizeof CLASS_BUILTINS[0]; i++) {
    const tl_class_builtin *b = &CLASS_BUILTINS[i];
    int fallback = b->code == TL_CLASS_RULE_FALLBACK;
    bind_rule_policy(st, p);
    tl_bind_text(st, TL_PARAM(ER_RULE_ID), b->rule_id);
    tl_bind_text(st, TL_PARAM(ER_RULE_CLASS), b->rule_class);
    sqlite3_bind_int64(st, TL_PARAM(ER_DECISION_ORDER), fallback ? (int64_t)p->rules.n + 1 : 0);
    sqlite3_bind_int(st, TL_PARAM(ER_PRIORITY), 0);
    sqlite3_bind_int64(st, TL_PARAM(ER_DECLARATION_ORDER), fallback ? (int64_t)p->rules.n : 0);
    tl_bind_text(st, TL_PARAM(ER_PROVIDER_SCOPE), "any");
    tl_bind_text(st, TL_PARAM(ER_SOURCE_DOMAIN), b->source_domain);
    tl_bind_text(st, TL_PARAM(ER_MATCH_FIELD), b->match_field);
    tl_bind_text(st, TL_PARAM(ER_MATCH_KIND), b->match_kind);
    tl_bind_text(st, TL_PARAM(ER_PATTERN), "");
    tl_bind_text(st, TL_PARAM(ER_ROLE), b->role ? b->role : p->fallback_identity_role);
    tl_bind_text(st, TL_PARAM(ER_REQUIRED_FIELDS), b->required_fields);
    tl_bind_text(st, TL_PARAM(ER_PARTICIPATION), b->participation);
    tl_bind_text(st, TL_PARAM(ER_COST),
                 fallback ? p->fallback_cost_treatment : "retained_for_attribution");
    tl_bind_text(st, TL_PARAM(ER_CONTEXT), p->fallback_context_treatment);
    tl_bind_text(st, TL_PARAM(ER_PROVENANCE), p->fallback_provenance_treatment);
    tl_bind_text(st, TL_PARAM(ER_MISSING_EVIDENCE), p->missing_evidence_behavior);
    tl_bind_text(st, TL_PARAM(ER_CONCRETE_IDENTITY), "apply");
    tl_bind_text(st, TL_PARAM(ER_NOTE), b->note);
    sqlite3_bind_null(st, TL_PARAM(ER_SOURCE_MANIFEST)); /* no file */
    sqlite3_bind_null(st, TL_PARAM(ER_MANIFEST_SHA256));
    sqlite3_bind_int(st, TL_PARAM(ER_SOURCE_LINE), 0);
    if (b->code)
      sqlite3_bind_int64(st, TL_PARAM(ER_DECIDED_EVENTS), (int64_t)builtin_events[-b->code]);
    else
      sqlite3_bind_null(st, TL_PARAM(ER_DECIDED_EVENTS));
    rc = tl_pub_step(db, st, "traceloom_evidence_role_rule", e);
  }
  sqlite3_finalize(st);
  return rc;
}

/* traceloom_symbol_normalization_rule's columns, written for the manifest's rules and the
** built-in outcomes */
enum {
  SR_POLICY_ID, SR_POLICY_VERSION, SR_RULE_ID, SR_PROVIDER_SCOPE, SR_MATCH_MODE,
  SR_MATCH_EXPRESSION, SR_STRUCTURAL_SYMBOL, SR_PRECEDENCE, SR_SOURCE_MANIFEST,
  SR_MANIFEST_SHA256, SR_RULE_ORIGIN, SR_RULE_ORIGIN_SHA256, SR_SOURCE_LINE, SR_SOURCE_DOMAIN,
  SR_REQUIRED_FIELDS, SR_DESCRIPTION, SR_DECLARATION_ORDER, SR_NCOLS
};
static const tl_rows_column symbol_rule_columns[SR_NCOLS] = {
    [SR_POLICY_ID] = {"policy_id", 1},
    [SR_POLICY_VERSION] = {"policy_version", 1},
    [SR_RULE_ID] = {"rule_id", 1},
    [SR_PROVIDER_SCOPE] = {"provider_scope", 1},
    [SR_MATCH_MODE] = {"match_mode", 1},
    [SR_MATCH_EXPRESSION] = {"match_expression", 1},
    [SR_STRUCTURAL_SYMBOL] = {"structural_symbol", 1},
    [SR_PRECEDENCE] = {"precedence", 0},
    [SR_SOURCE_MANIFEST] = {"source_manifest", 1},
    [SR_MANIFEST_SHA256] = {"manifest_sha256", 1},
    [SR_RULE_ORIGIN] = {"rule_origin", 1},
    [SR_RULE_ORIGIN_SHA256] = {"rule_origin_sha256", 1},
    [SR_SOURCE_LINE] = {"source_line", 0},
    [SR_SOURCE_DOMAIN] = {"source_domain", 1},
    [SR_REQUIRED_FIELDS] = {"required_fields", 1},
    [SR_DESCRIPTION] = {"description", 1},
    [SR_DECLARATION_ORDER] = {"declaration_order", 0},
};

/* The effective policy every symbol rule row names: its id, version, manifest and digest. */
static void bind_symbol_policy(sqlite3_stmt *st, const tl_symbol_policy *p,
                               const tl_rule_origin *manifest) {
  tl_bind_text(st, TL_PARAM(SR_POLICY_ID), p->meta.policy_id);
  tl_bind_text(st, TL_PARAM(SR_POLICY_VERSION), p->meta.policy_version);
  tl_bind_text(st, TL_PARAM(SR_SOURCE_MANIFEST), manifest->name);
  tl_bind_text(st, TL_PARAM(SR_MANIFEST_SHA256), p->meta.sha256);
}

static int publish_symbol_rules(sqlite3 *db, const tl_rules *r, tl_err *e) {
  const tl_symbol_policy *p = &r->sym;
  sqlite3_stmt *st;
  if (tl_rows_prepare(db, "INSERT", "traceloom_symbol_normalization_rule", symbol_rule_columns,
                      SR_NCOLS, &st, e))
    return TL_ERROR;
  int rc = TL_OK;
  const tl_rule_origin *m = &r->origins.v[p->meta.origin];
  for (size_t i = 0; rc == TL_OK && i < p->rules.n; i++) {
    const tl_symbol_rule *x = &p->rules.v[i];
    const tl_rule_origin *o = &r->origins.v[x->origin];
    bind_symbol_policy(st, p, m);
    tl_bind_text(st, TL_PARAM(SR_RULE_ID), x->rule_id);
    tl_bind_text(st, TL_PARAM(SR_PROVIDER_SCOPE), x->provider_scope);
    tl_bind_text(st, TL_PARAM(SR_MATCH_MODE), tl_sym_match_name((tl_sym_match)x->match));
    tl_bind_text(st, TL_PARAM(SR_MATCH_EXPRESSION), x->pattern);
    tl_bind_text(st, TL_PARAM(SR_STRUCTURAL_SYMBOL), x->structural_symbol);
    sqlite3_bind_int(st, TL_PARAM(SR_PRECEDENCE), x->priority);
    tl_bind_text(st, TL_PARAM(SR_RULE_ORIGIN), o->name);
    tl_bind_text(st, TL_PARAM(SR_RULE_ORIGIN_SHA256), o->sha256);
    sqlite3_bind_int(st, TL_PARAM(SR_SOURCE_LINE), x->line);
    tl_bind_text(st, TL_PARAM(SR_SOURCE_DOMAIN),
                 x->domain == TL_SD_TASK ? "task" : "communication");
    tl_bind_text(st, TL_PARAM(SR_REQUIRED_FIELDS), tl_sym_field_name((tl_sym_field)x->field));
    tl_bind_text(st, TL_PARAM(SR_DESCRIPTION), x->note);
    sqlite3_bind_int64(st, TL_PARAM(SR_DECLARATION_ORDER), (int64_t)i);
    rc = tl_pub_step(db, st, "traceloom_symbol_normalization_rule", e);
  }
  /* the built-in outcomes (symbols.c), after the manifest's rules: origin 'analysis', no file */
  size_t nb;
  const tl_symbol_builtin *b = tl_symbol_builtin_rules(&nb);
  for (size_t i = 0; rc == TL_OK && i < nb; i++) {
    bind_symbol_policy(st, p, m);
    tl_bind_text(st, TL_PARAM(SR_RULE_ID), b[i].rule_id);
    tl_bind_text(st, TL_PARAM(SR_PROVIDER_SCOPE), "provider-neutral");
    tl_bind_text(st, TL_PARAM(SR_MATCH_MODE), b[i].match_mode);
    tl_bind_text(st, TL_PARAM(SR_MATCH_EXPRESSION), b[i].match_expression);
    tl_bind_text(st, TL_PARAM(SR_STRUCTURAL_SYMBOL), b[i].structural_symbol);
    sqlite3_bind_int(st, TL_PARAM(SR_PRECEDENCE), b[i].precedence);
    tl_bind_text(st, TL_PARAM(SR_RULE_ORIGIN), "analysis");
    sqlite3_bind_null(st, TL_PARAM(SR_RULE_ORIGIN_SHA256));
    sqlite3_bind_int(st, TL_PARAM(SR_SOURCE_LINE), 0);
    tl_bind_text(st, TL_PARAM(SR_SOURCE_DOMAIN), b[i].source_domain);
    tl_bind_text(st, TL_PARAM(SR_REQUIRED_FIELDS), b[i].required_fields);
    tl_bind_text(st, TL_PARAM(SR_DESCRIPTION), b[i].description);
    sqlite3_bind_int64(st, TL_PARAM(SR_DECLARATION_ORDER), (int64_t)(p->rules.n + i));
    rc = tl_pub_step(db, st, "traceloom_symbol_normalization_rule", e);
  }
  sqlite3_finalize(st);
  return rc;
}

static int publish_reconcile_policy(sqlite3 *db, const tl_rules *r, tl_err *e) {
  const tl_reconcile_policy *p = &r->rec;
  sqlite3_stmt *st;
  if (tl_pub_prepare(db,
                     "INSERT INTO traceloom_event_reconciliation_policy(policy_id, policy_version, "
                     "manifest_schema, manifest_sha256, policy_mode, source_manifest, "
                     "unmatched_behavior, rule_count, description) VALUES (?1, ?2, ?3, ?4, ?5, "
                     "?6, ?7, ?8, ?9)",
                     &st, e))
    return TL_ERROR;
  tl_bind_text(st, 1, p->meta.policy_id);
  tl_bind_text(st, 2, p->meta.policy_version);
  tl_bind_text(st, 3, p->meta.manifest_schema);
  tl_bind_text(st, 4, p->meta.sha256);
  tl_bind_text(st, 5, p->meta.mode);
  tl_bind_text(st, 6, r->origins.v[p->meta.origin].name);
  tl_bind_text(st, 7, p->unmatched_behavior);
  sqlite3_bind_int64(st, 8, (int64_t)p->rules.n);
  tl_bind_text(st, 9, p->description);
  int rc = tl_pub_step(db, st, "traceloom_event_reconciliation_policy", e);
  sqlite3_finalize(st);
  if (rc) return rc;
  if (tl_pub_prepare(db,
                     "INSERT INTO traceloom_event_reconciliation_rule(policy_id, policy_version, "
                     "rule_id, priority, provider_scope, source_domain, task_type, "
                     "generic_context_id, concrete_context_id, min_contained_fraction, "
                     "task_op_type, communication_op_name_prefix, identity_policy, note, "
                     "rule_origin, rule_origin_sha256, source_line) VALUES (?1, ?2, ?3, ?4, "
                     "?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
                     &st, e))
    return TL_ERROR;
  for (size_t i = 0; rc == TL_OK && i < p->rules.n; i++) {
    const tl_reconcile_rule *x = &p->rules.v[i];
    const tl_rule_origin *o = &r->origins.v[x->origin];
    tl_bind_text(st, 1, p->meta.policy_id);
    tl_bind_text(st, 2, p->meta.policy_version);
    tl_bind_text(st, 3, x->rule_id);
    sqlite3_bind_int(st, 4, x->priority);
    tl_bind_text(st, 5, x->provider_scope);
    tl_bind_text(st, 6, x->source_domain);
    tl_bind_text(st, 7, *x->task_type ? x->task_type : NULL);
    /* the manifest's value as written: -1 (no context: the MC2 rule) is the reference's too */
    sqlite3_bind_int64(st, 8, x->generic_context_id);
    sqlite3_bind_int64(st, 9, x->concrete_context_id);
    tl_bind_text(st, 10, x->min_contained_fraction);
    tl_bind_text(st, 11, *x->task_op_type ? x->task_op_type : NULL);
    tl_bind_text(st, 12, *x->communication_op_name_prefix ? x->communication_op_name_prefix : NULL);
    tl_bind_text(st, 13, x->identity_policy);
    tl_bind_text(st, 14, x->note);
    tl_bind_text(st, 15, o->name);
    tl_bind_text(st, 16, o->sha256);
    sqlite3_bind_int(st, 17, x->line);
    rc = tl_pub_step(db, st, "traceloom_event_reconciliation_rule", e);
  }
  sqlite3_finalize(st);
  return rc;
}

static int publish_classes(sqlite3 *db, const tl_trace *t, const tl_derived *d, const tl_rules *r,
                           const tl_classification *c, tl_err *e) {
  sqlite3_stmt *st;
  if (tl_pub_prepare(db,
                     "INSERT INTO traceloom_evidence_role_class(class_id, source_domain, "
                     "provider_scope, kind, task_type, op_name, op_type, compute_task_type, "
                     "comm_name, raw_label, policy_role, final_role, "
                     "policy_structural_participation, effective_structural_participation, "
                     "support_state, reason_code, rule_id, policy_id, cost_treatment, "
                     "observed_symbol, structural_symbol, symbol_outcome, symbol_reason_code, "
                     "symbol_rule_id, symbol_candidate_rule_ids, event_count) VALUES (?1, ?2, "
                     "?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, "
                     /* an unknown-first decision is supported as such (the reference's word) */
                     "CASE ?15 WHEN 'unmatched_observation_unknown_first' "
                     "THEN 'supported_unknown_first' ELSE 'supported' END, ?15, "
                     "?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25)",
                     &st, e))
    return TL_ERROR;
  int rc = TL_OK;
  /* the classes, then their represented variants (each described by its class's label) */
  for (size_t x = 0; rc == TL_OK && x < c->nlabels * TL_SCOPE_COUNT + c->nrep; x++) {
    int base = x < c->nlabels * TL_SCOPE_COUNT;
    const tl_label_class *k = base ? &c->cls[x] : &c->rep[x - c->nlabels * TL_SCOPE_COUNT];
    size_t i = base ? x : c->rep_of[x - c->nlabels * TL_SCOPE_COUNT];
    /* a class all of whose events a communication op represents has no decision left */
    if (!k->used || !k->events) continue;
    const tl_label *l = tl_label_at(t, d, (uint32_t)(i / TL_SCOPE_COUNT));
    int task = k->domain == TL_OBS_TASK;
    sqlite3_bind_int64(st, 1, k->class_id);
    sqlite3_bind_text(st, 2, task ? "task" : "communication", -1, SQLITE_STATIC);
    /* A communication op is decided by the system rule, which applies to every provider:
    ** its decision's scope is any (the reference's). Its symbol was still normalized under the
    ** input's provider (an Ascend-only symbol rule applies to an Ascend op). */
    sqlite3_bind_text(st, 3, task ? tl_scope_name((tl_scope)(i % TL_SCOPE_COUNT)) : "any", -1,
                      SQLITE_STATIC);
    sqlite3_bind_text(st, 4, tl_kind_name((tl_kind)l->kind), -1, SQLITE_STATIC);
    tl_bind_str(st, 5, t->pool, l->task_type);
    tl_bind_str(st, 6, t->pool, l->op_name);
    tl_bind_str(st, 7, t->pool, l->op_type);
    tl_bind_str(st, 8, t->pool, l->compute_task_type);
    tl_bind_str(st, 9, t->pool, l->comm_name);
    tl_bind_str(st, 10, t->pool, l->name);
    tl_bind_text(st, 11, tl_evidence_role_name((tl_evidence_role)k->policy_role));
    tl_bind_text(st, 12, tl_evidence_role_name((tl_evidence_role)k->final_role));
    sqlite3_bind_text(st, 13, tl_class_policy_participation(k), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 14, tl_class_effective_participation(k), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 15, tl_class_reason_code(k), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 16, tl_class_rule_id(r, k), -1, SQLITE_STATIC);
    tl_bind_text(st, 17, task ? r->cls.meta.policy_id : NULL);
    sqlite3_bind_text(st, 18, tl_cost_policy_name((tl_cost_policy)k->cost), -1, SQLITE_STATIC);
    tl_bind_str(st, 19, t->pool, k->observed_symbol);
    tl_bind_str(st, 20, t->pool, k->symbol);
    tl_symbol_outcome o = (tl_symbol_outcome)k->symbol_outcome;
    sqlite3_bind_text(st, 21, tl_symbol_outcome_name(o), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 22, tl_symbol_reason_code(o), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 23, tl_symbol_rule_id(&r->sym, o, k->symbol_rule), -1, SQLITE_STATIC);
    tl_bind_text(st, 24, k->candidates);
    sqlite3_bind_int64(st, 25, (int64_t)k->events);
    rc = tl_pub_step(db, st, "traceloom_evidence_role_class", e);
  }
  sqlite3_finalize(st);
  return rc;
}

static int publish_rule_metadata(sqlite3 *db, const tl_rules *r, tl_err *e) {
  sqlite3_stmt *st;
  if (tl_pub_prepare(db, "INSERT OR REPLACE INTO traceloom_metadata(key, value) VALUES (?1, ?2)",
                     &st, e))
    return TL_ERROR;
  const char *kv[][2] = {
      {"evidence_role_policy_id", r->cls.meta.policy_id},
      {"evidence_role_policy_version", r->cls.meta.policy_version},
      {"evidence_role_policy_sha256", r->cls.meta.sha256},
      {"symbol_normalization_policy_id", r->sym.meta.policy_id},
      {"symbol_normalization_policy_version", r->sym.meta.policy_version},
      {"symbol_normalization_policy_sha256", r->sym.meta.sha256},
      {"event_reconciliation_policy_id", r->rec.meta.policy_id},
      {"event_reconciliation_policy_version", r->rec.meta.policy_version},
      {"event_reconciliation_policy_sha256", r->rec.meta.sha256},
      {"rules_config", r->config_name},
      {"rules_config_sha256", r->config_name ? r->config_sha256 : NULL},
      {"rules_digest", r->digest},
  };
  int rc = TL_OK;
  for (size_t i = 0; rc == TL_OK && i < sizeof kv / sizeof kv[0]; i++) {
    if (!kv[i][1]) continue; /* no rules config: the keys are absent, not empty */
    tl_bind_text(st, 1, kv[i][0]);
    tl_bind_text(st, 2, kv[i][1]);
    rc = tl_pub_step(db, st, "traceloom_metadata", e);
  }
  sqlite3_finalize(st);
  return rc;
}

int tl_publish_classification(sqlite3 *db, const tl_trace *t, const tl_derived *d,
                              const tl_rules *r, const tl_classification *c, tl_err *e) {
  /* the events each rule decided: its classes' counts (a represented task's variant is
  ** decided by the system rule, not by its policy rule) */
  size_t *rule_events = calloc(r->cls.rules.n + 1, sizeof *rule_events);
  if (!rule_events) return tl_nomem(e);
  /* and each built-in's, by -TL_CLASS_RULE_* (the represented variants included) */
  size_t builtin_events[1 - TL_CLASS_RULE_SYSTEM_RECONCILED] = {0};
  for (size_t i = 0; i < c->nlabels * TL_SCOPE_COUNT; i++) {
    if (!c->cls[i].used) continue;
    if (c->cls[i].rule >= 0) rule_events[c->cls[i].rule] += c->cls[i].events;
    else builtin_events[-c->cls[i].rule] += c->cls[i].events;
  }
  for (size_t i = 0; i < c->nrep; i++)
    if (c->rep[i].rule < 0) builtin_events[-c->rep[i].rule] += c->rep[i].events;
  int rc = publish_class_policy(db, r, rule_events, builtin_events, e);
  free(rule_events);
  if (rc == TL_OK) rc = publish_symbol_rules(db, r, e);
  if (rc == TL_OK) rc = publish_reconcile_policy(db, r, e);
  if (rc == TL_OK) rc = publish_classes(db, t, d, r, c, e);
  if (rc == TL_OK) rc = publish_rule_metadata(db, r, e);
  return rc;
}
