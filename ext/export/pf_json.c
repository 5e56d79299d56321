/*
** pf_json.c: the layout as Chrome JSON trace events (perfetto.md 2), which ui.perfetto.dev
** and chrome://tracing open.
**
**   {"traceEvents":[ M..., X..., s/f ... ],"displayTimeUnit":"ns","metadata":{...}}
**
** Each box is a process (process_name, process_sort_index), each lane a thread (thread_name,
** thread_sort_index); pids and tids count up in display order. A track's X events follow
** its thread record in the order Perfetto imports them (start, longer first), so slices
** with the same interval nest in file order, as the layout packed them. Flows are v1 flow
** events at the end: each 's' at its host call's start on the call's thread, each 'f'
** ("bp":"e") at the device slice's start on its stream.
**
** ts and dur are printed from the integers as microseconds with exactly three decimals
** (lossless at 1 ns); ts = start - origin >= 0. Strings are escaped, invalid UTF-8 becomes
** U+FFFD.
*/
#include "export/pf.h"

#include <string.h>

#define PUT_LIT(b, lit) tl_buf_append((b), "" lit, sizeof(lit) - 1)

/* v nanoseconds as microseconds with exactly three decimals, from the integer. */
static void put_us3(tl_buf *b, int64_t v) { tl_buf_milli(b, v); }

/* Decimal int64 without printf: tens of integers per slice. */
static void put_i64(tl_buf *b, int64_t v) {
  char tmp[24];
  int n = sizeof tmp;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  do {
    tmp[--n] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0) tmp[--n] = '-';
  tl_buf_append(b, tmp + n, sizeof tmp - (size_t)n);
}

