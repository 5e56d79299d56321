/*
** symbols.c: structural-symbol normalization for one observation (recovery.md section 2.4).
**
** The observed symbol is the "selected" field (task: first of op_type, op_name, comm_name,
** task_type; communication: first of linked_task_type, linked_task_name, op_name, op_type: the
** spec's order puts op_type first, but the reference observes a communication op by its name
** and its op has no op_type, see field_values).
** Rules of another domain, or whose provider scope is neither provider-neutral nor a
** case-insensitive substring of the provider, are skipped. Of the rules that match, only
** those at the highest priority count: one gives the structural symbol, several are a
** conflict that keeps the observed symbol, none keeps it as identity. Equal structural
** symbols never by themselves say two positions correspond; they only name tokens.
*/
#include "classify/classify.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int present(const char *s) { return s && *s; }

/* The values a rule field stands for, in order; returns how many. */
static size_t field_values(const tl_symbol_input *in, tl_sym_field f, const char *out[5]) {
  size_t n = 0;
  int comm = in->domain == TL_SD_COMMUNICATION;
  switch (f) {
    case TL_SF_SELECTED: {
      const char *order_task[] = {in->op_type, in->op_name, in->comm_name, in->task_type};
      /* A communication op's observed symbol is its name, as the reference's: its operation
      ** type (COMMUNICATION_OP.opType, hcom_allReduce_) is no operator identity of the op's
      ** event (traceloom_event.op_type is empty), so selected skips it; op_type and
      ** any_identity rules still match it, so no structural symbol depends on the choice. */
      const char *order_comm[] = {in->linked_task_type, in->linked_task_name, in->op_name,
                                  in->op_type};
      const char **order = comm ? order_comm : order_task;
      for (int i = 0; i < 4; i++)
        if (present(order[i])) {
          out[n++] = order[i];
          break;
        }
      break;
    }
    case TL_SF_ANY_IDENTITY: {
      const char *task[] = {in->op_name, in->op_type, in->compute_task_type, in->comm_name,
                            in->task_type};
      const char *cm[] = {in->op_name, in->op_type, in->linked_task_name, in->linked_task_type};
      const char **list = comm ? cm : task;
      int len = comm ? 4 : 5;
      for (int i = 0; i < len; i++)
        if (present(list[i])) out[n++] = list[i];
      break;
    }
    default: {
      const char *v = f == TL_SF_OP_NAME ? in->op_name
                      : f == TL_SF_OP_TYPE ? in->op_type
                      : f == TL_SF_TASK_TYPE ? in->task_type
                      : f == TL_SF_COMPUTE_TASK_TYPE ? in->compute_task_type
                      : f == TL_SF_COMM_NAME ? in->comm_name
                      : f == TL_SF_LINKED_TASK_NAME ? in->linked_task_name
                                                    : in->linked_task_type;
      if (present(v)) out[n++] = v;
    }
  }
  return n;
}

/* needle is already lower-case */
static int ci_contains(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  for (const char *h = hay; *h; h++) {
    size_t k = 0;
    while (k < n && h[k] && tolower((unsigned char)h[k]) == (unsigned char)needle[k]) k++;
    if (k == n) return 1;
  }
  return n == 0;
}

static int opaque_numeric(const char *s) {
  if (!isdigit((unsigned char)s[0])) return 0;
  int underscores = 0;
  for (const char *p = s; *p; p++) {
    if (*p == '_')
      underscores++;
    else if (!isdigit((unsigned char)*p))
      return 0;
  }
  return underscores > 0;
}

