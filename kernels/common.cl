// Prepended to every kernel family, after numerics.h (FP_CONTRACT OFF, clt_exp, clt_log).
// OpenCL C 1.2, float only.
//
// Conventions: every kernel takes the backend's one pool buffer and the element offsets of its
// tensors in it; shapes and constants of the op instance come as -D definitions. 1-D kernels run
// on a global size padded to whole work-groups and check their bound. Every rounding follows the
// "Numerics" section of host/include/cltrain/cltrain_backend.h: sums are sequential in increasing
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

// tanh: e = exp(-2|x|), t = (1 - e) / (1 + e), sign of x.
static inline float clt_tanh(float x) {
  const float e = clt_exp(-2.0f * fabs(x));
  const float t = (1.0f - e) / (1.0f + e);
  return x < 0.0f ? -t : t;
}

// VEC lanes (1, 4, 8, 16) of a kernel that works on neighbouring channels as a vector: vfloat,
// VLOAD(p) and VSTORE(v, p) at a float pointer.
#ifdef VEC
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#if VEC == 1
typedef float vfloat;
#define VLOAD(p) (*(p))
#define VSTORE(v, p) (*(p) = (v))
#else
typedef CAT(float, VEC) vfloat;
#define VLOAD(p) CAT(vload, VEC)(0, (p))
#define VSTORE(v, p) CAT(vstore, VEC)((v), 0, (p))
#endif
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
