/*
** pf_layout.c: what the Perfetto export draws, and where (perfetto.md 4-9).
**
** From the arrays of the read API (pf_read.c, pf_rank.c) it makes
**   - slices: the loop tree of each device (seq and repeat occurrences, one window per
**     repeat iteration, the atoms as leaves), every anchor on its stream (exact replay
**     members in place of a promoted graph launch), host runtime calls on their thread,
**     rank timelines, scheduler context;
**   - flows: host call -> the device work of its exact relations, graph launch host call ->
**     each replay member;
**   - tracks: boxes (ranks; each device with its streams, then its structure; host threads;
**     context) with their lanes, in a fixed display order.
**
** Lanes. Perfetto nests the slices of one track by time: a slice that starts inside
** another becomes its child. Each group (a stream, a device's structure, a host thread,
** ...) is walked in the order Perfetto sorts slices (start, longer first, then tree level
** and creation order), with one stack of open slices per lane, closed by Perfetto's rule
** (a slice ends at its end, except a zero-length one, which stays open at its own time).
** A structure slice goes on its parent's lane when its parent is the open top there, so
** repeat -> iteration -> child nest as slices; otherwise (a sibling still open, i.e. real
** overlap) on the first lane with nothing open, or a new lane. Streams and ranks never
** nest; host calls nest in whatever contains them. Every order is total, so the layout is
** deterministic.
*/
#include "export/pf.h"
#include "util/timing.h"
#include "util/sort.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const pf_cat_names[PF_NCAT] = {
    "traceloom.structural_interval", "traceloom.repeat_occurrence",
    "traceloom.repeat_body_window",  "traceloom.structural_atom",
    "traceloom.timeline_event",      "traceloom.runtime_call",
    "traceloom.distributed_timeline_event", "traceloom.context.host",
    "traceloom.context.step_envelope", "traceloom.context.device"};

/* ---- Groups ------------------------------------------------------------------------------ */

/* Group identity and display order: section, box key (2), kind in the box, key in the kind. */
typedef struct gkey {
  int64_t section, b0, b1, kind, k;
} gkey;

enum { GK_STREAM, GK_STRUCT }; /* kinds in a device box */
enum { CTX_BOX_HOST, CTX_BOX_STEP, CTX_BOX_DEVICE };

typedef struct lay {
  pf_ctx *c;
  pf_slice_vec *slices; /* where add_slice appends (pf_layout's, or a thread's own) */
  pf_group_vec *groups; /* where new groups go, likewise */
  TL_VEC(gkey) keys;  /* per group */
  tl_i64map by_hash;  /* hash of a gkey -> group index (verified; collisions scanned) */
  int multi_db;
  int32_t last[2];    /* the groups found last (slices come in runs; atoms alternate
                      ** between their device's structure and their stream) */
} lay;

static int32_t group_find(lay *L, gkey k, int pack);

static uint64_t mix(uint64_t h, int64_t v) {
  h ^= (uint64_t)v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 31);
}

static int gkey_eq(const gkey *x, const gkey *y) {
  return x->section == y->section && x->b0 == y->b0 && x->b1 == y->b1 && x->kind == y->kind &&
         x->k == y->k;
}

/* The group of key k (created on first use); -1 on out-of-memory. */
static int32_t group_of(lay *L, gkey k, int pack) {
  for (int i = 0; i < 2; i++)
    if (L->last[i] >= 0 && gkey_eq(&L->keys.v[L->last[i]], &k)) return L->last[i];
  int32_t g = group_find(L, k, pack);
  if (g >= 0) L->last[1] = L->last[0], L->last[0] = g;
  return g;
}

static int32_t group_find(lay *L, gkey k, int pack) {
  uint64_t h = mix(mix(mix(mix(mix(0, k.section), k.b0), k.b1), k.kind), k.k);
  int64_t hk = (int64_t)(h & 0x7fffffffffffffffull);
  int64_t *v = tl_i64map_get(&L->by_hash, hk);
  if (v && gkey_eq(&L->keys.v[*v], &k)) return (int32_t)*v;
  if (v) /* a hash collision: rare, scan */
    for (size_t i = 0; i < L->keys.n; i++)
      if (gkey_eq(&L->keys.v[i], &k)) return (int32_t)i;
  pf_group g = {.section = (int)k.section, .pack = pack, .box = -1};
  int32_t idx = (int32_t)L->groups->n;
  if (TL_VEC_PUSH(L->groups, g) || TL_VEC_PUSH(&L->keys, k)) return -1;
  if (!v && tl_i64map_put(&L->by_hash, hk, idx)) return -1;
  return idx;
}

/* ---- Slices ------------------------------------------------------------------------------- */

static int add_slice(lay *L, int32_t group, int src, int cat, int64_t ref, int64_t start,
                     int64_t end, uint32_t name, int64_t *out) {
  if (group < 0 || name == TL_STR_NOMEM || L->slices->n >= UINT32_MAX - 1) return -1;
  pf_slice s = {.start = start, .end = end > start ? end : start, .ref = ref, .parent = -1,
                .name = name, .group = group, .src = (uint8_t)src, .cat = (uint8_t)cat};
  if (out) *out = (int64_t)L->slices->n;
  return TL_VEC_PUSH(L->slices, s);
}

static uint32_t intern_f(pf_analysis *a, const char *fmt, const char *s1, const char *s2,
                         const char *s3) {
  char tmp[1024];
  snprintf(tmp, sizeof tmp, fmt, s1, s2, s3);
  return tl_strpool_intern_cstr(a->pool, tmp);
}

/* Names of the structure slices of a node: "N001 · root", "N014 · seq", "<label> · N014"
** (model_rule), "N003 · Rep x4 · motif A". */
static uint32_t node_slice_name(pf_analysis *a, const pf_node *n) {
  const char *local = tl_strpool_str(a->pool, n->local);
  const char *label = tl_strpool_str(a->pool, n->label);
  if (n->kind == PF_KIND_ATOM) return n->label != TL_STR_NONE ? n->label : n->local;
  if (n->kind == PF_KIND_REPEAT) {
    char alias[16];
    pf_motif_alias(n->motif, alias);
    return intern_f(a, "%s \xC2\xB7 %s \xC2\xB7 motif %s", local, *label ? label : "repeat",
                    alias);
  }
  if (strcmp(tl_strpool_str(a->pool, n->category), "model_rule") == 0)
    return intern_f(a, "%s \xC2\xB7 %s%s", label, local, "");
  return intern_f(a, "%s \xC2\xB7 %s%s", local, n->parent == TL_STR_NONE ? "root" : "seq", "");
}

