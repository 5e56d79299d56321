/*
** replay.h: exact graph replay reconstruction (recovery.md section 7).
**
** Serving stacks run decode as graph replays: one host call launches a captured graph
** whose member kernels then run on graph-private streams. This stage rebuilds, from
** provider identities only (never from time containment alone), which device tasks
** belong to which launch, groups launches into replay units, and types every gap:
**
**   ACL graphs (Ascend, aclgraph.c): MODEL_EXECUTE / NOTIFY_WAIT / NOTIFY_RECORD controls,
**     CaptureStreamInfo instances, periodic head + layer x N + tail compositions;
**   CUDA graphs (Nsight, cudagraph.c): cudaGraphLaunch correlationIds shared by kernel
**     and memcpy rows carrying graphNodeId; graph-level GRAPH_TRACE rows as envelopes.
**
** Input: the loaded trace (and the profile, for the companion tables the trace does not
** carry). Output: a tl_replay of plain arrays. Launches, members, units and regions are
** appended in a deterministic order (db_idx, device_id, then launch order); nothing here
** depends on hash order or thread count.
**
** Downstream: tl_replay_promote() derives one launch anchor event per promoted launch
** (tl_replay.launch_events, numbered after the trace's events; label kind graph_launch,
** name the symbol ACLH/ACLL/ACLT/ACLGraph/ACLG/ACLG<k>/CUDAGraph), marks the events an exact
** unit owns (members and controls); anchor selection merges the launch anchors, and
** classification makes them anchors by construction. The publication writes
** traceloom_graph_launch, traceloom_graph_body_member, the reconstruction regions, the
** protected intervals and the replay cost map.
*/
#ifndef TL_REPLAY_H
#define TL_REPLAY_H

#include "trace/trace.h"
#include "util/sqlite_api.h"

#define TL_REPLAY_NONE UINT32_MAX

typedef enum tl_graph_provider { TL_GRAPH_ACL = 1, TL_GRAPH_CUDA = 2 } tl_graph_provider;

/* traceloom_graph_launch.match_policy */
typedef enum tl_match_policy {
  TL_MATCH_UNMATCHED = 0,
  TL_MATCH_NOTIFY_ADJACENT,   /* notify_completion_adjacent: record end within 10,000 ns */
  TL_MATCH_NOTIFY_ORDERED,    /* notify_ordered_fallback: leftovers paired in order */
  TL_MATCH_CUDA_CORRELATION   /* cuda_runtime_correlation */
} tl_match_policy;

/* traceloom_graph_launch.association_policy */
typedef enum tl_assoc_policy {
  TL_ASSOC_NONE = 0,
  TL_ASSOC_RECORD_MODEL_ID,     /* record_model_id */
  TL_ASSOC_RECORD_MODEL_STREAM, /* record_model_stream */
  TL_ASSOC_CUDA_NODE_SET        /* cuda_graph_node_set */
} tl_assoc_policy;

/* Role of a launch in its unit's composition. */
typedef enum tl_slot_role {
  TL_SLOT_NONE = 0,
  TL_SLOT_SINGLE,   /* single_graph: ACLGraph (a direct single ACL graph) */
  TL_SLOT_HEAD,     /* ACLH */
  TL_SLOT_LAYER,    /* ACLL */
  TL_SLOT_TAIL,     /* ACLT */
  TL_SLOT_GENERIC,  /* ACLG / ACLG<k> */
  TL_SLOT_CUDA      /* cuda_graph: the one launch of a CUDA graph unit (CUDAGraph) */
} tl_slot_role;

/* Member kinds (traceloom_graph_body_member.kind). */
typedef enum tl_member_kind {
  TL_MEMBER_COMPUTE = 0,
  TL_MEMBER_COMMUNICATION,
  TL_MEMBER_DATA_MOVE
} tl_member_kind;

