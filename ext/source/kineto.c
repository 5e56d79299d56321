/*
** kineto.c: the PyTorch profiler (Kineto) Chrome-trace JSON reader (inputs.md section 8),
** source kind kineto_json, for `*.json` and `*.json.gz` files whose top-level object has a
** traceEvents array (tl_kineto_detect).
**
**   inventory    the traceEvents "table" (event count) and capability rows: device_plane,
**                cpu_operator_plane (which of the two became the device events), compute and
**                communication identity, host_api, runtime_device_correlation, graph_launch,
**                host_scopes, timestamp_precision, rank (distributedInfo), device_properties,
**                base_time
**   events_open  device events, in traceEvents array order
**   calls_open   host runtime calls (cuda_runtime, cuda_driver), in array order
**
** The document is streamed (kineto_json.c): each event object is read into a small set of
** known fields and forgotten. Because baseTimeNanoseconds may follow traceEvents and the CPU
** plane needs the main thread, every cursor first surveys the whole file once (a streaming
** pass that keeps only counters), then streams it again to emit rows.
**
** Rules (documented in docs/KINETO.md):
**   - Only complete events (ph "X") are read; every other phase, and every cat not listed
**     below, is ignored. Unknown object members are ignored; a known member with a value
**     of the wrong JSON type counts as absent.
**   - ts and dur are microseconds, converted textually to int64 ns; digits below 1 ns are
**     rounded half to even and counted (timestamp_precision). With baseTimeNanoseconds,
**     start = baseTimeNanoseconds + ts. A missing or non-numeric ts drops the event
**     (dropped_rows); a missing or negative dur is 0.
**   - cat kernel -> compute (NCCL collective names -> communication), task types and the
**     lifted op_type as for Nsight (cuda_labels.h). cat gpu_memcpy / gpu_memset ->
**     data_move, CUDA_MEMCPY_AUX / CUDA_MEMSET_AUX, name = the Kineto name. cat cuda_sync
**     (Stream Sync, Event Sync, Context Sync) -> sync, CUDA_SYNC_AUX; stream -1 = none.
**     device = args.device, else pid; stream = args.stream, else tid (an integer, or a string
**     ending in decimal digits such as "stream 7"); no device -> dropped_rows.
**     correlation_id = args.correlation; task_id = correlation, else the array index;
**     context_id = args.context.
**   - CPU-only traces (no kernel/gpu_memcpy/gpu_memset event at all): the cpu_op events of
**     the main thread (most summed cpu_op dur; ties -> smallest tid, then smallest pid)
**     become the device events: device 0, stream = tid, compute, name = op_name = op_type =
**     the op name, task type CPU_OP. ProfilerStep#N ranges are never operators.
**   - cat cuda_runtime / cuda_driver -> host calls, provider cuda, api_type = the cat,
**     correlation_id = args.correlation, process/thread = pid/tid, global_tid =
**     (pid << 32) | tid. Names containing cudaGraphLaunch are counted as graph launches.
**   - cpu_op, user_annotation (ProfilerStep#N), python_function are host scopes: counted in
**     the inventory, not emitted as rows (no host-scope cursor exists yet).
** Provenance: source_table "traceEvents", source_rowid = the 0-based index in the array.
*/
#include "source/source.h"
#include "util/buf.h"
#include "source/cuda_labels.h"
#include "util/i64map.h"
#include "source/kineto_json.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define SOURCE_KIND "kineto_json"
#define EVENTS_TABLE "traceEvents"

/* ------------------------------------------------------------------ one event */

enum { F_PH, F_NAME, F_CAT, F_PID, F_TID, F_TS, F_DUR, A_DEVICE, A_STREAM, A_CORR, A_CONTEXT,
       NFIELDS };
static const char *const field_key[NFIELDS] = {"ph",     "name",   "cat",         "pid",
                                               "tid",    "ts",     "dur",         "device",
                                               "stream", "correlation", "context"};
static const unsigned char field_len[NFIELDS] = {2, 4, 3, 3, 3, 2, 3, 6, 6, 11, 7};
#define FIRST_ARG A_DEVICE

typedef struct kt_field {
  tl_jtok type; /* TL_JT_EOF = absent */
  size_t off, len;
} kt_field;

typedef struct kt_event {
  int64_t index;  /* 0-based position in traceEvents */
  int64_t offset; /* byte offset of its '{' */
  kt_field f[NFIELDS];
  tl_buf arena;   /* NUL-terminated field texts */
} kt_event;

static const char *ev_str(const kt_event *ev, int k) {
  return ev->f[k].type == TL_JT_STRING ? ev->arena.p + ev->f[k].off : NULL;
}

/* An integer field: a JSON integer, or a string that is (or ends in) decimal digits. */
static int ev_int(const kt_event *ev, int k, int64_t *out) {
  const kt_field *f = &ev->f[k];
  const char *s = ev->arena.p + f->off;
  if (f->type == TL_JT_NUMBER) return tl_kineto_int(s, f->len, out) == TL_OK;
  if (f->type != TL_JT_STRING || f->len == 0) return 0;
  size_t i = f->len;
  while (i > 0 && isdigit((unsigned char)s[i - 1])) i--;
  if (i == f->len || f->len - i > 18) return 0;
  int64_t v = 0;
  for (; i < f->len; i++) v = v * 10 + (s[i] - '0');
  *out = v;
  return 1;
}

static int ev_is(const kt_event *ev, int k, const char *v) {
  const char *s = ev_str(ev, k);
  return s && strcasecmp(s, v) == 0;
}

/* ------------------------------------------------------------------ the document */

typedef struct kt_doc {
  tl_jreader jr;
  int stage;        /* 0 = top-level members, 1 = inside traceEvents, 2 = done */
  int first;        /* the next member/element is the first of its container */
  int saw_events;
  int64_t next_index;
  /* top-level facts, as far as read */
  int has_base;
  int64_t base_ns;
  int has_dist;
  int64_t rank, world_size;
  char backend[64];
  int64_t n_devices;
  tl_buf devices;   /* "id=0 name=... sm=9.0 sms=132 mem=..." joined by "; " */
  char *schema_version;
  int skim;         /* skip traceEvents byte by byte (quick_survey) */
  int device_seen;  /* set by the skim: a device-event category appeared */
} kt_doc;

static void doc_close(kt_doc *d) {
  tl_jr_close(&d->jr);
  tl_buf_free(&d->devices);
  free(d->schema_version);
  memset(d, 0, sizeof *d);
}

static int doc_open(kt_doc *d, const char *path, tl_err *e) {
  memset(d, 0, sizeof *d);
  if (tl_jr_open(&d->jr, path, e)) return TL_ERROR;
  tl_jtok t;
  if (tl_jr_next(&d->jr, &t, e)) goto fail;
  if (t != TL_JT_LBRACE) {
    tl_jr_unexpected(&d->jr, "'{' starting the top-level object of a Chrome trace", t, e);
    goto fail;
  }
  d->first = 1;
  return TL_OK;
fail:
  doc_close(d);
  return TL_ERROR;
}

/* Reads `key :` of an object member after its separator. Returns 1 = member (key in
** jr.text), 0 = the object closed, -1 = error. */
static int member_key(tl_jreader *jr, int *first, const char *where, tl_err *e) {
  tl_jtok t;
  if (tl_jr_next(jr, &t, e)) return -1;
  if (t == TL_JT_RBRACE) return 0;
  if (!*first) {
    if (t != TL_JT_COMMA) {
      char what[96];
      snprintf(what, sizeof what, "',' or '}' in %s", where);
      return tl_jr_unexpected(jr, what, t, e), -1;
    }
    if (tl_jr_next(jr, &t, e)) return -1;
  }
  *first = 0;
  if (t != TL_JT_STRING) {
    char what[96];
    snprintf(what, sizeof what, "a member name in %s", where);
    return tl_jr_unexpected(jr, what, t, e), -1;
  }
  return 1;
}

