/*
** clock.c: host-to-device clock models fitted on explicit markers (idle.h).
**
** Per device, the markers' host time is the midpoint of their caller bracket (integer: before
** + (after - before) / 2) and their device time the marker task's start. Sorted by host time,
** every fifth marker (1-based) is held out for validation, the first and last always fit.
** A Theil-Sen fit: scale = median of the pairwise slopes of the fit markers, reference host
** time = median host time, reference device time = median of d - scale (h - h_ref); medians
** of an even count average the middle two. Residuals are measured on the held-out markers
** only. The uncertainty epsilon (device ns) is ceil((p95 holdout residual + scale x p95 half
** bracket) x the epsilon multiplier). Host timestamps map with round-half-to-even.
**
** The payload carries no profiler-host interval, so the profiler-host to caller-clock leg is
** the identity: such markers are a controlled fixture's (alignment synthetic_only, and only
** when the caller says so); a real capture needs the record-call brackets this payload lacks,
** so without the synthetic flag the model stays invalid. Fewer than six valid markers, an
** empty holdout, a missing or duplicate marker id or a non-positive scale are invalid too.
** No marker for a device: uncalibrated.
*/
#include "idle/idle_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_ld(const void *a, const void *b) {
  long double x = *(const long double *)a, y = *(const long double *)b;
  return x < y ? -1 : x > y;
}

static long double median(long double *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_ld);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0L;
}

static long double rank_p(long double *v, size_t n, long double p) {
  qsort(v, n, sizeof *v, cmp_ld);
  long double r = ceill(p * (long double)n);
  size_t k = r < 1 ? 1 : (r > (long double)n ? n : (size_t)r);
  return v[k - 1];
}

typedef struct obs {
  long double host, device, half;
  size_t marker;
} obs;

static int cmp_obs(const void *a, const void *b) {
  const obs *x = a, *y = b;
  if (x->host != y->host) return x->host < y->host ? -1 : 1;
  if (x->device != y->device) return x->device < y->device ? -1 : 1;
  return x->marker < y->marker ? -1 : x->marker > y->marker;
}

