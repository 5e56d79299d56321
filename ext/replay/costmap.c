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
** key (db, graph template, device, slot role, body template, stream, task ordinal, identity):
** the spec's key (recovery.md 7.3), in the order the reference numbers its aggregates, so
** that ties between aggregates (replay-cost-explain takes the first by aggregate_id) break
** alike. By stream, not lane: the layer slots of one role may run on different streams, each
** stream's position its own aggregate. A position whose contributors sit on different lane
** ordinals is lane-inconsistent (no distribution); p25 / median / p75 of durations and
** shares by the reference's rule (quartile(), median()). The three lenses are kept apart: nothing adds an envelope to
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

/* Sorts intervals by start (then end), unless they already are: a lane's tasks mostly are. */
static void sort_intervals(int64_t (*iv)[2], size_t n) {
  for (size_t i = 1; i < n; i++)
    if (iv_cmp(iv[i - 1], iv[i]) > 0) {
      qsort(iv, n, sizeof *iv, iv_cmp);
      return;
    }
}

/* slot: slot_rank; identity: its string id, so two identities at one (stream, position) order by interning
** order, not by text (the reference's text order; they tie only on inconsistent bodies) */
typedef struct agg_key {
  uint16_t db_idx;
  uint32_t graph_template, device_id, slot, body, stream, task, identity;
  int64_t start;
  uint32_t member;
} agg_key;

static int agg_cmp(const void *a, const void *b) {
  const agg_key *x = a, *y = b;
#define C(f) if (x->f != y->f) return x->f < y->f ? -1 : 1
  C(db_idx); C(graph_template); C(device_id); C(slot); C(body); C(stream); C(task);
  C(identity); C(start); C(member);
#undef C
  return 0;
}

static int same_group(const agg_key *x, const agg_key *y) {
  return x->db_idx == y->db_idx && x->graph_template == y->graph_template &&
         x->device_id == y->device_id && x->slot == y->slot && x->body == y->body &&
         x->stream == y->stream && x->task == y->task && x->identity == y->identity;
}

uint32_t tl_replay_member_identity(const tl_trace *t, uint32_t event, int provider) {
  const tl_label *l = tl_event_label(t, event);
  return provider == TL_GRAPH_CUDA ? l->name
         : l->comm_name            ? l->comm_name
         : l->op_type              ? l->op_type
         : l->op_name              ? l->op_name
                                   : l->name;
}

/* A slot role's rank in the order of its name (tl_slot_role_name), the order the reference's
** key sorts its slot_role text in: cuda_graph, generic_slot, head, layer, none, single, tail
** (the enum puts generic_slot after tail). */
static uint32_t slot_rank(uint8_t role) {
  static const uint8_t rank[] = {[TL_SLOT_CUDA] = 0, [TL_SLOT_GENERIC] = 1, [TL_SLOT_HEAD] = 2,
                                 [TL_SLOT_LAYER] = 3, [TL_SLOT_NONE] = 4, [TL_SLOT_SINGLE] = 5,
                                 [TL_SLOT_TAIL] = 6};
  return role < sizeof rank ? rank[role] : UINT8_MAX;
}

/* A member's aggregate key (start and member: its contributor order). */
static agg_key member_key(const tl_trace *t, const tl_replay *r, uint32_t mi) {
  const tl_graph_member *m = &r->members.v[mi];
  const tl_graph_launch *l = &r->launches.v[m->launch];
  return (agg_key){l->db_idx, r->units.v[l->unit].graph_template, l->device_id,
                   slot_rank(l->slot_role), l->body_template, tl_events_stream_id(&t->ev, m->event), m->task_ordinal,
                   tl_replay_member_identity(t, m->event, l->provider),
                   t->ev.start_ns[m->event], mi};
}