/* Launch-level reconstruction status (what the evidence supports for this launch). */
typedef enum tl_launch_status {
  TL_LAUNCH_EXACT = 0,                    /* promoted: owns its members */
  TL_LAUNCH_NOT_PROMOTED,                 /* body known, region not recognized */
  TL_LAUNCH_MISSING_BODY_CAPABILITY,      /* unrecognized_missing_body_capability */
  TL_LAUNCH_MISSING_BODY_EVIDENCE,        /* unrecognized_missing_body_evidence */
  TL_LAUNCH_AMBIGUOUS_BODY,               /* ambiguous_graph_launch_body */
  TL_LAUNCH_BODY_MISMATCH,                /* unrecognized_body_mismatch */
  TL_LAUNCH_INSUFFICIENT_REPEAT_EVIDENCE, /* insufficient_repeat_evidence (CUDA: seen < 2) */
  TL_LAUNCH_MISSING_COMPLETION            /* unrecognized_missing_completion_evidence */
} tl_launch_status;

typedef struct tl_graph_launch {
  uint16_t db_idx;
  uint8_t provider;            /* tl_graph_provider */
  uint8_t match_policy;        /* tl_match_policy */
  uint8_t association_policy;  /* tl_assoc_policy */
  uint8_t status;              /* tl_launch_status */
  uint8_t slot_role;           /* tl_slot_role, when promoted */
  uint8_t pad_;
  uint32_t device_id;
  uint32_t stream_id;          /* launch stream (ACL: MODEL_EXECUTE's; CUDA: first member's) */
  int64_t start_ns, end_ns;    /* launch interval (ACL: execute start .. completion end;
                                  CUDA: first member start .. last member end) */
  int64_t correlation_id;      /* ACL execute connectionId, CUDA correlationId; TL_ABSENT */
  int64_t graph_id;            /* ACL: captured instance model id; CUDA: graph identity
                                  ordinal; TL_ABSENT when unknown */
  uint32_t control[3];         /* owned control events (execute, wait, record); NONE */
  uint32_t host_call;          /* host launch call index; NONE */
  uint32_t first_member, nmembers; /* members[first_member ..) of its body */
  uint32_t body_template;      /* 1-based index into body_templates; 0 = no body */
  uint32_t unit;               /* replay unit index; NONE when not promoted */
  uint32_t member_order;       /* 0-based position of the launch in its unit */
  uint32_t slot_order;         /* 0-based composition slot */
  uint32_t region;             /* ACL reconstruction region; NONE */
  uint32_t anchor_event;       /* synthetic launch event (after promote); NONE */
} tl_graph_launch;

typedef struct tl_graph_member {
  uint32_t launch;             /* index into launches */
  uint32_t event;              /* device event */
  uint32_t lane_ordinal;       /* 0-based lane (stream) within the body */
  uint32_t task_ordinal;       /* 0-based position within its lane */
  uint8_t kind;                /* tl_member_kind */
  int64_t original_graph_node_id; /* CUDA: CUDA_GRAPH_NODE_EVENTS.originalGraphNodeId;
                                     TL_ABSENT when missing or ambiguous */
} tl_graph_member;

typedef struct tl_replay_unit {
  uint16_t db_idx;
  uint8_t provider;
  uint32_t device_id;
  uint32_t first_launch, nlaunches; /* launches of a unit are contiguous in `launches` */
  uint32_t graph_template;          /* 1-based index into graph_templates */
  uint32_t region;                  /* NONE for CUDA */
} tl_replay_unit;

/* traceloom_aclgraph_reconstruction_region.status */
typedef enum tl_region_status {
  TL_REGION_RECOGNIZED = 0,               /* recognized_complete_pattern */
  TL_REGION_LEADING_CONTEXT,              /* unrecognized_leading_context */
  TL_REGION_MISSING_BODY_CAPABILITY,      /* unrecognized_missing_body_capability */
  TL_REGION_MISSING_BODY_EVIDENCE,        /* unrecognized_missing_body_evidence */
  TL_REGION_BODY_MISMATCH,                /* unrecognized_body_mismatch */
  TL_REGION_INCOMPLETE_TAIL,              /* unrecognized_incomplete_tail */
  TL_REGION_MISSING_COMPLETION            /* unrecognized_missing_completion_evidence */
} tl_region_status;