static int fit_device(const tl_clock_markers *m, uint32_t device, int synthetic, double mult,
                      tl_clock_model *out, tl_err *e) {
  memset(out, 0, sizeof *out);
  out->device_id = device;
  obs *o = malloc((m->n ? m->n : 1) * sizeof *o);
  long double *tmp = NULL;
  if (!o) return tl_nomem(e);
  size_t n = 0;
  int missing_id = 0, duplicate_id = 0;
  for (size_t i = 0; i < m->n; i++) {
    const tl_marker_row *k = &m->v[i];
    if (k->device_id != (int64_t)device) continue;
    out->input++;
    int dup = 0;
    for (size_t j = 0; j < m->n && !dup; j++)
      dup = j != i && k->marker_id && m->v[j].marker_id && strcmp(k->marker_id, m->v[j].marker_id) == 0;
    missing_id |= !k->marker_id || !*k->marker_id;
    duplicate_id |= dup;
    if (k->return_status != 0 || k->host_before < 0 || k->device_ts < 0 ||
        k->host_after < k->host_before || !k->marker_id || !*k->marker_id || dup) {
      out->rejected++;
      continue;
    }
    obs x = {(long double)(k->host_before + (k->host_after - k->host_before) / 2),
             (long double)k->device_ts, (long double)(k->host_after - k->host_before) / 2.0L, i};
    o[n++] = x;
  }
  out->inliers = n;
  int rc = TL_OK;
  out->alignment = TL_AL_INVALID;
  if (!out->input) out->alignment = TL_AL_UNCALIBRATED, out->reason = "no clock markers were supplied for the device";
  else if (missing_id) out->reason = "empty marker_id violates the calibration contract";
  else if (duplicate_id) out->reason = "duplicate marker_id violates the calibration contract";
  else if (n < 6) out->reason = "calibration requires at least six valid markers";
  else if (!synthetic)
    out->reason = "the marker payload has no profiler-host interval: only a synthetic fixture's "
                  "markers (clock_markers_synthetic) can be used";
  else {
    qsort(o, n, sizeof *o, cmp_obs);
    obs *fit = malloc(n * sizeof *fit), *val = malloc(n * sizeof *val);
    if (!fit || !val) rc = tl_nomem(e);
    size_t nf = 0, nv = 0;
    for (size_t i = 0; rc == TL_OK && i < n; i++) {
      if ((i + 1) % 5 == 0 && i != 0 && i + 1 != n) val[nv++] = o[i];
      else fit[nf++] = o[i];
    }
    out->fit = nf, out->validation = nv;
    /* room for the pairwise slopes, or for one value per marker */
    size_t pairs = nf > 65536 ? 0 : nf * (nf - 1) / 2;
    if (rc == TL_OK && nf > 65536) rc = tl_fail(e, "clock markers: %zu markers on device %u, at most "
                                                   "65536 are supported", nf, device);
    if (rc == TL_OK && !(tmp = malloc((pairs + n + 1) * sizeof *tmp))) rc = tl_nomem(e);
    size_t ns = 0;
    for (size_t a = 0; rc == TL_OK && a < nf; a++)
      for (size_t b = a + 1; b < nf; b++)
        if (fit[b].host != fit[a].host) tmp[ns++] = (fit[b].device - fit[a].device) / (fit[b].host - fit[a].host);
    if (rc == TL_OK && !nv) out->reason = "calibration holdout set is empty";
    else if (rc == TL_OK && !ns) out->reason = "fit markers do not contain two distinct host times";
    else if (rc == TL_OK) {
      out->scale = median(tmp, ns);
      if (!isfinite(out->scale) || out->scale <= 0) {
        out->reason = "Theil-Sen fit produced a non-positive clock scale";
      } else {
        for (size_t i = 0; i < nf; i++) tmp[i] = fit[i].host;
        out->ref_host = median(tmp, nf);
        for (size_t i = 0; i < nf; i++) tmp[i] = fit[i].device - out->scale * (fit[i].host - out->ref_host);
        out->ref_device = median(tmp, nf);
        out->offset = out->ref_device - out->ref_host;
        for (size_t i = 0; i < nv; i++)
          tmp[i] = fabsl(val[i].device - (out->ref_device + out->scale * (val[i].host - out->ref_host)));
        out->residual_p50 = rank_p(tmp, nv, 0.50L);
        out->residual_p95 = rank_p(tmp, nv, 0.95L);
        out->residual_max = tmp[nv - 1]; /* sorted by rank_p */
        for (size_t i = 0; i < n; i++) tmp[i] = fabsl(out->scale) * o[i].half;
        out->bracket_p95 = rank_p(tmp, n, 0.95L);
        long double eps = (out->residual_p95 + out->bracket_p95) * (long double)mult;
        if (!isfinite(eps) || eps < 0 || eps > 9.0e18L) {
          out->reason = "calibration uncertainty is outside the supported range";
        } else {
          out->epsilon_ns = (uint64_t)ceill(eps);
          out->has_profiler_mapping = 1; /* the identity leg of a synthetic fixture */
          out->alignment = TL_AL_SYNTHETIC;
          out->reason = "controlled synthetic composed clock calibration";
        }
      }
    }
    free(fit), free(val);
  }
  free(o), free(tmp);
  return rc;
}

int tl_clock_fit(const tl_clock_markers *m, const uint32_t *devices, size_t ndevices, int synthetic,
                 double epsilon_multiplier, tl_clock_models *out, tl_err *e) {
  for (size_t d = 0; d < ndevices; d++) {
    tl_clock_model x;
    int rc = fit_device(m, devices[d], synthetic, epsilon_multiplier, &x, e);
    if (rc) return rc;
    if (TL_VEC_PUSH(out, x)) return tl_nomem(e);
  }
  return TL_OK;
}

const tl_clock_model *tl_clock_model_for(const tl_clock_models *m, uint32_t device_id) {
  for (size_t i = 0; i < m->n; i++)
    if (m->v[i].device_id == device_id) return &m->v[i];
  return NULL;
}

int tl_clock_map(const tl_clock_model *m, int64_t host_ns, int64_t *device_ns) {
  if (!m || (m->alignment != TL_AL_CALIBRATED && m->alignment != TL_AL_SYNTHETIC) ||
      !m->has_profiler_mapping)
    return 0;
  long double v = m->ref_device + m->scale * ((long double)host_ns - m->ref_host);
  if (!isfinite(v) || v < -9.2e18L || v > 9.2e18L) return 0;
  long double r = nearbyintl(v); /* the default rounding mode: half to even */
  *device_ns = (int64_t)r;
  return 1;
}
