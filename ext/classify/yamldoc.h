/*
** yamldoc.h: a strict YAML reader for rule manifests and rules configs.
**
** libyaml's event stream is folded into a small tree that keeps the line of every node, so
** rule errors can name file, line and key. Only the plain subset rule files need is accepted:
** one document of mappings, sequences and scalars. Anchors, aliases, explicit tags, tag
** directives, merge keys (<<), several documents, non-scalar keys and duplicate keys are
** errors (recovery.md section 2.6): a rules file must mean exactly what it shows.
**
**   tl_ynode *root;
**   if (tl_yaml_parse("rules.yaml", text, len, &root, e)) return TL_ERROR;
**   const tl_ynode *v = tl_ymap_get(root, "schema");
**   tl_ynode_free(root);
*/
#ifndef TL_YAMLDOC_H
#define TL_YAMLDOC_H

#include <stddef.h>
#include "util/err.h"

typedef enum tl_ytype { TL_Y_SCALAR, TL_Y_SEQ, TL_Y_MAP } tl_ytype;

typedef struct tl_ynode {
  tl_ytype type;
  int line, col;            /* 1-based position of the node's first character */
  char *text;               /* scalar value (NUL-terminated) */
  size_t len;
  int block;                /* scalar written as a literal or folded block */
  struct tl_ynode **items;  /* sequence items, or mapping values */
  char **keys;              /* mapping keys, parallel to items */
  int *key_lines;
  size_t n, cap;
} tl_ynode;

/* Parses text[0..len) of the file called name (used in messages). An empty document is an
** error. On error *root is NULL and the message reads "<name>:<line>: <problem>". */
int tl_yaml_parse(const char *name, const char *text, size_t len, tl_ynode **root, tl_err *e);
void tl_ynode_free(tl_ynode *n);

/* The value of key in a mapping, or NULL (also when m is not a mapping). */
const tl_ynode *tl_ymap_get(const tl_ynode *m, const char *key);
/* "mapping", "sequence" or "scalar", for messages. */
const char *tl_ytype_name(tl_ytype t);

#endif