typedef struct tl_graph_region {
  uint16_t db_idx;
  uint8_t status;              /* tl_region_status */
  uint8_t order_policy;        /* 0 host_submission_order, 1 device_execution_order */
  uint8_t shape_policy;        /* 0 unclassified, 1 head_repeated_layer_tail, 2 single_graph */
  uint8_t boundary_policy;     /* 0 exact_periodic_suffix, 1 exact_one_shot_leading_composition,
                                  2 direct_observed_graph_launch, 3 launch_segment */
  uint32_t device_id;
  uint32_t candidate;          /* 1-based composition candidate per device; 0 = none */
  uint32_t first_launch, nlaunches; /* launches (in composition order) */
  uint32_t expected_launches;  /* pattern length; 0 = not claimed (NULL) */
  int64_t start_ns, end_ns;
  char *detail;                /* owned, may be NULL: what is missing, in words */
} tl_graph_region;

/* Graph-level envelopes (traceloom_cuda_graph_replay_core): temporal evidence only. */
typedef struct tl_graph_envelope {
  uint16_t db_idx;
  uint8_t provider;
  uint32_t device_id, stream_id;
  uint32_t event;              /* the envelope's device event, NONE when none */
  uint32_t launch;             /* exact launch it corresponds to, NONE */
  int64_t start_ns, end_ns;
  int64_t correlation_id, graph_id, graph_exec_id, context_id; /* TL_ABSENT when unknown */
  const char *graph_kind;      /* static: "cuda_graph_trace", "cuda_graph_node_replay",
                                  "aclgraph_graph_replay" */
} tl_graph_envelope;

typedef TL_VEC(char *) tl_sig_vec;

typedef struct tl_replay {
  TL_VEC(tl_graph_launch) launches;
  TL_VEC(tl_graph_member) members;
  TL_VEC(tl_replay_unit) units;
  TL_VEC(tl_graph_region) regions;
  TL_VEC(tl_graph_envelope) envelopes;
  tl_sig_vec body_templates;       /* owned signature texts, index+1 = template id */
  tl_sig_vec graph_templates;      /* owned signature texts of unit compositions */
  uint8_t *owned;                  /* per event (launch events included): 1 when an
                                      exact unit owns it (after tl_replay_promote) */
  size_t n_real_events;            /* the trace's events: launch event k is event
                                      n_real_events + k */
  tl_derived launch_events;        /* one per promoted launch (tl_replay_promote) */
  uint32_t *launch_of_synthetic;   /* launch event n_real_events + k -> launch index */
} tl_replay;

/* An empty reconstruction (no launch), as after {"graph_replay": false}. */
void tl_replay_init(tl_replay *r);

/* Runs every provider's reconstruction over the trace. */
int tl_replay_build(const tl_trace *t, const tl_profile *p, tl_replay *r, tl_err *e);

/* Provider passes (called by tl_replay_build; each appends to r). */
int tl_replay_acl(const tl_trace *t, const tl_profile *p, tl_replay *r, tl_err *e);
int tl_replay_cuda(const tl_trace *t, const tl_profile *p, tl_replay *r, tl_err *e);

/* Interns a body or composition signature into r->body_templates / r->graph_templates;
** returns its 1-based id, 0 on out-of-memory. sig is copied. */
uint32_t tl_replay_intern_body(tl_replay *r, const char *sig);
uint32_t tl_replay_intern_graph(tl_replay *r, const char *sig);

/* Derives one launch anchor event per promoted launch (r->launch_events, anchor_event) and
** fills r->owned. The trace is not changed (but for the strings interned in its pool). */
int tl_replay_promote(const tl_trace *t, tl_replay *r, tl_err *e);