/*
** The repeat iteration windows: the children of each repeat occurrence grouped by
** repeat_iteration, each window spanning its children, with their anchor range and summed
** costs. Fails closed ("incomplete repeat-body projection") unless every repeat occurrence
** has exactly iterations 1..repeat_count. child_body[i]: the body of occurrence i, or -1.
*/
static int make_bodies(lay *L, int64_t *child_body) {
  pf_ctx *c = L->c;
  pf_analysis *a = &c->a;
  pf_layout *l = &c->l;
  size_t n = 0;
  for (size_t i = 0; i < a->occs.n; i++) {
    const pf_occ *o = &a->occs.v[i];
    child_body[i] = -1;
    if (o->parent >= 0 && a->nodes.v[a->occs.v[o->parent].node].kind == PF_KIND_REPEAT) n++;
  }
  uint64_t *keys = malloc((n + 1) * sizeof *keys);
  uint32_t *vals = malloc((n + 1) * sizeof *vals);
  int64_t *nbodies = calloc(a->occs.n + 1, sizeof *nbodies);
  int err = keys && vals && nbodies ? TL_OK : tl_nomem(c->e);
  size_t m = 0;
  for (size_t i = 0; !err && i < a->occs.n; i++) {
    const pf_occ *o = &a->occs.v[i];
    if (o->parent < 0 || a->nodes.v[a->occs.v[o->parent].node].kind != PF_KIND_REPEAT) continue;
    if (o->iteration < 1 || o->iteration > UINT32_MAX || (uint64_t)o->parent > UINT32_MAX)
      err = tl_fail(c->e, "traceloom_export_perfetto: incomplete repeat-body projection: "
                          "occurrence_n %lld sits in a repeat without a repeat_iteration",
                    (long long)o->n);
    keys[m] = (uint64_t)o->parent << 32 | (uint64_t)o->iteration;
    vals[m++] = (uint32_t)i;
  }
  if (!err && tl_radix_sort_u64(keys, vals, m)) err = tl_nomem(c->e);
  for (size_t i = 0; !err && i < m;) {
    size_t j = i;
    pf_body b;
    memset(&b, 0, sizeof b);
    b.rep_occ = (int64_t)(keys[i] >> 32);
    b.ordinal = (int64_t)(keys[i] & 0xffffffffu);
    b.start = INT64_MAX, b.end = INT64_MIN, b.anchor_first = INT64_MAX, b.anchor_end = INT64_MIN;
    for (; j < m && keys[j] == keys[i]; j++) {
      const pf_occ *ch = &a->occs.v[vals[j]];
      if (ch->start < b.start) b.start = ch->start;
      if (ch->end > b.end) b.end = ch->end;
      if (ch->anchor_first < b.anchor_first) b.anchor_first = ch->anchor_first;
      if (ch->anchor_end > b.anchor_end) b.anchor_end = ch->anchor_end;
      b.anchors += ch->anchor_end - ch->anchor_first;
      b.aux_events += ch->aux_events;
      for (int k = 0; k < PF_NCOST; k++) b.cost[k] += ch->cost[k];
      b.children++;
      child_body[vals[j]] = (int64_t)l->bodies.n;
    }
    if (b.ordinal != nbodies[b.rep_occ] + 1) {
      const pf_occ *ro = &a->occs.v[b.rep_occ];
      err = tl_fail(c->e, "traceloom_export_perfetto: incomplete repeat-body projection: repeat "
                          "%s occurrence %lld has iteration %lld after %lld",
                    tl_strpool_str(a->pool, a->nodes.v[ro->node].node_id),
                    (long long)ro->occ_idx, (long long)b.ordinal, (long long)nbodies[b.rep_occ]);
      break;
    }
    nbodies[b.rep_occ] = b.ordinal;
    if (TL_VEC_PUSH(&l->bodies, b)) err = tl_nomem(c->e);
    i = j;
  }
  for (size_t i = 0; !err && i < a->occs.n; i++) {
    const pf_node *nd = &a->nodes.v[a->occs.v[i].node];
    if (nd->kind == PF_KIND_REPEAT && nbodies[i] != nd->repeat_count)
      err = tl_fail(c->e, "traceloom_export_perfetto: incomplete repeat-body projection: repeat "
                          "%s occurrence %lld has %lld iteration%s, repeat_count is %lld",
                    tl_strpool_str(a->pool, nd->node_id), (long long)a->occs.v[i].occ_idx,
                    (long long)nbodies[i], nbodies[i] == 1 ? "" : "s",
                    (long long)nd->repeat_count);
  }
  free(keys);
  free(vals);
  free(nbodies);
  return err;
}

/* Event n -> the device slice drawing it (atoms and members), for the flows. */
static int index_device_slice(pf_imap *m, int64_t event_n, int64_t slice) {
  if (event_n < 0) return 0;
  return pf_imap_get(m, event_n) ? 0 : pf_imap_put(m, event_n, slice);
}

/* A flow whose target starts before its source cannot be drawn as an arrow forward in
** time (Perfetto drops it): counted, not drawn. */
static int backward(pf_layout *l, int64_t from, int64_t to) {
  if (l->slices.v[to].start >= l->slices.v[from].start) return 0;
  l->n_flow_backward++;
  return 1;
}

/* The name of an atom's slices: its label, else its local id (node_slice_name, without
** interning: the device thread must not touch the string pool). */
static uint32_t atom_name(const pf_node *n) {
  return n->label != TL_STR_NONE ? n->label : n->local;
}

/*
** The slices are made on two threads (one in turn with TRACELOOM_EXPORT_THREADS=1 or a
** small export): this thread makes the structure (seq and repeat occurrences, iteration
** windows, leaves) and the rank and context rows into slices and groups of its own; the
** device thread makes the device plane (anchors, replay members), the host calls and the
** flows between them into the layout's. The structure is appended after them, its groups
** found again in the layout's, its parent links moved by the device thread's count. The
** creation order is then: device plane, calls, structure, rows, where one thread made them
** interleaved by occurrence; no group holds slices of two of these kinds, and within a group
** the order is the same, so the import order, the lanes and the bytes are too. The device
** thread interns no string (the pool is this thread's): a call without an api name gets
** "runtime call" here, after the join, where one thread interned it (after the structure's
** names).
*/
typedef struct device_work {
  lay *L;                /* the layout's slices and groups */
  const pf_imap *launch; /* launch anchor_n -> first member (read only) */
  pf_imap device_slice;  /* event_n -> the device slice drawing it (atoms and members) */
  pf_imap call_slice;    /* call_n -> its slice */
  int unnamed_calls;     /* calls without an api name (named after the join) */
  tl_err e;
  int rc;
  double cpu; /* its thread's CPU seconds (TRACELOOM_TIMING) */
} device_work;

