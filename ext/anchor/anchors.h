/*
** anchors.h: anchor selection, ordering and auxiliary links (recovery.md section 3).
**
** Anchors are the semantically significant device events of one (db_idx, device_id), in
** linear order: the tokens of structure recovery and the leaves of the tree. Every other
** cost-eligible device event links to the anchor that follows it (its "prelude").
**
** Input: the trace and the launch anchors replay derived (numbered after the trace's
** events, trace.h tl_derived), one role per event (from classification, which makes launch
** anchors anchors) and one structural symbol per event. Output: anchors grouped per (db_idx, device_id), sorted by the total key of
** recovery.md section 3 (device, start, end, stream, kind rank, symbol, source, rowid,
** event), with 1-based anchor_idx per group and a dense global index n (anchor-<n>).
*/
#ifndef TL_ANCHORS_H
#define TL_ANCHORS_H

#include "trace/trace.h"

/* Evidence roles (recovery.md 2.1). */
typedef enum tl_role {
  TL_ROLE_ANCHOR = 0,
  TL_ROLE_UNKNOWN_ANCHOR,
  TL_ROLE_AUXILIARY,
  TL_ROLE_TRANSPARENT
} tl_role;

/* What a non-anchor event contributes to cost. */
typedef enum tl_cost_treatment {
  TL_COST_ELIGIBLE = 0,          /* counts in prelude windows, links to the following anchor */
  TL_COST_RETAINED_AS_EVIDENCE   /* kept as evidence only */
} tl_cost_treatment;

/* Why an event is not an anchor. */
typedef enum tl_non_anchor {
  TL_NA_NONE = 0,                /* it is an anchor */
  TL_NA_ROLE,                    /* auxiliary or transparent role */
  TL_NA_REPRESENTED_BY_COMM_OP,  /* a communication op on its (device, connection) is the anchor */
  TL_NA_OWNED_BY_REPLAY,         /* an exact replay unit owns it */
  TL_NA_RECONCILED               /* a reconciled non-canonical member: its canonical event's
                                    anchor stands for it (never an anchor, aux link or cost) */
} tl_non_anchor;

typedef struct tl_anchor_group {
  uint16_t db_idx;
  uint32_t device_id;
  size_t first, count;           /* anchors [first, first+count) of tl_anchors */
  size_t first_event, nevents;   /* cost-eligible non-anchor events of the group, sorted by start */
} tl_anchor_group;

typedef struct tl_anchors {
  const tl_trace *t;             /* the events anchors index, with ... */
  const tl_derived *derived;     /* ... the derived ones (NULL: none); borrowed */
  size_t n;
  uint32_t *event;               /* event index of anchor n */
  uint32_t *symbol;              /* structural symbol (pool id) of anchor n */
  uint8_t *role;                 /* tl_anchor_role */
  TL_VEC(tl_anchor_group) groups;
  /* Cost-eligible non-anchor events, grouped like anchors and sorted by start. */
  size_t nother;
  uint32_t *other;
  /* Aux links: aux event -> following anchor (global index), aux_order 1..k per anchor. */
  size_t nlinks;
  uint32_t *link_event, *link_anchor, *link_order;
  /* Cost-eligible events with no later anchor (retained_unplaced). */
  TL_VEC(uint32_t) unplaced;
  /* Per event: the reason it is not an anchor (tl_non_anchor). */
  uint8_t *non_anchor;
  /* Per anchor: its interval, where a reconciled pair merged into it (tl_anchor_merges) gives
  ** some anchor another interval than its event's; NULL (every anchor its event's) else. */
  int64_t *ext_start, *ext_end;
} tl_anchors;

typedef enum tl_anchor_role {
  TL_ANCHOR_COMPUTE = 0,
  TL_ANCHOR_COMM,
  TL_ANCHOR_SYNC,
  TL_ANCHOR_GRAPH,
  TL_ANCHOR_UNKNOWN
} tl_anchor_role;

