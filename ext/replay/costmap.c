/*
** costmap.c: the replay cost map (outputs.md 3.3, recovery.md 7.3) on plain arrays.
**
** Per promoted launch, over its exact members (never its envelope):
**   task_sum_ns   = sum of member durations (scheduled work, not wall-clock);
**   busy_union_ns = length of the union of member intervals (overlap-safe busy time);
**   envelope_ns   = last member end - first member start (includes gaps);
**   compute / communication / data_move ns partition task_sum_ns.
** Per (launch, lane) the same for one stream. Per member its scheduled-work share,
** trunc(duration * 10^6 / body task_sum) (0 and unsupported when the sum is 0).
** Aggregates collapse one body position over every replay of a graph template role
** ("role_collapsed": all layer slots of a head + layer x N + tail composition together):
** key (db, device, graph template, slot role, body template, lane, task ordinal), so every
** contributor has the same identity by construction; nearest-rank p25 / median / p75 of
** durations and shares. The three lenses are kept apart: nothing adds an envelope to
** member durations.
*/
#include "replay/replay.h"
#include "publish/shapes.h"
#include "util/sort.h"

#include <stdlib.h>
#include <string.h>

static int64_t union_length(int64_t (*iv)[2], size_t n) {
  /* iv sorted by start */
  int64_t total = 0, cs = 0, ce = 0;
  int open = 0;
  for (size_t i = 0; i < n; i++) {
    if (!open || iv[i][0] > ce) {
      if (open) total += ce - cs;
      cs = iv[i][0], ce = iv[i][1], open = 1;
    } else if (iv[i][1] > ce) {
      ce = iv[i][1];
    }
  }
  if (open) total += ce - cs;
  return total;
}

static int iv_cmp(const void *a, const void *b) {
  const int64_t *x = a, *y = b;
  if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
  return (x[1] > y[1]) - (x[1] < y[1]);
}

typedef struct agg_key {
  uint16_t db_idx;
  uint32_t device_id, graph_template, slot, body, lane, task;
  int64_t start;
  uint32_t member;
} agg_key;

static int agg_cmp(const void *a, const void *b) {
  const agg_key *x = a, *y = b;
#define C(f) if (x->f != y->f) return x->f < y->f ? -1 : 1
  C(db_idx); C(device_id); C(graph_template); C(slot); C(body); C(lane); C(task); C(start);
  C(member);
#undef C
  return 0;
}

static int same_group(const agg_key *x, const agg_key *y) {
  return x->db_idx == y->db_idx && x->device_id == y->device_id &&
         x->graph_template == y->graph_template && x->slot == y->slot && x->body == y->body &&
         x->lane == y->lane && x->task == y->task;
}

