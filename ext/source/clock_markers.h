/*
** clock_markers.h: the clock-marker TSV of the idle-evidence contract (clock_markers.c).
**
** One header line, exactly:
**   marker_id host_before_ns host_after_ns device_timestamp_ns host_pid host_tid device_id
**   stream_id connection_id call_site return_status        (tab-separated)
** then one marker per line: the caller's host-clock bracket around a device-visible marker
** and the device timestamp of the marker task. stream_id and connection_id may be empty.
*/
#ifndef TL_CLOCK_MARKERS_H
#define TL_CLOCK_MARKERS_H

#include "util/err.h"
#include <stdint.h>
#include <stddef.h>

typedef struct tl_marker_row {
  char *marker_id, *call_site;
  int64_t host_before, host_after, device_ts, host_pid, host_tid, device_id, stream_id,
      connection_id, return_status; /* stream_id, connection_id: -1 when empty */
  int line;
} tl_marker_row;

/* Reads path (read-only). Each row is malloc'd into *rows (free with tl_marker_rows_free).
** A malformed file fails with the path, line and field named. */
int tl_marker_rows_read(const char *path, tl_marker_row **rows, size_t *n, tl_err *e);
void tl_marker_rows_free(tl_marker_row *rows, size_t n);

#endif