/* Launches of exact replay units (the promoted ones). */
size_t tl_replay_exact_launches(const tl_replay *r);

/* Recovery constraints of the anchors whose events are anchor_event[0..n) (recovery.md
** 4.2): per anchor, *unit = 1 + the replay unit it launches (0: eager work) and *key its
** token identity (graph template, body template, slot; 0: the symbol decides). Both stay
** NULL when the analysis has no replay unit; malloc'd otherwise. */
int tl_replay_anchor_tokens(const tl_replay *r, const uint32_t *anchor_event, size_t n,
                            uint32_t **unit, int64_t **key, tl_err *e);

/* Symbol text of a promoted launch's anchor (ACLH, ACLL, ACLT, ACLGraph, ACLG for a unit
** of one generic launch, ACLG<k>, CUDAGraph); buf must hold 24 bytes. */
const char *tl_replay_launch_symbol(const tl_replay *r, const tl_graph_launch *l, char *buf);

const char *tl_match_policy_name(int m);
const char *tl_assoc_policy_name(int a);
const char *tl_slot_role_name(int r);
const char *tl_member_kind_name(int k);
const char *tl_launch_status_name(int s);
const char *tl_region_status_name(int s);

void tl_replay_free(tl_replay *r);

/* The replay cost map (costmap.c), indexed like r->launches / r->members. */
typedef struct tl_launch_cost {
  int64_t task_sum, busy_union, envelope, compute, communication, data_move, first_start;
} tl_launch_cost;

typedef struct tl_lane_cost {
  uint32_t launch, lane;
  uint32_t stream_id;
  int consistent;                /* every member of the lane on one stream */
  size_t count;
  int64_t task_sum, busy_union, compute, communication, data_move;
} tl_lane_cost;

typedef struct tl_replay_aggregate {
  uint32_t first_member;         /* a representative member (first contributor) */
  uint32_t count, units, launches, slot; /* slot: the slot role (tl_slot_role) */
  int kind_mixed, lane_mixed;     /* contributors of more than one kind / lane ordinal */
  int64_t dur_p25, dur_p50, dur_p75, share_p25, share_p50, share_p75;
  /* the aggregate's scheduled-work share: its members' summed durations over the summed
  ** body task-sums of their launches */
  int64_t work_ns, body_task_sum_ns;
} tl_replay_aggregate;

typedef struct tl_replay_costs {
  tl_launch_cost *launch;        /* per launch (zero when not promoted) */
  int64_t *member_share_ppm;     /* per member */
  uint32_t *member_aggregate;    /* per member: aggregate index, NONE when not promoted */
  uint32_t *member_contributor;  /* per member: 0-based order within its aggregate */
  TL_VEC(tl_lane_cost) lanes;    /* per (promoted launch, lane), in launch then lane order */
  TL_VEC(tl_replay_aggregate) aggregates;
} tl_replay_costs;

/* The string id of a member's identity (0: none): the name its body signature compares, an
** Ascend task's communication name, operator type, operator name or name, a CUDA graph
** child's own name (publish_replay.c says why). Part of the cost aggregates' key. */
uint32_t tl_replay_member_identity(const tl_trace *t, uint32_t event, int provider);

int tl_replay_costs_build(const tl_trace *t, const tl_replay *r, tl_replay_costs *c, tl_err *e);
void tl_replay_costs_free(tl_replay_costs *c);

/* Publication (publish_replay.c): the replay relations of sql/schema/40_replay.sql, inside
** the caller's savepoint. anchor_event[k] is the event of anchor k (anchor-<k>), n of them,
** for the anchor ids of launch anchors (NULL, 0: no anchors). r NULL: the reconstruction was
** switched off (nothing published); an input with no graph launch gets one no_replay_units
** issue. */
int tl_publish_replay(sqlite3 *db, const tl_trace *t, const tl_replay *r,
                      const uint32_t *anchor_event, size_t nanchors, tl_err *e);

#endif