/* The device plane per atom occurrence (the anchor on its stream, or the exact members of
** its launch), the host runtime calls on their thread, then the flows: exact relations, and
** each launch's host call to its members. */
static int device_slices(device_work *w) {
  lay *L = w->L;
  pf_ctx *c = L->c;
  pf_analysis *a = &c->a;
  pf_layout *l = &c->l;
  tl_err *e = &w->e;
  int distributed = c->opts.ranks.n > 0, err = TL_OK;
  /* Room for every device and call slice at once (at most one per occurrence, member and
  ** call; what is not used is never touched), not array doublings that copy. */
  if (!distributed && (TL_VEC_RESERVE(L->slices, L->slices->n + a->occs.n + a->members.n +
                                                     a->calls.n) ||
                       pf_imap_reserve(&w->call_slice, a->calls.n + 1)))
    err = tl_nomem(e);
  if (!err && !distributed) { /* what is surely filled: a slice a call, and without replay
                              ** members one an atom */
    size_t atoms = 0;
    for (size_t i = 0; !a->members.n && i < a->occs.n; i++)
      atoms += a->nodes.v[a->occs.v[i].node].kind == PF_KIND_ATOM;
    TL_VEC_PREFAULT(L->slices, L->slices->n + atoms + a->calls.n);
  }
  for (size_t i = 0; !err && !distributed && i < a->occs.n; i++) {
    const pf_occ *o = &a->occs.v[i];
    const pf_node *n = &a->nodes.v[o->node];
    if (n->kind != PF_KIND_ATOM) continue;
    const int64_t *first =
        a->members.n && o->anchor_n >= 0 ? pf_imap_get(w->launch, o->anchor_n) : NULL;
    if (first && a->members.v[*first].db != n->db) first = NULL;
    if (first) {
      int64_t la = a->members.v[*first].launch_anchor_n;
      for (size_t k = (size_t)*first;
           !err && k < a->members.n && a->members.v[k].db == n->db &&
           a->members.v[k].launch_anchor_n == la;
           k++) {
        pf_member *m = &a->members.v[k];
        m->occ = (int64_t)i;
        int32_t g = group_of(L, (gkey){PF_SEC_DEVICE, m->db, m->device, GK_STREAM,
                                       m->has_stream ? m->stream_id : INT64_MAX},
                             PF_PACK_FLAT);
        int64_t si;
        if (add_slice(L, g, PF_SRC_MEMBER, PF_CAT_EVENT, (int64_t)k, m->start, m->end,
                      m->identity ? m->identity : m->member_id, &si) ||
            index_device_slice(&w->device_slice, m->event_n, si))
          err = tl_nomem(e);
        l->n_member++;
      }
      continue;
    }
    int32_t g = group_of(L, (gkey){PF_SEC_DEVICE, n->db, n->dev, GK_STREAM,
                                   o->has_stream ? o->stream : INT64_MAX},
                         PF_PACK_FLAT);
    int64_t si;
    if (add_slice(L, g, PF_SRC_ATOM, PF_CAT_EVENT, (int64_t)i, o->start, o->end, atom_name(n),
                  &si) ||
        index_device_slice(&w->device_slice, o->event_n, si))
      err = tl_nomem(e);
    l->n_atom++;
  }
  for (size_t k = 0; !err && !distributed && k < a->calls.n; k++) {
    const pf_call *h = &a->calls.v[k];
    int32_t g = group_of(L, (gkey){PF_SEC_HOST, h->db, 0, 0, h->has_tid ? h->tid : INT64_MAX},
                         PF_PACK_NEST);
    int64_t si;
    if (add_slice(L, g, PF_SRC_CALL, PF_CAT_CALL, (int64_t)k, h->start, h->end, h->api, &si) ||
        pf_imap_put(&w->call_slice, h->call_n, si))
      err = tl_nomem(e);
    w->unnamed_calls |= h->api == TL_STR_NONE;
    l->n_call++;
  }
  if (!err) err = pf_relations_ready(a, e);
  for (size_t k = 0; !err && k < a->relations.n; k++) {
    int64_t *from = pf_imap_get(&w->call_slice, a->relations.v[k].call_n);
    int64_t *to = pf_imap_get(&w->device_slice, a->relations.v[k].event_n);
    if (!from || !to) continue;
    if (backward(l, *from, *to)) continue;
    pf_flow f = {*from, *to};
    if (TL_VEC_PUSH(&l->flows, f)) err = tl_nomem(e);
    l->n_flow_call++;
  }
  for (size_t k = 0; !err && k < a->members.n; k++) {
    const pf_member *m = &a->members.v[k];
    int64_t *from = m->host_call_n >= 0 ? pf_imap_get(&w->call_slice, m->host_call_n) : NULL;
    int64_t *to = m->occ >= 0 ? pf_imap_get(&w->device_slice, m->event_n) : NULL;
    if (!from || !to) continue;
    if (backward(l, *from, *to)) continue;
    pf_flow f = {*from, *to};
    if (TL_VEC_PUSH(&l->flows, f)) err = tl_nomem(e);
    l->n_flow_launch++;
  }
  return err;
}

static void *device_main(void *arg) {
  device_work *w = arg;
  double cpu0 = tl_thread_cpu_s();
  w->rc = device_slices(w);
  w->cpu = tl_thread_cpu_s() - cpu0;
  return NULL;
}

