// ADD, SUB, MUL, DIV with numpy broadcasting and a fused activation; forward and both gradients
// share one program (the definitions describe the op instance, not the step).
//
// Definitions:
//   OP        0 ADD, 1 SUB, 2 MUL, 3 DIV, 4 SQUARED_DIFFERENCE (t = a - b, y = t * t),
//             5 MAXIMUM (y = a >= b ? a : b), 6 MINIMUM (y = a <= b ? a : b), the comparisons
//             (forward only, y = 1 where true, else 0): 7 GREATER (a > b), 8 GREATER_EQUAL,
//             9 LESS, 10 LESS_EQUAL, 11 EQUAL, 12 NOT_EQUAL
//   ACT       fused activation (cltrain_activation: 0 NONE, 1 RELU, 2 RELU_N1_TO_1, 3 RELU6, 4 TANH)
//   Y0..Y5    y as six merged dims, outermost first (backend/opencl/ops/dims.h)
//   YS0..YS5  strides of y; SA0..SA5, SB0..SB5: strides of a and b, 0 along a broadcast dim
//   COUNT     elements of y; COUNT_A, COUNT_B: elements of a and b
//   storage (common.cl): A_H, B_H, Y_H, DY_H, DA_H, DB_H
//
// Numerics (cltrain_backend.h): y = act(a op b) (clt_act, common.cl); backward g = dz =
// clt_act_grad(y, dy), the select-based derivative (the product for tanh); each gradient
// element sums its contributions, s = s + c, in increasing flat index of y (one work-item per
// gradient element, no atomics):
//   ADD da += g, db += g; SUB da += g, db += -g; MUL da += g * b, db += g * a;
//   DIV da += g / b, db += -((g * a) / (b * b)); SQUARED_DIFFERENCE u = 2 * (a - b), da += g * u,
//   db += -(g * u); MAXIMUM (MINIMUM) da += a >= b (a <= b) ? g : 0, db += a >= b (a <= b) ? 0 : g.

#define ARITH_ADD 0
#define ARITH_SUB 1
#define ARITH_MUL 2
#define ARITH_DIV 3
#define ARITH_SQDIFF 4
#define ARITH_MAX 5
#define ARITH_MIN 6
#define ARITH_GREATER 7
#define ARITH_GREATER_EQUAL 8
#define ARITH_LESS 9
#define ARITH_LESS_EQUAL 10
#define ARITH_EQUAL 11
#define ARITH_NOT_EQUAL 12
// MAXIMUM, MINIMUM: whether a is the one taken (and given the gradient).
#define ARITH_TAKES_A(a, b) (OP == ARITH_MAX ? (a) >= (b) : (a) <= (b))

float arith_op(float a, float b) {
#if OP == ARITH_ADD
  return a + b;
#elif OP == ARITH_SUB
  return a - b;
#elif OP == ARITH_MUL
  return a * b;
#elif OP == ARITH_SQDIFF
  const float t = a - b;
  return t * t;
#elif OP == ARITH_MAX || OP == ARITH_MIN
  return ARITH_TAKES_A(a, b) ? a : b;
#elif OP == ARITH_GREATER
  return a > b ? 1.0f : 0.0f;
#elif OP == ARITH_GREATER_EQUAL
  return a >= b ? 1.0f : 0.0f;
#elif OP == ARITH_LESS
  return a < b ? 1.0f : 0.0f;
#elif OP == ARITH_LESS_EQUAL
  return a <= b ? 1.0f : 0.0f;
#elif OP == ARITH_EQUAL
  return a == b ? 1.0f : 0.0f;
#elif OP == ARITH_NOT_EQUAL
  return a != b ? 1.0f : 0.0f;
#else
  return a / b;
#endif
}

// y = act(a op b); one work-item per element of y.
__kernel void arith_forward(__global float* pool, uint a_off, uint b_off, uint y_off) {
  const uint i = get_global_id(0);
  if (i >= COUNT) return;
  uint r = i, ia = 0, ib = 0;
#define ARITH_COORD(k)       \
  {                          \
    const uint c = r % Y##k; \
    r /= Y##k;               \
    ia += c * SA##k;         \
    ib += c * SB##k;         \
  }
  ARITH_COORD(5);
  ARITH_COORD(4);
  ARITH_COORD(3);
  ARITH_COORD(2);
  ARITH_COORD(1);
  ARITH_COORD(0);
#undef ARITH_COORD
  CLT_ST(Y_H, CLT_PTR(Y_H) + y_off, i,
         clt_act(arith_op(CLT_LD(A_H, CLT_PTR(A_H) + a_off, ia), CLT_LD(B_H, CLT_PTR(B_H) + b_off, ib))));
}

