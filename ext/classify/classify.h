/*
** classify.h: evidence roles and structural symbols (recovery.md sections 2.1-2.7, stages
** S3 and S4; outputs.md section 2 "Evidence roles and symbols").
**
** Usage from the analysis driver:
**
**   tl_rules *rules;                      before touching the profile: a bad config
**   if (tl_rules_load(cfg, &rules, e))    refuses the analysis and changes nothing
**     return TL_ERROR;
**   ... tl_trace_load(...) ...
**   tl_classification cls;
**   if (tl_classify(&trace, &replay.launch_events, rules, &cls, e)) ...
**   tl_event_classes_build(&cls, &trace, &replay.launch_events, &classes, e);  per event
**   ... inside the publish savepoint, after traceloom_event is written:
**   tl_publish_classification(db, &trace, &replay.launch_events, rules, &cls, e);
**   tl_classification_free(&cls);
**   tl_rules_free(rules);
**
** Classification works per interned label (kind + seven name fields) and provider, not per
** event: a trace has millions of events but a few thousand labels. tl_event_class() maps an
** event to its decision in O(1), so writers of per-event rows never re-classify.
**
** Evidence roles follow positive selection: only an auxiliary or transparent rule takes an
** observation out of identity matching; anything no rule matches is an unknown_anchor token.
** Communication-op observations (task type COMMUNICATION_OP) are not tasks: the policy does
** not apply to them and they are anchors by the system rule system.communication_anchor.
** Later stages (reconciliation, replay membership) may still change final roles; the roles
** here are the policy's.
*/
#ifndef TL_CLASSIFY_H
#define TL_CLASSIFY_H

#include "classify/rules.h"
#include "util/err.h"
#include "util/buf.h"
#include "util/sqlite_api.h"
#include "trace/trace.h"

/* ------------------------------------------------------------------ rules (rules.c) */

/* Loads the effective rules. config_path NULL or "" = the built-in manifests (or those named
** by TRACELOOM_CLASSIFICATION_RULES / TRACELOOM_SYMBOL_RULES /
** TRACELOOM_EVENT_RECONCILIATION_RULES); otherwise a rules config: a file
** (traceloom-analysis-rules-v1, legacy traceloom-match-rules-v1, or a single
** traceloom-policy-v1 manifest that replaces its stage) or the name of a bundled config
** ("scheduler-step", "deepseekv4", "qwen35-serving"). Errors name file, line, key path and
** what was expected; on error *out is NULL. */
int tl_rules_load(const char *config_path, tl_rules **out, tl_err *e);
void tl_rules_free(tl_rules *r);
/* SHA-256 (hex) over the effective stages' digests and the config bytes. */
const char *tl_rules_digest(const tl_rules *r);
/* Appends the rules part of the canonical analysis options: a JSON object with the config
** name and SHA-256, per stage {policy_id, policy_version, mode, source, sha256} and the
** digest. Returns -1 on out-of-memory. */
int tl_rules_options_json(const tl_rules *r, tl_buf *b);

const char *tl_evidence_role_name(tl_evidence_role r);            /* NULL for TL_EVIDENCE_NONE */
const char *tl_scope_name(tl_scope s);
const char *tl_cost_policy_name(tl_cost_policy c);
const char *tl_class_field_name(tl_class_field f);
const char *tl_class_match_name(tl_class_match m);
const char *tl_sym_field_name(tl_sym_field f);
const char *tl_sym_match_name(tl_sym_match m);
/* Task-type key (upper-case, non-alphanumeric runs -> '_', trimmed), malloc'd; NULL on OOM. */
char *tl_task_type_normalize(const char *s);

/* ------------------------------------------------------------------ roles (roles.c) */

typedef struct tl_role_input {
  tl_scope scope;           /* the observation's provider; TL_SCOPE_ANY when unknown */
  const char *task_type;    /* normalized task-type key; "" when absent */
  const char *blob;         /* lower-cased "label op_name op_type compute_task_type task_type";
                               "" when every part is absent */
  const char *operator_lc;  /* lower-cased operator (the label); "" when absent */
  int concrete;             /* the task has a concrete operator (op_type or op_name) */
} tl_role_input;

typedef struct tl_role_decision {
  tl_evidence_role role;
  int rule;                 /* index into policy->rules; -1 = fallback.unknown_observation */
  tl_cost_policy cost;
} tl_role_decision;

/* The first rule in decision order that applies; the unknown_anchor fallback otherwise. */
void tl_decide_role(const tl_class_policy *p, const tl_role_input *in, tl_role_decision *d);

/* ------------------------------------------------------------------ symbols (symbols.c) */

typedef enum tl_symbol_outcome {
  TL_SYM_IDENTITY = 0,      /* no rule: the observed symbol is structural */
  TL_SYM_NORMALIZED,        /* exactly one rule at the highest matching priority */
  TL_SYM_CONFLICT,          /* several rules at that priority: the observed symbol is kept */
  TL_SYM_UNSUPPORTED        /* no observed symbol at all */
} tl_symbol_outcome;