static int expect_colon(tl_jreader *jr, tl_err *e) {
  tl_jtok t;
  if (tl_jr_next(jr, &t, e)) return TL_ERROR;
  if (t != TL_JT_COLON) return tl_jr_unexpected(jr, "':' after a member name", t, e);
  return TL_OK;
}

/* Reads a member value token; after it, the value's text is in jr.text. */
static int member_value(tl_jreader *jr, tl_jtok *t, tl_err *e) {
  if (expect_colon(jr, e) || tl_jr_next(jr, t, e)) return TL_ERROR;
  if (*t == TL_JT_EOF || *t == TL_JT_RBRACE || *t == TL_JT_RBRACK || *t == TL_JT_COLON ||
      *t == TL_JT_COMMA)
    return tl_jr_unexpected(jr, "a value", *t, e);
  return TL_OK;
}

static int find_field(const char *key, int args) {
  for (int k = args ? FIRST_ARG : 0; k < (args ? NFIELDS : FIRST_ARG); k++)
    if (strcmp(key, field_key[k]) == 0) return k;
  return -1;
}

static void store_field(kt_event *ev, int k, tl_jreader *jr, tl_jtok t) {
  ev->f[k].type = t;
  ev->f[k].off = ev->arena.n;
  ev->f[k].len = t == TL_JT_STRING || t == TL_JT_NUMBER ? jr->text.n : 0;
  if (ev->f[k].len) tl_buf_append(&ev->arena, jr->text.p, jr->text.n);
  tl_buf_append(&ev->arena, "", 1);
}

/* Reads one event object (its '{' already read) into ev. */
static int read_event(kt_doc *d, kt_event *ev, tl_err *e) {
  tl_jreader *jr = &d->jr;
  tl_buf_reset(&ev->arena);
  for (int k = 0; k < NFIELDS; k++) ev->f[k].type = TL_JT_EOF;
  int first = 1, m;
  while ((m = member_key(jr, &first, "an event object", e)) == 1) {
    int k = find_field(jr->text.p, 0);
    int is_args = k < 0 && strcmp(jr->text.p, "args") == 0;
    tl_jtok t;
    if (member_value(jr, &t, e)) return TL_ERROR;
    if (is_args && t == TL_JT_LBRACE) {
      int afirst = 1, am;
      while ((am = member_key(jr, &afirst, "the args of an event", e)) == 1) {
        int ak = find_field(jr->text.p, 1);
        tl_jtok at;
        if (member_value(jr, &at, e)) return TL_ERROR;
        if (ak >= 0 && at >= TL_JT_STRING) store_field(ev, ak, jr, at);
        else if (tl_jr_skip(jr, at, e)) return TL_ERROR;
      }
      if (am < 0) return TL_ERROR;
    } else if (k >= 0 && t >= TL_JT_STRING) {
      store_field(ev, k, jr, t);
    } else if (tl_jr_skip(jr, t, e)) {
      return TL_ERROR;
    }
  }
  if (m < 0) return TL_ERROR;
  return ev->arena.oom ? tl_nomem(e) : TL_OK;
}

/* ------------------------------------------------------------------ the fast path */

/* read_event's fast path: parses the event object in place when it lies whole in the
** reader's window and holds nothing unusual (no escape in a string, nesting under 64
** levels, every token well formed). It accepts a subset of what read_event accepts and
** gives the same fields; on anything else it returns 0 without consuming a byte, and
** read_event parses the object (and reports an error precisely). 1: parsed, the reader is
** past the closing '}'. */
typedef struct fp {
  const unsigned char *p, *end;
} fp;

static int fp_ws(fp *f) {
  while (f->p < f->end && (*f->p == ' ' || *f->p == '\n' || *f->p == '\t' || *f->p == '\r')) f->p++;
  return f->p < f->end;
}

/* A string without escapes or control bytes; f->p at its opening quote. */
static int fp_string(fp *f, const unsigned char **s, size_t *n) {
  const unsigned char *q = ++f->p;
  while (q < f->end && *q != '"' && *q != '\\' && *q >= 0x20) q++;
  if (q >= f->end || *q != '"') return 0;
  *s = f->p, *n = (size_t)(q - f->p);
  f->p = q + 1;
  return 1;
}