/* The structure of every device (per occurrence: its iteration window before its first
** child, then its slice; then the parent links), and the rank and context rows, into S's
** own slices and groups. */
static int structure_slices(lay *S) {
  pf_ctx *c = S->c;
  pf_analysis *a = &c->a;
  pf_layout *l = &c->l;
  size_t no = a->occs.n;
  int64_t *child_body = malloc((no + 1) * sizeof *child_body);
  int64_t *occ_slice = malloc((no + 1) * sizeof *occ_slice);
  uint32_t *node_name = malloc((a->nodes.n + 1) * sizeof *node_name);
  int err = child_body && occ_slice && node_name ? TL_OK : tl_nomem(c->e);
  for (size_t i = 0; !err && i < a->nodes.n; i++)
    if ((node_name[i] = node_slice_name(a, &a->nodes.v[i])) == TL_STR_NOMEM) err = tl_nomem(c->e);
  if (!err) err = make_bodies(S, child_body);
  int64_t *body_slice = err ? NULL : malloc((l->bodies.n + 1) * sizeof *body_slice);
  /* a slice per occurrence, body and row at most: one reservation, no doublings */
  if (!err && TL_VEC_RESERVE(S->slices, S->slices->n + no + l->bodies.n + a->rows.n))
    err = tl_nomem(c->e);
  if (!err) TL_VEC_PREFAULT(S->slices, S->slices->n + no); /* a slice an occurrence */
  if (!err && !body_slice) err = tl_nomem(c->e);
  for (size_t b = 0; !err && b < l->bodies.n; b++) body_slice[b] = -1;
  for (size_t i = 0; !err && i < no; i++) {
    const pf_occ *o = &a->occs.v[i];
    const pf_node *n = &a->nodes.v[o->node];
    int32_t sg = group_of(S, (gkey){PF_SEC_DEVICE, n->db, n->dev, GK_STRUCT, 0}, PF_PACK_TREE);
    /* An iteration window goes right before its first child, so a parent's slice is made
    ** before its children's. */
    if (child_body[i] >= 0 && body_slice[child_body[i]] < 0) {
      int64_t b = child_body[i];
      const pf_body *bd = &l->bodies.v[b];
      const pf_node *rn = &a->nodes.v[a->occs.v[bd->rep_occ].node];
      char alias[16], ord[64];
      pf_motif_alias(rn->motif, alias);
      snprintf(ord, sizeof ord, "%lld/%lld", (long long)bd->ordinal, (long long)rn->repeat_count);
      if (add_slice(S, sg, PF_SRC_BODY, PF_CAT_BODY, b, bd->start, bd->end,
                    intern_f(a, "%s \xC2\xB7 motif %s \xC2\xB7 body %s",
                             tl_strpool_str(a->pool, rn->local), alias, ord),
                    &body_slice[b])) {
        err = tl_nomem(c->e);
        break;
      }
      l->n_body++;
    }
    int src = n->kind == PF_KIND_ATOM ? PF_SRC_LEAF : PF_SRC_OCC;
    int cat = n->kind == PF_KIND_ATOM     ? PF_CAT_LEAF
              : n->kind == PF_KIND_REPEAT ? PF_CAT_REPEAT
                                          : PF_CAT_STRUCT;
    if (add_slice(S, sg, src, cat, (int64_t)i, o->start, o->end, node_name[o->node],
                  &occ_slice[i])) {
      err = tl_nomem(c->e);
      break;
    }
    if (n->kind == PF_KIND_ATOM) l->n_leaf++;
    else if (n->kind == PF_KIND_REPEAT) l->n_repeat++;
    else l->n_struct++;
  }
  /* Structure parents: the parent occurrence's slice, or its iteration window. */
  for (size_t b = 0; !err && b < l->bodies.n; b++)
    S->slices->v[body_slice[b]].parent = occ_slice[l->bodies.v[b].rep_occ];
  for (size_t i = 0; !err && i < no; i++) {
    const pf_occ *o = &a->occs.v[i];
    if (o->parent < 0) continue;
    S->slices->v[occ_slice[i]].parent =
        child_body[i] >= 0 ? body_slice[child_body[i]] : occ_slice[o->parent];
  }
  /* Rank timelines and scheduler context. */
  for (size_t k = 0; !err && k < a->rows.n; k++) {
    const pf_row_slice *r = &a->rows.v[k];
    static const int cats[] = {PF_CAT_DIST, PF_CAT_CTX_HOST, PF_CAT_CTX_STEP, PF_CAT_CTX_DEVICE};
    gkey key = r->kind == PF_ROW_RANK ? (gkey){PF_SEC_RANKS, 0, 0, 0, r->a}
                                      : (gkey){PF_SEC_CTX, r->kind, 0, 0, r->a};
    if (add_slice(S, group_of(S, key, PF_PACK_FLAT), PF_SRC_ROW, cats[r->kind], (int64_t)k,
                  r->start, r->end, r->name, NULL))
      err = tl_nomem(c->e);
    if (r->kind == PF_ROW_RANK) l->n_dist++;
    else l->n_context++;
  }
  free(child_body);
  free(body_slice);
  free(occ_slice);
  free(node_name);
  return err;
}

/* Appends S's slices to L's: their groups found (or made) in L, parent links moved by the
** slices L held before. */
static int append_slices(lay *L, lay *S) {
  pf_layout *l = &L->c->l;
  size_t base = L->slices->n, n = S->slices->n;
  int32_t *group = malloc((S->groups->n + 1) * sizeof *group);
  int err = group && base + n < UINT32_MAX - 1 && !TL_VEC_RESERVE(L->slices, base + n)
                ? TL_OK
                : tl_nomem(L->c->e);
  if (!err) TL_VEC_PREFAULT(L->slices, base + n); /* all n are copied in just below */
  for (size_t g = 0; !err && g < S->groups->n; g++)
    if ((group[g] = group_of(L, S->keys.v[g], S->groups->v[g].pack)) < 0) err = tl_nomem(L->c->e);
  for (size_t i = 0; !err && i < n; i++) {
    pf_slice s = S->slices->v[i];
    s.group = group[s.group];
    if (s.parent >= 0) s.parent += (int64_t)base;
    l->slices.v[base + i] = s;
  }
  if (!err) L->slices->n = base + n;
  free(group);
  return err;
}

/* 1 when the layout may use a second thread: not with TRACELOOM_EXPORT_THREADS=1, and below
** 20k slices only where threads are asked for. */
static int layout_threads(size_t work) {
  const char *env = getenv("TRACELOOM_EXPORT_THREADS");
  int asked = env && *env ? atoi(env) : 0;
  return !(asked == 1 || (!asked && work < 20000));
}

