/*
** idle_int.h: the types the idle-evidence files share (rules.c, timeline.c, clock.c, host.c,
** publish_idle.c). Other code uses idle.h.
*/
#ifndef TL_IDLE_INT_H
#define TL_IDLE_INT_H

#include "idle/idle.h"
#include "util/vec.h"
#include "source/clock_markers.h"

#define TL_IDLE_CONTRACT "idle-evidence-contract-v4.4"
#define TL_IDLE_ATTRIBUTION "host_device_projection_v2"
#define TL_IDLE_NONE UINT32_MAX

/* E1 semantic roles. */
typedef enum tl_idle_role {
  TL_IR_COMPUTE = 0, TL_IR_COMM, TL_IR_DATA_MOVE, TL_IR_WAIT, TL_IR_CAPTURE, TL_IR_RECORD,
  TL_IR_RUNTIME, TL_IR_UNKNOWN
} tl_idle_role;

/* E3 stream states; the first seven are the running states of the roles above. */
typedef enum tl_idle_state {
  TL_IS_COMPUTE = 0, TL_IS_COMM, TL_IS_DATA_MOVE, TL_IS_WAIT, TL_IS_CAPTURE, TL_IS_RECORD,
  TL_IS_RUNTIME, TL_IS_UNKNOWN, TL_IS_EMPTY, TL_IS_AMBIGUOUS
} tl_idle_state;

/* E4 categories, in priority order. */
typedef enum tl_idle_category {
  TL_IC_WAIT = 0, TL_IC_CAPTURE, TL_IC_RUNTIME, TL_IC_QUEUED, TL_IC_HOST_SYNC, TL_IC_ABSENT,
  TL_IC_UNATTRIBUTED
} tl_idle_category;

typedef enum tl_alignment {
  TL_AL_NOT_REQUIRED = 0, TL_AL_CALIBRATED, TL_AL_SYNTHETIC, TL_AL_UNCALIBRATED, TL_AL_INVALID
} tl_alignment;

const char *tl_idle_role_name(int r);
const char *tl_idle_state_name(int s);
const char *tl_idle_category_name(int c);
const char *tl_alignment_name(int a);
const char *tl_collection_name(int c);

/* E1: the role of event i (a task) and the index of the rule that decided it (NONE when no
** rule matched: unknown). */
void tl_idle_classify(const tl_trace *t, size_t i, uint8_t *role, uint32_t *rule);
const char *tl_idle_rule_id(uint32_t rule);
uint32_t tl_idle_rule_count(void);       /* rules 0 .. count-1 have ids */
const char *tl_idle_semantic_version(void);
void tl_idle_semantic_sha256(char hex[65]);
/* Host API families: 0 none, 1 host_sync, 2 enqueue; the matching pattern in *pattern. */
int tl_idle_host_api_family(const char *api_name, const char **pattern);
const char *tl_idle_host_api_version(void);
void tl_idle_host_api_sha256(char hex[65]);

/* A source of a state or explanation: a device event (with the state it was observed in and
** its rule) or, for host evidence, a runtime call with its linked task (NONE when none). */
typedef struct tl_idle_src {
  uint32_t event;                /* device event, NONE for host sources */
  uint32_t call;                 /* runtime call (host sources), NONE otherwise */
  uint8_t state;                 /* tl_idle_state the source was observed in */
  uint32_t rule;                 /* semantic rule of the event, NONE */
  int64_t overlap_start, overlap_end; /* host sources: the evidence extent */
} tl_idle_src;
typedef TL_VEC(tl_idle_src) tl_idle_srcs;

typedef struct tl_idle_interval {
  int64_t start, end;
  uint8_t kind;                  /* 0 productive_active, 1 visible_productive_idle */
  uint32_t first_src, nsrc;      /* into the device's interval sources */
} tl_idle_interval;

typedef struct tl_idle_state_row {
  uint32_t stream;
  int64_t start, end;
  uint8_t state;
  uint32_t first_src, nsrc;
} tl_idle_state_row;

typedef struct tl_idle_expl {
  uint32_t gap;                  /* index of the gap interval in the device's intervals */
  int64_t start, end;
  uint8_t category, level, relation, alignment;
  const char *reason;
  uint32_t first_src, nsrc;
} tl_idle_expl;

