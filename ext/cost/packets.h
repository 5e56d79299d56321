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

typedef struct tl_packet {
  int64_t compute_ns, comm_ns, idle_ns, self_ns, aux_ns;
  uint32_t aux_events;
} tl_packet;

/* One packet per anchor of a (index = global anchor index). */
int tl_packets_build(const tl_trace *t, const tl_anchors *a, tl_packet **out, tl_err *e);

static inline int64_t tl_packet_total_ns(const tl_packet *p) {
  return p->compute_ns + p->comm_ns + p->idle_ns;
}

#endif
