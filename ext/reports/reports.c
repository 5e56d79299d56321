/*
** reports.c: the report-surface stage (see reports.h): its parts in order, with their timings
** under TRACELOOM_TIMING=1.
*/
#include "reports/reports.h"

#include <string.h>
#include "util/timing.h"
#include "idle/idle.h"
#include "util/json.h"

/* Event reconciliation's rows: its decisions were taken before the anchors (ext/reconcile). */
static int reconciliation(sqlite3 *db, const tl_reports_input *in, tl_err *e) {
  return tl_reconcile_publish(db, in->reconciliation, in->trace, in->anchors, e);
}

/* Idle evidence, when the analyze option asks for it (ext/idle). */
static int idle_evidence(sqlite3 *db, const tl_reports_input *in, tl_err *e) {
  if (!in->idle_evidence_json) return TL_OK;
  tl_json *doc = NULL;
  tl_idle_options o;
  int rc = tl_json_parse(in->idle_evidence_json, strlen(in->idle_evidence_json), &doc, e);
  if (rc == TL_OK) rc = tl_idle_options_parse(doc, &o, e);
  tl_json_free(doc);
  if (rc) return rc;
  size_t nreal = in->replay && in->replay->launch_of_synthetic ? in->replay->n_real_events : in->trace->ev.n;
  tl_idle_input ii = {in->trace, in->anchors, nreal, &o};
  rc = tl_idle_publish(db, &ii, e);
  tl_idle_options_free(&o);
  return rc;
}

typedef int (*part_fn)(sqlite3 *db, const tl_reports_input *in, tl_err *e);

static const struct {
  const char *name;
  part_fn run;
} PARTS[] = {
    {"host windows", tl_reports_host_windows},
    {"graph envelopes", tl_reports_envelopes},
    {"represented events", tl_reports_placements},
    {"structural units", tl_reports_units},
    {"event reconciliation", reconciliation},
    {"evidence-role structure rows", tl_reports_structure_rows},
    {"idle evidence", idle_evidence},
};

int tl_reports_publish(sqlite3 *db, const tl_reports_input *in, tl_err *e) {
  tl_timer tm;
  tl_timer_start(&tm, "reports");
  int rc = TL_OK;
  for (size_t i = 0; rc == TL_OK && i < sizeof PARTS / sizeof PARTS[0]; i++) {
    rc = PARTS[i].run(db, in, e);
    tl_timer_mark(&tm, PARTS[i].name);
  }
  return rc;
}
