// Losses over pred and expected of COUNT elements (N samples of COUNT / N).
// Definitions: COUNT; LOSS_MSE or LOSS_CCE (1); FACTOR: the scale of the summed per-element terms
// (MSE: 1 / (elements per sample), times 1 / N for SUM_OVER_BATCH_SIZE; CCE: 1 / N or 1);
// WG_SIZE for the forward.

#define CCE_EPS 1e-7f

float loss_term(float p, float e) {
#if LOSS_MSE
  const float d = p - e;
  return d * d;
#else
  return -e * log(clamp(p, CCE_EPS, 1.0f - CCE_EPS));
#endif
}

#ifdef WG_SIZE
// loss[0] = FACTOR * sum of the terms; one work-group.
__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1)))
void loss_forward(__global float* pool, uint p_off, uint e_off, uint loss_off) {
  __local float scratch[WG_SIZE];
  const uint lid = get_local_id(0);
  float s = 0.0f;
  for (uint i = lid; i < COUNT; i += WG_SIZE) s += loss_term(pool[p_off + i], pool[e_off + i]);
  s = wg_sum(s, scratch);
  if (lid == 0) pool[loss_off] = s * FACTOR;
}
#endif

// dpred = FACTOR * d(term)/dp. CCE: zero where pred was clamped.
__kernel void loss_backward(__global float* pool, uint p_off, uint e_off, uint dp_off) {
  const uint i = get_global_id(0);
  if (i >= COUNT) return;
  const float p = pool[p_off + i];
  const float e = pool[e_off + i];
#if LOSS_MSE
  pool[dp_off + i] = FACTOR * 2.0f * (p - e);
#else
  pool[dp_off + i] = (p < CCE_EPS || p > 1.0f - CCE_EPS) ? 0.0f : FACTOR * (-e / p);
#endif
}
