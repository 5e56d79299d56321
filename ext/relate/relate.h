/*
** relate.h: host <-> device relations by provider identity only (inputs.md section 10).
**
** Runtime calls and device work are grouped by (db_idx, correlation id). A group with one
** call relates it to every work item of the key (supported_exact); every other situation
** becomes a typed row (unmatched, missing identifier, ambiguous, device-scope mismatch).
** Timestamps never create a relation: for CUDA synchronization work under a reused
** correlation id, interval containment only chooses among candidates the id already
** selected (supported_deterministic).
*/
#ifndef TL_RELATE_H
#define TL_RELATE_H

#include "trace/trace.h"

typedef enum tl_support_state {
  TL_SUPPORTED_EXACT = 0,
  TL_SUPPORTED_DETERMINISTIC,
  TL_MISSING_DEVICE_IDENTIFIER,
  TL_MISSING_RUNTIME_IDENTIFIER,
  TL_UNSUPPORTED_PROVIDER_SCHEMA,
  TL_UNMATCHED_DEVICE_WORK,
  TL_UNMATCHED_RUNTIME_CALL,
  TL_AMBIGUOUS_RUNTIME_CANDIDATES,
  TL_AMBIGUOUS_DEVICE_SCOPE,
  TL_DEVICE_SCOPE_MISMATCH,
  TL_REJECTED_REUSED_CORRELATION_ID
} tl_support_state;

/* 20 bytes: a relation per device event and runtime call (10 million of them at 10 million
** kernel rows) is held until it is published. The correlation id is the call's and the
** work's (tl_relation_correlation_id), so it is not stored again. */
typedef struct tl_relation {
  int32_t call;             /* call index, -1 when none */
  int32_t work;             /* event index, -1 when none */
  uint32_t call_candidates; /* calls under the key */
  uint32_t work_candidates; /* work items under the key */
  uint16_t db_idx;
  uint8_t state;            /* tl_support_state */
  uint8_t time_disambiguated;
} tl_relation;

typedef TL_VEC(tl_relation) tl_relations;

/* The correlation id under which r was found; TL_ABSENT for the missing-identifier states.
** Reads the trace's id columns: valid until tl_trace_release_event_ids. */
int64_t tl_relation_correlation_id(const tl_trace *t, const tl_relation *r);

/* 1 when event i is device work that runtime calls can launch (not a comm-op envelope). */
int tl_event_is_device_work(const tl_trace *t, size_t i);
int tl_label_is_device_work(const tl_trace *t, const tl_label *l);

int tl_relate(const tl_trace *t, tl_relations *out, tl_err *e);
/* Relations in the supported_exact and supported_deterministic states. */
size_t tl_relations_supported(const tl_relations *r);
/* Per event (nevents of the trace): the runtime call of its supported relation, or -1. An
** event has at most one (tl_relate: a group with several calls supports one of them at
** most per device work). *out is malloc'd. */
int tl_relations_event_call(const tl_relations *r, size_t nevents, int32_t **out, tl_err *e);

const char *tl_support_state_name(tl_support_state s);
const char *tl_relation_evidence_level(const tl_relation *r);
const char *tl_relation_cardinality(const tl_relation *r);
/* match_policy of a relation row, by provider. */
const char *tl_relation_match_policy(const tl_trace *t, const tl_relation *r);

#endif
