/*
** roles.c: the evidence-role decision for one observation (recovery.md section 2.1).
**
** Rules are kept in decision order (priority descending, then declaration order), so the
** first rule that applies wins. A rule applies when its provider scope matches (any on either
** side, or equal), every field it requires is present, and its pattern matches; a rule that
** defers to identity rules is passed over for a task with a concrete operator. exact_any
** patterns list alternatives separated by '|'. Patterns were
** normalized when loaded (task types to their key, everything else lower-cased), so matching
** here is plain comparison.
*/
#include "classify/classify.h"

#include <string.h>

static const char *field_value(const tl_role_input *in, tl_class_field f) {
  switch (f) {
    case TL_CF_TASK_TYPE: return in->task_type;
    case TL_CF_BLOB: return in->blob;
    default: return in->operator_lc;
  }
}

static int has_required(const tl_class_rule *r, const tl_role_input *in) {
  if ((r->required & TL_REQ_TASK_TYPE) && !*in->task_type) return 0;
  if ((r->required & TL_REQ_BLOB) && !*in->blob) return 0;
  if ((r->required & TL_REQ_OPERATOR) && !*in->operator_lc) return 0;
  return 1; /* source_domain and provider_scope are always known for a task */
}

/* One of the '|'-separated alternatives of key equals v. */
static int equals_any(const char *v, const char *key) {
  size_t n = strlen(v);
  for (const char *p = key;;) {
    const char *bar = strchr(p, '|');
    size_t len = bar ? (size_t)(bar - p) : strlen(p);
    if (len == n && memcmp(p, v, n) == 0) return 1;
    if (!bar) return 0;
    p = bar + 1;
  }
}

void tl_decide_role(const tl_class_policy *p, const tl_role_input *in, tl_role_decision *d) {
  for (size_t i = 0; i < p->rules.n; i++) {
    const tl_class_rule *r = &p->rules.v[i];
    if (r->scope != TL_SCOPE_ANY && in->scope != TL_SCOPE_ANY && r->scope != in->scope) continue;
    if (!has_required(r, in)) continue;
    const char *v = field_value(in, (tl_class_field)r->field);
    if (!*v) continue; /* an empty field never matches */
    int hit = r->match == TL_CM_EXACT      ? strcmp(v, r->key) == 0
              : r->match == TL_CM_EXACT_ANY ? equals_any(v, r->key)
                                            : strstr(v, r->key) != NULL;
    if (!hit) continue;
    if (r->defer && in->concrete) continue;
    d->role = (tl_evidence_role)r->role;
    d->rule = (int)i;
    d->cost = (tl_cost_policy)r->cost;
    return;
  }
  d->role = TL_EVIDENCE_UNKNOWN_ANCHOR;
  d->rule = TL_CLASS_RULE_FALLBACK;
  d->cost = (tl_cost_policy)p->fallback_cost;
}