static int i64_cmp(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Orders keys by agg_cmp without comparing 40-byte keys n log n times: each distinct
** group (every field but start and member) gets its rank among the groups, then three
** stable radix sorts by member, start and group rank give exactly agg_cmp's order.
** order[k] is the index into keys of the k-th key. 0, or -1 on out-of-memory. */
static int order_keys(const agg_key *keys, size_t n, uint32_t *order) {
  tl_shapes groups;
  tl_shapes_init(&groups, 7);
  uint64_t *sk = malloc((n ? n : 1) * sizeof *sk);
  uint32_t *gid = malloc((n ? n : 1) * sizeof *gid);
  int rc = sk && gid ? 0 : -1;
  for (size_t k = 0; rc == 0 && k < n; k++) {
    const agg_key *x = &keys[k];
    uint64_t w[7] = {x->db_idx, x->device_id, x->graph_template, x->slot, x->body, x->lane,
                     x->task};
    int fresh;
    int64_t id = tl_shapes_intern(&groups, w, &fresh);
    if (id < 0) rc = -1;
    else gid[k] = (uint32_t)(id - 1);
  }
  /* Rank of each distinct group in agg_cmp order (a few thousand groups at most). */
  size_t ng = groups.n;
  agg_key *g = rc == 0 ? calloc(ng ? ng : 1, sizeof *g) : NULL;
  uint32_t *rank = rc == 0 ? malloc((ng ? ng : 1) * sizeof *rank) : NULL;
  if (rc == 0 && (!g || !rank)) rc = -1;
  for (size_t k = 0; rc == 0 && k < n; k++) {
    g[gid[k]] = keys[k];
    g[gid[k]].start = 0, g[gid[k]].member = gid[k]; /* member: back to the group id */
  }
  if (rc == 0) {
    qsort(g, ng, sizeof *g, agg_cmp);
    for (size_t j = 0; j < ng; j++) rank[g[j].member] = (uint32_t)j;
  }
  for (size_t k = 0; rc == 0 && k < n; k++) order[k] = (uint32_t)k, sk[k] = keys[k].member;
  if (rc == 0) rc = tl_radix_sort_u64(sk, order, n);
  for (size_t k = 0; rc == 0 && k < n; k++) sk[k] = tl_order_i64(keys[order[k]].start);
  if (rc == 0) rc = tl_radix_sort_u64(sk, order, n);
  for (size_t k = 0; rc == 0 && k < n; k++) sk[k] = rank[gid[order[k]]];
  if (rc == 0) rc = tl_radix_sort_u64(sk, order, n);
  tl_shapes_free(&groups);
  free(sk), free(gid), free(g), free(rank);
  return rc;
}

/* Nearest-rank percentile q (0..100) of sorted v[0..n). */
static int64_t nearest_rank(const int64_t *v, size_t n, int q) {
  size_t rank = (n * (size_t)q + 99) / 100;
  if (rank < 1) rank = 1;
  return v[rank - 1];
}

int tl_replay_costs_build(const tl_trace *t, const tl_replay *r, tl_replay_costs *c,
                          tl_err *e) {
  memset(c, 0, sizeof *c);
  const tl_events *ev = &t->ev;
  size_t nl = r->launches.n, nm = r->members.n;
  c->launch = calloc(nl ? nl : 1, sizeof *c->launch);
  c->member_share_ppm = calloc(nm ? nm : 1, sizeof *c->member_share_ppm);
  c->member_aggregate = malloc((nm ? nm : 1) * sizeof *c->member_aggregate);
  c->member_contributor = calloc(nm ? nm : 1, sizeof *c->member_contributor);
  int64_t (*iv)[2] = NULL;
  size_t iv_cap = 0;
  agg_key *keys = NULL;
  int64_t *vals = NULL;
  uint32_t *order = NULL;
  int rc = TL_OK;
  if (!c->launch || !c->member_share_ppm || !c->member_aggregate || !c->member_contributor)
    goto nomem;
  for (size_t m = 0; m < nm; m++) c->member_aggregate[m] = TL_REPLAY_NONE;
  size_t npromoted_members = 0;
  for (size_t i = 0; i < nl; i++) {
    const tl_graph_launch *l = &r->launches.v[i];
    tl_launch_cost *lc = &c->launch[i];
    if (l->unit == TL_REPLAY_NONE || !l->nmembers) continue;
    npromoted_members += l->nmembers;
    if (l->nmembers > iv_cap) {
      iv_cap = l->nmembers * 2;
      free(iv);
      iv = malloc(iv_cap * sizeof *iv);
      if (!iv) goto nomem;
    }
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (uint32_t k = 0; k < l->nmembers; k++) {
      const tl_graph_member *m = &r->members.v[l->first_member + k];
      int64_t s = ev->start_ns[m->event], d = ev->end_ns[m->event] - s;
      iv[k][0] = s, iv[k][1] = ev->end_ns[m->event];
      if (s < lo) lo = s;
      if (iv[k][1] > hi) hi = iv[k][1];
      lc->task_sum += d;
      if (m->kind == TL_MEMBER_COMPUTE) lc->compute += d;
      else if (m->kind == TL_MEMBER_COMMUNICATION) lc->communication += d;
      else lc->data_move += d;
    }
    lc->first_start = lo;
    lc->envelope = hi - lo;
    qsort(iv, l->nmembers, sizeof *iv, iv_cmp);
    lc->busy_union = union_length(iv, l->nmembers);
    /* Lanes: members are stored lane by lane, so each lane is a contiguous run. */
    for (uint32_t k = 0; k < l->nmembers;) {
      uint32_t lane = r->members.v[l->first_member + k].lane_ordinal, j = k;
      tl_lane_cost lcst;
      memset(&lcst, 0, sizeof lcst);
      lcst.launch = (uint32_t)i, lcst.lane = lane, lcst.consistent = 1;
      lcst.stream_id = ev->stream_id[r->members.v[l->first_member + k].event];
      for (; j < l->nmembers && r->members.v[l->first_member + j].lane_ordinal == lane; j++) {
        const tl_graph_member *m = &r->members.v[l->first_member + j];
        int64_t s = ev->start_ns[m->event], d = ev->end_ns[m->event] - s;
        iv[j - k][0] = s, iv[j - k][1] = ev->end_ns[m->event];
        if (ev->stream_id[m->event] != lcst.stream_id) lcst.consistent = 0;
        lcst.task_sum += d;
        if (m->kind == TL_MEMBER_COMPUTE) lcst.compute += d;
        else if (m->kind == TL_MEMBER_COMMUNICATION) lcst.communication += d;
        else lcst.data_move += d;
      }
      lcst.count = j - k;
      qsort(iv, j - k, sizeof *iv, iv_cmp);
      lcst.busy_union = union_length(iv, j - k);
      if (TL_VEC_PUSH(&c->lanes, lcst)) goto nomem;
      k = j;
    }
    for (uint32_t k = 0; k < l->nmembers; k++) {
      const tl_graph_member *m = &r->members.v[l->first_member + k];
      int64_t d = ev->end_ns[m->event] - ev->start_ns[m->event];
      c->member_share_ppm[l->first_member + k] =
          lc->task_sum > 0 ? (int64_t)((__int128)d * 1000000 / lc->task_sum) : 0;
    }
  }
  /* Aggregates over promoted members. */
  keys = malloc((npromoted_members ? npromoted_members : 1) * sizeof *keys);
  vals = malloc((npromoted_members ? npromoted_members : 1) * sizeof *vals);
  if (!keys || !vals) goto nomem;
  size_t nk = 0;
  for (size_t i = 0; i < nl; i++) {
    const tl_graph_launch *l = &r->launches.v[i];
    if (l->unit == TL_REPLAY_NONE) continue;
    for (uint32_t k = 0; k < l->nmembers; k++) {
      uint32_t mi = l->first_member + k;
      const tl_graph_member *m = &r->members.v[mi];
      agg_key key = {l->db_idx, l->device_id, r->units.v[l->unit].graph_template, l->slot_role,
                     l->body_template, m->lane_ordinal, m->task_ordinal,
                     ev->start_ns[m->event], mi};
      keys[nk++] = key;
    }
  }
  order = malloc((nk ? nk : 1) * sizeof *order);
  if (!order || order_keys(keys, nk, order)) goto nomem;
#define KEY(k) (&keys[order[k]])
  for (size_t a = 0; a < nk;) {
    size_t b = a + 1;
    while (b < nk && same_group(KEY(a), KEY(b))) b++;
    tl_replay_aggregate g;
    memset(&g, 0, sizeof g);
    g.first_member = KEY(a)->member;
    g.count = (uint32_t)(b - a);
    g.slot = KEY(a)->slot;
    uint32_t agg = (uint32_t)c->aggregates.n;
    for (size_t k = a; k < b; k++) {
      c->member_aggregate[KEY(k)->member] = agg;
      c->member_contributor[KEY(k)->member] = (uint32_t)(k - a + 1);
      const tl_graph_member *m = &r->members.v[KEY(k)->member];
      vals[k - a] = ev->end_ns[m->event] - ev->start_ns[m->event];
      g.work_ns += vals[k - a];
      g.body_task_sum_ns += c->launch[m->launch].task_sum;
      if (m->kind != r->members.v[g.first_member].kind) g.kind_mixed = 1;
    }
    /* distinct replay units and launches (members of one launch are never in one group
    ** twice: lane and task ordinal are unique within a launch) */
    g.launches = g.count;
    {
      uint32_t units = 0, last = TL_REPLAY_NONE;
      for (size_t k = a; k < b; k++) {
        uint32_t u = r->launches.v[r->members.v[KEY(k)->member].launch].unit;
        if (u != last) units++, last = u;
      }
      g.units = units; /* members are in time order, so one unit's members are adjacent */
    }
    qsort(vals, b - a, sizeof *vals, i64_cmp);
    g.dur_p25 = nearest_rank(vals, b - a, 25);
    g.dur_p50 = nearest_rank(vals, b - a, 50);
    g.dur_p75 = nearest_rank(vals, b - a, 75);
    for (size_t k = a; k < b; k++) vals[k - a] = c->member_share_ppm[KEY(k)->member];
    qsort(vals, b - a, sizeof *vals, i64_cmp);
    g.share_p25 = nearest_rank(vals, b - a, 25);
    g.share_p50 = nearest_rank(vals, b - a, 50);
    g.share_p75 = nearest_rank(vals, b - a, 75);
    if (TL_VEC_PUSH(&c->aggregates, g)) goto nomem;
    a = b;
  }
#undef KEY
  goto done;
nomem:
  rc = tl_nomem(e);
  tl_replay_costs_free(c);
done:
  free(iv);
  free(keys);
  free(order);
  free(vals);
  return rc;
}

void tl_replay_costs_free(tl_replay_costs *c) {
  free(c->launch);
  free(c->member_share_ppm);
  free(c->member_aggregate);
  free(c->member_contributor);
  TL_VEC_FREE(&c->lanes);
  TL_VEC_FREE(&c->aggregates);
  memset(c, 0, sizeof *c);
}
