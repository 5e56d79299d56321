/*
** packets.h: overlap-safe cost packets, one per anchor (outputs.md 3.1, recovery.md 6).
**
** Per (db_idx, device_id), in anchor_idx order:
**   share   every elementary slice covered by anchors goes to exactly one anchor: the lowest
**           anchor_idx among active communication anchors, else among the others;
**   prelude the window [F_k, s_k) before anchor k, F_k = max end of earlier anchors
**           (F_1 = s_1), classified slice by slice: communication (comm op or task with comm
**           identity) > non-wait execution > idle.
** compute + comm + idle = total; self (raw duration) and aux (overlap of eligible non-anchor
** events with the window, summed per event) are overlays, never buckets. Windows and shares
** of one device are disjoint and tile [s_1, max e): each nanosecond is counted once.
*/
#ifndef TL_PACKETS_H
#define TL_PACKETS_H

#include "anchor/anchors.h"
#include "util/i64col.h"

/* One anchor's packet, as a value. */
typedef struct tl_packet {
  int64_t compute_ns, comm_ns, idle_ns, self_ns, aux_ns;
  uint32_t aux_events;
} tl_packet;

/* The packets of every anchor (index = global anchor index), one packed column per field:
** at most 24 bytes per anchor where a tl_packet array takes 48 (at 10 million anchors, 240
** MB against 480 MB), and nothing for a field that is zero everywhere (aux without
** auxiliary work). A field above 4.29 s is still kept exactly (i64col.h). */
typedef struct tl_packets {
  size_t n;
  tl_i64col compute_ns, comm_ns, idle_ns, self_ns, aux_ns, aux_events; /* base 0 */
} tl_packets;

int tl_packets_build(const tl_trace *t, const tl_anchors *a, tl_packets *out, tl_err *e);
void tl_packets_free(tl_packets *p);

/* Packet k. */
static inline tl_packet tl_packet_at(const tl_packets *p, size_t k) {
  tl_packet pk = {tl_i64col_get(&p->compute_ns, k), tl_i64col_get(&p->comm_ns, k),
                  tl_i64col_get(&p->idle_ns, k), tl_i64col_get(&p->self_ns, k),
                  tl_i64col_get(&p->aux_ns, k), (uint32_t)tl_i64col_get(&p->aux_events, k)};
  return pk;
}

static inline int64_t tl_packet_total_ns(const tl_packet *p) {
  return p->compute_ns + p->comm_ns + p->idle_ns;
}

#endif