static int utf8_len(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  int len;
  uint32_t cp;
  if (c < 0xC2) return 0;
  if (c < 0xE0) len = 2, cp = c & 0x1F;
  else if (c < 0xF0) len = 3, cp = c & 0x0F;
  else if (c < 0xF5) len = 4, cp = c & 0x07;
  else return 0;
  if ((size_t)len > n) return 0;
  for (int i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = cp << 6 | (s[i] & 0x3F);
  }
  if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
      (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
    return 0;
  return len;
}

/* JSON string literal; invalid UTF-8 becomes U+FFFD so the file stays valid JSON. */
static void put_str(tl_buf *b, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  tl_buf_append(b, "\"", 1);
  size_t run = 0;
  for (size_t i = 0; i < n;) {
    /* Plain printable ASCII, by far the common case, is copied as one run. */
    while (i < n && (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x80 && s[i] != '"' &&
           s[i] != '\\')
      i++;
    if (i == n) break;
    unsigned char ch = (unsigned char)s[i];
    const char *esc;
    char u[6];
    size_t elen = 2;
    if (ch >= 0x80) {
      int l = utf8_len((const unsigned char *)s + i, n - i);
      if (l) {
        i += (size_t)l;
        continue;
      }
      esc = "\xEF\xBF\xBD", elen = 3;
    } else if (ch == '"') esc = "\\\"";
    else if (ch == '\\') esc = "\\\\";
    else if (ch == '\b') esc = "\\b";
    else if (ch == '\f') esc = "\\f";
    else if (ch == '\n') esc = "\\n";
    else if (ch == '\r') esc = "\\r";
    else if (ch == '\t') esc = "\\t";
    else {
      memcpy(u, "\\u00", 4), u[4] = hex[ch >> 4], u[5] = hex[ch & 15];
      esc = u, elen = 6;
    }
    tl_buf_append(b, s + run, i - run);
    tl_buf_append(b, esc, elen);
    run = ++i;
  }
  tl_buf_append(b, s + run, n - run);
  tl_buf_append(b, "\"", 1);
}

static void put_cstr(tl_buf *b, const char *s) { put_str(b, s, strlen(s)); }

/* ---- Args -------------------------------------------------------------------------------- */

typedef struct json_args {
  pf_argw w;
  tl_buf *b;
  const tl_strpool *pool;
  int first;
} json_args;

/* ,"k": in one append: tens of keys per slice. */
static void put_key(json_args *j, int key) {
  char tmp[80];
  const char *k = pf_key_names[key];
  size_t n = strlen(k), m = 0;
  if (!j->first) tmp[m++] = ',';
  j->first = 0;
  tmp[m++] = '"';
  memcpy(tmp + m, k, n); /* keys are identifiers well under 64 bytes */
  m += n;
  tmp[m++] = '"';
  tmp[m++] = ':';
  tl_buf_append(j->b, tmp, m);
}

static void ja_i64(pf_argw *w, int key, int64_t v) {
  json_args *j = (json_args *)w;
  put_key(j, key);
  put_i64(j->b, v);
}

static void ja_us(pf_argw *w, int key, int64_t ns) {
  json_args *j = (json_args *)w;
  put_key(j, key);
  put_us3(j->b, ns);
}

static void ja_pool(pf_argw *w, int key, uint32_t id) {
  json_args *j = (json_args *)w;
  put_key(j, key);
  if (id == TL_STR_NONE) PUT_LIT(j->b, "null");
  else put_str(j->b, tl_strpool_str(j->pool, id), tl_strpool_len(j->pool, id));
}

static void ja_text(pf_argw *w, int key, const char *s, size_t n) {
  json_args *j = (json_args *)w;
  put_key(j, key);
  put_str(j->b, s, n);
}

static void ja_bool(pf_argw *w, int key, int v) {
  json_args *j = (json_args *)w;
  put_key(j, key);
  if (v) PUT_LIT(j->b, "true");
  else PUT_LIT(j->b, "false");
}

static void ja_null(pf_argw *w, int key) {
  json_args *j = (json_args *)w;
  put_key(j, key);
  PUT_LIT(j->b, "null");
}

static void ja_id(pf_argw *w, int key, const char *prefix, int64_t n) {
  json_args *j = (json_args *)w;
  put_key(j, key);
  tl_buf_append(j->b, "\"", 1);
  tl_buf_puts(j->b, prefix);
  put_i64(j->b, n);
  tl_buf_append(j->b, "\"", 1);
}

static void ja_ref(pf_argw *w, int key, uint32_t text, int64_t n) {
  (void)n;
  ja_pool(w, key, text);
}

/* ---- Metadata ----------------------------------------------------------------------------- */

typedef struct json_meta {
  pf_meta_writer w;
  tl_buf *b;
  int first;
} json_meta;

static void jm_key(json_meta *m, const char *key) {
  if (!m->first) PUT_LIT(m->b, ",");
  m->first = 0;
  put_cstr(m->b, key);
  PUT_LIT(m->b, ":");
}

static void jm_str(pf_meta_writer *w, const char *key, const char *v) {
  json_meta *m = (json_meta *)w;
  jm_key(m, key);
  if (v) put_cstr(m->b, v);
  else PUT_LIT(m->b, "null");
}

static void jm_i64(pf_meta_writer *w, const char *key, int64_t v, int is_null) {
  json_meta *m = (json_meta *)w;
  jm_key(m, key);
  if (is_null) PUT_LIT(m->b, "null");
  else put_i64(m->b, v);
}

/* ---- Events ------------------------------------------------------------------------------- */

static void put_meta(pf_out *o, int64_t pid, int64_t tid, const char *name, const char *key,
                     const char *sval, int64_t ival) {
  tl_buf *b = &o->b;
  tl_buf_puts(b, o->events ? ",\n{\"ph\":\"M\",\"pid\":" : "\n{\"ph\":\"M\",\"pid\":");
  put_i64(b, pid);
  PUT_LIT(b, ",\"tid\":");
  put_i64(b, tid);
  PUT_LIT(b, ",\"name\":\"");
  tl_buf_puts(b, name);
  PUT_LIT(b, "\",\"args\":{\"");
  tl_buf_puts(b, key);
  PUT_LIT(b, "\":");
  if (sval) put_cstr(b, sval);
  else put_i64(b, ival);
  PUT_LIT(b, "}}");
  o->events++;
}

/* A flow event: ph 's' at the source, 'f' bound to the enclosing slice at the target. */
static void put_flow(pf_out *o, const pf_layout *l, const pf_slice *s, int64_t id, int end) {
  tl_buf *b = &o->b;
  const pf_track *t = &l->tracks.v[s->track];
  PUT_LIT(b, ",\n{\"ph\":\"");
  tl_buf_append(b, end ? "f\",\"bp\":\"e" : "s", end ? 10 : 1);
  PUT_LIT(b, "\",\"id\":");
  put_i64(b, id);
  PUT_LIT(b, ",\"pid\":");
  put_i64(b, t->json_pid);
  PUT_LIT(b, ",\"tid\":");
  put_i64(b, t->json_tid);
  PUT_LIT(b, ",\"name\":\"launch\",\"cat\":\"traceloom.flow\",\"ts\":");
  put_us3(b, s->start - l->origin);
  PUT_LIT(b, "}");
  o->events++;
}

int pf_write_json(pf_ctx *c, pf_out *o) {
  pf_layout *l = &c->l;
  const tl_strpool *pool = c->a.pool;
  tl_buf *b = &o->b;
  json_args ja = {{ja_i64, ja_us, ja_pool, ja_text, ja_bool, ja_null, ja_id, ja_ref}, b, pool, 1};
  PUT_LIT(b, "{\"traceEvents\":[");
  for (size_t ti = 0; ti < l->tracks.n; ti++) {
    const pf_track *t = &l->tracks.v[ti];
    const char *name = tl_strpool_str(pool, t->name);
    if (t->is_box) {
      put_meta(o, t->json_pid, 0, "process_name", "name", name, 0);
      put_meta(o, t->json_pid, 0, "process_sort_index", "sort_index", NULL, t->rank);
      continue;
    }
    put_meta(o, t->json_pid, t->json_tid, "thread_name", "name", name, 0);
    put_meta(o, t->json_pid, t->json_tid, "thread_sort_index", "sort_index", NULL, t->json_tid);
    for (int64_t k = t->first; k < t->first + t->n; k++) {
      const pf_slice *s = &l->slices.v[l->order[k]];
      PUT_LIT(b, ",\n{\"ph\":\"X\",\"pid\":");
      put_i64(b, t->json_pid);
      PUT_LIT(b, ",\"tid\":");
      put_i64(b, t->json_tid);
      PUT_LIT(b, ",\"name\":");
      put_str(b, tl_strpool_str(pool, s->name), tl_strpool_len(pool, s->name));
      PUT_LIT(b, ",\"cat\":\"");
      tl_buf_puts(b, pf_cat_names[s->cat]);
      PUT_LIT(b, "\",\"ts\":");
      put_us3(b, s->start - l->origin);
      PUT_LIT(b, ",\"dur\":");
      put_us3(b, s->end - s->start);
      PUT_LIT(b, ",\"args\":{");
      ja.first = 1;
      pf_slice_args(c, s, &ja.w);
      PUT_LIT(b, "}}");
      o->events++;
      if (b->n >= PF_FLUSH_BYTES && pf_out_flush(o, 0)) return TL_ERROR;
    }
  }
  /* Flows after every slice: at one timestamp each start precedes each end. */
  for (int end = 0; end < 2; end++)
    for (size_t i = 0; i < l->flows.n; i++) {
      const pf_flow *f = &l->flows.v[end ? l->flows_by_to[i] : l->flows_by_from[i]];
      put_flow(o, l, &l->slices.v[end ? f->to : f->from],
               (int64_t)(end ? l->flows_by_to[i] : l->flows_by_from[i]) + 1, end);
      if (b->n >= PF_FLUSH_BYTES && pf_out_flush(o, 0)) return TL_ERROR;
    }
  PUT_LIT(b, "\n],\"displayTimeUnit\":\"ns\",\"metadata\":{");
  json_meta jm = {{jm_str, jm_i64}, b, 1};
  pf_metadata(c, &jm.w);
  PUT_LIT(b, "}}\n");
  return pf_out_flush(o, 1);
}