static int make_slices(lay *L, tl_timer *tm) {
  double cpu0 = tl_thread_cpu_s();
  pf_ctx *c = L->c;
  pf_analysis *a = &c->a;
  pf_layout *l = &c->l;
  /* launch anchor_n -> first member: a launch anchor has no event (its unit's event is the
  ** launch's graph_event_id), so the members find their atom by the anchor */
  pf_imap launch;
  memset(&launch, 0, sizeof launch);
  int err = TL_OK;
  for (size_t k = 0; !err && k < a->members.n; k++) {
    const pf_member *m = &a->members.v[k];
    if (m->launch_anchor_n >= 0 && !pf_imap_get(&launch, m->launch_anchor_n) &&
        pf_imap_put(&launch, m->launch_anchor_n, (int64_t)k))
      err = tl_nomem(c->e);
  }
  device_work w;
  memset(&w, 0, sizeof w);
  w.L = L, w.launch = &launch;
  pf_slice_vec own_slices = {0};
  pf_group_vec own_groups = {0};
  lay S;
  memset(&S, 0, sizeof S);
  S.c = c, S.slices = &own_slices, S.groups = &own_groups, S.multi_db = L->multi_db;
  S.last[0] = S.last[1] = -1;
  pthread_t th;
  int threaded = !err && layout_threads(a->occs.n + a->calls.n) &&
                 pthread_create(&th, NULL, device_main, &w) == 0;
  if (!err && !threaded) device_main(&w);
  if (!err) err = structure_slices(&S);
  if (threaded) pthread_join(th, NULL);
  if (!err && w.rc)
    err = tl_fail(c->e, "%s", w.e.msg ? w.e.msg : "traceloom_export_perfetto: layout failed");
  if (!err && w.unnamed_calls) {
    uint32_t name = tl_strpool_intern_cstr(a->pool, "runtime call");
    for (size_t i = 0; i < l->slices.n; i++) {
      pf_slice *s = &l->slices.v[i];
      if (s->src == PF_SRC_CALL && s->name == TL_STR_NONE) s->name = name;
    }
    if (name == TL_STR_NOMEM) err = tl_nomem(c->e);
  }
  if (!err) err = append_slices(L, &S);
  double cpu[2] = {tl_thread_cpu_s() - cpu0, threaded ? w.cpu : 0};
  tl_timer_threads(tm, "slices and flows", cpu, 2);
  tl_err_clear(&w.e);
  TL_VEC_FREE(&own_slices);
  TL_VEC_FREE(&own_groups);
  TL_VEC_FREE(&S.keys);
  tl_i64map_free(&S.by_hash);
  pf_imap_free(&launch);
  pf_imap_free(&w.device_slice);
  pf_imap_free(&w.call_slice);
  return err;
}

/* ---- Packing ------------------------------------------------------------------------------ */

/* Tree level of every slice (0 outside the structure), for the tie order. */
static int slice_levels(pf_ctx *c, uint32_t *level) {
  pf_layout *l = &c->l;
  size_t n = l->slices.n;
  for (size_t i = 0; i < n; i++) level[i] = UINT32_MAX;
  TL_VEC(uint32_t) path = {0};
  for (size_t i = 0; i < n; i++) {
    if (level[i] != UINT32_MAX) continue;
    int64_t p = l->slices.v[i].parent;
    if (p < 0 || level[p] != UINT32_MAX) { /* most: no parent, or one made before */
      level[i] = p < 0 ? 0 : level[p] + 1;
      continue;
    }
    path.n = 0;
    int64_t s = (int64_t)i;
    while (s >= 0 && level[s] == UINT32_MAX) {
      if (TL_VEC_PUSH(&path, (uint32_t)s) || path.n > n) break;
      s = l->slices.v[s].parent;
    }
    if (path.n > n || (s >= 0 && level[s] == UINT32_MAX)) {
      TL_VEC_FREE(&path);
      return path.n > n ? tl_fail(c->e, "traceloom_export_perfetto: the occurrence parents "
                                        "form a cycle")
                        : tl_nomem(c->e);
    }
    if (!path.n) { /* could not push the first step */
      TL_VEC_FREE(&path);
      return tl_nomem(c->e);
    }
    uint32_t base = s >= 0 ? level[s] + 1 : 0;
    for (size_t k = path.n; k-- > 0;) level[path.v[k]] = base + (uint32_t)(path.n - 1 - k);
  }
  TL_VEC_FREE(&path);
  return TL_OK;
}

/* x before y in Perfetto's import order within a group: start, longer first, tree level. */
static int import_before(const pf_slice *x, uint32_t lx, const pf_slice *y, uint32_t ly) {
  if (x->start != y->start) return x->start < y->start;
  if (x->end - x->start != y->end - y->start) return x->end - x->start > y->end - y->start;
  return lx < ly;
}

/* Slices in Perfetto's import order: (group, start, longer first, level, creation). A
** stable counting sort by group (group_runs: idx, the end of each group's run in at[g]);
** the groups whose slices were not created in that order (most were: occurrences come in
** preorder, anchors and calls in time order) get stable radix passes from the least
** significant key up (sort_group). */
static int group_runs(pf_ctx *c, uint32_t *idx, uint32_t *level, size_t *at) {
  pf_layout *l = &c->l;
  size_t n = l->slices.n, ng = l->groups.n;
  int err = slice_levels(c, level);
  for (size_t i = 0; i < n; i++) at[l->slices.v[i].group + 1]++;
  for (size_t g = 0; g < ng; g++) at[g + 1] += at[g];
  for (size_t i = 0; i < n; i++) idx[at[l->slices.v[i].group]++] = (uint32_t)i;
  return err;
}

/* 1 when the run r[0..m) is in import order already. */
static int run_in_order(const pf_layout *l, const uint32_t *level, const uint32_t *r, size_t m) {
  for (size_t k = 1; k < m; k++)
    if (import_before(&l->slices.v[r[k]], level[r[k]], &l->slices.v[r[k - 1]], level[r[k - 1]]))
      return 0;
  return 1;
}

/* Stable insertion sort of r[0..m) into import order that gives up (returning 0, r still a
** permutation with equal slices in their order) once it has moved more than budget entries.
** An entry moves only past entries it goes strictly before, so slices that tie keep their
** creation order whether it finishes or not. */
static int insert_sorted(const pf_layout *l, const uint32_t *level, uint32_t *r, size_t m,
                         size_t budget) {
  size_t moved = 0;
  for (size_t k = 1; k < m; k++) {
    uint32_t x = r[k];
    const pf_slice *s = &l->slices.v[x];
    size_t j = k;
    while (j > 0 && import_before(s, level[x], &l->slices.v[r[j - 1]], level[r[j - 1]])) {
      r[j] = r[j - 1];
      j--;
    }
    r[j] = x;
    if ((moved += k - j) > budget) return 0;
  }
  return 1;
}

