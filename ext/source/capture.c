/*
** capture.c: the capture-stream companion of Ascend profiles (host/sqlite/stream_info.db),
** read for ACL graph replay reconstruction (recovery.md 7.1; see source.h).
**
** Discovery finds and checks the companion (discover.c); this reads its CaptureStreamInfo
** rows: (device_id, model_id, stream_id), the stream column being stream_id or the legacy
** model_stream_id.
*/
#include "source/source.h"
#include "source/sqlsrc.h"

#include <stdlib.h>

int tl_read_capture_streams(const tl_profile *p, int db_idx, tl_capture_streams *out,
                            tl_err *e) {
  out->n = 0;
  const char *path = p && db_idx >= 0 && (size_t)db_idx < p->inputs.n
                         ? p->inputs.v[db_idx].stream_info_path
                         : NULL;
  if (!path) return TL_OK;
  sqlite3 *db;
  if (tl_sql_open_ro(path, &db, e)) return TL_ERROR;
  tl_columns cols;
  int rc = tl_sql_columns(db, path, "CaptureStreamInfo", &cols, e);
  if (rc) {
    tl_sql_close(db);
    return rc;
  }
  const char *stream = tl_columns_find(&cols, "stream_id", 1) >= 0         ? "stream_id"
                       : tl_columns_find(&cols, "model_stream_id", 1) >= 0 ? "model_stream_id"
                                                                           : NULL;
  int ok = stream && tl_columns_find(&cols, "device_id", 1) >= 0 &&
           tl_columns_find(&cols, "model_id", 1) >= 0;
  tl_columns_free(&cols);
  if (!ok) {
    tl_sql_close(db);
    return tl_fail(e,
                   "%s: table CaptureStreamInfo lacks device_id, model_id or stream_id "
                   "(model_stream_id)",
                   path);
  }
  char *sql = tl_mprintf(
      "SELECT CAST(device_id AS INTEGER), CAST(model_id AS INTEGER), CAST(\"%s\" AS INTEGER) "
      "FROM CaptureStreamInfo ORDER BY 1, 2, 3, rowid",
      stream);
  sqlite3_stmt *st = NULL;
  rc = sql ? tl_sql_prepare(db, path, sql, &st, e) : tl_nomem(e);
  free(sql);
  while (rc == TL_OK) {
    int s = sqlite3_step(st);
    if (s == SQLITE_DONE) break;
    if (s != SQLITE_ROW) {
      rc = tl_fail(e, "%s: reading CaptureStreamInfo: %s", path, sqlite3_errmsg(db));
      break;
    }
    tl_capture_stream r = {tl_col_i64(st, 0, -1), tl_col_i64(st, 1, -1), tl_col_i64(st, 2, -1)};
    if (r.device_id < 0 || r.model_id < 0 || r.stream_id < 0) continue;
    if (TL_VEC_PUSH(out, r)) rc = tl_nomem(e);
  }
  sqlite3_finalize(st);
  tl_sql_close(db);
  return rc;
}
