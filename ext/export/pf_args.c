/*
** pf_args.c: the args of every slice of the Perfetto export, written once through pf_argw
** so that the JSON and the protobuf trace carry the same keys and values.
**
** Structure slices carry what identifies and costs them (perfetto.md 5.1, 5.2): node and
** occurrence, repeat context, rooted path, topology signature, anchor range, the cost lenses
** in microseconds. An atom is drawn twice, as a leaf of the structure (its identity only) and
** on its stream (perfetto.md 5.3: identity, anchor, costs, event and stream). Replay members
** carry the launch and member identity (6.4), host calls their id and correlation, rows
** (ranks, context) the typed args read with them.
*/
#include "export/pf.h"

#include <stdio.h>
#include <string.h>

#define PF_KEY_NAME(k) #k,
const char *const pf_key_names[PF_NKEYS] = {PF_KEYS(PF_KEY_NAME)};
#undef PF_KEY_NAME

int pf_ns_key(int key) {
  switch (key) {
  case PF_K_compute_us: return PF_K_compute_ns;
  case PF_K_comm_us: return PF_K_comm_ns;
  case PF_K_idle_us: return PF_K_idle_ns;
  case PF_K_total_us: return PF_K_total_ns;
  case PF_K_self_us: return PF_K_self_ns;
  case PF_K_aux_us: return PF_K_aux_ns;
  default: return key;
  }
}

int pf_n_key(int key) {
  switch (key) {
  case PF_K_event_id: return PF_K_event_n;
  case PF_K_runtime_call_id: return PF_K_call_n;
  case PF_K_aggregate_id: return PF_K_aggregate_n;
  case PF_K_node_id: return PF_K_node_n;
  case PF_K_repeat_node_id: return PF_K_repeat_node_n;
  default: return key;
  }
}

static void put_id(pf_argw *w, int key, const char *prefix, int64_t n) {
  w->id(w, key, prefix, n);
}

static void put_costs(pf_argw *w, int64_t first, int64_t end, int64_t anchors,
                      const int64_t *cost, int64_t aux_events) {
  static const int keys[] = {PF_K_compute_us, PF_K_comm_us, PF_K_idle_us, PF_K_total_us,
                             PF_K_self_us};
  w->i64(w, PF_K_anchor_start_idx, first + 1);
  w->i64(w, PF_K_anchor_end_idx, end);
  w->i64(w, PF_K_anchor_count, anchors);
  for (int k = 0; k < 5; k++) w->us(w, keys[k], cost[k]);
  w->i64(w, PF_K_aux_events, aux_events);
  w->us(w, PF_K_aux_us, cost[PF_C_AUX]);
}

static void put_identity(const pf_analysis *a, pf_argw *w, const pf_occ *o) {
  const pf_node *n = &a->nodes.v[o->node];
  w->pool(w, PF_K_semantic_kind, a->strs[PF_STR_PUBLISHED]);
  w->ref(w, PF_K_node_id, n->node_id, n->node_n);
  w->i64(w, PF_K_occurrence_idx, o->occ_idx);
  w->i64(w, PF_K_database_index, n->db);
  w->i64(w, PF_K_device_id, n->dev);
  w->pool(w, PF_K_view_name, n->view);
  w->pool(w, PF_K_parent_node_id, n->parent);
}

/* The common args of perfetto.md 4.2. */
static void put_plane(const pf_analysis *a, pf_argw *w, int64_t db, int event, int64_t depth,
                      int replay) {
  w->i64(w, PF_K_db_idx, db);
  w->pool(w, PF_K_projection_plane, a->strs[event ? PF_STR_DEVICE_EVENTS : PF_STR_STRUCTURE]);
  if (event) w->null(w, PF_K_display_depth);
  else w->i64(w, PF_K_display_depth, depth);
  w->boolean(w, PF_K_replay_derived, replay);
}