/* If name carries a CANN decoration (recovery.md 2.4), returns 1 and sets *base_len to the
** length of its base (the part before the first '_' that is not at position 0). */
int tl_cann_kernel_base(const char *name, size_t *base_len);

typedef struct tl_symbol_input {
  tl_sym_domain domain;
  const char *provider;     /* "ascend", "cuda", "hygon"; "" when unknown */
  /* NULL or "" = absent */
  const char *op_name, *op_type, *task_type, *compute_task_type, *comm_name;
  const char *linked_task_name, *linked_task_type;
} tl_symbol_input;

typedef struct tl_symbol_decision {
  tl_symbol_outcome outcome;
  const char *observed;     /* the selected field of the input; NULL when none */
  char *symbol;             /* structural symbol, malloc'd; NULL only when unsupported */
  int rule;                 /* index into policy->rules when normalized, else -1 */
  char *candidates;         /* rule ids at the winning priority joined by '|', malloc'd: a
                            ** canonicalized symbol's rule, a conflict's tied rules; else NULL */
} tl_symbol_decision;

int tl_normalize_symbol(const tl_symbol_policy *p, const tl_symbol_input *in,
                        tl_symbol_decision *d, tl_err *e);
void tl_symbol_decision_free(tl_symbol_decision *d);
const char *tl_symbol_outcome_name(tl_symbol_outcome o);   /* identity, normalized, ... */
const char *tl_symbol_reason_code(tl_symbol_outcome o);
/* The rule id the lineage reports: the matched rule, or fallback.identity-preserve,
** fallback.rule-conflict, fallback.missing-observed-symbol. */
const char *tl_symbol_rule_id(const tl_symbol_policy *p, tl_symbol_outcome o, int rule);

/* The outcomes no manifest rule decides, as rows of traceloom_symbol_normalization_rule
** (precedence < 0, below every manifest rule): analysis.replay-composition-slot,
** fallback.identity-preserve, fallback.missing-observed-symbol, fallback.rule-conflict. */
typedef struct tl_symbol_builtin {
  const char *rule_id, *source_domain, *match_mode, *match_expression, *structural_symbol,
      *required_fields, *description;
  int32_t precedence;
} tl_symbol_builtin;
const tl_symbol_builtin *tl_symbol_builtin_rules(size_t *n);

/* ------------------------------------------------------------------ per label (classify.c) */

typedef enum tl_obs_domain { TL_OBS_TASK = 0, TL_OBS_COMMUNICATION } tl_obs_domain;

#define TL_CLASS_RULE_FALLBACK (-1)   /* fallback.unknown_observation */
#define TL_CLASS_RULE_SYSTEM_COMM (-2) /* system.communication_anchor */
#define TL_CLASS_RULE_SYSTEM_RECONCILED (-3) /* system.event_reconciliation */

/* The decision for one (label, provider scope). */
typedef struct tl_label_class {
  uint8_t used;             /* some event has this label under this provider */
  uint32_t class_id;        /* dense id over used classes (traceloom_event.role_class_id) */
  uint64_t events;          /* how many events have this class */
  uint8_t domain;           /* tl_obs_domain */
  uint8_t policy_role;      /* tl_evidence_role; TL_EVIDENCE_NONE outside the task domain */
  uint8_t final_role;       /* tl_evidence_role */
  uint8_t cost;             /* tl_cost_policy */
  uint8_t symbol_outcome;   /* tl_symbol_outcome */
  int32_t rule;             /* index into rules->cls.rules, or TL_CLASS_RULE_* */
  int32_t symbol_rule;      /* index into rules->sym.rules, -1 when none matched alone */
  uint32_t observed_symbol; /* pool id (TL_STR_NONE when none) */
  uint32_t symbol;          /* structural symbol, pool id of the trace */
  char *candidates;         /* the symbol's candidate rules ('|' joined), else NULL */
} tl_label_class;

typedef struct tl_classification {
  size_t nlabels;
  tl_label_class *cls;      /* nlabels * TL_SCOPE_COUNT, index label * TL_SCOPE_COUNT + scope */
  uint8_t *db_scope;        /* provider scope of each input (db_idx) */
  size_t ndb;
  size_t nclasses;          /* used (label, scope) pairs; class ids are 0..nclasses-1 */
  size_t events_by_role[TL_EVIDENCE_NONE + 1]; /* final roles over all events */
  /* Represented variants (tl_classification_represent): class rep[k] is the task class
  ** cls[rep_of[k]] decided by system.communication_anchor, its class id after the others. */
  size_t nrep;
  tl_label_class *rep;
  uint32_t *rep_of;
} tl_classification;

