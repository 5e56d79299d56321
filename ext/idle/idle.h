/*
** idle.h: device idle evidence (Ascend E1 to E4): visible productive idle split into explained
** intervals, with the evidence behind each (docs/REPORTS.md "Idle evidence").
**
**   E1  every task gets a semantic role (rules.c): productive compute, communication or data
**       movement, visible wait, capture control, record, runtime control, or unknown;
**   E2  per device, the productive timeline is the union of the productive tasks and the
**       communication ops (a communication task with the op's exact connection id and
**       compatible names is absorbed into the op); its complement inside the analysis span
**       (first productive start to last productive end) is visible productive idle;
**   E3  per stream, a partition of the span into observed states (running_<role>,
**       empty_observed, ambiguous_overlap where events of one stream overlap);
**   E4  each gap sliced at every stream-state and evidence boundary and explained by priority:
**       blocked_by_visible_wait > capture_control_present > runtime_control_present >
**       queued_visible_task_delay > host_sync_api_present > no_observed_device_work (only
**       with an attested complete collection and a complete stream scan) >
**       unattributed_visible_idle.
** Host evidence (host.c) needs a clock model fitted on explicit markers (clock.c, a TSV the
** caller gives): allowlisted host synchronization calls whose mapped interval robustly
** overlaps a gap (shrunk by the model's uncertainty epsilon), and enqueue calls linked by a
** unique connection id to a later task with a robustly positive delay. Overlaps only possible
** within epsilon stay diagnostic candidates. Without markers nothing is projected across
** clocks.
**
** Opt-in (analyze option "idle_evidence"): it needs a collection attestation and clock
** markers a profile does not carry, and its partitions are as large as the trace.
*/
#ifndef TL_IDLE_H
#define TL_IDLE_H

#include "util/sqlite_api.h"
#include "util/err.h"
#include "util/json.h"
#include "trace/trace.h"
#include "anchor/anchors.h"

/* Collection completeness (attested by the caller, never derived from the trace). */
typedef enum tl_collection {
  TL_COLLECTION_COMPLETE = 0,
  TL_COLLECTION_INCOMPLETE,
  TL_COLLECTION_UNKNOWN,
  TL_COLLECTION_INVALID
} tl_collection;

typedef struct tl_idle_options {
  int enabled;
  tl_collection collection;      /* default unknown */
  char *clock_markers;           /* marker TSV path (11-field payload) or NULL */
  int markers_synthetic;         /* markers of a controlled fixture: synthetic_only alignment */
  double epsilon_multiplier;     /* scales the model's uncertainty (default 1) */
  int64_t minimum_evidence_ns;   /* robust host evidence shorter than this stays a candidate
                                    (default 1) */
} tl_idle_options;

/* Parses the analyze option "idle_evidence": true, false, or an object with the keys
** collection_status, clock_markers, clock_markers_synthetic, epsilon_multiplier,
** minimum_evidence_duration_ns. v NULL: disabled. */
int tl_idle_options_parse(const tl_json *v, tl_idle_options *o, tl_err *e);
void tl_idle_options_free(tl_idle_options *o);

typedef struct tl_idle_input {
  const tl_trace *trace;
  const tl_anchors *anchors;
  size_t nreal;                  /* events before synthetic launch events */
  const tl_idle_options *options;
} tl_idle_input;

/* Computes and writes the idle-evidence tables (sql/schema/61_idle.sql) for every Ascend
** input, inside the caller's savepoint, after the views exist. */
int tl_idle_publish(sqlite3 *db, const tl_idle_input *in, tl_err *e);

#endif
