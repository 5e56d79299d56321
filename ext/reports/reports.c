/*
** reports.c: the report-surface stage (see reports.h): its parts in order, with their timings
** under TRACELOOM_TIMING=1.
*/
#include "reports/reports.h"
#include "timing.h"

typedef int (*part_fn)(sqlite3 *db, const tl_reports_input *in, tl_err *e);

static const struct {
  const char *name;
  part_fn run;
} PARTS[] = {
    {"host windows", tl_reports_host_windows},
    {"graph envelopes", tl_reports_envelopes},
    {"represented events", tl_reports_placements},
    {"structural units", tl_reports_units},
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