/* A seq or repeat occurrence of the structure. */
static void occurrence_args(const pf_ctx *c, const pf_slice *s, pf_argw *w) {
  const pf_analysis *a = &c->a;
  const pf_occ *o = &a->occs.v[s->ref];
  const pf_node *n = &a->nodes.v[o->node];
  put_identity(a, w, o);
  w->pool(w, PF_K_repeat_context, o->repeat_context);
  w->pool(w, PF_K_rooted_role_path, o->rooted_path);
  w->i64(w, PF_K_tree_depth, n->tree_depth);
  w->text(w, PF_K_topology_signature_sha256, a->topo.v[n->topo].sha, 64);
  if (n->kind == PF_KIND_REPEAT) {
    char alias[16];
    pf_motif_alias(n->motif, alias);
    w->text(w, PF_K_motif_alias, alias, strlen(alias));
    w->i64(w, PF_K_repeat_count, n->repeat_count);
  }
  put_costs(w, o->anchor_first, o->anchor_end, o->anchor_end - o->anchor_first, o->cost,
            o->aux_events);
  put_plane(a, w, n->db, 0, s->depth, 0);
}

/* An atom as a leaf of the structure: which occurrence and event it is. */
static void leaf_args(const pf_ctx *c, const pf_slice *s, pf_argw *w) {
  const pf_analysis *a = &c->a;
  const pf_occ *o = &a->occs.v[s->ref];
  w->ref(w, PF_K_node_id, a->nodes.v[o->node].node_id, a->nodes.v[o->node].node_n);
  w->i64(w, PF_K_occurrence_idx, o->occ_idx);
  if (o->event_n >= 0) put_id(w, PF_K_event_id, "event-", o->event_n);
}

/* An atom on its stream: the device-event plane. */
static void atom_args(const pf_ctx *c, const pf_slice *s, pf_argw *w) {
  const pf_analysis *a = &c->a;
  const pf_occ *o = &a->occs.v[s->ref];
  const pf_node *n = &a->nodes.v[o->node];
  put_identity(a, w, o);
  w->i64(w, PF_K_tree_depth, n->tree_depth);
  put_costs(w, o->anchor_first, o->anchor_end, o->anchor_end - o->anchor_first, o->cost,
            o->aux_events);
  w->pool(w, PF_K_symbol, n->label);
  if (o->event_n >= 0) put_id(w, PF_K_event_id, "event-", o->event_n);
  else w->null(w, PF_K_event_id);
  if (o->has_stream) w->i64(w, PF_K_stream_id, o->stream);
  else w->null(w, PF_K_stream_id);
  put_plane(a, w, n->db, 1, 0, 0);
}

/* One iteration window of a repeat occurrence (perfetto.md 5.2). */
static void body_args(const pf_ctx *c, const pf_slice *s, pf_argw *w) {
  const pf_analysis *a = &c->a;
  const pf_body *bd = &c->l.bodies.v[s->ref];
  const pf_occ *ro = &a->occs.v[bd->rep_occ];
  const pf_node *n = &a->nodes.v[ro->node];
  char alias[16], tmp[1024];
  pf_motif_alias(n->motif, alias);
  w->pool(w, PF_K_semantic_kind, a->strs[PF_STR_BODY]);
  w->text(w, PF_K_motif_alias, alias, strlen(alias));
  w->ref(w, PF_K_repeat_node_id, n->node_id, n->node_n);
  w->i64(w, PF_K_aggregate_occurrence_idx, ro->occ_idx);
  w->i64(w, PF_K_body_ordinal, bd->ordinal);
  w->i64(w, PF_K_repeat_count, n->repeat_count);
  int len = snprintf(tmp, sizeof tmp, "%s@%lld/body-%lld", tl_strpool_str(a->pool, n->node_id),
                     (long long)ro->occ_idx, (long long)bd->ordinal);
  w->text(w, PF_K_body_id, tmp, (size_t)len < sizeof tmp ? (size_t)len : sizeof tmp - 1);
  w->i64(w, PF_K_database_index, n->db);
  w->i64(w, PF_K_device_id, n->dev);
  w->pool(w, PF_K_view_name, n->view);
  w->pool(w, PF_K_parent_node_id, n->parent);
  const char *pctx = tl_strpool_str(a->pool, ro->repeat_context);
  len = snprintf(tmp, sizeof tmp, "%s%s%s#%lld", pctx, *pctx ? "/" : "",
                 tl_strpool_str(a->pool, n->local), (long long)bd->ordinal);
  w->text(w, PF_K_repeat_context, tmp, (size_t)len < sizeof tmp ? (size_t)len : sizeof tmp - 1);
  w->pool(w, PF_K_rooted_role_path, ro->rooted_path);
  w->i64(w, PF_K_tree_depth, n->tree_depth);
  w->text(w, PF_K_topology_signature_sha256, a->topo.v[n->topo].sha, 64);
  w->i64(w, PF_K_body_child_occurrences, bd->children);
  put_costs(w, bd->anchor_first, bd->anchor_end, bd->anchors, bd->cost, bd->aux_events);
  put_plane(a, w, n->db, 0, s->depth, 0);
}

