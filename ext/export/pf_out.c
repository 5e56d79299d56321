/*
** pf_out.c: the output file of the Perfetto export and the metadata both formats carry.
**
** A writer (pf_json.c, pf_proto.c) appends to a 1 MiB buffer that is flushed to the file,
** through the parallel deflate of gzpar.h when the path ends in ".gz": the trace streams out
** and is never held whole in memory. The file is a temporary sibling, fsync'ed and renamed
** into place; any failure removes it and leaves an older export untouched. Its bytes are
** handed to the disk every 8 MiB as they are written (sync_file_range, asynchronous), so the
** fsync finds little left to write instead of the whole trace. Two parts of the protobuf are
** written at once by two threads (pf_place: pwrite at their offsets, the later part's first
** bytes held until the earlier part's length is known), so no part is copied after the other.
*/
#include "export/pf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* How many written bytes are handed to the disk at a time (pf_out_kick). */
#define WRITEBACK_BYTES ((int64_t)8 << 20)

#define AGGREGATION_BOUNDARY                                                                   \
  "Views overlap: never sum structure, device_events and raw_provider together. Filter one " \
  "projection_plane and one rank/device/view; duration sums are not elapsed or busy time."

static int pwrite_all(int fd, const char *p, size_t n, int64_t off) {
  while (n) {
    ssize_t w = pwrite(fd, p, n, (off_t)off);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += w, n -= (size_t)w, off += w;
  }
  return 0;
}

/* o->b's bytes as a part's (o->place): written where they go, or held until that is known:
** appended to the place's unlinked file (the disk's page cache, not this process's memory,
** however long the other part takes). */
static int place_bytes(pf_out *o) {
  if (o->at < 0) {
    pf_place *pl = o->place;
    pthread_mutex_lock(&pl->mu);
    o->at = pl->at;
    int held = o->at < 0, bad = 0;
    if (held) { /* under the lock: the settling writer copies what is here when it takes it */
      bad = tl_write_all(pl->fd, o->b.p, o->b.n) != 0;
      if (!bad) pl->held += (int64_t)o->b.n;
    }
    pthread_mutex_unlock(&pl->mu);
    if (bad)
      return tl_fail(o->e, "traceloom_export_perfetto: cannot write beside '%s': %s", o->path,
                     strerror(errno));
    if (held) {
      o->written += (int64_t)o->b.n;
      return TL_OK;
    }
  }
  if (pwrite_all(o->fd, o->b.p, o->b.n, o->at + (o->written - o->from)) != 0)
    return tl_fail(o->e, "traceloom_export_perfetto: cannot write '%s': %s", o->path,
                   strerror(errno));
  o->written += (int64_t)o->b.n;
  return TL_OK;
}

int pf_out_flush(pf_out *o, int force) {
  if (o->b.oom) return tl_nomem(o->e);
  if (!force && o->b.n < PF_FLUSH_BYTES) return TL_OK;
  int rc = TL_OK;
  if (o->gz) rc = tl_gzpar_write(o->gz, o->b.p, o->b.n, o->e);
  else if (o->place && o->b.n) rc = place_bytes(o);
  else if (o->b.n && tl_write_all(o->fd, o->b.p, o->b.n) != 0)
    rc = tl_fail(o->e, "traceloom_export_perfetto: cannot write '%s': %s", o->path,
                 strerror(errno));
  else
    o->written += (int64_t)o->b.n;
  tl_buf_reset(&o->b);
  if (rc == TL_OK) pf_out_kick(o, WRITEBACK_BYTES);
  return rc;
}

void pf_out_kick(pf_out *o, int64_t min) {
  if (!o->writeback || o->written - o->kicked < (min ? min : 1)) return;
  if (o->place && o->at < 0) return; /* not placed yet */
  int64_t off = o->place ? o->at + (o->kicked - o->from) : o->kicked;
  /* Advisory: a failure here is found by the fsync. */
  (void)sync_file_range(o->fd, off, o->written - o->kicked, SYNC_FILE_RANGE_WRITE);
  o->kicked = o->written;
}

