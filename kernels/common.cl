// Prepended to every kernel family, after numerics.h (FP_CONTRACT OFF, clt_exp, clt_log).
// OpenCL C 1.2, float arithmetic (float16 only as storage, below).
//
// Conventions: every kernel takes the backend's one pool buffer and the element offsets of its
// tensors in it; shapes and constants of the op instance come as -D definitions. 1-D kernels run
// on a global size padded to whole work-groups and check their bound. Every rounding follows the
// "Numerics" section of include/cltrain/cltrain_backend.h: sums are sequential in increasing
// index (one work-item per sum), maxima and clamps are the selects below.

// c ? a : b on the bits: an integer select, which no compiler turns into a float max or min. (A
// float select such as x < 0 ? 0 : x becomes fmax on aarch64 with POCL's LLVM, and Arm's fmax
// makes -0 into +0; the CPU backend and POCL on x86-64 keep -0.)
static inline float clt_pick(const int c, const float a, const float b) {
  return as_float(select(as_int(b), as_int(a), -c));
}

// std::max(a, b) and std::min(a, b) of C++: the first argument wins ties (-0 and +0 included) and
// NaN comparisons.
static inline float clt_max(float a, float b) { return clt_pick(a < b, b, a); }
static inline float clt_min(float a, float b) { return clt_pick(b < a, b, a); }

// (clt_tanh and clt_erf: numerics.h, shared with the CPU backend.)

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

// Storage of a tensor operand: its kernel definition NAME_H is 1 for float16 storage
// (CLTRAIN_FLOAT16: the host's offset counts halves, held as ushort bits) and 0 (the default) for
// float32. Arithmetic is float32 either way: a half is widened exactly as it is loaded and a
// result rounded to nearest even as it is stored, each element of a step's output once (the
// Numerics of cltrain_backend.h). Both conversions are integer arithmetic on the bits (no half
// type, no cl_khr_fp16; they vectorize where POCL's vload_half/vstore_half_rte do not, and give
// the bits vstore_half_rte gives).
//   CLT_PTR(H)            the pool as a pointer to the operand's storage type
//   CLT_LD(H, p, i)       element i at p, as a float
//   CLT_ST(H, p, i, v)    stores the float v as element i at p
//   CLT_H2F(w, F, U), CLT_F2H(u, F, U): the conversions on uint or uintN bits (F: float or floatN)
//   CLT_VLD(H, p), CLT_VST(H, v, p): VEC lanes (VEC definitions only)
#define CLT_T_0 float
#define CLT_T_1 ushort
#define CLT_T(H) CAT(CLT_T_, H)
#define CLT_PTR(H) ((__global CLT_T(H)*)pool)
// Half bits w to float: normal, the exponent rebiased; subnormal, m 2^-24 (exact); Inf and NaN,
// the all-ones exponent with the fraction shifted.
#define CLT_H2F(w, F, U)                                                                                             \
  (CAT(as_, F)(                                                                                                      \
      select(select(((w)&0x8000u) << 16 | (((w)&0x7fffu) << 13) + (112u << 23),                                      \
                    ((w)&0x8000u) << 16 | CAT(as_, U)(CAT(convert_, F)((w)&0x3ffu) * 0x1p-24f), ((w)&0x7c00u) == 0), \
             ((w)&0x8000u) << 16 | 0x7f800000u | ((w)&0x3ffu) << 13, ((w)&0x7c00u) == 0x7c00u)))
// Float bits u to half bits, to nearest even: a normal half by rounding the 13 dropped bits (a
// carry may reach Inf), at or beyond 65520 Inf, a subnormal as the nearest multiple of 2^-24 (an
// exact product, converted _rte), NaN as a quiet NaN.
#define CLT_F2H(u, F, U)                                                                                      \
  (((u) >> 16 & 0x8000u) |                                                                                    \
   select(select(select(min((((u)&0x7fffffffu) + 0xfffu + (((u) >> 13) & 1u) >> 13) - (112u << 10), 0x7c00u), \
                        CAT(CAT(convert_, U), _rte)(CAT(as_, F)((u)&0x7fffffffu) * 0x1p24f),                  \
                        ((u)&0x7fffffffu) < 0x38800000u),                                                     \
                 (U)(0x7c00u), ((u)&0x7fffffffu) >= 0x47800000u),                                             \
          (U)(0x7e00u), ((u)&0x7fffffffu) > 0x7f800000u))
static inline float clt_h2f(const uint w) { return CLT_H2F(w, float, uint); }
static inline ushort clt_f2h(const float f) { return (ushort)CLT_F2H(as_uint(f), float, uint); }
#define CLT_LD_0(p, i) ((p)[i])
#define CLT_LD_1(p, i) clt_h2f((p)[i])
#define CLT_LD(H, p, i) CAT(CLT_LD_, H)(p, i)
#define CLT_ST_0(p, i, v) ((p)[i] = (v))
#define CLT_ST_1(p, i, v) ((p)[i] = clt_f2h(v))
#define CLT_ST(H, p, i, v) CAT(CLT_ST_, H)(p, i, v)
#ifndef X_H
#define X_H 0
#endif
#ifndef Y_H
#define Y_H 0
#endif
#ifndef DY_H
#define DY_H 0
#endif
#ifndef DX_H
#define DX_H 0
#endif
#ifndef A_H
#define A_H 0
#endif
#ifndef B_H
#define B_H 0
#endif
#ifndef DA_H
#define DA_H 0
#endif
#ifndef DB_H
#define DB_H 0
#endif

