// LSTM_CELL_STATE and LSTM_CELL_OUTPUT (cltrain_ops.h): one LSTM step's gate math, one work-item
// per state element, with numerics.h's clt_lstm_* (the unfused ops' roundings). No definitions:
// width (H), the gate parts' offsets within a row of z (uint4: input, forget, cell, output) and
// which optional tensors are there (flags) are arguments, so every LSTM layer of a model shares
// one program. 2-D launch: dimension 0 the element j of a row (padded: checked), dimension 1 the
// row r; state element e = r * width + j, gate k of it at z[r * 4 * width + parts.sk + j].
//   flags: bit 0 dz given, bit 1 the state gradient given, bit 2 the prior gradient given.

#define LSTM_ELEMENT                 \
  const uint j = get_global_id(0);   \
  if (j >= width) return;            \
  const uint row = get_global_id(1); \
  const uint e = row * width + j;    \
  const uint zrow = row * 4u * width + j;
#define LSTM_Z(part) (zrow + (part))

// c = f * c_prev + i * g.
__kernel void lstm_state_forward(__global float* pool, uint z_off, uint cp_off, uint c_off, uint width, uint4 parts) {
  LSTM_ELEMENT
  __global const float* z = pool + z_off;
  pool[c_off + e] = clt_lstm_state(z[LSTM_Z(parts.s0)], z[LSTM_Z(parts.s1)], z[LSTM_Z(parts.s2)], pool[cp_off + e]);
}

// h = o * tanh(c).
__kernel void lstm_output_forward(__global float* pool, uint z_off, uint c_off, uint h_off, uint width, uint4 parts) {
  LSTM_ELEMENT
  pool[h_off + e] = clt_lstm_output(pool[z_off + LSTM_Z(parts.s3)], pool[c_off + e]);
}

// dz's input, forget and cell parts; its output part from prior (0 without); dc_prev = dc * f.
// prior may be dz itself: its output part is then read and written back by the same work-item.
__kernel void lstm_state_backward(__global float* pool, uint z_off, uint cp_off, uint dc_off, uint prior_off,
                                  uint dz_off, uint dcp_off, uint width, uint4 parts, uint flags) {
  LSTM_ELEMENT
  __global const float* z = pool + z_off;
  const uint zi = LSTM_Z(parts.s0), zf = LSTM_Z(parts.s1), zg = LSTM_Z(parts.s2), zo = LSTM_Z(parts.s3);
  float di, df, dg, dp;
  clt_lstm_state_grad(z[zi], z[zf], z[zg], pool[cp_off + e], pool[dc_off + e], &di, &df, &dg, &dp);
  if (flags & 1u) {
    __global float* dz = pool + dz_off;
    const float o = (flags & 4u) ? pool[prior_off + zo] : 0.0f;
    dz[zi] = di;
    dz[zf] = df;
    dz[zg] = dg;
    dz[zo] = o;
  }
  if (flags & 2u) pool[dcp_off + e] = dp;
}

// dz's output part, its other parts 0; dc = h's part, plus prior where given (prior may be dc).
__kernel void lstm_output_backward(__global float* pool, uint z_off, uint c_off, uint dh_off, uint prior_off,
                                   uint dz_off, uint dc_off, uint width, uint4 parts, uint flags) {
  LSTM_ELEMENT
  float dzo, dc;
  clt_lstm_output_grad(pool[z_off + LSTM_Z(parts.s3)], pool[c_off + e], pool[dh_off + e], &dzo, &dc);
  if (flags & 1u) {
    __global float* dz = pool + dz_off;
    dz[LSTM_Z(parts.s0)] = 0.0f;
    dz[LSTM_Z(parts.s1)] = 0.0f;
    dz[LSTM_Z(parts.s2)] = 0.0f;
    dz[LSTM_Z(parts.s3)] = dzo;
  }
  if (flags & 2u) pool[dc_off + e] = (flags & 4u) ? pool[prior_off + e] + dc : dc;
}