const char *tl_anchor_role_name(tl_anchor_role r);

/* Reconciled duplicates (event reconciliation, ext/reconcile/reconcile.c, decided before the
** anchors): pair k merges into the anchor of event canonical[k], whose interval becomes the
** one of event envelope[k] (the timing envelope; the canonical event itself for an MC2 op
** folded into its task); member[i] is 1 for every other member (per event, NULL: none). */
typedef struct tl_anchor_merges {
  uint8_t *member;
  size_t n;
  uint32_t *canonical, *envelope;
} tl_anchor_merges;
void tl_anchor_merges_free(tl_anchor_merges *m);

typedef struct tl_anchor_input {
  const tl_trace *t;
  const tl_derived *derived;      /* derived events (replay's launch anchors), NULL: none */
  const uint8_t *event_role;      /* tl_role per event */
  const uint8_t *cost_treatment;  /* tl_cost_treatment per event (NULL: all eligible) */
  const uint32_t *event_symbol;   /* structural symbol per event */
  const uint8_t *replay_owned;    /* 1 when an exact replay unit owns the event (NULL: none) */
  const tl_anchor_merges *merges; /* reconciled pairs (NULL or n 0: none) */
} tl_anchor_input;

int tl_anchors_build(const tl_anchor_input *in, tl_anchors *out, tl_err *e);
void tl_anchors_free(tl_anchors *a);

/* traceloom_event.semantic_role and semantic_role_reason of events [0, n) once anchors are
** selected: the role classification gave (role, tl_role per event) as changed by anchor
** selection (a representing communication op, an owning replay unit). One byte an event, a
** tl_semantic code naming the pair (the two tables' strings are static); malloc'd. Two
** string pointers an event were 16 bytes: 180 MB over the 10M bench's 11.3M events, held
** from anchor selection to the events' publication (ARCHITECTURE.md Memory). */
typedef enum tl_semantic {
  TL_SEMANTIC_ANCHOR_UNKNOWN_FIRST, /* anchor, unmatched_observation_unknown_first */
  TL_SEMANTIC_ANCHOR_MATCHED,       /* anchor, matched_positive_rule */
  TL_SEMANTIC_AUX_COMM_OP,          /* aux, represented_by_communication_op */
  TL_SEMANTIC_AUX_REPLAY,           /* aux, owned_by_exact_replay_unit */
  TL_SEMANTIC_AUX_RECONCILED,       /* aux, represented_by_reconciled_canonical_anchor */
  TL_SEMANTIC_TRANSPARENT_MATCHED,  /* transparent, matched_positive_rule */
  TL_SEMANTIC_AUX_MATCHED,          /* aux, matched_positive_rule */
  TL_SEMANTIC_COUNT
} tl_semantic;
extern const char *const tl_semantic_role_name[TL_SEMANTIC_COUNT];
extern const char *const tl_semantic_reason_name[TL_SEMANTIC_COUNT];
int tl_anchor_semantic_roles(const tl_anchors *a, const uint8_t *role, size_t n,
                             uint8_t **semantic, tl_err *e);


/* Start and end of anchor k: of its event (a trace event or a derived one), or the merged
** interval of a reconciled pair. */
static inline int64_t tl_anchor_start(const tl_anchors *a, size_t k) {
  return a->ext_start ? a->ext_start[k] : tl_event_start(a->t, a->derived, a->event[k]);
}
static inline int64_t tl_anchor_end(const tl_anchors *a, size_t k) {
  return a->ext_end ? a->ext_end[k] : tl_event_end(a->t, a->derived, a->event[k]);
}

/* 1 for the label of communication-op envelope events (COMMUNICATION_OP rows). */
int tl_label_is_comm_op(const tl_trace *t, const tl_label *l);
/* 1 when a label's name or task type says it waits ("wait", any case). */
int tl_label_is_wait(const tl_trace *t, const tl_label *l);

#endif