// VEC lanes (1, 4, 8, 16) of a kernel that works on neighbouring channels as a vector: vfloat,
// VLOAD(p) and VSTORE(v, p) at a float pointer; CLT_VLD and CLT_VST at either storage type.
#ifdef VEC
#if VEC == 1
typedef float vfloat;
#define VLOAD(p) (*(p))
#define VSTORE(v, p) (*(p) = (v))
#else
typedef CAT(float, VEC) vfloat;
#define VLOAD(p) CAT(vload, VEC)(0, (p))
#define VSTORE(v, p) CAT(vstore, VEC)((v), 0, (p))
#endif
#define CLT_VLD_0(p) VLOAD(p)
#define CLT_VST_0(v, p) VSTORE(v, p)
#if VEC == 1
#define CLT_VLD_1(p) CLT_LD_1(p, 0)
#define CLT_VST_1(v, p) CLT_ST_1(p, 0, v)
#else
#define CLT_VLD_1(p) CLT_H2F(CAT(convert_uint, VEC)(VLOAD(p)), CAT(float, VEC), CAT(uint, VEC))
#define CLT_VST_1(v, p) \
  VSTORE(CAT(convert_ushort, VEC)(CLT_F2H(CAT(as_uint, VEC)(v), CAT(float, VEC), CAT(uint, VEC))), p)
#endif
#define CLT_VLD(H, p) CAT(CLT_VLD_, H)(p)
#define CLT_VST(H, v, p) CAT(CLT_VST_, H)(v, p)
#endif

// The derivative of the producer's activation XACT (cltrain_activation) applied to dy from its
// output y, on scalars or vectors of the kernel's vfloat type; the same selects as clt_act_grad.
#ifdef XACT
#if XACT == 1
#define CLT_XACT_GRAD(y, dy) select((vfloat)(0.0f), (dy), (y) > (vfloat)(0.0f))
#elif XACT == 2
#define CLT_XACT_GRAD(y, dy) select((vfloat)(0.0f), (dy), ((y) > (vfloat)(-1.0f)) & ((y) < (vfloat)(1.0f)))
#elif XACT == 3
#define CLT_XACT_GRAD(y, dy) select((vfloat)(0.0f), (dy), ((y) > (vfloat)(0.0f)) & ((y) < (vfloat)(6.0f)))
#elif XACT == 4
#define CLT_XACT_GRAD(y, dy) ((dy) * ((vfloat)(1.0f) - (y) * (y)))
#else
#define CLT_XACT_GRAD(y, dy) (dy)
#endif
#endif

// Fused activations, ACT as cltrain_activation: 0 NONE, 1 RELU, 2 RELU_N1_TO_1, 3 RELU6, 4 TANH.
#ifdef ACT
static inline float clt_act(float z) {
#if ACT == 1
  return clt_max(z, 0.0f);
#elif ACT == 2
  return clt_min(clt_max(z, -1.0f), 1.0f);
#elif ACT == 3
  return clt_min(clt_max(z, 0.0f), 6.0f);
#elif ACT == 4
  return clt_tanh(z);
#else
  return z;
#endif
}

// clt_act on the W lanes of a floatW at once, for ACT 0 to 3 (CLT_ACT_LANES): the same integer
// selects as clt_max and clt_min, lane by lane. CLT_DEFINE_ACTV(name, W) defines name(floatW);
// kernels with VEC lanes get clt_actv, gemm.cl defines its own for its tiles' width.
#if ACT <= 3
#define CLT_ACT_LANES 1
#define CLT_PICKV(W, c, a, b) CAT(as_float, W)(select(CAT(as_int, W)(b), CAT(as_int, W)(a), (c)))
#if ACT == 1
#define CLT_ACTV_BODY(W) z = CLT_PICKV(W, z < (CAT(float, W))(0.0f), (CAT(float, W))(0.0f), z);
#elif ACT == 2
#define CLT_ACTV_BODY(W)                                                   \
  z = CLT_PICKV(W, z < (CAT(float, W))(-1.0f), (CAT(float, W))(-1.0f), z); \
  z = CLT_PICKV(W, (CAT(float, W))(1.0f) < z, (CAT(float, W))(1.0f), z);
#elif ACT == 3
#define CLT_ACTV_BODY(W)                                                 \
  z = CLT_PICKV(W, z < (CAT(float, W))(0.0f), (CAT(float, W))(0.0f), z); \
  z = CLT_PICKV(W, (CAT(float, W))(6.0f) < z, (CAT(float, W))(6.0f), z);
#else
#define CLT_ACTV_BODY(W)
#endif
#define CLT_DEFINE_ACTV(NAME, W) \
  static inline CAT(float, W) NAME(CAT(float, W) z) { CLT_ACTV_BODY(W) return z; }
#if defined(VEC) && VEC > 1
CLT_DEFINE_ACTV(clt_actv, VEC)
#endif
#endif

// dz from the activation's output y and dy: a select where the derivative is 0 or 1 (the
// conditions combined with &, not &&: no branch, which POCL vectorizes; callers load dy first).
static inline float clt_act_grad(float y, float dy) {
#if ACT == 1
  return y > 0.0f ? dy : 0.0f;
#elif ACT == 2
  return ((y > -1.0f) & (y < 1.0f)) ? dy : 0.0f;
#elif ACT == 3
  return ((y > 0.0f) & (y < 6.0f)) ? dy : 0.0f;
#elif ACT == 4
  return dy * (1.0f - y * y);
#else
  return dy;
#endif
}
#endif