/* Classifies every label the events use, the trace's and those of its derived events d
** (the launch anchors of exact replays; NULL: none). Structural symbols are interned into
** t->pool (the trace itself is otherwise unchanged). */
int tl_classify(const tl_trace *t, const tl_derived *d, const tl_rules *r,
                tl_classification *out, tl_err *e);
void tl_classification_free(tl_classification *c);

/* The class of event `event` of the trace (not of its derived events). */
static inline const tl_label_class *tl_event_class(const tl_classification *c, const tl_trace *t,
                                                   size_t event) {
  return &c->cls[(size_t)t->ev.label[event] * TL_SCOPE_COUNT + c->db_scope[tl_events_db_idx(&t->ev, event)]];
}

/* The classification of every event, the trace's and d, the launch anchors replay derived
** (numbered after them; NULL: none), for the stages that index by event (anchor/anchors.h's
** tl_anchor_input) and the event rows: the final role (tl_evidence_role values, which match
** anchors.h's tl_role), the cost treatment (tl_cost_policy, matching tl_cost_treatment),
** the structural symbol (pool id) and the role class (traceloom_evidence_role_class.class_id).
** A launch anchor of an exact replay unit is an anchor by construction, cost eligible, its
** symbol the composition role (ACLH, ACLL, ...), whatever the rules say about its label;
** its role class stays its label's. */
typedef struct tl_event_classes {
  uint8_t *role;
  uint8_t *cost;
  uint32_t *symbol;
  uint32_t *role_class;
} tl_event_classes;

int tl_event_classes_build(const tl_classification *c, const tl_trace *t, const tl_derived *d,
                           tl_event_classes *out, tl_err *e);
void tl_event_classes_free(tl_event_classes *x);

/* Per-event copies for stages that index by event (anchor/anchors.h's tl_anchor_input):
** the final role (tl_evidence_role values, which match anchors.h's tl_role), the cost
** treatment (tl_cost_policy, matching anchors.h's tl_cost_treatment) and the structural
** symbol (pool id). Any of the out pointers may be NULL; the arrays are malloc'd with
** t->ev.n entries and freed by the caller. */
int tl_classification_event_arrays(const tl_classification *c, const tl_trace *t, uint8_t **role,
                                   uint8_t **cost, uint32_t **symbol, tl_err *e);

/* Tasks a communication op represents (anchors.h: the op is their anchor). Whatever the
** policy said of the task (anchor, auxiliary, unknown_anchor), its final decision is the
** system rule system.communication_anchor: final role anchor, identity through the op's anchor,
** reason represented_by_communication_anchor, supported; the policy role, cost treatment and
** symbol stay the policy's. This is the reference's decision (0.1.4, checked on tasks of each
** policy role; docs/PARITY.md). Such a task gets a variant of its class (one per class that
** has any): for every event i < n with represented[i] != 0, role_class[i] becomes the variant's
** id and the event moves from its class's counts to the variant's. Call after the anchors,
** before the events and the classes are published.
** A reconciled non-canonical member (represented[i] == TL_REPRESENTED_BY_RECONCILED, a task or
** a communication op) is decided likewise by system.event_reconciliation, reason
** represented_by_reconciled_canonical_anchor: its reconciliation's canonical anchor stands for
** it (recovery.md 2.5; the reference's decision). */
enum { TL_REPRESENTED_BY_COMM = 1, TL_REPRESENTED_BY_RECONCILED = 2 };
int tl_classification_represent(tl_classification *c, const tl_trace *t, const tl_derived *d,
                                const uint8_t *represented, uint32_t *role_class, tl_err *e);

/* traceloom_event.semantic_role: anchor, aux, transparent, or raw (unknown_anchor). */
const char *tl_class_semantic_role(const tl_label_class *c);
/* The deciding rule id (a policy rule, fallback.unknown_observation or
** system.communication_anchor); also traceloom_event.semantic_role_reason. */
const char *tl_class_rule_id(const tl_rules *r, const tl_label_class *c);
/* matched_positive_rule, unmatched_observation_unknown_first or
** represented_by_communication_anchor. */
const char *tl_class_reason_code(const tl_label_class *c);
/* identity / excluded / not_applicable */
const char *tl_class_policy_participation(const tl_label_class *c);
const char *tl_class_effective_participation(const tl_label_class *c);

/* Writes the role and symbol relations (sql/schema/20_classify.sql): the policies and their
** rules, one traceloom_evidence_role_class row per used class, and the rule-policy metadata
** keys. Call inside the publication savepoint, after the schema exists. Per-event rows are
** not written here: traceloom_evidence_role_decision is a view (sql/views/20_classify.sql)
** joining traceloom_event.role_class_id to the class table, so the event writer binds
** role_class_id (tl_event_class()->class_id) next to semantic_role, semantic_role_reason and
** symbol. A class row is about 200 bytes; a per-event copy would have doubled the database. */
int tl_publish_classification(sqlite3 *db, const tl_trace *t, const tl_derived *d,
                              const tl_rules *r, const tl_classification *c, tl_err *e);

#endif
