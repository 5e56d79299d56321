/*
** yamldoc.c: the strict YAML tree reader (see yamldoc.h).
**
** Events from yaml_parser_parse are turned into nodes with an explicit stack of open
** collections; a mapping alternates between expecting a key (which must be a plain scalar)
** and expecting its value.
*/
#include "classify/yamldoc.h"

#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define MAX_DEPTH 64

const char *tl_ytype_name(tl_ytype t) {
  switch (t) {
    case TL_Y_SCALAR: return "scalar";
    case TL_Y_SEQ: return "sequence";
    default: return "mapping";
  }
}

void tl_ynode_free(tl_ynode *n) {
  if (!n) return;
  for (size_t i = 0; i < n->n; i++) {
    tl_ynode_free(n->items[i]);
    if (n->keys) free(n->keys[i]);
  }
  free(n->items);
  free(n->keys);
  free(n->key_lines);
  free(n->text);
  free(n);
}

const tl_ynode *tl_ymap_get(const tl_ynode *m, const char *key) {
  if (!m || m->type != TL_Y_MAP) return NULL;
  for (size_t i = 0; i < m->n; i++)
    if (strcmp(m->keys[i], key) == 0) return m->items[i];
  return NULL;
}

typedef struct frame {
  tl_ynode *node;
  char *pending_key; /* mapping: key read, value not yet */
  int pending_line;
} frame;

typedef struct builder {
  const char *name;
  tl_err *e;
  frame stack[MAX_DEPTH];
  int depth;
  tl_ynode *root;
} builder;

static int fail_at(builder *b, yaml_mark_t m, const char *what, const char *detail) {
  return tl_fail(b->e, "%s:%zu: %s%s%s (column %zu)", b->name, m.line + 1, what,
                 detail ? ": " : "", detail ? detail : "", m.column + 1);
}

static tl_ynode *new_node(tl_ytype type, yaml_mark_t m) {
  tl_ynode *n = calloc(1, sizeof *n);
  if (!n) return NULL;
  n->type = type;
  n->line = (int)m.line + 1;
  n->col = (int)m.column + 1;
  return n;
}

static int grow(tl_ynode *p, int with_keys) {
  if (p->n < p->cap) return 0;
  size_t cap = p->cap ? p->cap * 2 : 8;
  tl_ynode **items = realloc(p->items, cap * sizeof *items);
  if (!items) return -1;
  p->items = items;
  if (with_keys) {
    char **keys = realloc(p->keys, cap * sizeof *keys);
    if (!keys) return -1;
    p->keys = keys;
    int *lines = realloc(p->key_lines, cap * sizeof *lines);
    if (!lines) return -1;
    p->key_lines = lines;
  }
  p->cap = cap;
  return 0;
}

/* Attaches a finished node (or, for a mapping expecting a key, a key scalar) to the open
** collection. Takes ownership of n. */
static int attach(builder *b, tl_ynode *n, yaml_mark_t m) {
  if (b->depth == 0) {
    if (b->root) {
      tl_ynode_free(n);
      return fail_at(b, m, "more than one document", "a rules file holds exactly one");
    }
    b->root = n;
    return TL_OK;
  }
  frame *f = &b->stack[b->depth - 1];
  tl_ynode *p = f->node;
  if (p->type == TL_Y_SEQ) {
    if (grow(p, 0)) {
      tl_ynode_free(n);
      return tl_nomem(b->e);
    }
    p->items[p->n++] = n;
    return TL_OK;
  }
  if (!f->pending_key) {
    if (n->type != TL_Y_SCALAR) {
      tl_ynode_free(n);
      return fail_at(b, m, "mapping keys must be plain scalars", NULL);
    }
    if (strcmp(n->text, "<<") == 0) {
      tl_ynode_free(n);
      return fail_at(b, m, "merge keys (<<) are not supported", "write every key out");
    }
    for (size_t i = 0; i < p->n; i++)
      if (strcmp(p->keys[i], n->text) == 0) {
        int rc = tl_fail(b->e, "%s:%d: duplicate key '%s' (first at line %d)", b->name,
                         n->line, n->text, p->key_lines[i]);
        tl_ynode_free(n);
        return rc;
      }
    f->pending_key = n->text;
    f->pending_line = n->line;
    n->text = NULL;
    tl_ynode_free(n);
    return TL_OK;
  }
  if (grow(p, 1)) {
    tl_ynode_free(n);
    return tl_nomem(b->e);
  }
  p->keys[p->n] = f->pending_key;
  p->key_lines[p->n] = f->pending_line;
  p->items[p->n++] = n;
  f->pending_key = NULL;
  return TL_OK;
}