static int fp_is_num(unsigned char c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

/* A scalar value (string, number, true, false, null): its token type and text. */
static int fp_scalar(fp *f, tl_jtok *t, const unsigned char **s, size_t *n) {
  unsigned char c = *f->p;
  if (c == '"') {
    *t = TL_JT_STRING;
    return fp_string(f, s, n);
  }
  const unsigned char *q = f->p;
  if (fp_is_num(c)) {
    while (q < f->end && fp_is_num(*q)) q++;
    if (q >= f->end || !tl_jr_number_ok((const char *)f->p, (size_t)(q - f->p))) return 0;
    *t = TL_JT_NUMBER;
  } else {
    while (q < f->end && ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z'))) q++;
    size_t len = (size_t)(q - f->p);
    if (q >= f->end) return 0;
    if (len == 4 && memcmp(f->p, "true", 4) == 0) *t = TL_JT_TRUE;
    else if (len == 5 && memcmp(f->p, "false", 5) == 0) *t = TL_JT_FALSE;
    else if (len == 4 && memcmp(f->p, "null", 4) == 0) *t = TL_JT_NULL;
    else return 0;
  }
  *s = f->p, *n = (size_t)(q - f->p);
  f->p = q;
  return 1;
}

/* Skips any value, checking its grammar fully (separators included). */
static int fp_skip(fp *f) {
  char stack[64]; /* the closers of the open containers */
  int depth = 0, expect_value = 1;
  for (;;) {
    if (!fp_ws(f)) return 0;
    unsigned char c = *f->p;
    if (expect_value) {
      if (c == '{' || c == '[') {
        if (depth == (int)sizeof stack) return 0;
        stack[depth++] = c == '{' ? '}' : ']';
        f->p++;
        if (!fp_ws(f)) return 0;
        if (*f->p == stack[depth - 1]) { /* empty container */
          f->p++, depth--;
          expect_value = 0;
          if (depth == 0) return 1;
          continue;
        }
        if (c == '{') {
          const unsigned char *k;
          size_t kn;
          if (*f->p != '"' || !fp_string(f, &k, &kn) || !fp_ws(f) || *f->p != ':') return 0;
          f->p++;
        }
        continue;
      }
      tl_jtok t;
      const unsigned char *s;
      size_t n;
      if (!fp_scalar(f, &t, &s, &n)) return 0;
      expect_value = 0;
      if (depth == 0) return 1;
      continue;
    }
    /* After a value inside a container: ',' and the next member or element, or its closer. */
    if (c == stack[depth - 1]) {
      f->p++;
      if (--depth == 0) return 1;
      continue;
    }
    if (c != ',') return 0;
    f->p++;
    if (stack[depth - 1] == '}') {
      const unsigned char *k;
      size_t kn;
      if (!fp_ws(f) || *f->p != '"' || !fp_string(f, &k, &kn) || !fp_ws(f) || *f->p != ':')
        return 0;
      f->p++;
    }
    expect_value = 1;
  }
}

static int fp_field(const unsigned char *k, size_t n, int args) {
  for (int i = args ? FIRST_ARG : 0; i < (args ? NFIELDS : FIRST_ARG); i++)
    if (field_len[i] == n && memcmp(k, field_key[i], n) == 0) return i;
  return -1;
}

static void fp_store(kt_event *ev, int k, tl_jtok t, const unsigned char *s, size_t n) {
  ev->f[k].type = t;
  ev->f[k].off = ev->arena.n;
  ev->f[k].len = t == TL_JT_STRING || t == TL_JT_NUMBER ? n : 0;
  if (ev->f[k].len) tl_buf_append(&ev->arena, (const char *)s, n);
  tl_buf_append(&ev->arena, "", 1);
}

/* The members of an object after its '{', stored when known (args: the inner object's). */
static int fp_members(fp *f, kt_event *ev, int args) {
  if (!fp_ws(f)) return 0;
  if (*f->p == '}') return f->p++, 1;
  for (;;) {
    const unsigned char *k;
    size_t kn;
    if (*f->p != '"' || !fp_string(f, &k, &kn) || !fp_ws(f) || *f->p != ':') return 0;
    f->p++;
    if (!fp_ws(f)) return 0;
    int field = fp_field(k, kn, args);
    unsigned char c = *f->p;
    if (!args && field < 0 && kn == 4 && memcmp(k, "args", 4) == 0 && c == '{') {
      f->p++;
      if (!fp_members(f, ev, 1)) return 0;
    } else if (field >= 0 && c != '{' && c != '[') {
      tl_jtok t;
      const unsigned char *s;
      size_t n;
      if (!fp_scalar(f, &t, &s, &n)) return 0;
      fp_store(ev, field, t, s, n);
    } else if (!fp_skip(f)) {
      return 0;
    }
    if (!fp_ws(f)) return 0;
    if (*f->p == '}') return f->p++, 1;
    if (*f->p != ',') return 0;
    f->p++;
    if (!fp_ws(f)) return 0;
  }
}

static int fast_event(tl_jreader *jr, kt_event *ev) {
  fp f = {jr->buf + jr->pos, jr->buf + jr->len};
  tl_buf_reset(&ev->arena);
  for (int k = 0; k < NFIELDS; k++) ev->f[k].type = TL_JT_EOF;
  if (!fp_members(&f, ev, 0) || ev->arena.oom) return 0;
  jr->pos = (size_t)(f.p - jr->buf);
  return 1;
}

/* distributedInfo: {backend, rank, world_size, ...}. */
static int read_dist(kt_doc *d, tl_err *e) {
  tl_jreader *jr = &d->jr;
  int first = 1, m;
  d->has_dist = 1;
  d->rank = d->world_size = TL_ABSENT;
  while ((m = member_key(jr, &first, "distributedInfo", e)) == 1) {
    char key[32];
    snprintf(key, sizeof key, "%s", jr->text.p);
    tl_jtok t;
    if (member_value(jr, &t, e)) return TL_ERROR;
    int64_t v;
    if (t == TL_JT_NUMBER && strcmp(key, "rank") == 0 &&
        tl_kineto_int(jr->text.p, jr->text.n, &v) == TL_OK)
      d->rank = v;
    else if (t == TL_JT_NUMBER && strcmp(key, "world_size") == 0 &&
             tl_kineto_int(jr->text.p, jr->text.n, &v) == TL_OK)
      d->world_size = v;
    else if (t == TL_JT_STRING && strcmp(key, "backend") == 0)
      snprintf(d->backend, sizeof d->backend, "%s", jr->text.p);
    else if (tl_jr_skip(jr, t, e))
      return TL_ERROR;
  }
  return m < 0 ? TL_ERROR : TL_OK;
}

/* deviceProperties: [{id, name, computeMajor, computeMinor, numSms, totalGlobalMem}, ...]. */
static int read_devices(kt_doc *d, tl_err *e) {
  tl_jreader *jr = &d->jr;
  tl_jtok t;
  int first = 1;
  for (;;) {
    if (tl_jr_next(jr, &t, e)) return TL_ERROR;
    if (t == TL_JT_RBRACK) return TL_OK;
    if (!first) {
      if (t != TL_JT_COMMA) return tl_jr_unexpected(jr, "',' or ']' in deviceProperties", t, e);
      if (tl_jr_next(jr, &t, e)) return TL_ERROR;
    }
    first = 0;
    if (t != TL_JT_LBRACE) {
      if (tl_jr_skip(jr, t, e)) return TL_ERROR;
      continue;
    }
    if (d->devices.n) tl_buf_puts(&d->devices, "; ");
    d->n_devices++;
    int mfirst = 1, m, kept_n = 0;
    while ((m = member_key(jr, &mfirst, "a deviceProperties entry", e)) == 1) {
      char key[32];
      snprintf(key, sizeof key, "%s", jr->text.p);
      if (member_value(jr, &t, e)) return TL_ERROR;
      static const char *const keep[] = {"id", "name", "computeMajor", "computeMinor", "numSms",
                                         "totalGlobalMem", NULL};
      int kept = 0;
      for (int i = 0; keep[i] && !kept; i++) kept = strcmp(key, keep[i]) == 0;
      if (kept && t >= TL_JT_STRING) {
        tl_buf_printf(&d->devices, "%s%s=%.80s", kept_n++ ? " " : "", key,
                      jr->text.p ? jr->text.p : "");
      } else if (tl_jr_skip(jr, t, e)) {
        return TL_ERROR;
      }
    }
    if (m < 0) return TL_ERROR;
  }
}

/* The next traceEvents element: 1 = an event in *ev, 0 = end of the document (the rest of
** it validated), -1 = error. */
static int doc_next(kt_doc *d, kt_event *ev, tl_err *e) {
  tl_jreader *jr = &d->jr;
  tl_jtok t;
  for (;;) {
    if (d->stage == 2) return 0;
    if (d->stage == 1) {
      if (tl_jr_next(jr, &t, e)) return -1;
      if (t == TL_JT_RBRACK) {
        d->stage = 0;
        continue;
      }
      if (!d->first) {
        if (t != TL_JT_COMMA) return tl_jr_unexpected(jr, "',' or ']' in traceEvents", t, e), -1;
        if (tl_jr_next(jr, &t, e)) return -1;
      }
      d->first = 0;
      if (t != TL_JT_LBRACE)
        return tl_jr_unexpected(jr, "an event object in traceEvents", t, e), -1;
      ev->offset = jr->tok_offset;
      ev->index = d->next_index++;
      if (!fast_event(jr, ev) && read_event(d, ev, e)) return -1;
      return 1;
    }
    int first = !d->saw_events && d->first;
    int m = member_key(jr, &first, "the top-level object", e);
    d->first = 0;
    if (m < 0) return -1;
    if (m == 0) {
      if (tl_jr_next(jr, &t, e)) return -1;
      if (t != TL_JT_EOF)
        return tl_jr_unexpected(jr, "end of input after the top-level object", t, e), -1;
      if (!d->saw_events)
        return tl_fail(e,
                       "Kineto trace '%s' has no traceEvents array (expected a top-level "
                       "object with a \"traceEvents\": [...] member)",
                       jr->path),
               -1;
      d->stage = 2;
      return 0;
    }
    char key[32];
    snprintf(key, sizeof key, "%s", jr->text.p);
    if (member_value(jr, &t, e)) return -1;
    if (strcmp(key, "traceEvents") == 0) {
      if (t != TL_JT_LBRACK) return tl_jr_unexpected(jr, "'[' (traceEvents is an array)", t, e), -1;
      if (d->saw_events)
        return tl_fail(e, "Kineto trace '%s' has a second traceEvents array at byte %" PRId64,
                       jr->path, jr->tok_offset),
               -1;
      d->saw_events = 1;
      if (d->skim) {
        if (tl_jr_skim(jr, &d->device_seen, e)) return -1;
        continue; /* back to the top-level members that follow the array */
      }
      d->stage = 1;
      d->first = 1;
      continue;
    }
    int rc = TL_OK;
    if (strcmp(key, "baseTimeNanoseconds") == 0 && t == TL_JT_NUMBER) {
      if (tl_kineto_int(jr->text.p, jr->text.n, &d->base_ns))
        return tl_jr_unexpected(jr, "an integer baseTimeNanoseconds", t, e), -1;
      d->has_base = 1;
    } else if (strcmp(key, "distributedInfo") == 0 && t == TL_JT_LBRACE) {
      rc = read_dist(d, e);
    } else if (strcmp(key, "deviceProperties") == 0 && t == TL_JT_LBRACK) {
      rc = read_devices(d, e);
    } else if (strcmp(key, "schemaVersion") == 0 && t >= TL_JT_STRING) {
      free(d->schema_version);
      d->schema_version = tl_strdup(jr->text.p ? jr->text.p : "");
    } else {
      rc = tl_jr_skip(jr, t, e);
    }
    if (rc) return -1;
  }
}

int tl_kineto_detect(const char *path, tl_err *e) {
  kt_doc d;
  if (doc_open(&d, path, e)) return 0;
  /* Walk the top-level members until traceEvents opens. */
  int found = 0;
  while (d.stage == 0) {
    int first = d.first, m;
    d.first = 0;
    if ((m = member_key(&d.jr, &first, "the top-level object", e)) <= 0) {
      if (m == 0)
        tl_fail(e,
                "Kineto trace '%s' has no traceEvents array (expected a top-level object with "
                "a \"traceEvents\": [...] member)",
                path);
      break;
    }
    int is_events = strcmp(d.jr.text.p, "traceEvents") == 0;
    tl_jtok t;
    if (member_value(&d.jr, &t, e)) break;
    if (is_events) {
      if (t == TL_JT_LBRACK) found = 1;
      else tl_jr_unexpected(&d.jr, "'[' (traceEvents is an array)", t, e);
      break;
    }
    if (tl_jr_skip(&d.jr, t, e)) break;
  }
  doc_close(&d);
  return found;
}

/* ------------------------------------------------------------------ survey */

typedef struct kt_thread {
  int64_t pid, tid, busy_ns, n_ops;
} kt_thread;

typedef struct kt_survey {
  int64_t n_events, n_complete, n_kernel, n_nccl, n_memcpy, n_memset, n_runtime, n_driver,
      n_cpu_op, n_annotation, n_python, n_steps, n_graph_launch, n_rounded, n_corr_calls,
      n_corr_work;
  TL_VEC(kt_thread) threads;
  int main_thread;  /* index into threads, -1 when no cpu_op */
  int has_base;
  int64_t base_ns;
  int has_dist;
  int64_t rank, world_size;
  char backend[64];
  int64_t n_devices;
  char *devices;
  char *schema_version;
  int device_events;  /* the trace has kernel, memcpy or memset events */
} kt_survey;

static void survey_free(kt_survey *s) {
  TL_VEC_FREE(&s->threads);
  free(s->devices);
  free(s->schema_version);
  memset(s, 0, sizeof *s);
}

static int is_device_cat(const kt_event *ev) {
  return ev_is(ev, F_CAT, "kernel") || ev_is(ev, F_CAT, "gpu_memcpy") ||
         ev_is(ev, F_CAT, "gpu_memset");
}

static int is_step_name(const char *name) {
  return name && strncmp(name, "ProfilerStep#", 13) == 0;
}

static int lower_copy(const char *s, char **buf, size_t *cap) {
  size_t n = strlen(s);
  if (n + 1 > *cap) {
    char *b = realloc(*buf, (n + 1) * 2);
    if (!b) return -1;
    *buf = b, *cap = (n + 1) * 2;
  }
  for (size_t i = 0; i < n; i++) (*buf)[i] = (char)tolower((unsigned char)s[i]);
  (*buf)[n] = 0;
  return 0;
}

static int survey(const char *path, kt_survey *s, tl_err *e) {
  memset(s, 0, sizeof *s);
  s->main_thread = -1;
  kt_doc d;
  if (doc_open(&d, path, e)) return TL_ERROR;
  kt_event ev;
  memset(&ev, 0, sizeof ev);
  char *lower = NULL;
  size_t lower_cap = 0;
  int rc, last_thread = -1;
  while ((rc = doc_next(&d, &ev, e)) == 1) {
    s->n_events++;
    if (!ev_is(&ev, F_PH, "X")) continue;
    s->n_complete++;
    int64_t ts, dur = 0;
    int r1 = 0, r2 = 0;
    int has_ts = ev.f[F_TS].type == TL_JT_NUMBER &&
                 tl_kineto_us_to_ns(ev.arena.p + ev.f[F_TS].off, ev.f[F_TS].len, &ts, &r1) == 0;
    if (ev.f[F_DUR].type == TL_JT_NUMBER &&
        tl_kineto_us_to_ns(ev.arena.p + ev.f[F_DUR].off, ev.f[F_DUR].len, &dur, &r2) != 0)
      dur = 0;
    if (!has_ts) continue;
    s->n_rounded += r1 + r2;
    const char *name = ev_str(&ev, F_NAME);
    if (ev_is(&ev, F_CAT, "kernel")) {
      s->n_kernel++;
      if (name && lower_copy(name, &lower, &lower_cap)) goto oom;
      if (name && tl_cuda_is_nccl_collective(lower)) s->n_nccl++;
    } else if (ev_is(&ev, F_CAT, "gpu_memcpy")) {
      s->n_memcpy++;
    } else if (ev_is(&ev, F_CAT, "gpu_memset")) {
      s->n_memset++;
    } else if (ev_is(&ev, F_CAT, "cuda_runtime") || ev_is(&ev, F_CAT, "cuda_driver")) {
      if (ev_is(&ev, F_CAT, "cuda_runtime")) s->n_runtime++;
      else s->n_driver++;
      if (name && tl_cuda_is_graph_launch(name)) s->n_graph_launch++;
      if (ev.f[A_CORR].type == TL_JT_NUMBER) s->n_corr_calls++;
    } else if (ev_is(&ev, F_CAT, "cpu_op") && !is_step_name(name)) {
      s->n_cpu_op++;
      int64_t pid = 0, tid = 0;
      ev_int(&ev, F_PID, &pid);
      ev_int(&ev, F_TID, &tid);
      int k = last_thread;
      if (k < 0 || s->threads.v[k].pid != pid || s->threads.v[k].tid != tid) {
        for (k = 0; k < (int)s->threads.n; k++)
          if (s->threads.v[k].pid == pid && s->threads.v[k].tid == tid) break;
        if (k == (int)s->threads.n) {
          kt_thread th = {pid, tid, 0, 0};
          if (TL_VEC_PUSH(&s->threads, th)) goto oom;
        }
        last_thread = k;
      }
      int64_t add = dur > 0 ? dur : 0, *busy = &s->threads.v[k].busy_ns;
      *busy = *busy > INT64_MAX - add ? INT64_MAX : *busy + add; /* saturate, never wrap */
      s->threads.v[k].n_ops++;
    } else if (ev_is(&ev, F_CAT, "user_annotation") || ev_is(&ev, F_CAT, "cpu_op")) {
      s->n_annotation++;
    } else if (ev_is(&ev, F_CAT, "python_function")) {
      s->n_python++;
    }
    if (is_step_name(name)) s->n_steps++;
    if (is_device_cat(&ev) && ev.f[A_CORR].type == TL_JT_NUMBER) s->n_corr_work++;
  }
  if (rc < 0) goto fail;
  for (size_t k = 0; k < s->threads.n; k++) {
    const kt_thread *a = &s->threads.v[k];
    const kt_thread *b = s->main_thread >= 0 ? &s->threads.v[s->main_thread] : NULL;
    if (!b || a->busy_ns > b->busy_ns ||
        (a->busy_ns == b->busy_ns && (a->tid < b->tid || (a->tid == b->tid && a->pid < b->pid))))
      s->main_thread = (int)k;
  }
  s->device_events = s->n_kernel + s->n_memcpy + s->n_memset > 0;
  s->has_base = d.has_base, s->base_ns = d.base_ns;
  s->has_dist = d.has_dist, s->rank = d.rank, s->world_size = d.world_size;
  memcpy(s->backend, d.backend, sizeof s->backend);
  s->n_devices = d.n_devices;
  if (d.devices.n) {
    s->devices = d.devices.p;
    memset(&d.devices, 0, sizeof d.devices);
  }
  s->schema_version = d.schema_version;
  d.schema_version = NULL;
  free(lower);
  tl_buf_free(&ev.arena);
  doc_close(&d);
  return TL_OK;
oom:
  tl_nomem(e);
fail:
  free(lower);
  tl_buf_free(&ev.arena);
  doc_close(&d);
  survey_free(s);
  return TL_ERROR;
}

/* The survey the cursors need, cheaply: the top-level facts (baseTimeNanoseconds may come
** after traceEvents) and whether any device event exists, found by skimming traceEvents at
** byte level instead of parsing it. Only a trace without device events needs the full
** survey, for the main thread of its CPU plane: *need_full says so. */
static int quick_survey(const char *path, kt_survey *s, int *need_full, tl_err *e) {
  memset(s, 0, sizeof *s);
  s->main_thread = -1;
  kt_doc d;
  if (doc_open(&d, path, e)) return TL_ERROR;
  d.skim = 1;
  kt_event ev;
  memset(&ev, 0, sizeof ev);
  int rc;
  while ((rc = doc_next(&d, &ev, e)) == 1) {
  }
  tl_buf_free(&ev.arena);
  if (rc < 0) {
    /* A malformed or truncated trace: the full pass diagnoses it precisely. */
    tl_err_clear(e);
    doc_close(&d);
    *need_full = 1;
    return TL_OK;
  }
  s->device_events = d.device_seen;
  s->has_base = d.has_base, s->base_ns = d.base_ns;
  *need_full = !d.device_seen;
  doc_close(&d);
  return TL_OK;
}

/* quick_survey, then the full survey when the CPU plane needs it. */
static int cursor_survey(const char *path, kt_survey *s, int need_threads, tl_err *e) {
  int need_full = 0;
  if (quick_survey(path, s, &need_full, e)) return TL_ERROR;
  if (!need_full || !need_threads) return TL_OK;
  survey_free(s);
  return survey(path, s, e);
}

/* ------------------------------------------------------------------ times */

/* Start and end ns of an event; 0 = no usable ts (the event is dropped). */
static int event_times(const kt_survey *s, const kt_event *ev, const char *path, int64_t *start,
                       int64_t *end, tl_err *e, int *failed) {
  int rounded;
  int64_t ts, dur = 0;
  *failed = 0;
  if (ev->f[F_TS].type != TL_JT_NUMBER ||
      tl_kineto_us_to_ns(ev->arena.p + ev->f[F_TS].off, ev->f[F_TS].len, &ts, &rounded))
    return 0;
  if (ev->f[F_DUR].type == TL_JT_NUMBER &&
      tl_kineto_us_to_ns(ev->arena.p + ev->f[F_DUR].off, ev->f[F_DUR].len, &dur, &rounded))
    dur = 0;
  if (dur < 0) dur = 0;
  int64_t base = s->has_base ? s->base_ns : 0;
  if ((base > 0 && ts > INT64_MAX - base) || (base < 0 && ts < INT64_MIN - base) ||
      (ts + base > INT64_MAX - dur)) {
    *failed = 1;
    tl_fail(e,
            "Kineto trace '%s': event %" PRId64 " (traceEvents index, byte %" PRId64
            ") has ts %s us + baseTimeNanoseconds %" PRId64
            " outside int64 nanoseconds (expected a time within +-292 years)",
            path, ev->index, ev->offset, ev->arena.p + ev->f[F_TS].off, base);
    return 0;
  }
  *start = ts + base;
  *end = *start + dur;
  return 1;
}

/* ------------------------------------------------------------------ rows */

enum { K_CUDA_KERNEL, K_CUDA_KERNEL_AUX, K_CUDA_COLLECTIVE_KERNEL, K_MEMCPY, K_MEMSET, K_CPU_OP,
       K_SYNC, K_COUNT };
static const char *const konst_text[K_COUNT] = {"CUDA_KERNEL",     "CUDA_KERNEL_AUX",
                                                "CUDA_COLLECTIVE_KERNEL", "CUDA_MEMCPY_AUX",
                                                "CUDA_MEMSET_AUX", "CPU_OP", "CUDA_SYNC_AUX"};

/* One cpu_op event held until the main thread is known (CPU plane). */
typedef struct kt_cpu_op {
  int64_t index, start_ns, end_ns;
  uint32_t name, thread; /* thread: index into kt_reader.threads */
} kt_cpu_op;

/* What the cursors and the one-pass reader share: the document being read, the top-level
** facts, and the caches that turn an event object into a row. */
typedef struct kt_reader {
  kt_doc doc;
  kt_event ev;
  kt_survey sv;
  char *path;
  tl_strpool *pool;
  int db_idx, source_id;
  int cpu_plane;
  int64_t dropped_events, dropped_calls;
  tl_event_filter filter;
  tl_i64map kernel_cache; /* label id -> op_type id | flags << 32 */
  char *lower;
  size_t lower_cap;
  uint32_t konst[K_COUNT];
  uint32_t api_runtime, api_driver;
  /* CPU plane: every cpu_op (ProfilerStep#N ranges aside) until the pass ends, and the
  ** threads they ran on with their summed duration. */
  TL_VEC(kt_cpu_op) ops;
  TL_VEC(kt_thread) threads;
  int last_thread;
} kt_reader;

static void reader_free(kt_reader *c) {
  doc_close(&c->doc);
  tl_buf_free(&c->ev.arena);
  survey_free(&c->sv);
  tl_i64map_free(&c->kernel_cache);
  TL_VEC_FREE(&c->ops);
  TL_VEC_FREE(&c->threads);
  free(c->lower);
  free(c->path);
  memset(c, 0, sizeof *c);
}

static const char *input_path(const tl_profile *p, int db_idx) {
  return p->inputs.v[db_idx].path ? p->inputs.v[db_idx].path : "";
}

static int check_path(const char *path, tl_err *e) {
  struct stat st;
  if (!*path) return tl_fail(e, "Kineto trace path is empty");
  if (stat(path, &st) != 0) return tl_fail(e, "Kineto trace does not exist: %s", path);
  return TL_OK;
}

/* Opens input db_idx: the skim for the top-level facts (a malformed trace gets the full
** survey, which reports the error before any row), then the document for the pass. */
static int reader_open(kt_reader *c, const tl_profile *p, int db_idx, tl_strpool *pool,
                       tl_err *e) {
  memset(c, 0, sizeof *c);
  c->pool = pool;
  c->db_idx = db_idx;
  c->source_id = p->inputs.v[db_idx].primary_file;
  c->last_thread = -1;
  c->path = tl_strdup(input_path(p, db_idx));
  int rc = c->path ? check_path(c->path, e) : tl_nomem(e);
  if (rc == TL_OK) rc = cursor_survey(c->path, &c->sv, 0, e);
  if (rc == TL_OK) {
    c->cpu_plane = !c->sv.device_events;
    rc = doc_open(&c->doc, c->path, e);
  }
  if (rc) reader_free(c);
  return rc;
}

#define KF_COLLECTIVE (1ll << 32)
#define KF_AUX (1ll << 33)

static uint32_t konst(kt_reader *c, int k) {
  if (!c->konst[k]) c->konst[k] = tl_strpool_intern_cstr(c->pool, konst_text[k]);
  return c->konst[k];
}

static int kernel_identity(kt_reader *c, uint32_t label, int64_t *out, tl_err *e) {
  int64_t *hit = tl_i64map_get(&c->kernel_cache, label);
  if (hit) {
    *out = *hit;
    return TL_OK;
  }
  if (lower_copy(tl_strpool_str(c->pool, label), &c->lower, &c->lower_cap)) return tl_nomem(e);
  int64_t v;
  if (tl_cuda_is_nccl_collective(c->lower)) {
    v = (int64_t)label | KF_COLLECTIVE;
  } else {
    const char *lifted = tl_cuda_lift_label(c->lower);
    uint32_t id = lifted ? tl_strpool_intern_cstr(c->pool, lifted) : label;
    if (id == TL_STR_NOMEM) return tl_nomem(e);
    v = (int64_t)id | (lifted && strncmp(lifted, "CudaAux:", 8) == 0 ? KF_AUX : 0);
  }
  if (tl_i64map_put(&c->kernel_cache, label, v)) return tl_nomem(e);
  *out = v;
  return TL_OK;
}

static uint32_t intern_name(kt_reader *c, const char *fallback) {
  const char *name = ev_str(&c->ev, F_NAME);
  if (name && *name) return tl_strpool_intern(c->pool, name, c->ev.f[F_NAME].len);
  char buf[64];
  int n = snprintf(buf, sizeof buf, "%s_%" PRId64, fallback, c->ev.index);
  return tl_strpool_intern(c->pool, buf, (size_t)n);
}

static void row_init(const kt_reader *c, tl_event_row *r) {
  memset(r, 0, sizeof *r);
  r->db_idx = c->db_idx;
  r->source_id = c->source_id;
  r->source_table = EVENTS_TABLE;
  r->task_id = r->global_task_id = r->correlation_id = r->context_id = TL_ABSENT;
  r->model_id = r->graph_node_id = r->op_id = TL_ABSENT;
}

/* Fills r (times set) from a device event; returns 1 = row, 0 = skip, -1 = error. */
static int device_row(kt_reader *c, tl_event_row *r, tl_err *e) {
  kt_event *ev = &c->ev;
  int64_t dev, stream;
  if (!ev_int(ev, A_DEVICE, &dev) && !ev_int(ev, F_PID, &dev)) {
    c->dropped_events++;
    return 0;
  }
  int sync = ev_is(ev, F_CAT, "cuda_sync");
  if (!ev_int(ev, A_STREAM, &stream) && !ev_int(ev, F_TID, &stream)) stream = TL_NO_STREAM;
  if (sync && stream < 0) stream = TL_NO_STREAM; /* a context synchronization has stream -1 */
  if (dev < 0 || dev > (int64_t)UINT32_MAX || stream < 0 || stream > (int64_t)UINT32_MAX)
    return tl_fail(e,
                   "Kineto trace '%s': event %" PRId64 " (traceEvents index, byte %" PRId64
                   ") has device %" PRId64 " stream %" PRId64
                   " (expected ids in 0..4294967295)",
                   c->path, ev->index, ev->offset, dev, stream),
           -1;
  if (c->filter.has_device && (uint32_t)dev != c->filter.device_id) return 0;
  r->source_rowid = ev->index;
  r->device_id = (uint32_t)dev;
  r->stream_id = (uint32_t)stream;
  int64_t v;
  if (ev_int(ev, A_CORR, &v)) r->correlation_id = v;
  if (ev_int(ev, A_CONTEXT, &v)) r->context_id = v;
  r->task_id = r->correlation_id != TL_ABSENT ? r->correlation_id : ev->index;
  if (ev_is(ev, F_CAT, "kernel")) {
    uint32_t label = intern_name(c, "cuda_kernel");
    if (label == TL_STR_NOMEM) return tl_nomem(e), -1;
    int64_t ident = 0;
    if (kernel_identity(c, label, &ident, e)) return -1;
    r->name = r->op_name = label;
    r->op_type = (uint32_t)(ident & 0xffffffffll);
    if (ident & KF_COLLECTIVE) {
      r->kind = TL_KIND_COMMUNICATION;
      r->task_type = konst(c, K_CUDA_COLLECTIVE_KERNEL);
      r->comm_name = label;
      r->comm_task_type = r->task_type;
    } else {
      r->kind = TL_KIND_COMPUTE;
      r->task_type = konst(c, ident & KF_AUX ? K_CUDA_KERNEL_AUX : K_CUDA_KERNEL);
    }
  } else if (sync) {
    r->kind = TL_KIND_SYNC;
    r->name = intern_name(c, "cuda_sync");
    r->task_type = konst(c, K_SYNC);
  } else {
    int memcpy_ = ev_is(ev, F_CAT, "gpu_memcpy");
    r->kind = TL_KIND_DATA_MOVE;
    r->name = intern_name(c, memcpy_ ? "cuda_memcpy" : "cuda_memset");
    r->task_type = konst(c, memcpy_ ? K_MEMCPY : K_MEMSET);
  }
  if (r->name == TL_STR_NOMEM || r->task_type == TL_STR_NOMEM) return tl_nomem(e), -1;
  return 1;
}

/* A device event of the current object: 1 = row in r, 0 = none, -1 = error. */
static int device_event(kt_reader *c, tl_event_row *r, tl_err *e) {
  if (!is_device_cat(&c->ev) && !ev_is(&c->ev, F_CAT, "cuda_sync")) return 0;
  row_init(c, r);
  int failed;
  if (!event_times(&c->sv, &c->ev, c->path, &r->start_ns, &r->end_ns, e, &failed)) {
    if (failed) return -1;
    c->dropped_events++;
    return 0;
  }
  return device_row(c, r, e);
}

/* CPU plane: keeps the current cpu_op (not a ProfilerStep#N range) with its thread's summed
** duration; the main thread is known only once every event has been read. */
static int hold_cpu_op(kt_reader *c, tl_err *e) {
  kt_event *ev = &c->ev;
  if (!ev_is(ev, F_CAT, "cpu_op")) return TL_OK;
  int64_t start, end;
  int failed;
  if (!event_times(&c->sv, ev, c->path, &start, &end, e, &failed)) {
    if (failed) return TL_ERROR;
    c->dropped_events++;
    return TL_OK;
  }
  if (is_step_name(ev_str(ev, F_NAME))) return TL_OK;
  int64_t pid = 0, tid = 0, dur = 0;
  ev_int(ev, F_PID, &pid);
  ev_int(ev, F_TID, &tid);
  int rounded;
  if (ev->f[F_DUR].type == TL_JT_NUMBER &&
      tl_kineto_us_to_ns(ev->arena.p + ev->f[F_DUR].off, ev->f[F_DUR].len, &dur, &rounded))
    dur = 0;
  int k = c->last_thread;
  if (k < 0 || c->threads.v[k].pid != pid || c->threads.v[k].tid != tid) {
    for (k = 0; k < (int)c->threads.n; k++)
      if (c->threads.v[k].pid == pid && c->threads.v[k].tid == tid) break;
    if (k == (int)c->threads.n) {
      kt_thread th = {pid, tid, 0, 0};
      if (TL_VEC_PUSH(&c->threads, th)) return tl_nomem(e);
    }
    c->last_thread = k;
  }
  int64_t add = dur > 0 ? dur : 0, *busy = &c->threads.v[k].busy_ns;
  *busy = *busy > INT64_MAX - add ? INT64_MAX : *busy + add; /* saturate, never wrap */
  c->threads.v[k].n_ops++;
  kt_cpu_op op = {ev->index, start, end, intern_name(c, "cpu_op"), (uint32_t)k};
  if (op.name == TL_STR_NOMEM || TL_VEC_PUSH(&c->ops, op)) return tl_nomem(e);
  return TL_OK;
}

/* The main thread of the CPU plane: the most summed cpu_op duration; ties go to the
** smallest tid, then the smallest pid. -1 when there is no cpu_op. */
static int main_thread_of(const kt_thread *v, size_t n) {
  int best = -1;
  for (size_t k = 0; k < n; k++) {
    const kt_thread *a = &v[k], *b = best >= 0 ? &v[best] : NULL;
    if (!b || a->busy_ns > b->busy_ns ||
        (a->busy_ns == b->busy_ns && (a->tid < b->tid || (a->tid == b->tid && a->pid < b->pid))))
      best = (int)k;
  }
  return best;
}

/* Row k of the held cpu_ops when it ran on the main thread: 1 = row, 0 = not. */
static int cpu_row(const kt_reader *c, size_t k, int main, tl_event_row *r) {
  const kt_cpu_op *op = &c->ops.v[k];
  if ((int)op->thread != main || (c->filter.has_device && c->filter.device_id != 0)) return 0;
  int64_t tid = c->threads.v[main].tid;
  row_init(c, r);
  r->source_rowid = r->task_id = op->index;
  r->start_ns = op->start_ns, r->end_ns = op->end_ns;
  r->device_id = 0;
  r->stream_id = tid >= 0 && tid < (int64_t)UINT32_MAX ? (uint32_t)tid : TL_NO_STREAM;
  r->kind = TL_KIND_COMPUTE;
  r->name = r->op_name = r->op_type = op->name;
  r->task_type = c->konst[K_CPU_OP];
  return 1;
}

/* A host runtime call of the current object: 1 = row in r, 0 = none, -1 = error. */
static int call_event(kt_reader *c, tl_call_row *r, tl_err *e) {
  kt_event *ev = &c->ev;
  int runtime = ev_is(ev, F_CAT, "cuda_runtime");
  if (!runtime && !ev_is(ev, F_CAT, "cuda_driver")) return 0;
  memset(r, 0, sizeof *r);
  int failed;
  if (!event_times(&c->sv, ev, c->path, &r->start_ns, &r->end_ns, e, &failed)) {
    if (failed) return -1;
    c->dropped_calls++;
    return 0;
  }
  r->db_idx = c->db_idx;
  r->source_id = c->source_id;
  r->source_table = EVENTS_TABLE;
  r->source_rowid = ev->index;
  r->provider = TL_PROVIDER_CUDA;
  r->api_name = intern_name(c, "cuda_runtime");
  uint32_t *api = runtime ? &c->api_runtime : &c->api_driver;
  if (!*api) *api = tl_strpool_intern_cstr(c->pool, runtime ? "cuda_runtime" : "cuda_driver");
  r->api_type = *api;
  if (r->api_name == TL_STR_NOMEM || r->api_type == TL_STR_NOMEM) return tl_nomem(e), -1;
  int64_t pid, tid, v;
  r->process_id = ev_int(ev, F_PID, &pid) ? pid : TL_ABSENT;
  r->thread_id = ev_int(ev, F_TID, &tid) ? tid : TL_ABSENT;
  r->global_tid = r->process_id != TL_ABSENT && r->thread_id != TL_ABSENT
                      ? (int64_t)(((uint64_t)pid << 32) | ((uint64_t)tid & 0xffffffffu))
                      : TL_ABSENT;
  r->context_id = TL_ABSENT;
  r->device_id = ev_int(ev, A_DEVICE, &v) ? v : TL_ABSENT;
  r->correlation_id = ev_int(ev, A_CORR, &v) ? v : TL_ABSENT;
  return 1;
}

/* A host scope of the current object (user_annotation / record_function ranges, ProfilerStep#N
** under cat cpu_op too, python_function ranges): 1 = scope in s, 0 = none, -1 = error. */
static int scope_event(kt_reader *c, tl_host_scope *s, tl_err *e) {
  kt_event *ev = &c->ev;
  const char *name = ev_str(ev, F_NAME);
  uint8_t kind;
  if (ev_is(ev, F_CAT, "user_annotation") || (ev_is(ev, F_CAT, "cpu_op") && is_step_name(name)))
    kind = TL_HOST_SCOPE_ANNOTATION;
  else if (ev_is(ev, F_CAT, "python_function"))
    kind = name && strncmp(name, "nn.Module: ", 11) == 0 ? TL_HOST_SCOPE_MODULE
                                                          : TL_HOST_SCOPE_PYTHON;
  else
    return 0;
  if (!name || !*name) return 0;
  int failed;
  int64_t pid, tid;
  if (!event_times(&c->sv, ev, c->path, &s->start_ns, &s->end_ns, e, &failed) ||
      !ev_int(ev, F_PID, &pid) || !ev_int(ev, F_TID, &tid))
    return failed ? -1 : 0;
  s->global_tid = (int64_t)(((uint64_t)pid << 32) | ((uint64_t)tid & 0xffffffffu));
  s->name = tl_strpool_intern(c->pool, name, ev->f[F_NAME].len);
  s->db_idx = (uint16_t)c->db_idx;
  s->kind = kind;
  return s->name == TL_STR_NOMEM ? (tl_nomem(e), -1) : 1;
}

/* ------------------------------------------------------------------ the cursors */

typedef struct kt_events {
  tl_cursor base;
  kt_reader rd;
  int held;          /* CPU plane: the pass is over and the ops are held */
  int main;          /* CPU plane: the main thread */
  size_t next_op;    /* CPU plane: the next held op to emit */
} kt_events;

/* CPU plane: reads the whole document once, holding its cpu_ops. */
static int hold_all(kt_events *c, tl_err *e) {
  kt_reader *rd = &c->rd;
  int rc;
  while ((rc = doc_next(&rd->doc, &rd->ev, e)) == 1)
    if (ev_is(&rd->ev, F_PH, "X") && hold_cpu_op(rd, e)) return TL_ERROR;
  if (rc < 0) return TL_ERROR;
  c->held = 1;
  c->main = main_thread_of(rd->threads.v, rd->threads.n);
  return konst(rd, K_CPU_OP) == TL_STR_NOMEM ? tl_nomem(e) : TL_OK;
}

static int events_next(tl_cursor *base, void *out, tl_err *e) {
  kt_events *c = (kt_events *)base;
  kt_reader *rd = &c->rd;
  tl_event_row *r = out;
  int rc;
  if (rd->cpu_plane) {
    if (!c->held && hold_all(c, e)) return -1;
    c->base.dropped_rows = rd->dropped_events;
    while (c->next_op < rd->ops.n)
      if (cpu_row(rd, c->next_op++, c->main, r)) return 1;
    return 0;
  }
  while ((rc = doc_next(&rd->doc, &rd->ev, e)) == 1) {
    if (!ev_is(&rd->ev, F_PH, "X")) continue;
    int got = device_event(rd, r, e);
    c->base.dropped_rows = rd->dropped_events;
    if (got != 0) return got;
  }
  return rc;
}

static void events_close(tl_cursor *base) {
  kt_events *c = (kt_events *)base;
  if (!c) return;
  reader_free(&c->rd);
  free(c);
}

static int events_open(const tl_profile *p, int db_idx, const tl_event_filter *f,
                       tl_strpool *pool, tl_cursor **out, tl_err *e) {
  *out = NULL;
  kt_events *c = calloc(1, sizeof *c);
  if (!c) return tl_nomem(e);
  c->base.next = events_next;
  c->base.close = events_close;
  if (reader_open(&c->rd, p, db_idx, pool, e)) {
    free(c);
    return TL_ERROR;
  }
  if (f) c->rd.filter = *f;
  *out = &c->base;
  return TL_OK;
}

typedef struct kt_calls {
  tl_cursor base;
  kt_reader rd;
} kt_calls;

static int calls_next(tl_cursor *base, void *out, tl_err *e) {
  kt_calls *c = (kt_calls *)base;
  kt_reader *rd = &c->rd;
  int rc;
  while ((rc = doc_next(&rd->doc, &rd->ev, e)) == 1) {
    if (!ev_is(&rd->ev, F_PH, "X")) continue;
    int got = call_event(rd, out, e);
    c->base.dropped_rows = rd->dropped_calls;
    if (got != 0) return got;
  }
  return rc;
}

static void calls_close(tl_cursor *base) {
  kt_calls *c = (kt_calls *)base;
  if (!c) return;
  reader_free(&c->rd);
  free(c);
}

static int calls_open(const tl_profile *p, int db_idx, tl_strpool *pool, tl_cursor **out,
                      tl_err *e) {
  *out = NULL;
  kt_calls *c = calloc(1, sizeof *c);
  if (!c) return tl_nomem(e);
  c->base.next = calls_next;
  c->base.close = calls_close;
  if (reader_open(&c->rd, p, db_idx, pool, e)) {
    free(c);
    return TL_ERROR;
  }
  *out = &c->base;
  return TL_OK;
}

/* ------------------------------------------------------------------ one pass */

/* Events, calls and host scopes of the input in one pass over its document (the analysis'
** reader; the cursors above read it once each). The rows and their order are the cursors'. */
static int read_all(const tl_profile *p, int db_idx, tl_strpool *pool, tl_row_sink *sink,
                    tl_err *e) {
  kt_reader rd;
  if (reader_open(&rd, p, db_idx, pool, e)) return TL_ERROR;
  int rc;
  tl_event_row er;
  tl_call_row cr;
  tl_host_scope hs;
  while ((rc = doc_next(&rd.doc, &rd.ev, e)) == 1) {
    if (!ev_is(&rd.ev, F_PH, "X")) continue;
    int got = rd.cpu_plane ? (hold_cpu_op(&rd, e) ? -1 : 0) : device_event(&rd, &er, e);
    if (got == 1) got = sink->event(sink->ctx, &er, e) ? -1 : 0;
    if (got == 0) got = call_event(&rd, &cr, e);
    if (got == 1) got = sink->call(sink->ctx, &cr, e) ? -1 : 0;
    if (got == 0) got = scope_event(&rd, &hs, e);
    if (got == 1) got = sink->scope(sink->ctx, &hs, e) ? -1 : 0;
    if (got < 0) {
      rc = -1;
      break;
    }
  }
  if (rc == 0 && rd.cpu_plane) {
    int main = main_thread_of(rd.threads.v, rd.threads.n);
    if (konst(&rd, K_CPU_OP) == TL_STR_NOMEM) {
      tl_nomem(e);
      rc = -1;
    }
    if (rc == 0 && main >= 0) {
      const kt_thread *th = &rd.threads.v[main];
      int64_t gtid = (int64_t)(((uint64_t)th->pid << 32) | ((uint64_t)th->tid & 0xffffffffu));
      if (sink->plane(sink->ctx, db_idx, gtid, e)) rc = -1;
    }
    for (size_t k = 0; rc == 0 && k < rd.ops.n; k++)
      if (cpu_row(&rd, k, main, &er) && sink->event(sink->ctx, &er, e)) rc = -1;
  }
  sink->dropped_events += rd.dropped_events;
  sink->dropped_calls += rd.dropped_calls;
  reader_free(&rd);
  return rc == 0 ? TL_OK : TL_ERROR;
}

/* ------------------------------------------------------------------ inventory */

static int cap(const tl_profile *p, int db_idx, tl_inventory *inv, const char *name,
               int64_t count, int usable, char *detail, tl_err *e) {
  if (!detail) return tl_nomem(e);
  int rc = tl_inventory_add(inv, db_idx, "capability", SOURCE_KIND, input_path(p, db_idx),
                            EVENTS_TABLE, count, name, usable, detail, e);
  free(detail);
  return rc;
}

static int inventory(const tl_profile *p, int db_idx, tl_inventory *inv, tl_err *e) {
  const char *path = input_path(p, db_idx);
  if (check_path(path, e)) return TL_ERROR;
  kt_survey s;
  if (survey(path, &s, e)) return TL_ERROR;
  int64_t n_dev = s.n_kernel + s.n_memcpy + s.n_memset;
  const kt_thread *mt = s.main_thread >= 0 ? &s.threads.v[s.main_thread] : NULL;
  int cpu_plane = n_dev == 0 && mt;
  int rc = tl_inventory_add(inv, db_idx, "table", SOURCE_KIND, path, EVENTS_TABLE, s.n_events,
                            NULL, -1, NULL, e);
  if (!rc)
    rc = cap(p, db_idx, inv, "device_plane", n_dev, n_dev > 0,
             n_dev ? tl_mprintf("%" PRId64 " kernel, %" PRId64 " gpu_memcpy, %" PRId64
                                " gpu_memset events",
                                s.n_kernel, s.n_memcpy, s.n_memset)
                   : tl_strdup("no kernel, gpu_memcpy or gpu_memset events (CPU-only trace)"),
             e);
  if (!rc)
    rc = cap(p, db_idx, inv, "cpu_operator_plane", mt ? mt->n_ops : 0, cpu_plane,
             cpu_plane ? tl_mprintf("used as the device plane: cpu_op events of the main "
                                    "thread pid %" PRId64 " tid %" PRId64 " (%" PRId64
                                    " ns of cpu_op time) on device 0, stream = tid",
                                    mt->pid, mt->tid, mt->busy_ns)
             : n_dev ? tl_strdup("not used: the trace has device events")
                     : tl_strdup("not used: no cpu_op events"),
             e);
  if (!rc)
    rc = cap(p, db_idx, inv, "compute_identity", cpu_plane ? mt->n_ops : s.n_kernel - s.n_nccl,
             cpu_plane || s.n_kernel > s.n_nccl,
             tl_strdup(cpu_plane ? "cpu_op names" : s.n_kernel ? "kernel names, lifted"
                                                               : "no kernel events"),
             e);
  if (!rc)
    rc = cap(p, db_idx, inv, "communication_identity", s.n_nccl, s.n_nccl > 0,
             tl_strdup(s.n_nccl ? "NCCL collective kernel names" : "no NCCL collective kernels"),
             e);
  if (!rc)
    rc = cap(p, db_idx, inv, "host_api", s.n_runtime + s.n_driver, s.n_runtime + s.n_driver > 0,
             tl_mprintf("%" PRId64 " cuda_runtime, %" PRId64 " cuda_driver events", s.n_runtime,
                        s.n_driver),
             e);
  if (!rc)
    rc = cap(p, db_idx, inv, "runtime_device_correlation", s.n_corr_calls,
             s.n_corr_calls > 0 && s.n_corr_work > 0,
             tl_mprintf("args.correlation on %" PRId64 " runtime calls and %" PRId64
                        " device events",
                        s.n_corr_calls, s.n_corr_work),
             e);
  if (!rc)
    rc = cap(p, db_idx, inv, "graph_launch", s.n_graph_launch, s.n_graph_launch > 0,
             tl_mprintf("%" PRId64 " cudaGraphLaunch calls; replayed kernels share the "
                        "launch's correlation",
                        s.n_graph_launch),
             e);
  if (!rc)
    rc = cap(p, db_idx, inv, "graph_node_identity", 0, 0,
             tl_strdup("Kineto traces carry no per-node graph identity: exact CUDA graph bodies "
                       "are unsupported, only launch envelopes"),
             e);
  if (!rc)
    rc = cap(p, db_idx, inv, "host_scopes", s.n_cpu_op + s.n_annotation + s.n_python,
             s.n_cpu_op + s.n_annotation + s.n_python > 0,
             tl_mprintf("%" PRId64 " cpu_op, %" PRId64 " user_annotation, %" PRId64
                        " python_function events, %" PRId64
                        " ProfilerStep#N ranges; counted, not emitted as host calls",
                        s.n_cpu_op, s.n_annotation, s.n_python, s.n_steps),
             e);
  if (!rc)
    rc = cap(p, db_idx, inv, "timestamp_precision", s.n_rounded, 1,
             tl_mprintf("%" PRId64 " ts/dur values had digits below 1 ns, rounded half to even",
                        s.n_rounded),
             e);
  if (!rc)
    rc = cap(p, db_idx, inv, "rank", s.has_dist ? s.rank : -1, s.has_dist && s.rank >= 0,
             s.has_dist ? tl_mprintf("distributedInfo rank %" PRId64 " of world_size %" PRId64
                                     " backend %s",
                                     s.rank, s.world_size, s.backend[0] ? s.backend : "?")
                        : tl_strdup("no distributedInfo"),
             e);
  if (!rc)
    rc = cap(p, db_idx, inv, "device_properties", s.n_devices, s.n_devices > 0,
             tl_strdup(s.devices ? s.devices : "no deviceProperties"), e);
  if (!rc)
    rc = cap(p, db_idx, inv, "base_time", s.has_base ? s.base_ns : -1, s.has_base,
             s.has_base ? tl_mprintf("baseTimeNanoseconds %" PRId64 " added to every ts",
                                     s.base_ns)
                        : tl_strdup("no baseTimeNanoseconds: ts is taken as absolute"),
             e);
  if (!rc && s.schema_version)
    rc = cap(p, db_idx, inv, "schema_version", -1, 1,
             tl_mprintf("schemaVersion %s", s.schema_version), e);
  survey_free(&s);
  return rc;
}

static const char *const suffixes[] = {".json", ".json.gz", NULL};

const tl_family_def tl_kineto_family = {
    .source_kind = "kineto_json",
    .name = "Chrome-trace JSON",
    .provider = TL_PROVIDER_CUDA,
    .detect_file = tl_kineto_detect,
    .file_suffixes = suffixes,
    .layout_hint = "*.json/*.json.gz Kineto traces with a traceEvents array",
    .inventory = inventory,
    .events_open = events_open,
    .calls_open = calls_open,
    .read = read_all,
    .launch_envelopes = 1,
};