// The gradient of element j of a (for_a) or b: the sum over the elements of y that read it.
// for_a is a constant at both call sites, so the selections below fold away. Dims along which the
// gradient's own tensor is broadcast (stride 0) are looped over, outermost first: that visits
// the elements of y in increasing flat index.
#define ARITH_A(k) CLT_LD(A_H, CLT_PTR(A_H) + a_off, k)
#define ARITH_B(k) CLT_LD(B_H, CLT_PTR(B_H) + b_off, k)
#define ARITH_Y(k) CLT_LD(Y_H, CLT_PTR(Y_H) + y_off, k)
#define ARITH_DY(k) CLT_LD(DY_H, CLT_PTR(DY_H) + dy_off, k)
float arith_grad(__global float* pool, const uint j, const int for_a, const uint a_off, const uint b_off,
                 const uint y_off, const uint dy_off) {
  uint r = j, yi = 0, ia = 0, ib = 0;
#define ARITH_SELF(k) (for_a ? SA##k : SB##k)
#define ARITH_KEPT(k)        \
  if (ARITH_SELF(k) != 0) {  \
    const uint c = r % Y##k; \
    r /= Y##k;               \
    yi += c * YS##k;         \
    ia += c * SA##k;         \
    ib += c * SB##k;         \
  }
  ARITH_KEPT(5);
  ARITH_KEPT(4);
  ARITH_KEPT(3);
  ARITH_KEPT(2);
  ARITH_KEPT(1);
  ARITH_KEPT(0);
#undef ARITH_KEPT
#define ARITH_RED(k) (ARITH_SELF(k) != 0 ? 1u : (uint)(Y##k))
  float s = 0.0f;
  for (uint r0 = 0; r0 < ARITH_RED(0); ++r0)
    for (uint r1 = 0; r1 < ARITH_RED(1); ++r1)
      for (uint r2 = 0; r2 < ARITH_RED(2); ++r2)
        for (uint r3 = 0; r3 < ARITH_RED(3); ++r3)
          for (uint r4 = 0; r4 < ARITH_RED(4); ++r4)
            for (uint r5 = 0; r5 < ARITH_RED(5); ++r5) {
              // Along a looped dim the gradient's own stride is 0, so only y and the other
              // operand move.
              const uint yk = yi + r0 * YS0 + r1 * YS1 + r2 * YS2 + r3 * YS3 + r4 * YS4 + r5 * YS5;
#if ACT != 0
              const float g = clt_act_grad(ARITH_Y(yk), ARITH_DY(yk));
#else
              const float g = ARITH_DY(yk);
#endif
#if OP == ARITH_ADD
              const float c = g;
#elif OP == ARITH_SUB
              const float c = for_a ? g : -g;
#else
              const uint ak = ia + r0 * SA0 + r1 * SA1 + r2 * SA2 + r3 * SA3 + r4 * SA4 + r5 * SA5;
              const uint bk = ib + r0 * SB0 + r1 * SB1 + r2 * SB2 + r3 * SB3 + r4 * SB4 + r5 * SB5;
#if OP == ARITH_MUL
              const float c = for_a ? g * ARITH_B(bk) : g * ARITH_A(ak);
#elif OP == ARITH_SQDIFF
              const float u = 2.0f * (ARITH_A(ak) - ARITH_B(bk));
              const float c = for_a ? g * u : -(g * u);
#elif OP == ARITH_MAX || OP == ARITH_MIN
              const int takes_a = ARITH_TAKES_A(ARITH_A(ak), ARITH_B(bk));
              const float c = (for_a ? takes_a : !takes_a) ? g : 0.0f;
#else
              float c;
              if (for_a) {
                c = g / ARITH_B(bk);
              } else {
                const float bv = ARITH_B(bk);
                c = -((g * ARITH_A(ak)) / (bv * bv));
              }
#endif
#endif
              s = s + c;
            }
#undef ARITH_RED
#undef ARITH_SELF
  return s;
}

// da: one work-item per element of a.
__kernel void arith_grad_a(__global float* pool, uint a_off, uint b_off, uint y_off, uint dy_off, uint da_off) {
  const uint j = get_global_id(0);
  if (j >= COUNT_A) return;
  CLT_ST(DA_H, CLT_PTR(DA_H) + da_off, j, arith_grad(pool, j, 1, a_off, b_off, y_off, dy_off));
}

// db: one work-item per element of b.
__kernel void arith_grad_b(__global float* pool, uint a_off, uint b_off, uint y_off, uint dy_off, uint db_off) {
  const uint j = get_global_id(0);
  if (j >= COUNT_B) return;
  CLT_ST(DB_H, CLT_PTR(DB_H) + db_off, j, arith_grad(pool, j, 0, a_off, b_off, y_off, dy_off));
}

// da and db in one launch where neither is broadcast (COUNT_A == COUNT_B == COUNT): one work-item
// per element, which reads what both need before it writes either (da or db may be planned in
// place of dy).
__kernel void arith_grad_ab(__global float* pool, uint a_off, uint b_off, uint y_off, uint dy_off, uint da_off,
                            uint db_off) {
  const uint j = get_global_id(0);
  if (j >= COUNT) return;
  const float ga = arith_grad(pool, j, 1, a_off, b_off, y_off, dy_off);
  const float gb = arith_grad(pool, j, 0, a_off, b_off, y_off, dy_off);
  CLT_ST(DA_H, CLT_PTR(DA_H) + da_off, j, ga);
  CLT_ST(DB_H, CLT_PTR(DB_H) + db_off, j, gb);
}