/* Sorts one group's run r[0..m) into import order; keys: scratch of m entries. Groups come
** nearly in order (host calls in time order, with a stray one; a device's slices node by
** node, each node's occurrences in time order): first an insertion sort that gives up after
** moving m entries; else a radix sort by start, where only slices of one start are left to
** order (longer first, then tree level: the insertion sort again); only where those are
** many (a pile of slices at one time) the three radix passes, from the least significant
** key up. Each step is stable, so the order is (start, longer first, level, creation)
** whichever finishes it. */
static int sort_group(const pf_layout *l, const uint32_t *level, uint32_t *r, size_t m,
                      uint64_t *keys) {
  if (insert_sorted(l, level, r, m, m)) return TL_OK;
  for (size_t i = 0; i < m; i++) keys[i] = tl_order_i64(l->slices.v[r[i]].start);
  if (tl_radix_sort_u64(keys, r, m)) return TL_ERROR;
  if (insert_sorted(l, level, r, m, m)) return TL_OK;
  for (int pass = 0; pass < 3; pass++) {
    for (size_t i = 0; i < m; i++) {
      const pf_slice *s = &l->slices.v[r[i]];
      keys[i] = pass == 0   ? level[r[i]]
                : pass == 1 ? ~(uint64_t)(s->end - s->start)
                            : tl_order_i64(s->start);
    }
    if (tl_radix_sort_u64(keys, r, m)) return TL_ERROR;
  }
  return TL_OK;
}

/* Perfetto closes an open slice at its end, a zero-length one only after its own time. */
static int closed_at(const pf_slice *s, int64_t t) {
  return s->end < t || (s->end == t && s->end > s->start);
}

typedef TL_VEC(uint32_t) u32vec;

/* Packs the slices idx[0..n) of one group into lanes; sets lane (in track) and depth. */
static int pack_group(pf_layout *l, tl_err *e, const pf_group *g, const uint32_t *idx, size_t n,
                      int32_t *nlanes) {
  TL_VEC(u32vec) lanes = {0};
  int err = TL_OK;
  for (size_t i = 0; !err && i < n; i++) {
    pf_slice *s = &l->slices.v[idx[i]];
    int32_t lane = -1;
    for (size_t k = 0; k < lanes.n; k++) { /* close what ended */
      u32vec *st = &lanes.v[k];
      while (st->n && closed_at(&l->slices.v[st->v[st->n - 1]], s->start)) st->n--;
    }
    if (g->pack == PF_PACK_TREE && s->parent >= 0) {
      const pf_slice *p = &l->slices.v[s->parent];
      /* The parent was packed before (import order puts it first) in this group. */
      const u32vec *st = p->group == s->group && p->track >= 0 && (size_t)p->track < lanes.n
                             ? &lanes.v[p->track]
                             : NULL;
      if (st && st->n && st->v[st->n - 1] == (uint32_t)s->parent && s->end <= p->end)
        lane = p->track;
    }
    for (size_t k = 0; lane < 0 && k < lanes.n; k++) {
      u32vec *st = &lanes.v[k];
      if (!st->n) lane = (int32_t)k;
      else if (g->pack == PF_PACK_NEST && s->end <= l->slices.v[st->v[st->n - 1]].end)
        lane = (int32_t)k;
    }
    if (lane < 0) {
      u32vec fresh = {0};
      if (TL_VEC_PUSH(&lanes, fresh)) {
        err = tl_nomem(e);
        break;
      }
      lane = (int32_t)lanes.n - 1;
    }
    s->track = lane;
    s->depth = (int32_t)lanes.v[lane].n;
    if (TL_VEC_PUSH(&lanes.v[lane], idx[i])) err = tl_nomem(e);
  }
  *nlanes = (int32_t)lanes.n;
  for (size_t k = 0; k < lanes.n; k++) TL_VEC_FREE(&lanes.v[k]);
  TL_VEC_FREE(&lanes);
  return err;
}

/* Import order and lanes of the groups [g0, g1): each group's run of idx sorted where it is
** not in order, then packed. Groups share nothing (a slice nests only in a parent of its own
** group), so two threads can take two ranges of groups: the lanes are the same. */
typedef struct group_work {
  pf_layout *l;
  const uint32_t *level;
  const size_t *at; /* at[g]: the end of group g's run in idx */
  uint32_t *idx;
  int32_t *nlanes;
  const uint8_t *ordered; /* ordered[g]: group g's run is in import order (NULL: look) */
  size_t g0, g1;
  tl_err *e;
  int rc;
  double cpu; /* its thread's CPU seconds (TRACELOOM_TIMING) */
} group_work;

static void *group_work_run(void *arg) {
  group_work *w = arg;
  double cpu0 = tl_thread_cpu_s();
  uint64_t *keys = NULL;
  int err = TL_OK;
  for (size_t g = w->g0; !err && g < w->g1; g++) {
    size_t lo = g ? w->at[g - 1] : 0, m = w->at[g] - lo;
    uint32_t *r = w->idx + lo;
    if (!m) continue;
    if (w->ordered ? !w->ordered[g] : !run_in_order(w->l, w->level, r, m)) {
      uint64_t *k = realloc(keys, m * sizeof *keys);
      if (!k || sort_group(w->l, w->level, r, m, k)) err = tl_nomem(w->e);
      if (k) keys = k;
    }
    if (!err) err = pack_group(w->l, w->e, &w->l->groups.v[g], r, m, &w->nlanes[g]);
  }
  free(keys);
  w->rc = err;
  w->cpu = tl_thread_cpu_s() - cpu0;
  return NULL;
}

/* Where the groups split in two halves of about equal work (a group to sort counts four times
** its slices; ordered[g] says which are in order already); 0: one thread
** (TRACELOOM_EXPORT_THREADS=1, or below 20k slices unless threads are asked for). */
static size_t group_split(const pf_layout *l, const uint32_t *level, const size_t *at,
                          const uint32_t *idx, uint8_t *ordered) {
  const char *env = getenv("TRACELOOM_EXPORT_THREADS");
  int asked = env && *env ? atoi(env) : 0;
  size_t ng = l->groups.n;
  if (!ordered || asked == 1 || (!asked && l->slices.n < 20000) || ng < 2) return 0;
  int64_t *w = malloc(ng * sizeof *w), total = 0;
  if (!w) return 0;
  for (size_t g = 0; g < ng; g++) {
    size_t lo = g ? at[g - 1] : 0, m = at[g] - lo;
    ordered[g] = (uint8_t)run_in_order(l, level, idx + lo, m);
    w[g] = (int64_t)m * (ordered[g] ? 1 : 4);
    total += w[g];
  }
  size_t best = 0;
  int64_t best_gap = INT64_MAX, before = 0;
  for (size_t g = 1; g < ng; g++) {
    before += w[g - 1];
    int64_t gap = llabs(total - 2 * before);
    if (gap < best_gap) best_gap = gap, best = g;
  }
  free(w);
  return best;
}