int tl_cann_kernel_base(const char *name, size_t *base_len) {
  if (!name || !name[0]) return 0;
  const char *us = strchr(name + 1, '_');
  if (!us) return 0;
  size_t blen = (size_t)(us - name);
  const char *seg = us + 1, *seg_end = strchr(seg, '_');
  size_t slen = seg_end ? (size_t)(seg_end - seg) : strlen(seg);
  int decorated = 0;
  if (slen == 32) {
    decorated = 1;
    for (size_t i = 0; i < slen; i++)
      if (!isalnum((unsigned char)seg[i])) decorated = 0;
  }
  if (!decorated && (strstr(name, "_high_performance_") || strstr(name, "_high_precision_") ||
                     strstr(name, "_optional_")))
    decorated = 1;
  if (!decorated && slen == 2 && (strncmp(seg, "ND", 2) == 0 || strncmp(seg, "NZ", 2) == 0)) {
    static const char *const bases[] = {"MatMulV1", "MatMulV2", "MatMulV3", "BatchMatMulV1",
                                        "BatchMatMulV2", "BatchMatMulV3"};
    for (size_t i = 0; i < sizeof bases / sizeof bases[0]; i++)
      if (strlen(bases[i]) == blen && strncmp(bases[i], name, blen) == 0) decorated = 1;
  }
  if (decorated) *base_len = blen;
  return decorated;
}

static int exact_any(const tl_symbol_rule *r, const char *v, size_t len) {
  for (size_t i = 0; i < r->nalts; i++)
    if (strlen(r->alts[i]) == len && strncmp(r->alts[i], v, len) == 0) return 1;
  return 0;
}

/* Does the rule match value v? For a decorated-kernel rule *base_len is the symbol. */
static int value_matches(const tl_symbol_rule *r, const char *v, size_t *base_len) {
  switch ((tl_sym_match)r->match) {
    case TL_SM_EXACT:
    case TL_SM_EXACT_ANY: return exact_any(r, v, strlen(v));
    case TL_SM_CONTAINS_CI:
    case TL_SM_CONTAINS_ANY_CI:
      for (size_t i = 0; i < r->nalts; i++)
        if (ci_contains(v, r->alts[i])) return 1;
      return 0;
    case TL_SM_OPAQUE_NUMERIC_INSTANCE: return opaque_numeric(v);
    case TL_SM_ASCEND_KERNEL_BASE_EXACT_ANY: {
      size_t len = strlen(v);
      tl_cann_kernel_base(v, &len);
      return exact_any(r, v, len);
    }
    case TL_SM_ASCEND_DECORATED_KERNEL: return tl_cann_kernel_base(v, base_len);
  }
  return 0;
}

static int scope_applies(const tl_symbol_rule *r, const char *provider) {
  if (strcmp(r->provider_scope, "provider-neutral") == 0) return 1;
  if (!present(provider)) return 0;
  size_t n = strlen(r->provider_scope);
  for (const char *p = provider; *p; p++)
    if (strncasecmp(p, r->provider_scope, n) == 0) return 1;
  return 0;
}

/* Returns 1 when rule r matches the input; *value and *base_len say what a {kernel_base} symbol is. */
static int rule_matches(const tl_symbol_rule *r, const tl_symbol_input *in, const char **value,
                        size_t *base_len) {
  if (r->domain != in->domain || !scope_applies(r, in->provider)) return 0;
  const char *vals[5];
  size_t n = field_values(in, (tl_sym_field)r->field, vals);
  for (size_t i = 0; i < n; i++)
    if (value_matches(r, vals[i], base_len)) {
      *value = vals[i];
      return 1;
    }
  return 0;
}

void tl_symbol_decision_free(tl_symbol_decision *d) {
  free(d->symbol);
  free(d->candidates);
  memset(d, 0, sizeof *d);
}

