/*
** hashing.c: source digests, beside reading (see hashing.h).
**
** With threads >= 2 the source files are hashed on a second thread while the main thread
** reads their rows: both are bound by the same files, and hashing takes about a third of the
** reading time. The digests are the same whoever computes them. The hashing never touches
** SQLite; the main thread tells it to stop through `stop` (an interrupt or error).
**
** The inventory is taken first on the same thread: its exact row counts are a `count(*)` of
** every table of every file, a pass over the input that otherwise delays the reading (0.06
** s of the 1M-task bench's 131 MB, more when the files are not cached); the second core has
** room beside the reader (bench/RESULTS.md). It opens its own read-only connections.
*/
#include "analyze/hashing.h"
#include "util/sha256.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

int tl_hashing_run(const tl_profile *p, tl_source_digest **out, int (*stop)(void *), void *ctx,
                   tl_err *e) {
  tl_source_digest *d = calloc(p->files.n ? p->files.n : 1, sizeof *d);
  if (!d) return tl_nomem(e);
  for (size_t i = 0; i < p->files.n; i++)
    if (tl_sha256_file_cancellable(p->files.v[i].path, d[i].sha256, &d[i].size, stop, ctx, e)) {
      free(d);
      return TL_ERROR;
    }
  *out = d;
  return TL_OK;
}

struct tl_hashing {
  const tl_profile *profile;
  tl_inventory *inventory;  /* taken first when not NULL */
  int inventory_rc;
  tl_source_digest *digests;
  atomic_int stop;
  int rc;
  tl_err err;
  pthread_t thread;
};

static int stopped(void *ctx) { return atomic_load(&((tl_hashing *)ctx)->stop); }

static void *run(void *arg) {
  tl_hashing *h = arg;
  if (h->inventory) h->inventory_rc = tl_profile_inventory(h->profile, h->inventory, &h->err);
  h->rc = h->inventory_rc != TL_OK
              ? TL_ERROR
              : tl_hashing_run(h->profile, &h->digests, stopped, h, &h->err);
  return NULL;
}

tl_hashing *tl_hashing_start(const tl_profile *p, tl_inventory *inv) {
  tl_hashing *h = calloc(1, sizeof *h);
  if (!h) return NULL;
  h->profile = p, h->inventory = inv;
  atomic_init(&h->stop, 0);
  if (pthread_create(&h->thread, NULL, run, h) != 0) {
    free(h);
    return NULL;
  }
  return h;
}

int tl_hashing_join(tl_hashing *h, int rc, tl_source_digest **out, tl_err *e) {
  if (rc != TL_OK) atomic_store(&h->stop, 1);
  pthread_join(h->thread, NULL);
  if (h->inventory_rc != TL_OK && e) {
    tl_err_clear(e); /* the reader's failure, if any, came after it in turn */
    rc = tl_err_pass(e, &h->err, "taking the inventory failed");
  } else if (h->inventory_rc != TL_OK) {
    rc = TL_ERROR;
  } else if (rc == TL_OK && h->rc != TL_OK) {
    rc = tl_err_pass(e, &h->err, "hashing the sources failed");
  }
  if (rc == TL_OK && !h->digests) rc = tl_nomem(e);
  if (rc == TL_OK) *out = h->digests;
  else free(h->digests);
  tl_err_clear(&h->err);
  free(h);
  return rc;
}