/* ---- Tracks ------------------------------------------------------------------------------- */

static int cmp_gkey(const gkey *x, const gkey *y) {
#define C(f) if (x->f != y->f) return x->f < y->f ? -1 : 1;
  C(section) C(b0) C(b1) C(kind) C(k)
#undef C
  return 0;
}

static int cmp_group_idx(const void *pa, const void *pb, void *ctx) {
  const lay *L = ctx;
  return cmp_gkey(&L->keys.v[*(const int32_t *)pa], &L->keys.v[*(const int32_t *)pb]);
}

static uint32_t box_name(lay *L, const gkey *k) {
  pf_analysis *a = &L->c->a;
  char tmp[256];
  if (k->section == PF_SEC_RANKS) {
    int al = L->c->opts.align;
    snprintf(tmp, sizeof tmp, "ranks \xC2\xB7 %s",
             al == PF_ALIGN_PROVIDER ? "provider timestamps (uncalibrated)"
             : al == PF_ALIGN_CLOCK  ? "collective-end affine aligned"
                                     : "first-event normalized");
  } else if (k->section == PF_SEC_DEVICE) {
    if (L->multi_db)
      snprintf(tmp, sizeof tmp, "device %lld \xC2\xB7 db %lld", (long long)k->b1, (long long)k->b0);
    else
      snprintf(tmp, sizeof tmp, "device %lld", (long long)k->b1);
  } else if (k->section == PF_SEC_HOST) {
    if (L->multi_db) snprintf(tmp, sizeof tmp, "host \xC2\xB7 db %lld", (long long)k->b0);
    else snprintf(tmp, sizeof tmp, "host");
  } else {
    static const char *const names[] = {"", "context \xC2\xB7 host scopes",
                                        "context \xC2\xB7 step envelopes",
                                        "context \xC2\xB7 linked device work"};
    snprintf(tmp, sizeof tmp, "%s", names[k->b0 >= 1 && k->b0 <= 3 ? k->b0 : 0]);
  }
  return tl_strpool_intern_cstr(a->pool, tmp);
}

/* "stream 7", "structure", "thread 1234", "rank 1", "device 0", then " · lane L" for L > 0. */
static uint32_t lane_name(lay *L, const gkey *k, int32_t lane) {
  pf_analysis *a = &L->c->a;
  char tmp[256], what[128];
  if (k->section == PF_SEC_DEVICE && k->kind == GK_STRUCT) snprintf(what, sizeof what, "structure");
  else if (k->section == PF_SEC_DEVICE && k->k == INT64_MAX) snprintf(what, sizeof what, "no stream");
  else if (k->section == PF_SEC_DEVICE) snprintf(what, sizeof what, "stream %lld", (long long)k->k);
  else if (k->section == PF_SEC_HOST && k->k == INT64_MAX) snprintf(what, sizeof what, "no thread");
  else if (k->section == PF_SEC_HOST) snprintf(what, sizeof what, "thread %lld", (long long)k->k);
  else if (k->section == PF_SEC_RANKS)
    snprintf(what, sizeof what, "rank %lld", (long long)k->k);
  else if (k->b0 == PF_ROW_CTX_HOST) snprintf(what, sizeof what, "thread %lld", (long long)k->k);
  else snprintf(what, sizeof what, "device %lld", (long long)k->k);
  if (lane) snprintf(tmp, sizeof tmp, "%s \xC2\xB7 lane %d", what, (int)lane);
  else snprintf(tmp, sizeof tmp, "%s", what);
  return tl_strpool_intern_cstr(a->pool, tmp);
}

static int make_tracks(lay *L, const int32_t *nlanes) {
  pf_ctx *c = L->c;
  pf_layout *l = &c->l;
  size_t ng = l->groups.n;
  int32_t *order = malloc((ng + 1) * sizeof *order);
  if (!order) return tl_nomem(c->e);
  for (size_t i = 0; i < ng; i++) order[i] = (int32_t)i;
  qsort_r(order, ng, sizeof *order, cmp_group_idx, L);
  int err = TL_OK;
  int32_t box = -1, box_rank = 0, lane_rank = 0;
  int64_t pid = 0, tid = 0;
  const gkey *prev = NULL;
  for (size_t i = 0; !err && i < ng; i++) {
    const gkey *k = &L->keys.v[order[i]];
    pf_group *g = &l->groups.v[order[i]];
    if (!prev || prev->section != k->section || prev->b0 != k->b0 || prev->b1 != k->b1) {
      pf_track b = {.name = box_name(L, k), .box = -1, .rank = box_rank++, .json_pid = ++pid,
                    .is_box = 1};
      box = (int32_t)l->tracks.n;
      lane_rank = 0;
      if (b.name == TL_STR_NOMEM || TL_VEC_PUSH(&l->tracks, b)) err = tl_nomem(c->e);
    }
    prev = k;
    g->box = box;
    g->first_track = (int32_t)l->tracks.n;
    g->ntracks = nlanes[order[i]];
    for (int32_t ln = 0; !err && ln < g->ntracks; ln++) {
      pf_track t = {.name = lane_name(L, k, ln), .box = box, .rank = lane_rank++,
                    .json_pid = pid, .json_tid = ++tid};
      if (t.name == TL_STR_NOMEM || TL_VEC_PUSH(&l->tracks, t)) err = tl_nomem(c->e);
    }
    if (k->section == PF_SEC_RANKS) l->n_rank_tracks++;
  }
  free(order);
  return err;
}

/* ---- Entry --------------------------------------------------------------------------------- */

