/*
** gzpar.c: parallel gzip writer (see gzpar.h).
**
** A ring of chunk slots, each FREE -> (filled by the caller) READY -> BUSY (a worker) ->
** DONE or FAILED -> written by the caller -> FREE. Sequence numbers name the chunks;
** chunk k lives in slot k % nslots, so the caller reuses a slot only after writing it.
*/
#include "export/gzpar.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

enum { S_FREE, S_READY, S_BUSY, S_DONE, S_FAILED };

typedef struct gz_slot {
  unsigned char *in, *out;
  size_t in_n, out_n;
  uLong crc;
  int state, last, zrc;
} gz_slot;

struct tl_gzpar {
  int fd, level, nthreads, stop, sync_ok;
  char *path;
  pthread_t *th;
  pthread_mutex_t mu;
  pthread_cond_t work, done;
  gz_slot *slots;
  size_t nslots, out_cap;
  uint64_t next_fill, next_take, next_write; /* chunk sequence numbers */
  uLong crc;
  uint64_t total;
};

int tl_write_all(int fd, const void *p, size_t n) {
  const char *s = p;
  while (n) {
    ssize_t w = write(fd, s, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    s += w, n -= (size_t)w;
  }
  return 0;
}

/* Z_OK when the chunk deflated completely into its output buffer, else the zlib code. */
static int deflate_chunk(z_stream *z, gz_slot *s, size_t cap) {
  if (deflateReset(z) != Z_OK) return Z_STREAM_ERROR;
  s->crc = crc32(0L, s->in, (uInt)s->in_n);
  z->next_in = s->in;
  z->avail_in = (uInt)s->in_n;
  z->next_out = s->out;
  z->avail_out = (uInt)cap;
  int rc = deflate(z, s->last ? Z_FINISH : Z_SYNC_FLUSH);
  s->out_n = cap - z->avail_out;
  if (s->last) return rc == Z_STREAM_END ? Z_OK : rc == Z_OK ? Z_BUF_ERROR : rc;
  /* A sync flush that filled the buffer may not be complete: the bound leaves room. */
  if (rc != Z_OK) return rc;
  return z->avail_in == 0 && z->avail_out > 0 ? Z_OK : Z_BUF_ERROR;
}

static void *worker(void *arg) {
  tl_gzpar *g = arg;
  z_stream z;
  memset(&z, 0, sizeof z);
  /* Raw deflate (windowBits -15): the gzip wrapper is written once for all chunks. */
  int init = deflateInit2(&z, g->level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
  pthread_mutex_lock(&g->mu);
  for (;;) {
    while (!g->stop && g->next_take == g->next_fill) pthread_cond_wait(&g->work, &g->mu);
    if (g->stop) break;
    gz_slot *s = &g->slots[g->next_take++ % g->nslots];
    s->state = S_BUSY;
    pthread_mutex_unlock(&g->mu);
    int rc = init == Z_OK ? deflate_chunk(&z, s, g->out_cap) : init;
    pthread_mutex_lock(&g->mu);
    s->zrc = rc;
    s->state = rc == Z_OK ? S_DONE : S_FAILED;
    pthread_cond_broadcast(&g->done);
  }
  pthread_mutex_unlock(&g->mu);
  if (init == Z_OK) deflateEnd(&z);
  return NULL;
}

void tl_gzpar_free(tl_gzpar *g) {
  if (!g) return;
  if (g->th) {
    pthread_mutex_lock(&g->mu);
    g->stop = 1;
    pthread_cond_broadcast(&g->work);
    pthread_mutex_unlock(&g->mu);
    for (int i = 0; i < g->nthreads; i++) pthread_join(g->th[i], NULL);
  }
  if (g->sync_ok) {
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->work);
    pthread_cond_destroy(&g->done);
  }
  for (size_t i = 0; g->slots && i < g->nslots; i++) {
    free(g->slots[i].in);
    free(g->slots[i].out);
  }
  free(g->slots);
  free(g->th);
  free(g->path);
  free(g);
}

int tl_gzpar_open(tl_gzpar **out, int fd, int level, int nthreads, const char *path, tl_err *e) {
  *out = NULL;
  if (nthreads <= 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    nthreads = n < 1 ? 1 : n > 8 ? 8 : (int)n;
  }
  tl_gzpar *g = calloc(1, sizeof *g);
  if (!g) return tl_nomem(e);
  g->fd = fd, g->level = level, g->crc = crc32(0L, Z_NULL, 0);
  /* Two chunks per worker in flight plus the one being filled and the one being written. */
  g->nslots = 2 * (size_t)nthreads + 2;
  g->out_cap = compressBound((uLong)TL_GZPAR_CHUNK) + 64;
  g->path = tl_strdup(path ? path : "");
  g->slots = calloc(g->nslots, sizeof *g->slots);
  g->th = calloc((size_t)nthreads, sizeof *g->th);
  int rc = g->path && g->slots && g->th ? TL_OK : tl_nomem(e);
  for (size_t i = 0; rc == TL_OK && i < g->nslots; i++) {
    g->slots[i].in = malloc(TL_GZPAR_CHUNK);
    g->slots[i].out = malloc(g->out_cap);
    if (!g->slots[i].in || !g->slots[i].out) rc = tl_nomem(e);
  }
  if (rc == TL_OK) {
    int m = pthread_mutex_init(&g->mu, NULL);
    int w = m ? -1 : pthread_cond_init(&g->work, NULL);
    int d = w ? -1 : pthread_cond_init(&g->done, NULL);
    if (m || w || d) {
      if (!m) pthread_mutex_destroy(&g->mu);
      if (!m && !w) pthread_cond_destroy(&g->work);
      rc = tl_fail(e, "traceloom_export_perfetto: cannot set up the compression threads for '%s'",
                   g->path);
    } else {
      g->sync_ok = 1;
    }
  }
  for (int i = 0; rc == TL_OK && i < nthreads; i++) {
    int err = pthread_create(&g->th[i], NULL, worker, g);
    if (err) {
      rc = tl_fail(e, "traceloom_export_perfetto: cannot start a compression thread for '%s': %s",
                   g->path, strerror(err));
      break;
    }
    g->nthreads = i + 1;
  }
  if (rc != TL_OK) {
    if (!g->nthreads) free(g->th), g->th = NULL;
    tl_gzpar_free(g);
    return rc;
  }
  *out = g;
  return TL_OK;
}

/* Writes finished chunks in order: those already done, then, while the next to write is
** before `until`, waits for it. */
static int drain(tl_gzpar *g, uint64_t until, tl_err *e) {
  for (;;) {
    pthread_mutex_lock(&g->mu);
    gz_slot *s = NULL;
    int state = S_FREE;
    while (g->next_write < g->next_fill) {
      gz_slot *x = &g->slots[g->next_write % g->nslots];
      if (x->state == S_DONE || x->state == S_FAILED) {
        s = x, state = x->state;
        break;
      }
      if (g->next_write >= until) break;
      pthread_cond_wait(&g->done, &g->mu);
    }
    pthread_mutex_unlock(&g->mu);
    if (!s) return TL_OK;
    if (state == S_FAILED)
      return tl_fail(e, "traceloom_export_perfetto: zlib deflate failed for '%s' (code %d)",
                     g->path, s->zrc);
    /* gzip header with the first chunk: deflate, no name, mtime 0 (reproducible), XFL as
    ** zlib sets it for the level (4: fastest), OS 3 (Unix). */
    unsigned char h[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
    h[8] = g->level == 9 ? 2 : g->level < 2 ? 4 : 0;
    if ((!g->next_write && tl_write_all(g->fd, h, sizeof h) != 0) ||
        tl_write_all(g->fd, s->out, s->out_n) != 0)
      return tl_fail(e, "traceloom_export_perfetto: cannot write '%s': %s", g->path,
                     strerror(errno));
    g->crc = crc32_combine(g->crc, s->crc, (z_off_t)s->in_n);
    g->total += s->in_n;
    pthread_mutex_lock(&g->mu);
    s->in_n = 0;
    s->state = S_FREE;
    g->next_write++;
    pthread_mutex_unlock(&g->mu);
  }
}

static int submit(tl_gzpar *g, int last, tl_err *e) {
  pthread_mutex_lock(&g->mu);
  gz_slot *s = &g->slots[g->next_fill % g->nslots];
  s->last = last;
  s->state = S_READY;
  g->next_fill++;
  pthread_cond_signal(&g->work);
  pthread_mutex_unlock(&g->mu);
  if (last) return drain(g, g->next_fill, e);
  /* The slot filled next held chunk next_fill - nslots: it must be written first. */
  return drain(g, g->next_fill >= g->nslots ? g->next_fill - g->nslots + 1 : 0, e);
}

int tl_gzpar_write(tl_gzpar *g, const void *p, size_t n, tl_err *e) {
  const unsigned char *b = p;
  while (n) {
    gz_slot *s = &g->slots[g->next_fill % g->nslots];
    size_t k = TL_GZPAR_CHUNK - s->in_n;
    if (k > n) k = n;
    memcpy(s->in + s->in_n, b, k);
    s->in_n += k, b += k, n -= k;
    if (s->in_n == TL_GZPAR_CHUNK && submit(g, 0, e)) return TL_ERROR;
  }
  return TL_OK;
}

int tl_gzpar_finish(tl_gzpar *g, tl_err *e) {
  if (submit(g, 1, e)) return TL_ERROR;
  unsigned char t[8];
  uint64_t crc = g->crc, len = g->total;
  for (int i = 0; i < 4; i++) t[i] = (unsigned char)(crc >> (8 * i));
  for (int i = 0; i < 4; i++) t[4 + i] = (unsigned char)(len >> (8 * i)); /* ISIZE: mod 2^32 */
  if (tl_write_all(g->fd, t, sizeof t) != 0)
    return tl_fail(e, "traceloom_export_perfetto: cannot write '%s': %s", g->path, strerror(errno));
  return TL_OK;
}