/* Orders keys by agg_cmp without comparing 40-byte keys n log n times: each distinct
** group (every field but start and member) gets its rank among the groups, then three
** stable radix sorts by member, start and group rank give exactly agg_cmp's order.
** order[k] is the index into keys of the k-th key. 0, or -1 on out-of-memory. */
static int order_keys(const agg_key *keys, size_t n, uint32_t *order) {
  tl_shapes groups;
  tl_shapes_init(&groups, 8);
  uint64_t *sk = malloc((n ? n : 1) * sizeof *sk);
  uint32_t *gid = malloc((n ? n : 1) * sizeof *gid);
  int rc = sk && gid ? 0 : -1;
  for (size_t k = 0; rc == 0 && k < n; k++) {
    const agg_key *x = &keys[k];
    uint64_t w[8] = {x->db_idx, x->graph_template, x->device_id, x->slot, x->body, x->stream,
                     x->task, x->identity};
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

/* The k-th smallest (0-based) of v[0..n), n > k: Hoare's selection, which reorders v but
** keeps its values, so that several ranks can be taken from one array in turn. */
static int64_t kth_smallest(int64_t *v, size_t n, size_t k) {
  size_t lo = 0, hi = n - 1;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    /* the median of lo, mid, hi as the pivot (sorted data stays linear) */
    int64_t a = v[lo], b = v[mid], c = v[hi];
    int64_t pivot = a < b ? (b < c ? b : a < c ? c : a) : (a < c ? a : b < c ? c : b);
    size_t i = lo, j = hi;
    for (;;) {
      while (v[i] < pivot) i++;
      while (v[j] > pivot) j--;
      if (i >= j) break;
      int64_t x = v[i];
      v[i] = v[j], v[j] = x;
      i++, j--;
    }
    /* v[lo..j] <= pivot <= v[j+1..hi] */
    if (k <= j) hi = j;
    else lo = j + 1;
  }
  return v[k];
}

/* The quartiles and median of a replay position's samples v[0..n), n > 0 (v is reordered),
** as the reference TraceLoom computes them, so that both publish the same numbers: the
** lower and upper quartile (k = 1, 3) is the sample nearest to k quarters of the way along
** the n - 1 gaps of the sorted samples, a tie going up (0-based index ((n - 1) k + 2) / 4);
** the median is the middle sample, or for an even n the floor of the two middle samples'
** mean. Durations and shares are never negative, so lo + (hi - lo) / 2 is that floor. */
static int64_t quartile(int64_t *v, size_t n, size_t k) {
  return kth_smallest(v, n, ((n - 1) * k + 2) / 4);
}

static int64_t median(int64_t *v, size_t n) {
  int64_t hi = kth_smallest(v, n, n / 2);
  if (n % 2) return hi;
  int64_t lo = kth_smallest(v, n, n / 2 - 1);
  return lo + (hi - lo) / 2;
}

/* One aggregate from its contributors list[0..n) in contributor (start, member) order:
** numbers them, sums their work and their launches' task-sums, and takes the quartiles and
** median (above) of durations and shares (vals: scratch of n). 0, or -1 on out-of-memory. */
static int add_aggregate(const tl_trace *t, const tl_replay *r, tl_replay_costs *c,
                         const uint32_t *list, size_t n, int64_t *vals) {
  const tl_events *ev = &t->ev;
  tl_replay_aggregate g;
  memset(&g, 0, sizeof g);
  g.first_member = list[0];
  g.count = (uint32_t)n;
  g.slot = r->launches.v[r->members.v[list[0]].launch].slot_role;
  uint32_t agg = (uint32_t)c->aggregates.n, last_unit = TL_REPLAY_NONE;
  for (size_t k = 0; k < n; k++) {
    const tl_graph_member *m = &r->members.v[list[k]];
    c->member_aggregate[list[k]] = agg;
    c->member_contributor[list[k]] = (uint32_t)k;
    vals[k] = tl_events_end(ev, m->event) - ev->start_ns[m->event];
    g.work_ns += vals[k];
    g.body_task_sum_ns += c->launch[m->launch].task_sum;
    if (m->kind != r->members.v[g.first_member].kind) g.kind_mixed = 1;
    if (m->lane_ordinal != r->members.v[g.first_member].lane_ordinal) g.lane_mixed = 1;
    /* members are in time order, so one unit's members are adjacent */
    uint32_t u = r->launches.v[m->launch].unit;
    if (u != last_unit) g.units++, last_unit = u;
  }
  /* members of one launch are never in one aggregate twice: a launch's lanes are its
  ** streams, and lane and task ordinal are unique within a launch */
  g.launches = g.count;
  g.dur_p25 = quartile(vals, n, 1);
  g.dur_p50 = median(vals, n);
  g.dur_p75 = quartile(vals, n, 3);
  for (size_t k = 0; k < n; k++) vals[k] = c->member_share_ppm[list[k]];
  g.share_p25 = quartile(vals, n, 1);
  g.share_p50 = median(vals, n);
  g.share_p75 = quartile(vals, n, 3);
  return TL_VEC_PUSH(&c->aggregates, g) ? -1 : 0;
}

typedef struct timed_member {
  int64_t start;
  uint32_t member;
} timed_member;

static int timed_cmp(const void *a, const void *b) {
  const timed_member *x = a, *y = b;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return (x->member > y->member) - (x->member < y->member);
}

/* The aggregates without a key per member, when every launch group (db, device, graph
** template, slot role, body template and the stream of the launch's first member) is
** uniform: its launches all have its first launch's (lane, task, stream) sequence. Then slot
** k of a group (member k of each of its launches, in (start, member) order: launch order,
** unless the times say otherwise) is one aggregate, and the aggregates are the groups'
** slots in key order (agg_cmp), unless two slots of different groups share a key (their
** members are one aggregate: the general path). Returns 1 when it applied, 0 when not
** (nothing written), -1 on out-of-memory. */
static int aggregates_by_slot(const tl_trace *t, const tl_replay *r, tl_replay_costs *c,
                              uint32_t *list, int64_t *vals) {
  const tl_events *ev = &t->ev;
  size_t nl = r->launches.n, nslots = 0;
  tl_shapes groups;
  tl_shapes_init(&groups, 6);
  uint32_t *gid = malloc((nl ? nl : 1) * sizeof *gid), *bucket = NULL, *first = NULL;
  uint32_t *rep = NULL, *count = NULL, *slot_group = NULL, *slot_k = NULL;
  agg_key *slots = NULL;
  timed_member *timed = NULL;
  int rc = gid ? 1 : -1;
  for (size_t i = 0; rc == 1 && i < nl; i++) {
    const tl_graph_launch *l = &r->launches.v[i];
    gid[i] = UINT32_MAX;
    if (l->unit == TL_REPLAY_NONE || !l->nmembers) continue;
    uint64_t w[6] = {l->db_idx, l->device_id, r->units.v[l->unit].graph_template, l->slot_role,
                     l->body_template,
                     tl_events_stream_id(ev, r->members.v[l->first_member].event)};
    int fresh;
    int64_t id = tl_shapes_intern(&groups, w, &fresh);
    if (id < 0) rc = -1;
    else gid[i] = (uint32_t)(id - 1);
  }
  size_t ng = groups.n;
  if (rc == 1) {
    rep = malloc((ng ? ng : 1) * sizeof *rep);
    count = calloc(ng ? ng : 1, sizeof *count);
    first = malloc((ng ? ng : 1) * sizeof *first);
    bucket = malloc((nl ? nl : 1) * sizeof *bucket);
    timed = malloc((nl ? nl : 1) * sizeof *timed);
    if (!rep || !count || !first || !bucket || !timed) rc = -1;
  }
  for (size_t i = 0; rc == 1 && i < nl; i++) {
    if (gid[i] == UINT32_MAX) continue;
    const tl_graph_launch *l = &r->launches.v[i];
    if (!count[gid[i]]++) {
      rep[gid[i]] = (uint32_t)i;
      nslots += l->nmembers;
      continue;
    }
    const tl_graph_launch *l0 = &r->launches.v[rep[gid[i]]];
    if (l->nmembers != l0->nmembers) rc = 0;
    for (uint32_t k = 0; rc == 1 && k < l->nmembers; k++) {
      const tl_graph_member *m = &r->members.v[l->first_member + k];
      const tl_graph_member *m0 = &r->members.v[l0->first_member + k];
      if (m->lane_ordinal != m0->lane_ordinal || m->task_ordinal != m0->task_ordinal ||
          tl_events_stream_id(ev, m->event) != tl_events_stream_id(ev, m0->event))
        rc = 0;
    }
  }
  if (rc == 1) { /* each group's launches, in launch order; every group's slots, by key */
    uint32_t sum = 0;
    for (size_t g = 0; g < ng; g++) first[g] = sum, sum += count[g];
    for (size_t i = 0; i < nl; i++)
      if (gid[i] != UINT32_MAX) bucket[first[gid[i]]++] = (uint32_t)i;
    for (size_t g = 0; g < ng; g++) first[g] -= count[g];
    slots = malloc((nslots ? nslots : 1) * sizeof *slots);
    slot_group = malloc((nslots ? nslots : 1) * sizeof *slot_group);
    slot_k = malloc((nslots ? nslots : 1) * sizeof *slot_k);
    if (!slots || !slot_group || !slot_k) rc = -1;
  }
  if (rc == 1) {
    size_t j = 0;
    for (size_t g = 0; g < ng; g++) {
      const tl_graph_launch *l0 = &r->launches.v[rep[g]];
      for (uint32_t k = 0; k < l0->nmembers; k++, j++) {
        slots[j] = member_key(t, r, l0->first_member + k);
        slots[j].start = 0, slots[j].member = (uint32_t)j;
        slot_group[j] = (uint32_t)g, slot_k[j] = k;
      }
    }
    qsort(slots, nslots, sizeof *slots, agg_cmp);
    for (size_t x = 1; rc == 1 && x < nslots; x++)
      if (same_group(&slots[x - 1], &slots[x])) rc = 0;
  }
  for (size_t j = 0; rc == 1 && j < nslots; j++) {
    uint32_t g = slot_group[slots[j].member], k = slot_k[slots[j].member], n = count[g];
    const uint32_t *launches = bucket + first[g];
    int ordered = 1;
    for (uint32_t x = 0; x < n; x++) {
      uint32_t mi = r->launches.v[launches[x]].first_member + k;
      timed[x] = (timed_member){ev->start_ns[r->members.v[mi].event], mi};
      if (x && timed_cmp(&timed[x - 1], &timed[x]) > 0) ordered = 0;
    }
    if (!ordered) qsort(timed, n, sizeof *timed, timed_cmp);
    for (uint32_t x = 0; x < n; x++) list[x] = timed[x].member;
    if (add_aggregate(t, r, c, list, n, vals)) rc = -1;
  }
  tl_shapes_free(&groups);
  free(gid), free(bucket), free(first), free(rep), free(count), free(timed);
  free(slots), free(slot_group), free(slot_k);
  return rc;
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
  uint32_t *order = NULL, *list = NULL;
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
      int64_t s = ev->start_ns[m->event], d = tl_events_end(ev, m->event) - s;
      iv[k][0] = s, iv[k][1] = tl_events_end(ev, m->event);
      if (s < lo) lo = s;
      if (iv[k][1] > hi) hi = iv[k][1];
      lc->task_sum += d;
      if (m->kind == TL_MEMBER_COMPUTE) lc->compute += d;
      else if (m->kind == TL_MEMBER_COMMUNICATION) lc->communication += d;
      else lc->data_move += d;
    }
    lc->first_start = lo;
    lc->envelope = hi - lo;
    sort_intervals(iv, l->nmembers);
    lc->busy_union = union_length(iv, l->nmembers);
    /* Lanes: members are stored lane by lane, so each lane is a contiguous run. */
    for (uint32_t k = 0; k < l->nmembers;) {
      uint32_t lane = r->members.v[l->first_member + k].lane_ordinal, j = k;
      tl_lane_cost lcst;
      memset(&lcst, 0, sizeof lcst);
      lcst.launch = (uint32_t)i, lcst.lane = lane, lcst.consistent = 1;
      lcst.stream_id = tl_events_stream_id(ev, r->members.v[l->first_member + k].event);
      for (; j < l->nmembers && r->members.v[l->first_member + j].lane_ordinal == lane; j++) {
        const tl_graph_member *m = &r->members.v[l->first_member + j];
        int64_t s = ev->start_ns[m->event], d = tl_events_end(ev, m->event) - s;
        iv[j - k][0] = s, iv[j - k][1] = tl_events_end(ev, m->event);
        if (tl_events_stream_id(ev, m->event) != lcst.stream_id) lcst.consistent = 0;
        lcst.task_sum += d;
        if (m->kind == TL_MEMBER_COMPUTE) lcst.compute += d;
        else if (m->kind == TL_MEMBER_COMMUNICATION) lcst.communication += d;
        else lcst.data_move += d;
      }
      lcst.count = j - k;
      sort_intervals(iv, j - k);
      lcst.busy_union = union_length(iv, j - k);
      if (TL_VEC_PUSH(&c->lanes, lcst)) goto nomem;
      k = j;
    }
    for (uint32_t k = 0; k < l->nmembers; k++) {
      const tl_graph_member *m = &r->members.v[l->first_member + k];
      int64_t d = tl_events_end(ev, m->event) - ev->start_ns[m->event];
      c->member_share_ppm[l->first_member + k] =
          lc->task_sum > 0 ? (int64_t)((__int128)d * 1000000 / lc->task_sum) : 0;
    }
  }
  /* Aggregates over promoted members: by slot where every launch group is uniform (one pass),
  ** else by ordering every member's key. */
  vals = malloc((npromoted_members ? npromoted_members : 1) * sizeof *vals);
  list = malloc((npromoted_members ? npromoted_members : 1) * sizeof *list);
  if (!vals || !list) goto nomem;
  int by_slot = aggregates_by_slot(t, r, c, list, vals);
  if (by_slot < 0) goto nomem;
  if (by_slot) goto done;
  keys = malloc((npromoted_members ? npromoted_members : 1) * sizeof *keys);
  if (!keys) goto nomem;
  size_t nk = 0;
  for (size_t i = 0; i < nl; i++) {
    const tl_graph_launch *l = &r->launches.v[i];
    if (l->unit == TL_REPLAY_NONE) continue;
    for (uint32_t k = 0; k < l->nmembers; k++) {
      keys[nk++] = member_key(t, r, l->first_member + k);
    }
  }
  order = malloc((nk ? nk : 1) * sizeof *order);
  if (!order || order_keys(keys, nk, order)) goto nomem;
  for (size_t k = 0; k < nk; k++) list[k] = keys[order[k]].member;
  for (size_t a = 0; a < nk;) {
    size_t b = a + 1;
    while (b < nk && same_group(&keys[order[a]], &keys[order[b]])) b++;
    if (add_aggregate(t, r, c, list + a, b - a, vals)) goto nomem;
    a = b;
  }
  goto done;
nomem:
  rc = tl_nomem(e);
  tl_replay_costs_free(c);
done:
  free(iv);
  free(list);
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