/* Flows in emission order of (from, to), duplicates dropped; flows_by_to orders them by
** (to, from). Positions are < 2^32, so one radix pass over the packed pair sorts them. */
static int order_flows(pf_ctx *c) {
  pf_layout *l = &c->l;
  size_t n = l->flows.n;
  uint64_t *keys = malloc((n + 1) * sizeof *keys);
  uint32_t *vals = malloc((n + 1) * sizeof *vals);
  int err = keys && vals ? TL_OK : tl_nomem(c->e);
  for (size_t i = 0; !err && i < n; i++) {
    keys[i] = (uint64_t)l->pos[l->flows.v[i].from] << 32 | l->pos[l->flows.v[i].to];
    vals[i] = (uint32_t)i;
  }
  if (!err && tl_radix_sort_u64(keys, vals, n)) err = tl_nomem(c->e);
  size_t m = 0;
  for (size_t i = 0; !err && i < n; i++)
    if (!m || keys[i] != keys[m - 1]) keys[m++] = keys[i];
  for (size_t i = 0; !err && i < m; i++) {
    l->flows.v[i].from = l->order[keys[i] >> 32];
    l->flows.v[i].to = l->order[keys[i] & 0xffffffffu];
  }
  if (!err) l->flows.n = m;
  l->flows_by_from = malloc((m + 1) * sizeof *l->flows_by_from);
  l->flows_by_to = malloc((m + 1) * sizeof *l->flows_by_to);
  if (!err && (!l->flows_by_from || !l->flows_by_to)) err = tl_nomem(c->e);
  for (size_t i = 0; !err && i < m; i++) {
    l->flows_by_from[i] = (uint32_t)i;
    l->flows_by_to[i] = (uint32_t)i;
    keys[i] = l->pos[l->flows.v[i].to];
  }
  /* Stable: flows into one slice keep their from order. */
  if (!err && tl_radix_sort_u64(keys, l->flows_by_to, m)) err = tl_nomem(c->e);
  free(keys);
  free(vals);
  return err;
}

int pf_layout_build(pf_ctx *c) {
  pf_layout *l = &c->l;
  lay L;
  memset(&L, 0, sizeof L);
  L.c = c;
  L.slices = &l->slices, L.groups = &l->groups;
  L.last[0] = L.last[1] = -1;
  for (size_t i = 1; i < c->a.nodes.n && !L.multi_db; i++)
    L.multi_db = c->a.nodes.v[i].db != c->a.nodes.v[0].db;
  for (size_t i = 0; i < c->a.calls.n && !L.multi_db; i++)
    L.multi_db = c->a.nodes.n && c->a.calls.v[i].db != c->a.nodes.v[0].db;
  tl_timer tm;
  tl_timer_start(&tm, "export layout");
  int err = make_slices(&L, &tm);
  tl_timer_mark(&tm, "slices and flows");
  size_t n = l->slices.n;
  uint32_t *idx = err ? NULL : malloc((n + 1) * sizeof *idx);
  uint32_t *level = err ? NULL : malloc((n + 1) * sizeof *level);
  size_t *at = err ? NULL : calloc(l->groups.n + 1, sizeof *at);
  int32_t *nlanes = err ? NULL : calloc(l->groups.n + 1, sizeof *nlanes);
  if (!err && (!idx || !level || !at || !nlanes)) err = tl_nomem(c->e);
  if (!err) { /* filled in full (a slot a slice): mapped at once */
    tl_vec_prefault_(idx, n + 1, 0, n + 1, sizeof *idx);
    tl_vec_prefault_(level, n + 1, 0, n + 1, sizeof *level);
  }
  if (!err) err = group_runs(c, idx, level, at);
  /* Each group sorted into import order and packed into lanes; the groups split between
  ** this thread and a worker (same lanes either way). */
  if (!err) {
    uint8_t *ordered = malloc(l->groups.n + 1);
    size_t split = group_split(l, level, at, idx, ordered);
    const uint8_t *known = split ? ordered : NULL;
    tl_err we = {0};
    group_work mine = {l, level, at, idx, nlanes, known, split, l->groups.n, c->e, TL_OK, 0};
    group_work other = {l, level, at, idx, nlanes, known, 0, split, &we, TL_OK, 0};
    pthread_t th;
    int threaded = split && pthread_create(&th, NULL, group_work_run, &other) == 0;
    if (!threaded) mine.g0 = 0;
    group_work_run(&mine);
    if (threaded) pthread_join(th, NULL);
    err = mine.rc;
    if (!err && threaded && other.rc)
      err = tl_fail(c->e, "%s", we.msg ? we.msg : "traceloom_export_perfetto: layout failed");
    tl_err_clear(&we);
    free(ordered);
    double cpu[2] = {mine.cpu, threaded ? other.cpu : 0};
    tl_timer_threads(&tm, "import order and lanes", cpu, 2);
  }
  free(level);
  free(at);
  tl_timer_mark(&tm, "import order and lanes");
  if (!err) err = make_tracks(&L, nlanes);
  /* Emission order: track by track (display order), import order within a track; and the
  ** time origin (every ts = start - origin is >= 0), in the same read of the slices. */
  l->origin = 0;
  if (!err) {
    size_t nt = l->tracks.n;
    int64_t *count = calloc(nt + 1, sizeof *count);
    l->order = malloc((n + 1) * sizeof *l->order);
    l->pos = malloc((n + 1) * sizeof *l->pos);
    if (!count || !l->order || !l->pos) err = tl_nomem(c->e);
    if (!err) {
      tl_vec_prefault_(l->order, n + 1, 0, n + 1, sizeof *l->order);
      tl_vec_prefault_(l->pos, n + 1, 0, n + 1, sizeof *l->pos);
    }
    for (size_t i = 0; !err && i < n; i++) {
      pf_slice *s = &l->slices.v[i];
      s->track += l->groups.v[s->group].first_track;
      count[s->track + 1]++;
      if (i == 0 || s->start < l->origin) l->origin = s->start;
    }
    for (size_t t = 0; !err && t < nt; t++) {
      l->tracks.v[t].first = count[t];
      l->tracks.v[t].n = count[t + 1];
      count[t + 1] += count[t];
    }
    for (size_t i = 0; !err && i < n; i++) {
      int32_t t = l->slices.v[idx[i]].track;
      l->order[count[t]] = idx[i];
      l->pos[idx[i]] = (uint32_t)count[t]++;
    }
    free(count);
  }
  tl_timer_mark(&tm, "tracks and emission order");
  if (!err) err = order_flows(c);
  tl_timer_mark(&tm, "flow order");
  free(idx);
  free(nlanes);
  TL_VEC_FREE(&L.keys);
  tl_i64map_free(&L.by_hash);
  return err;
}

void pf_layout_free(pf_layout *l) {
  TL_VEC_FREE(&l->slices);
  TL_VEC_FREE(&l->bodies);
  TL_VEC_FREE(&l->flows);
  TL_VEC_FREE(&l->groups);
  TL_VEC_FREE(&l->tracks);
  free(l->order);
  free(l->pos);
  free(l->flows_by_from);
  free(l->flows_by_to);
}