int pf_place_open(pf_place *place, pf_out *o) {
  memset(place, 0, sizeof *place);
  place->fd = -1;
  int rc = pf_out_flush(o, 1);
  if (rc) return rc;
  pf_out_kick(o, 0);
  char *tmp = tl_mprintf("%s.part-XXXXXX", o->path);
  if (!tmp) return tl_nomem(o->e);
  place->fd = mkstemp(tmp);
  if (place->fd >= 0) unlink(tmp);
  free(tmp);
  if (place->fd < 0)
    return tl_fail(o->e, "traceloom_export_perfetto: cannot create a temporary file beside "
                         "'%s': %s", o->path, strerror(errno));
  if (pthread_mutex_init(&place->mu, NULL) != 0) {
    close(place->fd);
    return tl_nomem(o->e);
  }
  place->at = -1, place->from = o->written;
  o->place = place, o->at = -1, o->from = o->written;
  return TL_OK;
}

int pf_place_settle(pf_place *place, int64_t at, pf_out *ew) {
  pthread_mutex_lock(&place->mu);
  place->at = at;
  int64_t n = place->held;
  pthread_mutex_unlock(&place->mu);
  /* In the kernel where it can (copy_file_range with explicit offsets: neither file's own
  ** offset moves), else through a buffer. */
  loff_t in = 0, out = at;
  while (in < n) {
    ssize_t k = copy_file_range(place->fd, &in, ew->fd, &out, (size_t)(n - in), 0);
    if (k > 0) continue;
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && errno != EXDEV && errno != ENOSYS && errno != EOPNOTSUPP && errno != EINVAL)
      return tl_fail(ew->e, "traceloom_export_perfetto: cannot write '%s': %s", ew->path,
                     strerror(errno));
    break; /* not supported here (or the file came short: the loop below says so) */
  }
  char *buf = in < n ? malloc(PF_FLUSH_BYTES) : NULL;
  if (in < n && !buf) return tl_nomem(ew->e);
  while (in < n) {
    size_t want = (size_t)(n - in) < PF_FLUSH_BYTES ? (size_t)(n - in) : PF_FLUSH_BYTES;
    ssize_t k = pread(place->fd, buf, want, in);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0 || pwrite_all(ew->fd, buf, (size_t)k, at + in) != 0) {
      free(buf);
      return tl_fail(ew->e, "traceloom_export_perfetto: cannot write '%s': %s", ew->path,
                     k == 0 ? "a held part came back short" : strerror(errno));
    }
    in += k;
  }
  free(buf);
  return TL_OK;
}

/* Closes the held part's file and frees the mutex. */
static void place_free(pf_place *place) {
  close(place->fd);
  pthread_mutex_destroy(&place->mu);
}

int pf_place_close(pf_place *place, pf_out *o, int err) {
  if (!err) err = pf_out_flush(o, 1);
  if (!err && o->at < 0) o->at = place->at; /* settled since o's last flush */
  if (!err && o->at < 0)
    err = tl_fail(o->e, "traceloom_export_perfetto: internal error: a part was not placed");
  if (!err) {
    o->kicked = o->at + (o->kicked - o->from), o->written = o->at + (o->written - o->from);
    if (lseek(o->fd, o->written, SEEK_SET) != o->written)
      err = tl_fail(o->e, "traceloom_export_perfetto: cannot write '%s': %s", o->path,
                    strerror(errno));
  }
  o->place = NULL;
  place_free(place);
  return err;
}

int pf_out_write_file(pf_ctx *c, const char *path, int gzip,
                      int (*write)(pf_ctx *c, pf_out *o), void (*written)(pf_ctx *c)) {
  char *tmp = tl_mprintf("%s.tmp-XXXXXX", path);
  if (!tmp) return tl_nomem(c->e);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    int err = errno;
    free(tmp);
    return tl_fail(c->e, "traceloom_export_perfetto: cannot create a temporary file beside "
                         "'%s': %s", path, strerror(err));
  }
  fchmod(fd, 0644);
  pf_out o;
  memset(&o, 0, sizeof o);
  o.fd = fd, o.path = path, o.e = c->e, o.writeback = !gzip;
  int rc = TL_OK;
  if (gzip) {
    /* Level 1: timelines are large and repetitive; it compresses ~1.4x less than level 6
    ** but takes a third less CPU. Deflate runs on worker threads (gzpar.h) while this
    ** thread formats; TRACELOOM_EXPORT_THREADS caps them (the bytes do not depend on it). */
    const char *env = getenv("TRACELOOM_EXPORT_THREADS");
    int threads = env && *env ? atoi(env) : 0;
    rc = tl_gzpar_open(&o.gz, fd, 1, threads < 0 ? 0 : threads > 64 ? 64 : threads, path, c->e);
  }
  if (rc == TL_OK) rc = write(c, &o);
  if (rc == TL_OK && o.gz) rc = tl_gzpar_finish(o.gz, c->e);
  tl_gzpar_free(o.gz);
  tl_buf_free(&o.b);
  if (rc == TL_OK && written) written(c);
  if (rc == TL_OK) pf_out_kick(&o, 0);
  if (rc == TL_OK && fsync(fd) != 0)
    rc = tl_fail(c->e, "traceloom_export_perfetto: cannot fsync '%s': %s", tmp, strerror(errno));
  if (close(fd) != 0 && rc == TL_OK)
    rc = tl_fail(c->e, "traceloom_export_perfetto: cannot close '%s': %s", tmp, strerror(errno));
  if (rc == TL_OK && rename(tmp, path) != 0)
    rc = tl_fail(c->e, "traceloom_export_perfetto: cannot move the export into place at '%s': %s",
                 path, strerror(errno));
  if (rc != TL_OK) unlink(tmp);
  free(tmp);
  return rc;
}

