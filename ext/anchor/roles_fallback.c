/*
** roles_fallback.c: evidence roles and symbols when no rule manifest is in use.
**
** The rule-driven classification (the YAML manifests under rules) decides roles and structural symbols in
** normal runs. This fallback keeps the same unknown-first contract for builds and tests
** that run without it: control rows (notify, event record, capture markers) are
** transparent, data moves and waits are auxiliary, everything else is an anchor, and the
** structural symbol is the operator type when there is one, else the raw label.
*/
#include "anchors.h"

#include <stdlib.h>

int tl_fallback_roles(const tl_trace *t, uint8_t *event_role, uint32_t *event_symbol,
                      tl_err *e) {
  size_t nl = t->labels.n;
  uint8_t *lrole = malloc(nl ? nl : 1);
  uint32_t *lsym = malloc((nl ? nl : 1) * sizeof *lsym);
  if (!lrole || !lsym) {
    free(lrole), free(lsym);
    return tl_nomem(e);
  }
  for (size_t k = 0; k < nl; k++) {
    const tl_label *l = &t->labels.v[k];
    switch ((tl_kind)l->kind) {
      case TL_KIND_CONTROL: lrole[k] = TL_ROLE_TRANSPARENT; break;
      case TL_KIND_DATA_MOVE:
      case TL_KIND_SYNC: lrole[k] = TL_ROLE_AUXILIARY; break;
      case TL_KIND_OTHER: lrole[k] = TL_ROLE_UNKNOWN_ANCHOR; break;
      default: lrole[k] = TL_ROLE_ANCHOR; break;
    }
    lsym[k] = l->op_type ? l->op_type : l->comm_task_type ? l->comm_task_type : l->name;
  }
  for (size_t i = 0; i < t->ev.n; i++) {
    event_role[i] = lrole[t->ev.label[i]];
    event_symbol[i] = lsym[t->ev.label[i]];
  }
  free(lrole), free(lsym);
  return TL_OK;
}
