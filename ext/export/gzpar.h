/*
** gzpar.h: one gzip member written by several deflate threads (pigz --independent style).
**
** The uncompressed stream is cut at fixed 1 MiB offsets; each chunk is raw-deflated on its
** own z_stream (no shared dictionary) and ends with a sync flush (the last with Z_FINISH),
** so the chunks concatenate into one valid deflate stream. The CRC-32 is combined from the
** chunks' CRCs and the gzip header and trailer are written here. Chunk boundaries do not
** depend on the thread count or on how the caller splits its writes, so the file is
** byte-identical for any number of threads. The caller's thread keeps producing while the
** workers compress; every write to the file is made by the caller's thread, in order.
*/
#ifndef TL_GZPAR_H
#define TL_GZPAR_H

#include "util/err.h"

#include <stddef.h>

#define TL_GZPAR_CHUNK ((size_t)1 << 20)

typedef struct tl_gzpar tl_gzpar;

/* Starts nthreads deflate workers (0: one per online CPU, at most 8) for a gzip member
** written to fd (the header goes out with the first chunk). path names the file in error
** messages. */
int tl_gzpar_open(tl_gzpar **out, int fd, int level, int nthreads, const char *path, tl_err *e);
/* Appends n bytes; full chunks go to the workers, finished ones are written in order. */
int tl_gzpar_write(tl_gzpar *g, const void *p, size_t n, tl_err *e);
/* Compresses the rest, writes every chunk and the trailer. */
int tl_gzpar_finish(tl_gzpar *g, tl_err *e);
/* Stops the workers and frees everything; also after an error. NULL is fine. */
void tl_gzpar_free(tl_gzpar *g);

/* write(2) until all n bytes are out (retrying short writes and EINTR): 0, or -1 with errno.
** The plain .json export writes through it too. */
int tl_write_all(int fd, const void *p, size_t n);

#endif
