/*
** hashing.h: the SHA-256 and size of every source file of a profile, for
** traceloom_raw_source_database; with them, on the same second thread, the profile's
** inventory (tl_profile_inventory: its row counts are a pass over every table of every file).
**
**   tl_hashing *h = tl_hashing_start(&profile, &inventory);  on a second thread (NULL: none
**                                                  to be had); inventory may be NULL
**   ... read the rows on this thread ...
**   rc = tl_hashing_join(h, rc, &digests, e);      stops it early when rc != TL_OK
**
** or, on this thread: tl_profile_inventory, then tl_hashing_run(&profile, &digests, stop,
** ctx, e).
*/
#ifndef TL_HASHING_H
#define TL_HASHING_H

#include "publish/publish.h"

typedef struct tl_hashing tl_hashing;

/* Hashes on this thread; stop (may be NULL) is polled between chunks. */
int tl_hashing_run(const tl_profile *p, tl_source_digest **out, int (*stop)(void *), void *ctx,
                   tl_err *e);
/* Starts a second thread that takes p's inventory into *inv (inv not NULL), then hashes p;
** NULL when no thread can be had (or no memory). *inv is the caller's once joined. */
tl_hashing *tl_hashing_start(const tl_profile *p, tl_inventory *inv);
/* Waits for the thread (telling it to stop first when rc != TL_OK) and frees it. With rc ==
** TL_OK, *out takes the digests, or the thread's error is returned. The inventory's failure
** is returned whatever rc is, with its message: in turn it comes first, and stops the
** analysis before the rows are read (*inv is then empty). */
int tl_hashing_join(tl_hashing *h, int rc, tl_source_digest **out, tl_err *e);

#endif