/* perfetto.md 6.4: the launch part, then the member part. */
static void member_args(const pf_ctx *c, const pf_slice *s, pf_argw *w) {
  const pf_analysis *a = &c->a;
  const pf_member *m = &a->members.v[s->ref];
  const pf_occ *o = &a->occs.v[m->occ];
  const pf_node *n = &a->nodes.v[o->node];
  w->pool(w, PF_K_semantic_kind, a->strs[PF_STR_MEMBER]);
  w->pool(w, PF_K_launch_id, m->launch_id);
  w->i64(w, PF_K_device_id, m->device);
  if (m->has_stream) w->i64(w, PF_K_stream_id, m->stream_id);
  else w->null(w, PF_K_stream_id);
  w->pool(w, PF_K_anchor_id, m->anchor_id);
  w->i64(w, PF_K_replay_unit_id, m->unit); /* the relation's integer id */
  w->pool(w, PF_K_geometry, a->strs[PF_STR_GEOMETRY]);
  w->pool(w, PF_K_member_id, m->member_id);
  if (m->event_n >= 0) put_id(w, PF_K_event_id, "event-", m->event_n);
  else w->pool(w, PF_K_event_id, m->event_id);
  w->i64(w, PF_K_lane_ordinal, m->lane);
  w->i64(w, PF_K_task_ordinal, m->task);
  w->i64(w, PF_K_position_ordinal, m->order);
  put_id(w, PF_K_aggregate_id, "replay-cost-aggregate-", m->aggregate);
  w->pool(w, PF_K_kind, m->kind);
  w->pool(w, PF_K_launch_event_id, m->launch_event);
  w->ref(w, PF_K_node_id, n->node_id, n->node_n);
  w->i64(w, PF_K_occurrence_idx, o->occ_idx);
  w->i64(w, PF_K_database_index, n->db);
  w->pool(w, PF_K_view_name, n->view);
  put_plane(a, w, n->db, 1, 0, 1);
}

static void call_args(const pf_ctx *c, const pf_slice *s, pf_argw *w) {
  const pf_call *h = &c->a.calls.v[s->ref];
  put_id(w, PF_K_runtime_call_id, "runtime-call-", h->call_n);
  if (h->has_correlation) w->i64(w, PF_K_correlation_id, h->correlation);
  else w->null(w, PF_K_correlation_id);
  w->i64(w, PF_K_db_idx, h->db);
}

static void row_args(const pf_ctx *c, const pf_slice *s, pf_argw *w) {
  const pf_row_slice *r = &c->a.rows.v[s->ref];
  for (size_t i = 0; i < r->kv_n; i++) {
    const pf_kv *kv = &c->a.kv.v[r->kv_off + i];
    if (kv->type == PF_KV_I64) w->i64(w, kv->key, kv->i);
    else if (kv->type == PF_KV_US) w->us(w, kv->key, kv->i);
    else if (kv->type == PF_KV_STR) w->pool(w, kv->key, kv->s);
    else w->null(w, kv->key);
  }
}

void pf_slice_args(const pf_ctx *c, const pf_slice *s, pf_argw *w) {
  switch (s->src) {
  case PF_SRC_OCC: occurrence_args(c, s, w); break;
  case PF_SRC_BODY: body_args(c, s, w); break;
  case PF_SRC_LEAF: leaf_args(c, s, w); break;
  case PF_SRC_ATOM: atom_args(c, s, w); break;
  case PF_SRC_MEMBER: member_args(c, s, w); break;
  case PF_SRC_CALL: call_args(c, s, w); break;
  default: row_args(c, s, w); break;
  }
}
