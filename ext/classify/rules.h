/*
** rules.h: the analysis rules, as loaded and validated by rules.c.
**
** Three policy stages come from rule manifests (`schema: traceloom-policy-v1`, recovery.md
** sections 2.2-2.5): evidence-role classification, structural-symbol normalization and event
** reconciliation. A rules config (`schema: traceloom-analysis-rules-v1`, section 2.6) may
** extend, override or replace each stage and adds the grammar hints later stages read
** (macro_matching, structure, replay_structure). Everything here is plain data: the
** decisions live in roles.c and symbols.c, the per-label pass in classify.c.
**
** Strings are malloc'd and owned by the tl_rules that holds them; an absent optional string
** is NULL. Every rule remembers the file it came from (origin) and its line, for audit rows.
*/
#ifndef TL_RULES_H
#define TL_RULES_H

#include <stddef.h>
#include <stdint.h>
#include "util/vec.h"

/* Provider scopes of classification rules and of their inputs. */
typedef enum tl_scope {
  TL_SCOPE_ANY = 0,
  TL_SCOPE_ASCEND,
  TL_SCOPE_CUDA,
  TL_SCOPE_HYGON,
  TL_SCOPE_COUNT
} tl_scope;

typedef enum tl_evidence_role {
  /* The values match anchor/anchors.h's per-event role encoding. */
  TL_EVIDENCE_ANCHOR = 0,
  TL_EVIDENCE_UNKNOWN_ANCHOR, /* the fallback: unmatched observations stay tokens */
  TL_EVIDENCE_AUXILIARY,
  TL_EVIDENCE_TRANSPARENT,
  TL_EVIDENCE_NONE            /* no policy decision (observation outside the task domain) */
} tl_evidence_role;

typedef enum tl_cost_policy {
  /* The values match anchor/anchors.h's tl_cost_treatment (eligible, evidence only). */
  TL_COSTP_RETAINED_FOR_ATTRIBUTION = 0,
  TL_COSTP_RETAINED_AS_EVIDENCE /* kept, but no aux link and no cost overlay */
} tl_cost_policy;

typedef enum tl_class_field { TL_CF_TASK_TYPE = 0, TL_CF_BLOB, TL_CF_OPERATOR } tl_class_field;
/* exact_any: the pattern is alternatives separated by '|', one of which must equal the field. */
typedef enum tl_class_match { TL_CM_EXACT = 0, TL_CM_CONTAINS, TL_CM_EXACT_ANY } tl_class_match;

/* required_fields bits */
#define TL_REQ_SOURCE_DOMAIN 0x01
#define TL_REQ_PROVIDER_SCOPE 0x02
#define TL_REQ_TASK_TYPE 0x04
#define TL_REQ_BLOB 0x08
#define TL_REQ_OPERATOR 0x10

/* Where rules came from: a file path or "bundled:rules/x.yaml", and the SHA-256 of its bytes. */
typedef struct tl_rule_origin {
  char *name;
  char sha256[65];
} tl_rule_origin;

typedef struct tl_class_rule {
  char *rule_id, *pattern, *required_fields, *note;
  char *key;              /* the pattern as compared: task type normalized, else lower-cased */
  int32_t priority;
  uint8_t scope;          /* tl_scope */
  uint8_t field;          /* tl_class_field */
  uint8_t match;          /* tl_class_match */
  uint8_t role;           /* tl_evidence_role: anchor, auxiliary or transparent */
  uint8_t cost;           /* tl_cost_policy */
  uint8_t defer;          /* concrete_identity_behavior = defer_to_identity_rules */
  uint8_t required;       /* TL_REQ_* */
  int line, origin;       /* source line, index into tl_rules.origins */
  size_t decl_order;
} tl_class_rule;

/* Policy provenance shared by the three stages. For an extended or overridden stage the id
** and version read "base+ext" and sha256 is derived from both manifests. */
typedef struct tl_policy_meta {
  char *manifest_schema, *policy_id, *policy_version;
  char sha256[65];
  int origin;             /* the manifest (or config) the stage came from last */
  const char *mode;       /* "builtin", "env", "extend", "override", "replace" (static) */
} tl_policy_meta;

typedef struct tl_class_policy {
  tl_policy_meta meta;
  char *provider_scopes, *fallback_identity_role, *fallback_cost_treatment,
      *fallback_context_treatment, *fallback_provenance_treatment, *missing_evidence_behavior;
  uint8_t fallback_cost;  /* tl_cost_policy */
  TL_VEC(tl_class_rule) rules; /* decision order: priority descending, then declaration */
} tl_class_policy;