static int open_collection(builder *b, tl_ytype type, yaml_mark_t m) {
  if (b->depth == MAX_DEPTH) return fail_at(b, m, "nesting too deep", NULL);
  tl_ynode *n = new_node(type, m);
  if (!n) return tl_nomem(b->e);
  b->stack[b->depth].node = n;
  b->stack[b->depth].pending_key = NULL;
  b->depth++;
  return TL_OK;
}

static int close_collection(builder *b, yaml_mark_t m) {
  frame f = b->stack[--b->depth];
  free(f.pending_key); /* cannot happen for well-formed streams */
  return attach(b, f.node, m);
}

/* Anchors, aliases and explicit tags would let a file say something other than what it
** shows, so they are refused wherever they appear. */
static int refuse_decorations(builder *b, const yaml_event_t *ev) {
  const yaml_char_t *anchor = NULL, *tag = NULL;
  int implicit = 1;
  switch (ev->type) {
    case YAML_SCALAR_EVENT:
      anchor = ev->data.scalar.anchor, tag = ev->data.scalar.tag;
      implicit = ev->data.scalar.plain_implicit || ev->data.scalar.quoted_implicit;
      break;
    case YAML_SEQUENCE_START_EVENT:
      anchor = ev->data.sequence_start.anchor, tag = ev->data.sequence_start.tag;
      implicit = ev->data.sequence_start.implicit;
      break;
    case YAML_MAPPING_START_EVENT:
      anchor = ev->data.mapping_start.anchor, tag = ev->data.mapping_start.tag;
      implicit = ev->data.mapping_start.implicit;
      break;
    case YAML_ALIAS_EVENT:
      return fail_at(b, ev->start_mark, "aliases are not supported", "write the value out");
    case YAML_DOCUMENT_START_EVENT:
      if (ev->data.document_start.tag_directives.start != ev->data.document_start.tag_directives.end)
        return fail_at(b, ev->start_mark, "tag directives are not supported", NULL);
      return TL_OK;
    default:
      return TL_OK;
  }
  if (anchor) return fail_at(b, ev->start_mark, "anchors are not supported", "write the value out");
  if (tag && !implicit)
    return fail_at(b, ev->start_mark, "explicit tags are not supported", (const char *)tag);
  return TL_OK;
}

int tl_yaml_parse(const char *name, const char *text, size_t len, tl_ynode **root, tl_err *e) {
  *root = NULL;
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) return tl_nomem(e);
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  builder b;
  memset(&b, 0, sizeof b);
  b.name = name, b.e = e;
  int rc = TL_OK, done = 0, documents = 0;
  while (rc == TL_OK && !done) {
    yaml_event_t ev;
    if (!yaml_parser_parse(&parser, &ev)) {
      yaml_mark_t m = parser.problem_mark;
      rc = tl_fail(e, "%s:%zu: invalid YAML: %s%s%s (column %zu)", name, m.line + 1,
                   parser.problem ? parser.problem : "syntax error", parser.context ? " " : "",
                   parser.context ? parser.context : "", m.column + 1);
      break;
    }
    rc = refuse_decorations(&b, &ev);
    if (rc == TL_OK) switch (ev.type) {
        case YAML_STREAM_END_EVENT: done = 1; break;
        case YAML_DOCUMENT_START_EVENT:
          if (++documents > 1)
            rc = fail_at(&b, ev.start_mark, "more than one document",
                         "a rules file holds exactly one");
          break;
        case YAML_SCALAR_EVENT: {
          tl_ynode *n = new_node(TL_Y_SCALAR, ev.start_mark);
          char *s = n ? malloc(ev.data.scalar.length + 1) : NULL;
          if (!s) {
            free(n);
            rc = tl_nomem(e);
            break;
          }
          memcpy(s, ev.data.scalar.value, ev.data.scalar.length);
          s[ev.data.scalar.length] = 0;
          n->text = s;
          n->len = ev.data.scalar.length;
          n->block = ev.data.scalar.style == YAML_LITERAL_SCALAR_STYLE ||
                     ev.data.scalar.style == YAML_FOLDED_SCALAR_STYLE;
          rc = attach(&b, n, ev.start_mark);
          break;
        }
        case YAML_SEQUENCE_START_EVENT: rc = open_collection(&b, TL_Y_SEQ, ev.start_mark); break;
        case YAML_MAPPING_START_EVENT: rc = open_collection(&b, TL_Y_MAP, ev.start_mark); break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT: rc = close_collection(&b, ev.start_mark); break;
        default: break;
      }
    yaml_event_delete(&ev);
  }
  yaml_parser_delete(&parser);
  while (b.depth > 0) {
    frame *f = &b.stack[--b.depth];
    free(f->pending_key);
    tl_ynode_free(f->node);
  }
  if (rc == TL_OK && !b.root) rc = tl_fail(e, "%s:1: the document is empty", name);
  if (rc != TL_OK) {
    tl_ynode_free(b.root);
    return TL_ERROR;
  }
  *root = b.root;
  return TL_OK;
}