/* Host evidence that can replace an E4 slice (validated, robust), per device. */
typedef struct tl_idle_host_evidence {
  uint32_t device_id;
  int64_t start, end;
  uint8_t category;              /* TL_IC_QUEUED or TL_IC_HOST_SYNC */
  uint8_t alignment;
  tl_idle_src src;
} tl_idle_host_evidence;
typedef TL_VEC(tl_idle_host_evidence) tl_idle_host_evidences;

typedef struct tl_idle_device {
  uint32_t device_id;
  int status;                    /* 0 ok, 1 no_productive_span, 2 invalid_input */
  int64_t span_start, span_end;
  int scan_complete;             /* every event of the device had a stream */
  TL_VEC(tl_idle_interval) intervals;
  tl_idle_srcs interval_src;
  TL_VEC(tl_idle_state_row) states;
  tl_idle_srcs state_src;
  uint32_t stream_count;
  TL_VEC(tl_idle_expl) expl;
  tl_idle_srcs expl_src;
} tl_idle_device;
typedef TL_VEC(tl_idle_device) tl_idle_devices;

/* The per-event inputs of one db: roles, rules and connection ids of its events. */
typedef struct tl_idle_events {
  const tl_trace *t;
  size_t nreal;
  uint16_t db_idx;
  uint8_t *role;                 /* per event (tasks); comm ops get TL_IR_COMM */
  uint32_t *rule;
  uint8_t *is_op;                /* 1 for communication ops */
  const int64_t *conn;           /* connection id per event, TL_ABSENT */
} tl_idle_events;

/* E2 + E3 for every device of the db (timeline.c). */
int tl_idle_timelines(const tl_idle_events *ev, tl_idle_devices *out, tl_err *e);
/* E4 for one device, with the host evidence of that device (timeline.c). */
int tl_idle_explain(const tl_idle_events *ev, tl_idle_device *d, const tl_idle_host_evidences *host,
                    int allow_absence_run, uint8_t unattributed_alignment, tl_err *e);
void tl_idle_devices_free(tl_idle_devices *d);

/* clock.c: one model per device, from the rows of a marker TSV (source/clock_markers.h). */
typedef struct tl_clock_markers {
  const tl_marker_row *v;
  size_t n;
} tl_clock_markers;

typedef struct tl_clock_model {
  uint32_t device_id;
  uint8_t alignment;
  const char *reason;
  size_t input, inliers, rejected, fit, validation;
  long double scale, ref_host, ref_device, offset;
  long double residual_p50, residual_p95, residual_max, bracket_p95;
  uint64_t epsilon_ns;
  int has_profiler_mapping;
} tl_clock_model;
typedef TL_VEC(tl_clock_model) tl_clock_models;

int tl_clock_fit(const tl_clock_markers *m, const uint32_t *devices, size_t ndevices, int synthetic,
                 double epsilon_multiplier, tl_clock_models *out, tl_err *e);
const tl_clock_model *tl_clock_model_for(const tl_clock_models *m, uint32_t device_id);
/* Maps a host timestamp to the device clock (half-to-even); 0 when the model cannot. */
int tl_clock_map(const tl_clock_model *m, int64_t host_ns, int64_t *device_ns);

/* host.c: the host API events of the db, their task links, evidence and candidates. */
typedef struct tl_idle_api {
  uint32_t call;                 /* runtime call number */
  int64_t start, end, connection;
  uint8_t family;                /* 1 host_sync, 2 enqueue */
  const char *pattern;
  uint8_t link_status;           /* 0 unique, 1 one_to_many, 2 ambiguous, 3 unresolved */
  int has_device;
  uint32_t device_id;
  uint32_t first_target, ntargets; /* into the target events */
} tl_idle_api;

typedef struct tl_idle_candidate {
  uint32_t device_id, gap_index;  /* the gap (interval index of that device) */
  uint8_t category, status, alignment;
  tl_idle_src src;
} tl_idle_candidate;

typedef struct tl_idle_host {
  TL_VEC(tl_idle_api) apis;
  TL_VEC(uint32_t) targets;      /* linked task events */
  tl_idle_host_evidences evidence;
  TL_VEC(tl_idle_candidate) candidates;
} tl_idle_host;

const char *tl_link_status_name(int s);
int tl_idle_host_build(const tl_idle_events *ev, tl_idle_host *h, const tl_clock_models *models,
                       const tl_idle_devices *devices, const tl_idle_options *o, tl_err *e);
void tl_idle_host_free(tl_idle_host *h);

#endif