void pf_metadata(const pf_ctx *c, pf_meta_writer *w) {
  const pf_layout *l = &c->l;
  w->str(w, "format", "TraceLoom queryable database timeline Perfetto export");
  w->str(w, "analysis_db", sqlite3_db_filename(c->db, "main"));
  w->i64(w, "time_origin_ns", l->slices.n ? l->origin : 0, 0);
  w->str(w, "aggregation_boundary", AGGREGATION_BOUNDARY);
  w->i64(w, "structural_slices", l->n_struct, 0);
  w->i64(w, "repeat_occurrence_slices", l->n_repeat, 0);
  w->i64(w, "repeat_body_slices", l->n_body, 0);
  w->i64(w, "structure_atom_slices", l->n_leaf, 0);
  w->i64(w, "atomic_slices", l->n_atom, 0);
  w->i64(w, "replay_structure_slices", 0, 0);
  w->i64(w, "replay_member_slices", l->n_member, 0);
  w->i64(w, "runtime_call_slices", l->n_call, 0);
  w->i64(w, "runtime_flows", l->n_flow_call, 0);
  w->i64(w, "graph_launch_flows", l->n_flow_launch, 0);
  w->i64(w, "flows", (int64_t)l->flows.n, 0);
  w->i64(w, "flows_not_drawn_backward_in_time", l->n_flow_backward, 0);
  w->i64(w, "raw_slices", 0, 0);
  w->i64(w, "counter_samples", 0, 0);
  w->i64(w, "distributed_timeline_slices", l->n_dist, 0);
  w->i64(w, "context_slices", l->n_context, 0);
  w->i64(w, "motif_classes", c->a.nmotif, 0);
  int dist = c->opts.ranks.n > 0, clock = c->opts.align == PF_ALIGN_CLOCK;
  const char *alignment = NULL, *evidence = NULL, *boundary = NULL;
  if (dist && c->opts.align == PF_ALIGN_PROVIDER) {
    alignment = "provider_timestamps_uncalibrated", evidence = "uncalibrated";
    boundary = "provider timestamps with one shared origin; uncalibrated, no shared "
               "absolute-clock claim";
  } else if (dist && clock) {
    alignment = "collective_end_affine_clock_model", evidence = c->r.clock_status;
    boundary = strcmp(c->r.clock_status, "candidate_only") == 0
                   ? "display-only candidate mapping; source timestamps retained; no calibrated "
                     "global-time claim"
                   : "calibrated collective-end affine mapping; source timestamps retained";
  } else if (dist) {
    alignment = "first_timeline_event_per_rank", evidence = "display_only";
    boundary = "first-event translation only; no shared absolute-clock claim";
  }
  w->str(w, "distributed_alignment", alignment);
  w->str(w, "distributed_alignment_evidence_status", evidence);
  w->str(w, "distributed_alignment_boundary", boundary);
  w->str(w, "distributed_clock_model_path", clock ? c->opts.clock_model : NULL);
  w->str(w, "distributed_clock_model_sha256", clock ? c->r.clock_sha : NULL);
  w->i64(w, "distributed_reference_rank", clock ? c->r.clock_reference_rank : 0, !dist);
  w->i64(w, "distributed_rank_tracks", (int64_t)c->opts.ranks.n, !dist);
}