int tl_normalize_symbol(const tl_symbol_policy *p, const tl_symbol_input *in,
                        tl_symbol_decision *d, tl_err *e) {
  memset(d, 0, sizeof *d);
  d->rule = -1;
  const char *sel[5];
  d->observed = field_values(in, TL_SF_SELECTED, sel) ? sel[0] : NULL;
  int have = 0;
  int32_t best = 0;
  size_t ties = 0;
  int first = -1;
  const char *first_value = NULL;
  size_t first_base = 0;
  for (size_t i = 0; i < p->rules.n; i++) {
    const char *value;
    size_t base_len = 0;
    if (!rule_matches(&p->rules.v[i], in, &value, &base_len)) continue;
    int32_t prio = p->rules.v[i].priority;
    if (!have || prio > best) {
      have = 1, best = prio, ties = 1, first = (int)i;
      first_value = value, first_base = base_len;
    } else if (prio == best) {
      ties++;
    }
  }
  if (!d->observed) {
    d->outcome = TL_SYM_UNSUPPORTED;
    return TL_OK;
  }
  if (!have) {
    d->outcome = TL_SYM_IDENTITY;
    if (!(d->symbol = tl_strdup(d->observed))) return tl_nomem(e);
    return TL_OK;
  }
  if (ties == 1) {
    const tl_symbol_rule *r = &p->rules.v[first];
    d->outcome = TL_SYM_NORMALIZED;
    d->rule = first;
    if (r->kernel_base) {
      d->symbol = malloc(first_base + 1);
      if (d->symbol) memcpy(d->symbol, first_value, first_base), d->symbol[first_base] = 0;
    } else {
      d->symbol = tl_strdup(r->structural_symbol);
    }
    /* The candidates are the rules at the winning priority, so a canonicalized symbol lists
    ** its one rule (as the reference does, docs/PARITY.md); a conflict lists the tied ones. */
    if (!d->symbol || !(d->candidates = tl_strdup(r->rule_id))) {
      tl_symbol_decision_free(d);
      return tl_nomem(e);
    }
    return TL_OK;
  }
  d->outcome = TL_SYM_CONFLICT;
  tl_buf ids = {0};
  for (size_t i = 0; i < p->rules.n; i++) {
    const char *value;
    size_t base_len = 0;
    if (p->rules.v[i].priority != best || !rule_matches(&p->rules.v[i], in, &value, &base_len))
      continue;
    tl_buf_printf(&ids, "%s%s", ids.n ? "|" : "", p->rules.v[i].rule_id);
  }
  d->candidates = ids.p;
  if (ids.oom || !(d->symbol = tl_strdup(d->observed))) {
    tl_symbol_decision_free(d);
    return tl_nomem(e);
  }
  return TL_OK;
}

const char *tl_symbol_outcome_name(tl_symbol_outcome o) {
  static const char *const names[] = {"identity", "canonicalized", "conflict", "unsupported"};
  return names[o];
}

const char *tl_symbol_reason_code(tl_symbol_outcome o) {
  static const char *const names[] = {"no_explicit_rule_identity_preserved", "explicit_rule_match",
                                      "equal_precedence_rule_conflict", "missing_observed_symbol"};
  return names[o];
}

const char *tl_symbol_rule_id(const tl_symbol_policy *p, tl_symbol_outcome o, int rule) {
  switch (o) {
    case TL_SYM_NORMALIZED: return p->rules.v[rule].rule_id;
    case TL_SYM_CONFLICT: return "fallback.rule-conflict";
    case TL_SYM_UNSUPPORTED: return "fallback.missing-observed-symbol";
    default: return "fallback.identity-preserve";
  }
}

/* Ids, precedences, domains, match modes and what each takes and gives are the vocabulary
** traceloom_v_anchor_symbol_lineage reports for these outcomes (the reference's, traceloom
** 0.1.4, which lists them as rules of precedence < 0); the descriptions are ours. */
static const tl_symbol_builtin SYMBOL_BUILTINS[] = {
    {"analysis.replay-composition-slot", "analysis", "typed_synthesis",
     "committed replay composition slot", "<role-derived>", "recognized replay composition slot",
     "The replay composition slot the anchor stands for.", -100},
    {"fallback.identity-preserve", "selected observed symbol", "identity_fallback",
     "no explicit rule matched", "<observed-symbol>", "one observed symbol",
     "No rule matched: the observed symbol is kept as structural.", -1000},
    {"fallback.missing-observed-symbol", "selected observed symbol", "typed_unsupported",
     "no observed symbol available", "", "none",
     "No observed symbol: the structural identity is unsupported.", -1010},
    {"fallback.rule-conflict", "selected observed symbol", "typed_conflict",
     "multiple equal-precedence rules matched", "<observed-symbol>",
     "one observed symbol and multiple rule matches",
     "Rules of equal precedence matched: the observed symbol is kept.", -1020},
};

const tl_symbol_builtin *tl_symbol_builtin_rules(size_t *n) {
  *n = sizeof SYMBOL_BUILTINS / sizeof SYMBOL_BUILTINS[0];
  return SYMBOL_BUILTINS;
}