typedef enum tl_sym_domain { TL_SD_TASK = 0, TL_SD_COMMUNICATION } tl_sym_domain;

typedef enum tl_sym_field {
  TL_SF_SELECTED = 0,
  TL_SF_ANY_IDENTITY,
  TL_SF_OP_NAME,
  TL_SF_OP_TYPE,
  TL_SF_TASK_TYPE,
  TL_SF_COMPUTE_TASK_TYPE,
  TL_SF_COMM_NAME,
  TL_SF_LINKED_TASK_NAME,
  TL_SF_LINKED_TASK_TYPE
} tl_sym_field;

typedef enum tl_sym_match {
  TL_SM_EXACT = 0,
  TL_SM_EXACT_ANY,
  TL_SM_CONTAINS_CI,
  TL_SM_CONTAINS_ANY_CI,
  TL_SM_OPAQUE_NUMERIC_INSTANCE,
  TL_SM_ASCEND_KERNEL_BASE_EXACT_ANY,
  TL_SM_ASCEND_DECORATED_KERNEL
} tl_sym_match;

typedef struct tl_symbol_rule {
  char *rule_id, *provider_scope, *pattern, *structural_symbol, *note;
  char **alts;            /* the `|` alternatives (lower-cased for the *_ci matches) */
  size_t nalts;
  int32_t priority;
  uint8_t domain, field, match;
  uint8_t kernel_base;    /* structural_symbol is {kernel_base} */
  int line, origin;
} tl_symbol_rule;

typedef struct tl_symbol_policy {
  tl_policy_meta meta;
  TL_VEC(tl_symbol_rule) rules; /* declaration order */
} tl_symbol_policy;

typedef struct tl_reconcile_rule {
  char *rule_id, *provider_scope, *source_domain, *task_type, *task_op_type,
      *communication_op_name_prefix, *identity_policy, *note, *min_contained_fraction;
  int32_t priority;
  int64_t generic_context_id, concrete_context_id; /* -1 = not applicable */
  int64_t min_contained_ppm;                        /* the fraction in parts per million */
  int line, origin;
} tl_reconcile_rule;

typedef struct tl_reconcile_policy {
  tl_policy_meta meta;
  char *unmatched_behavior;
  char *description;      /* metadata.description, NULL when the manifest has none */
  TL_VEC(tl_reconcile_rule) rules; /* declaration order */
} tl_reconcile_policy;

/* macro_matching (grammar hints, recovery.md section 2.6). */
typedef struct tl_ordered_marker { char *id, *before, *after; } tl_ordered_marker;
typedef struct tl_suffix_marker { char *id, *marker; } tl_suffix_marker;
typedef struct tl_macro_matching {
  TL_VEC(tl_ordered_marker) ordered;
  TL_VEC(tl_suffix_marker) suffix;
  int partition_by_scheduler_step;
} tl_macro_matching;

typedef struct tl_rule_names { char **v; size_t n, cap; } tl_rule_names;

typedef enum tl_rule_unit_mode { TL_UNIT_PAIRED = 0, TL_UNIT_END_DELIMITED, TL_UNIT_CYCLE_END } tl_rule_unit_mode;

typedef struct tl_rule_unit_label {
  char *label;
  tl_rule_names contains_any;
} tl_rule_unit_label;

typedef struct tl_rule_composition {
  char *label;
  tl_rule_names sequence;
} tl_rule_composition;

/* structure / replay_structure: one unit definition and its compositions. */
typedef struct tl_structure_rules {
  int present;
  char *id, *begin, *end, *label, *boundary_label;
  uint8_t mode;                 /* tl_rule_unit_mode */
  uint8_t decorated_names;      /* name_normalization: ascend_decorated_kernel */
  TL_VEC(tl_rule_unit_label) labels;
  tl_rule_names end_predecessors;  /* end_predecessor (one) or end_predecessor_any */
  tl_rule_names end_sequence;
  TL_VEC(tl_rule_composition) compositions;
} tl_structure_rules;

struct tl_rules {
  tl_class_policy cls;
  tl_symbol_policy sym;
  tl_reconcile_policy rec;
  tl_macro_matching macro;
  tl_structure_rules structure, replay_structure;
  TL_VEC(tl_rule_origin) origins;
  char *config_name;            /* the rules config as given, NULL when none */
  char config_sha256[65];       /* "" when none */
  char digest[65];              /* over the effective stages and the config */
};
typedef struct tl_rules tl_rules;

#endif
