// ember/kernels/vmath.h -- branch-free element-wise math that GCC auto-vectorises.
//
// *** NAMESPACE / INCLUSION CONTRACT (read this first) ***
//  * This header deliberately opens NO namespace and has NO include guard.  Everything it defines lands in
//    whatever namespace is open at the point of inclusion, so one kernel .cc can be compiled several times
//    (baseline x86-64, AVX2+FMA, AVX-512) with the header included inside a different namespace each time:
//
//        #include <cmath>          // the four standard headers below, at GLOBAL scope, BEFORE the namespace
//        #include <cstdint>
//        #include <cstring>
//        #include <limits>
//        namespace ember::kernels::avx2 {
//        #include "ember/kernels/vmath.h"
//        }
//
//    The includes below are then no-ops; if they are not already included, they would be pulled into the
//    includer's namespace, which breaks.  Include it at most once per namespace per translation unit.
//  * All functions are `static inline` (internal linkage): builds for different ISAs can never be merged by
//    the linker (an `inline` function with external linkage compiled for AVX-512 could otherwise replace the
//    baseline copy).  There is no global state.  The only macros are EMBER_VM_* and they are #undef'd at the
//    end of the header.
//
// *** WHAT IS PROVIDED ***
//  Scalar, branch-free functions, overloaded for float and double, meant to be called inside plain loops
//      for (i) out[i] = vexp(in[i]);
//  so that GCC (>= 12, -O3, no -ffast-math, no libmvec) vectorises them:
//      vexp vexpm1 vlog vlog1p vtanh vsigmoid vsoftplus verf verfc vsin vcos velu (+ velu(x, alpha))
//  and array forms  vexp(const T* x, T* y, std::size_t n)  etc. (in-place x == y is allowed).
//  Hot paths contain no calls (no std::exp...), no tables and no data-dependent branches (but for one per 64
//  elements in the float vsin/vcos array forms with FMA, Note [Float sin/cos]): ranges are handled with
//  bitwise selects (vm_sel, see there for why not ?:) and bit tricks; n = round(x/ln2) etc. use the 1.5*2^23
//  (1.5*2^52) magic-number trick instead of float<->int conversions.  FMA is used when the target has it
//  (__FMA__ or __AVX512F__), plain a*b+c otherwise; results can differ by an ulp between the ISA builds.
//
// *** VECTORISATION (GCC 12, -O3, checked with -fopt-info-vec-optimized) ***
//  -mavx2 -mfma and -mavx512f/bw/dq/vl: every float and double function vectorises, except verf(double) and
//  verfc(double).
//  baseline x86-64 (SSE2): every float function vectorises but verfc(float), which computes in double; double
//  code stays scalar (SSE2 has no 64-bit compare, GCC cannot build the 64-bit select masks there; from
//  -msse4.2 on it vectorises) and is then about 2x slower than glibc's scalar exp/log - a baseline double
//  kernel may prefer calling std:: directly.
//
// *** ACCURACY (measured by tests/cpp/kernels/vmath_test.cc against double / long double references) ***
//  float : <= 4 ulp for every function over its whole range; measured maxima over all 2^32 inputs (AVX-512
//          build, vs double-precision libm): exp 1.01, expm1 1.47, log 0.83, log1p 2.10, tanh 1.50,
//          sigmoid 2.40, softplus 2.60, erf 1.10, elu 0.94, sin/cos 1.73 (|x| < 1e8) (the no-FMA baseline
//          build is within 0.27 ulp of these, max 2.60 as well); erfc, computed in double, 0.505 over the
//          test's sweep (not yet over all inputs).  Outputs in the subnormal range are only
//          checked with an absolute tolerance (subnormals may be flushed by DAZ/FTZ).
//          exp, expm1, tanh, sigmoid, erf share one degree-4 minimax polynomial (vm_expm1_poly); tanh is an
//          odd polynomial below |x| = 0.625 and expm1(2|x|) / (expm1(2|x|) + 2) above; sin/cos evaluate one
//          odd float polynomial after reducing the argument in double, or, in the array forms of builds with
//          FMA, in float for blocks whose |x| are all below 2^16, with the same worst errors (Note [Float
//          sin/cos]): accurate for |x| < 2^25*pi (1e8); beyond that accuracy is lost but the result always
//          lies in [-1, 1].
//          Cost (AVX-512, Zen 4, one thread, ns per element of 1M): exp 0.18, expm1 0.24, tanh 0.21,
//          sigmoid 0.20, sin/cos 0.30 (a copy is 0.06).  On Zen 5 the sin / cos array forms take 0.14 / 0.19
//          for |x| < 2^16 (AVX-512; 0.27 / 0.37 with AVX2), the scalar forms 0.32 / 0.33 (0.62 / 0.64).
//  double: measured maxima (random + dense sweeps vs long double): exp 0.98, expm1 1.8, log 0.9, log1p 2.0,
//          tanh 2.4, sigmoid 2.0, softplus 2.5, elu 1.1, sin 1.7, cos 2.3 ulp (all < 6e-16 relative).
//          vsin/vcos: Cody-Waite reduction with a 4-part pi/2 (27+27+27+53 bits), accurate for |x| < ~1e8,
//          bounded in [-1, 1] beyond.
//          verf(double) and verfc(double) FALL BACK TO std::erf and std::erfc (a vectorised double erf needs
//          piecewise rational approximations; double erf is not on any hot path), so loops over them do not
//          vectorise. Everything else for double is the vectorised polynomial path.
//  Special values: NaN -> NaN for every function; exp(+inf)=inf, exp(-inf)=0, overflow -> inf, underflow -> 0
//  (or a subnormal); log(0)=-inf, log(x<0)=NaN, log(inf)=inf, log1p(-1)=-inf, log1p(x<-1)=NaN;
//  tanh(+-inf)=+-1, sigmoid(+inf)=1, sigmoid(-inf)=0, softplus(+inf)=inf, softplus(-inf)=0, erf(+-inf)=+-1,
//  sin/cos(+-inf)=NaN, expm1(-inf)=-1, elu(-inf)=-alpha.  Signed zeros are preserved where the function is
//  odd.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#if defined(__GNUC__) || defined(__clang__)
#define EMBER_VM_INLINE static inline __attribute__((always_inline))
#else
#define EMBER_VM_INLINE static inline
#endif

// GCC does not define __FMA__ inside `#pragma GCC target("fma")` in C++, so code built that way (the FMA copy
// in vmath_test.cc) defines EMBER_VM_ASSUME_FMA before including this header.
#if (defined(__GNUC__) || defined(__clang__)) && \
    (defined(__FMA__) || defined(__AVX512F__) || defined(EMBER_VM_ASSUME_FMA))
#define EMBER_VM_HAS_FMA 1
#else
#define EMBER_VM_HAS_FMA 0
#endif

// ---------------------------------------------------------------------------------------------------------------
// Bit helpers (std::bit_cast needs <bit>, which this header may not include; __builtin_bit_cast is what
// std::bit_cast is implemented with in GCC / Clang, memcpy elsewhere).
// ---------------------------------------------------------------------------------------------------------------
EMBER_VM_INLINE ::std::uint32_t vm_f2u(float x) {
#if defined(__GNUC__) || defined(__clang__)
  return __builtin_bit_cast(::std::uint32_t, x);
#else
  ::std::uint32_t u;
  ::std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}
EMBER_VM_INLINE float vm_u2f(::std::uint32_t u) {
#if defined(__GNUC__) || defined(__clang__)
  return __builtin_bit_cast(float, u);
#else
  float x;
  ::std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}
EMBER_VM_INLINE ::std::uint64_t vm_d2u(double x) {
#if defined(__GNUC__) || defined(__clang__)
  return __builtin_bit_cast(::std::uint64_t, x);
#else
  ::std::uint64_t u;
  ::std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}
EMBER_VM_INLINE double vm_u2d(::std::uint64_t u) {
#if defined(__GNUC__) || defined(__clang__)
  return __builtin_bit_cast(double, u);
#else
  double x;
  ::std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}

EMBER_VM_INLINE float vm_fma(float a, float b, float c) {
#if EMBER_VM_HAS_FMA
  return __builtin_fmaf(a, b, c);
#else
  return a * b + c;
#endif
}
EMBER_VM_INLINE double vm_fma(double a, double b, double c) {
#if EMBER_VM_HAS_FMA
  return __builtin_fma(a, b, c);
#else
  return a * b + c;
#endif
}

// Branch-free select: c ? a : b.  A plain ?: whose arms are computed values is lowered to control flow, GCC's
// code sinking then moves the arms' arithmetic into the branches, and with -ftrapping-math (the default) the
// vectoriser refuses to if-convert floating-point operations there ("control flow in loop").  Even a clamp
// x = x > c ? c : x is unsafe: PRE then moves the next use of x (e.g. x + x) into the branch.  A bitwise
// select has no control flow and is recognised as a vector blend, so EVERY select in this header uses it.
EMBER_VM_INLINE float vm_sel(bool c, float a, float b) {
  const ::std::uint32_t m = 0u - static_cast<::std::uint32_t>(c);
  return vm_u2f((vm_f2u(a) & m) | (vm_f2u(b) & ~m));
}
EMBER_VM_INLINE double vm_sel(bool c, double a, double b) {
#if defined(__x86_64__) && !defined(__SSE4_2__)
  // Below SSE4.2 (i.e. the x86-64 baseline build) GCC 12 cannot vectorise a double compare turned into a
  // 64-bit integer mask ("no vectype"), so double loops stay scalar there whatever we do; for scalar code a
  // plain ?: (cmov / predictable branch) is much cheaper than the bit select's GPR round trip.  Float code
  // vectorises with plain SSE2.
  return c ? a : b;
#else
  const ::std::uint64_t m = ::std::uint64_t{0} - static_cast<::std::uint64_t>(c);
  return vm_u2d((vm_d2u(a) & m) | (vm_d2u(b) & ~m));
#endif
}
EMBER_VM_INLINE ::std::uint32_t vm_sel(bool c, ::std::uint32_t a, ::std::uint32_t b) {
  const ::std::uint32_t m = 0u - static_cast<::std::uint32_t>(c);
  return (a & m) | (b & ~m);
}
EMBER_VM_INLINE ::std::uint64_t vm_sel(bool c, ::std::uint64_t a, ::std::uint64_t b) {
  const ::std::uint64_t m = ::std::uint64_t{0} - static_cast<::std::uint64_t>(c);
  return (a & m) | (b & ~m);
}

EMBER_VM_INLINE float vm_abs(float x) { return vm_u2f(vm_f2u(x) & 0x7fffffffu); }
EMBER_VM_INLINE double vm_abs(double x) { return vm_u2d(vm_d2u(x) & 0x7fffffffffffffffull); }
// magnitude of `mag` (assumed non-negative or NaN) with the sign of `sgn`
EMBER_VM_INLINE float vm_copysign_pos(float mag, float sgn) {
  return vm_u2f(vm_f2u(mag) | (vm_f2u(sgn) & 0x80000000u));
}
EMBER_VM_INLINE double vm_copysign_pos(double mag, double sgn) {
  return vm_u2d(vm_d2u(mag) | (vm_d2u(sgn) & 0x8000000000000000ull));
}

// ===============================================================================================================
// float
// ===============================================================================================================

// expm1(r) for |r| <= ln2/2 (+ a little): r + r^2 P(r), P a degree-4 minimax fit of (exp(r) - 1 - r) / r^2
// (fitted for this header: coefficients rounded to float one at a time, the rest refitted; error 3.2e-9
// relative to exp(r), 4e-8 relative to P itself, so also fine for expm1).
EMBER_VM_INLINE float vm_expm1_poly(float r) {
  float p = 0x1.6a3fd6p-10f;
  p = vm_fma(p, r, 0x1.1239e8p-7f);
  p = vm_fma(p, r, 0x1.5558bep-5f);
  p = vm_fma(p, r, 0x1.555492p-3f);
  p = vm_fma(p, r, 0x1.fffffcp-2f);
  return vm_fma(p, r * r, r);
}

// exp(x) for x in [-104, 89] (or NaN).  n = round(x / ln2) by the 1.5*2^23 trick (no float->int conversion,
// so it vectorises everywhere), Cody-Waite reduction to |r| <= ln2/2, exp(r) = 1 + vm_expm1_poly(r), and 2^n
// applied as two factors 2^(n/2) so that n = 128 overflows to inf and n < -126 underflows gradually into the
// subnormals.
EMBER_VM_INLINE float vm_exp_core(float x) {
  const float magic = 0x1.8p23f;
  const float t = vm_fma(x, 0x1.715476p+0f, magic);  // log2(e)
  const float n = t - magic;
  float r = vm_fma(n, -0.693359375f, x);  // ln2 hi (9 bits: n*hi exact)
  r = vm_fma(n, 2.12194440e-4f, r);       // ln2 lo
  const float y = vm_expm1_poly(r) + 1.0f;
  // n + 256 in [106, 384] as an unsigned integer; h = floor(n/2) + 128
  const ::std::uint32_t nb = vm_f2u(t) - vm_f2u(magic) + 256u;
  const ::std::uint32_t h = nb >> 1;
  const float s1 = vm_u2f((h - 1u) << 23);       // 2^(h-128)  = 2^floor(n/2)
  const float s2 = vm_u2f((nb - h - 1u) << 23);  // 2^(n - floor(n/2))
  return (y * s1) * s2;
}

// expm1(x) for x in [-87.3, 88.8] (or NaN); results above FLT_MAX become inf.
EMBER_VM_INLINE float vm_expm1_core(float x) {
  const float magic = 0x1.8p23f;
  const float t = vm_fma(x, 0x1.715476p+0f, magic);
  const float n = t - magic;
  float r = vm_fma(n, -0.693359375f, x);
  r = vm_fma(n, 2.12194440e-4f, r);
  const float em = vm_expm1_poly(r);
  // 2^n with n in [-126, 128]; n == 128 is done as 2^127 and a final doubling.
  const bool big = n > 127.5f;
  const ::std::uint32_t nb = vm_f2u(t) - vm_f2u(magic);  // n mod 2^32
  const ::std::uint32_t nc = vm_sel(big, ::std::uint32_t{127}, nb);
  const float s = vm_u2f((nc + 127u) << 23);
  const float res = vm_fma(s, em, s - 1.0f);
  return vm_sel(big, res * 2.0f, res);
}

// log(1+f) + k*ln2 for f in [sqrt(1/2)-1, sqrt(2)-1] (Cephes logf polynomial).
EMBER_VM_INLINE float vm_log_poly(float f, float k) {
  const float z = f * f;
  float y = 7.0376836292e-2f;
  y = vm_fma(y, f, -1.1514610310e-1f);
  y = vm_fma(y, f, 1.1676998740e-1f);
  y = vm_fma(y, f, -1.2420140846e-1f);
  y = vm_fma(y, f, 1.4249322787e-1f);
  y = vm_fma(y, f, -1.6668057665e-1f);
  y = vm_fma(y, f, 2.0000714765e-1f);
  y = vm_fma(y, f, -2.4999993993e-1f);
  y = vm_fma(y, f, 3.3333331174e-1f);
  y = (y * f) * z;
  y = vm_fma(k, -2.12194440e-4f, y);
  y = vm_fma(z, -0.5f, y);
  const float res = f + y;
  return vm_fma(k, 0.693359375f, res);
}

// log1p(x) for x >= -1 finite (NaN propagates), no special-value handling.
EMBER_VM_INLINE float vm_log1p_core(float x) {
  const float u = 1.0f + x;
  // u = m * 2^k with m in [sqrt(1/2), sqrt(2))
  const ::std::uint32_t iu = vm_f2u(u) + (0x3f800000u - 0x3f3504f3u);
  const ::std::uint32_t ek = iu >> 23;  // k + 127
  const float m = vm_u2f((iu & 0x007fffffu) + 0x3f3504f3u);
  // rounding error of u = 1 + x, so that 1 + x = u + c exactly (fdlibm)
  const float c = vm_sel(u >= 0x1.6a09e6p+0f, 1.0f - (u - x), x - (u - 1.0f));
  float sc = vm_u2f((254u - ek) << 23);  // 2^-k (garbage for k = 128: u >= 2^127*sqrt2)
  sc = vm_sel(u > 0x1p127f, 0.0f, sc);
  const float f = vm_fma(c, sc, m - 1.0f);
  const float k = static_cast<float>(static_cast<::std::int32_t>(ek) - 127);
  return vm_log_poly(f, k);
}

EMBER_VM_INLINE float vexp(float x) {
  x = vm_sel(x < -104.0f, -104.0f, x);  // NaN compares false and passes through
  x = vm_sel(x > 89.0f, 89.0f, x);
  return vm_exp_core(x);
}

EMBER_VM_INLINE float vexpm1(float x) {
  float xc = vm_sel(x < -87.3f, -87.3f, x);
  xc = vm_sel(xc > 88.8f, 88.8f, xc);
  const float res = vm_expm1_core(xc);
  return vm_sel(x == 0.0f, x, res);  // keep -0
}

EMBER_VM_INLINE float vlog(float x) {
  const bool sub = x < 0x1p-126f;  // subnormal (also 0 / negative, fixed below)
  const float xs = vm_sel(sub, x * 0x1p23f, x);
  const float kadj = vm_sel(sub, -23.0f, 0.0f);
  const ::std::uint32_t ix = vm_f2u(xs) + (0x3f800000u - 0x3f3504f3u);
  const float k = static_cast<float>(static_cast<::std::int32_t>(ix >> 23) - 127) + kadj;
  const float f = vm_u2f((ix & 0x007fffffu) + 0x3f3504f3u) - 1.0f;
  float res = vm_log_poly(f, k);
  res = vm_sel(x == ::std::numeric_limits<float>::infinity(), x, res);
  res = vm_sel(x == 0.0f, -::std::numeric_limits<float>::infinity(), res);
  res = vm_sel(!(x >= 0.0f), ::std::numeric_limits<float>::quiet_NaN(), res);  // x < 0 or NaN
  return res;
}

EMBER_VM_INLINE float vlog1p(float x) {
  float res = vm_log1p_core(x);
  res = vm_sel(x == ::std::numeric_limits<float>::infinity(), x, res);
  res = vm_sel(x == 0.0f, x, res);  // keep -0
  res = vm_sel(x == -1.0f, -::std::numeric_limits<float>::infinity(), res);
  res = vm_sel(!(x >= -1.0f), ::std::numeric_limits<float>::quiet_NaN(), res);
  return res;
}

// tanh: |x| < 0.625: x + x^3 P(x^2), P a degree-4 minimax fit (fitted for this header, 4.5e-9 relative);
// above, sign(x) * e / (e + 2) with e = expm1(2|x|), which is well conditioned there.  |x| is clamped to 9.5
// (tanh rounds to 1 from 9.01 on, and so does the quotient), so 2^n needs no overflow care: n is in [2, 14]
// for the lanes that use it.
EMBER_VM_INLINE float vtanh(float x) {
  float a = vm_abs(x);
  const float z = a * a;
  float p = -0x1.750ce2p-8f;
  p = vm_fma(p, z, 0x1.51f8cep-6f);
  p = vm_fma(p, z, -0x1.b835a4p-5f);
  p = vm_fma(p, z, 0x1.1106f6p-3f);
  p = vm_fma(p, z, -0x1.555532p-2f);
  const float small = vm_fma(a * z, p, a);

  const bool is_small = a < 0.625f;
  a = vm_sel(a > 9.5f, 9.5f, a);  // NaN passes through
  const float a2 = a + a;
  const float magic = 0x1.8p23f;
  const float t = vm_fma(a2, 0x1.715476p+0f, magic);
  const float n = t - magic;
  float r = vm_fma(n, -0.693359375f, a2);
  r = vm_fma(n, 2.12194440e-4f, r);
  const float s = vm_u2f((vm_f2u(t) + 127u) << 23);  // 2^n: the bits of magic vanish in the shift
  const float e = vm_fma(s, vm_expm1_poly(r), s - 1.0f);
  return vm_copysign_pos(vm_sel(is_small, small, e / (e + 2.0f)), x);
}

// 1 / (1 + exp(-x)) computed from e = exp(-|x|) in (0, 1]: 1/(1+e) for x >= 0, e/(1+e) for x < 0.
EMBER_VM_INLINE float vsigmoid(float x) {
  float na = -vm_abs(x);
  na = vm_sel(na < -104.0f, -104.0f, na);
  const float e = vm_exp_core(na);
  const float num = vm_sel(x >= 0.0f, 1.0f, e);
  return num / (1.0f + e);
}

// log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|))
EMBER_VM_INLINE float vsoftplus(float x) {
  float na = -vm_abs(x);
  na = vm_sel(na < -104.0f, -104.0f, na);
  const float l = vm_log1p_core(vm_exp_core(na));
  const float m = vm_sel(x > 0.0f, x, 0.0f);
  return m + l;
}

// erf: |x| < 0.875: x + x*P(x^2) (minimax, 0.98 ulp); 0.875 <= |x|: 1 - exp(Q(|x| - 0.875)) with Q a
// minimax fit of log(erfc) on [0.875, 4] (erf rounds to 1 from 3.92 on).
EMBER_VM_INLINE float verf(float x) {
  const float a = vm_abs(x);
  const float t = x * x;
  float ps = -0x1.453b02p-11f;
  ps = vm_fma(ps, t, 0x1.49ca14p-8f);
  ps = vm_fma(ps, t, -0x1.b6f38ep-6f);
  ps = vm_fma(ps, t, 0x1.ce211ep-4f);
  ps = vm_fma(ps, t, -0x1.81270cp-2f);
  ps = vm_fma(ps, t, 0x1.06eba6p-3f);
  const float rs = vm_fma(ps, x, x);

  float al = vm_sel(a > 4.0f, 4.0f, a);
  al = vm_sel(al < 0.875f, 0.875f, al);
  const float u = al - 0.875f;
  float q = -0x1.feee50p-28f;
  q = vm_fma(q, u, 0x1.cb4eb6p-20f);
  q = vm_fma(q, u, -0x1.23f2d4p-15f);
  q = vm_fma(q, u, 0x1.6e79b0p-12f);
  q = vm_fma(q, u, -0x1.2dcc24p-9f);
  q = vm_fma(q, u, 0x1.769b7ap-7f);
  q = vm_fma(q, u, -0x1.808950p-5f);
  q = vm_fma(q, u, -0x1.a72f3ep-1f);
  q = vm_fma(q, u, -0x1.371178p+1f);
  q = vm_fma(q, u, -0x1.88672ep+0f);
  const float rl = vm_copysign_pos(1.0f - vm_exp_core(q), x);
  return vm_sel(a < 0.875f, rs, rl);
}

// sin(r) for |r| <= pi/2 (+ a little): r + r^3 P(r^2), P a degree-3 relative-minimax fit (fitted for this
// header like vm_expm1_poly; truncation 6.2e-9 relative).
EMBER_VM_INLINE float vm_sin_poly(float r) {
  const float z = r * r;
  float p = 0x1.5dc80cp-19f;
  p = vm_fma(p, z, -0x1.9f70e8p-13f);
  p = vm_fma(p, z, 0x1.110edap-7f);
  p = vm_fma(p, z, -0x1.55554cp-3f);
  return vm_fma(r * z, p, r);
}

// Note [Float sin/cos]
// sin x = (-1)^n sin(r) with x = n*pi + r, and cos x = (-1)^(n+1) sin(r) with x = (n + 1/2)*pi + r, so both
// need one reduction by a multiple m of pi/2 (m = 2n, resp. 2n + 1) and the one odd polynomial on
// |r| <= pi/2 (half as much polynomial work as evaluating sin and cos on |r| <= pi/4 and selecting).
// There are two reductions.  Where both apply, their worst errors are the same in every binade (every float
// below 2^19 checked, AVX2 and AVX-512 builds: 1.73 ulp), though single results may differ by an ulp or two.
//  * In double (vm_sincos_f, which the scalar vsin/vcos use): Cody-Waite with a 3-part pi/2 whose first two
//    parts have <= 27 bits (m*P1, m*P2 exact for m < 2^26), so it is accurate for |x| < 2^25*pi ~ 1e8 in
//    every build (FMA or not); beyond, r is meaningless and the result is clamped to [-1, 1].
//  * In float (vm_sincos_f_bounded, builds with FMA only), valid only for |x| < kVmSinCosFloatMax = 2^16, and
//    a good deal cheaper (the array forms: sin 2.3x, cos 1.8x faster).  pi/2 = P1 + P2 + P3 in three floats,
//    and x - m*P1 is exact for |x| >= 1 (both are multiples of 2^-23 and the difference is below 2), so r is
//    rounded once, in the P2 step, as the double reduction rounds it once to float.  The bound is where the
//    worst error starts to exceed the double reduction's (1.76 ulp in [2^16, 2^18), 2.4 at 2^18, 3.2 at
//    2^20); it comes from m rather than from pi/2: m is x/pi rounded in float, which near the midpoints is
//    off by one once x/pi has few fraction bits left, and |r| then passes pi/2 by enough to cost accuracy.
//    cos with |x| < 1 (where m = 1) is the one case in which x - m*P1 rounds (x has bits below ulp(r)); the
//    part lost is recovered and taken through the P2 step, so that r is not rounded twice.
//    Without FMA the products m*Pi would have to be exact: pi/2 in parts of <= 11 bits (so |x| < 2^13) with
//    the rounding error of each subtraction carried along, about 17 operations instead of 3.  That was as
//    accurate, but on SSE2 no faster than the double reduction (sin 1.15x, cos 0.9x), so builds without FMA
//    keep the double one throughout.
// Picking the reduction per element would pay for both (no branches here, see vm_sel), so the array forms
// pick one per block of 64 elements: the float one when every |x| in the block is below the bound (which
// excludes inf and NaN).  The branch goes the same way for whole tensors of typical data, and the check costs
// about a tenth of the float reduction.
template <bool kCos>
EMBER_VM_INLINE float vm_sincos_f(float x) {
  const double xd = static_cast<double>(x);
  const double magic = 0x1.8p52;
  const double t =
      kCos ? vm_fma(xd, 0x1.45f306dc9c883p-2, -0.5) + magic : vm_fma(xd, 0x1.45f306dc9c883p-2, magic);
  const double n = t - magic;                           // round(x/pi) resp. round(x/pi - 1/2)
  const double m = kCos ? vm_fma(n, 2.0, 1.0) : n + n;  // multiple of pi/2, exact
  double rd = vm_fma(m, -0x1.921fb54p+0, xd);
  rd = vm_fma(m, -0x1.10b461p-30, rd);
  rd = vm_fma(m, -0x1.a62633145c07p-58, rd);
  float s = vm_sin_poly(static_cast<float>(rd));
  // Near |r| = pi/2 rounding can give 1 + 2^-23; for |x| >~ 1e8 r is garbage (the polynomial may even give
  // +-inf).  Clamping keeps the result in [-1, 1] (and only ever reduces the error); NaN passes through.
  s = vm_sel(s > 1.0f, 1.0f, s);
  s = vm_sel(s < -1.0f, -1.0f, s);
  if constexpr (!kCos) s = vm_sel(x == 0.0f, x, s);  // sin(-0) = -0 (the polynomial gives +0)
  const ::std::uint32_t odd = static_cast<::std::uint32_t>(vm_d2u(t)) + (kCos ? 1u : 0u);  // bit 0: sign flip
  return vm_u2f(vm_f2u(s) ^ (odd << 31));
}

#if EMBER_VM_HAS_FMA
static constexpr float kVmSinCosFloatMax = 0x1p16f;

// vm_sincos_f for finite |x| < kVmSinCosFloatMax only (garbage in [-1, 1] elsewhere), reduced in float.
template <bool kCos>
EMBER_VM_INLINE float vm_sincos_f_bounded(float x) {
  // m = 2*round(x/pi) by a magic number with ulp 2 (t = 1.5*2^24 + m: bit 0 of t is the parity of m/2 = n).
  // For cos, of the even function's |x|: t = 2^23 + n with n = round(|x|/pi - 1/2), computed in one rounding
  // from the constant 2^23 - 1/2 (where the ulp is 1/2); n >= 0 but |x| < pi/2 can land below 2^23, hence
  // the max (on the bits).  Then m = 2n + 1 (= 1 for |x| < 1, which the P2 step below relies on) and bit 0
  // of t is the parity of n, the sign flip being that of n + 1.
  const float ax = kCos ? vm_abs(x) : x;
  float t, m;
  ::std::uint32_t flip;
  if constexpr (kCos) {
    const ::std::uint32_t tb = vm_f2u(vm_fma(ax, 0x1.45f306p-2f, 0x1.fffffep22f));
    // An integer ?: min / max is safe (unlike float ones, see vm_sel) and becomes pmaxud / pminud, which a
    // bit select would hide from GCC.
    t = vm_u2f(tb > 0x4b000000u ? tb : 0x4b000000u);
    m = vm_fma(t, 2.0f, -0x1.fffffep23f);
    flip = ~vm_f2u(t) << 31;
  } else {
    t = vm_fma(x, 0x1.45f306p-1f, 0x1.8p24f);
    m = t - 0x1.8p24f;
    flip = vm_f2u(t) << 31;
  }
  // pi/2 = P1 + P2 + P3, all positive so that every step subtracts a product and sin(-0) stays -0.
  const float t1 = vm_fma(m, -0x1.921fb4p+0f, ax);
  float c2 = -0x1.4442d0p-24f;
  if constexpr (kCos) {
    // For |x| < 1 (m = 1), t1 = |x| - P1 is rounded (x has bits below ulp(t1)): the part lost joins -P2, so
    // that r is rounded once.  It is recomputed from |x| (Fast2Sum, P1 > |x|) beside the computation of m,
    // not from t1 with FMAs, which would lengthen the chain and load the FMA ports; |x| is clamped to 1.5 (an
    // integer min on the bits), where |x| - P1 is exact, so the term is 0 for |x| >= 1.
    const ::std::uint32_t ab = vm_f2u(ax);
    const float ac = vm_u2f(ab < 0x3fc00000u ? ab : 0x3fc00000u);
    c2 += ac - ((ac - 0x1.921fb4p+0f) + 0x1.921fb4p+0f);
  }
  const float r = vm_fma(m, -0x1.84698ap-48f, vm_fma(m, c2, t1));
  // sin(r) has the sign of r (also for r = -0, where the polynomial gives +0), so the result is |sin(r)|,
  // clamped to 1 (see vm_sincos_f), with the sign of r flipped for odd n.  r is finite here.
  const ::std::uint32_t a = vm_f2u(vm_sin_poly(r)) & 0x7fffffffu;
  const ::std::uint32_t mag = a < 0x3f800000u ? a : 0x3f800000u;  // integer min, as above
  return vm_u2f(mag | ((vm_f2u(r) ^ flip) & 0x80000000u));
}
#endif  // EMBER_VM_HAS_FMA

EMBER_VM_INLINE float vsin(float x) { return vm_sincos_f<false>(x); }
EMBER_VM_INLINE float vcos(float x) { return vm_sincos_f<true>(x); }

EMBER_VM_INLINE float velu(float x) { return vm_sel(x > 0.0f, x, vexpm1(x)); }
EMBER_VM_INLINE float velu(float x, float alpha) { return vm_sel(x > 0.0f, x, alpha * vexpm1(x)); }

// ===============================================================================================================
// double
// ===============================================================================================================

// exp(x) for x in [-746, 709.8] (or NaN).  Taylor degree 13 on |r| <= ln2/2 (truncation 4e-18).
EMBER_VM_INLINE double vm_exp_core(double x) {
  const double magic = 0x1.8p52;
  const double t = vm_fma(x, 0x1.71547652b82fep+0, magic);
  const double n = t - magic;
  double r = vm_fma(n, -0x1.62e42ffp-1, x);  // ln2 hi (32 bits)
  r = vm_fma(n, 0x1.718432a1b0e26p-35, r);   // ln2 lo
  double p = 0x1.6124613a86d09p-33;          // 1/13!
  p = vm_fma(p, r, 0x1.1eed8eff8d898p-29);
  p = vm_fma(p, r, 0x1.ae64567f544e4p-26);
  p = vm_fma(p, r, 0x1.27e4fb7789f5cp-22);
  p = vm_fma(p, r, 0x1.71de3a556c734p-19);
  p = vm_fma(p, r, 0x1.a01a01a01a01ap-16);
  p = vm_fma(p, r, 0x1.a01a01a01a01ap-13);
  p = vm_fma(p, r, 0x1.6c16c16c16c17p-10);
  p = vm_fma(p, r, 0x1.1111111111111p-7);
  p = vm_fma(p, r, 0x1.5555555555555p-5);
  p = vm_fma(p, r, 0x1.5555555555555p-3);
  p = vm_fma(p, r, 0.5);
  const double z = r * r;
  const double y = vm_fma(p, z, r) + 1.0;
  const ::std::uint64_t nb = vm_d2u(t) - vm_d2u(magic) + 2048u;  // n + 2048
  const ::std::uint64_t h = nb >> 1;                             // floor(n/2) + 1024
  const double s1 = vm_u2d((h - 1u) << 52);
  const double s2 = vm_u2d((nb - h - 1u) << 52);
  return (y * s1) * s2;
}

// expm1(x) for x in [-708, 709.8] (or NaN).
EMBER_VM_INLINE double vm_expm1_core(double x) {
  const double magic = 0x1.8p52;
  const double t = vm_fma(x, 0x1.71547652b82fep+0, magic);
  const double n = t - magic;
  double r = vm_fma(n, -0x1.62e42ffp-1, x);
  r = vm_fma(n, 0x1.718432a1b0e26p-35, r);
  double p = 0x1.6124613a86d09p-33;  // 1/13!
  p = vm_fma(p, r, 0x1.1eed8eff8d898p-29);
  p = vm_fma(p, r, 0x1.ae64567f544e4p-26);
  p = vm_fma(p, r, 0x1.27e4fb7789f5cp-22);
  p = vm_fma(p, r, 0x1.71de3a556c734p-19);
  p = vm_fma(p, r, 0x1.a01a01a01a01ap-16);
  p = vm_fma(p, r, 0x1.a01a01a01a01ap-13);
  p = vm_fma(p, r, 0x1.6c16c16c16c17p-10);
  p = vm_fma(p, r, 0x1.1111111111111p-7);
  p = vm_fma(p, r, 0x1.5555555555555p-5);
  p = vm_fma(p, r, 0x1.5555555555555p-3);
  p = vm_fma(p, r, 0.5);
  const double em = vm_fma(r * r, p, r);
  const bool big = n > 1023.5;
  const ::std::uint64_t nb = vm_d2u(t) - vm_d2u(magic);
  const ::std::uint64_t nc = vm_sel(big, ::std::uint64_t{1023}, nb);
  const double s = vm_u2d((nc + 1023u) << 52);
  const double res = vm_fma(s, em, s - 1.0);
  return vm_sel(big, res * 2.0, res);
}

// log(1+f) + k*ln2 for f in [sqrt(1/2)-1, sqrt(2)-1]:  log(1+f) = f - s*(f - R), s = f/(2+f),
// R = 2 s^2/3 + 2 s^4/5 + ... (atanh series, |s| <= 0.1716, truncation < 1e-18).
EMBER_VM_INLINE double vm_log_poly(double f, double k) {
  const double s = f / (2.0 + f);
  const double z = s * s;
  double R = 2.0 / 21.0;
  R = vm_fma(R, z, 2.0 / 19.0);
  R = vm_fma(R, z, 2.0 / 17.0);
  R = vm_fma(R, z, 2.0 / 15.0);
  R = vm_fma(R, z, 2.0 / 13.0);
  R = vm_fma(R, z, 2.0 / 11.0);
  R = vm_fma(R, z, 2.0 / 9.0);
  R = vm_fma(R, z, 2.0 / 7.0);
  R = vm_fma(R, z, 2.0 / 5.0);
  R = vm_fma(R, z, 2.0 / 3.0);
  R = R * z;
  const double lo = vm_fma(s, f - R, k * 0x1.718432a1b0e26p-35);  // s*(f-R) - k*ln2_lo  (ln2_lo < 0)
  return vm_fma(k, 0x1.62e42ffp-1, f - lo);
}

// int in [0, 2^52) held in a uint64 -> double, without int64->double conversion (not in AVX2)
EMBER_VM_INLINE double vm_u52_to_d(::std::uint64_t v) { return vm_u2d(v | 0x4330000000000000ull) - 0x1p52; }

EMBER_VM_INLINE double vm_log1p_core(double x) {
  const double u = 1.0 + x;
  const ::std::uint64_t iu = vm_d2u(u) + (0x3ff0000000000000ull - 0x3fe6a09e667f3bcdull);
  const ::std::uint64_t ek = iu >> 52;  // k + 1023
  const double m = vm_u2d((iu & 0x000fffffffffffffull) + 0x3fe6a09e667f3bcdull);
  const double c = vm_sel(u >= 0x1.6a09e667f3bcdp+0, 1.0 - (u - x), x - (u - 1.0));
  double sc = vm_u2d((2046u - ek) << 52);  // 2^-k (garbage for k = 1024: u >= 2^1023*sqrt2)
  sc = vm_sel(u > 0x1p1023, 0.0, sc);
  const double f = vm_fma(c, sc, m - 1.0);
  const double k = vm_u52_to_d(ek) - 1023.0;
  return vm_log_poly(f, k);
}

EMBER_VM_INLINE double vexp(double x) {
  x = vm_sel(x < -746.0, -746.0, x);
  x = vm_sel(x > 709.8, 709.8, x);
  return vm_exp_core(x);
}

EMBER_VM_INLINE double vexpm1(double x) {
  double xc = vm_sel(x < -708.0, -708.0, x);
  xc = vm_sel(xc > 709.8, 709.8, xc);
  const double res = vm_expm1_core(xc);
  return vm_sel(x == 0.0, x, res);
}

EMBER_VM_INLINE double vlog(double x) {
  const bool sub = x < 0x1p-1022;
  const double xs = vm_sel(sub, x * 0x1p52, x);
  const double kadj = vm_sel(sub, -52.0, 0.0);
  const ::std::uint64_t ix = vm_d2u(xs) + (0x3ff0000000000000ull - 0x3fe6a09e667f3bcdull);
  const double k = vm_u52_to_d(ix >> 52) - 1023.0 + kadj;
  const double f = vm_u2d((ix & 0x000fffffffffffffull) + 0x3fe6a09e667f3bcdull) - 1.0;
  double res = vm_log_poly(f, k);
  res = vm_sel(x == ::std::numeric_limits<double>::infinity(), x, res);
  res = vm_sel(x == 0.0, -::std::numeric_limits<double>::infinity(), res);
  res = vm_sel(!(x >= 0.0), ::std::numeric_limits<double>::quiet_NaN(), res);
  return res;
}

EMBER_VM_INLINE double vlog1p(double x) {
  double res = vm_log1p_core(x);
  res = vm_sel(x == ::std::numeric_limits<double>::infinity(), x, res);
  res = vm_sel(x == 0.0, x, res);
  res = vm_sel(x == -1.0, -::std::numeric_limits<double>::infinity(), res);
  res = vm_sel(!(x >= -1.0), ::std::numeric_limits<double>::quiet_NaN(), res);
  return res;
}

EMBER_VM_INLINE double vtanh(double x) {
  double a = vm_abs(x);
  a = vm_sel(a > 22.0, 22.0, a);
  const double e = vm_expm1_core(a + a);
  return vm_copysign_pos(e / (e + 2.0), x);
}

EMBER_VM_INLINE double vsigmoid(double x) {
  double na = -vm_abs(x);
  na = vm_sel(na < -746.0, -746.0, na);
  const double e = vm_exp_core(na);
  const double num = vm_sel(x >= 0.0, 1.0, e);
  return num / (1.0 + e);
}

EMBER_VM_INLINE double vsoftplus(double x) {
  double na = -vm_abs(x);
  na = vm_sel(na < -746.0, -746.0, na);
  const double l = vm_log1p_core(vm_exp_core(na));
  const double m = vm_sel(x > 0.0, x, 0.0);
  return m + l;
}

// NOT vectorised: falls back to libm (see the accuracy notes at the top).
EMBER_VM_INLINE double verf(double x) { return ::std::erf(x); }
EMBER_VM_INLINE double verfc(double x) { return ::std::erfc(x); }

// Float erfc, computed in double: erfc(a) = exp(-a^2) * t * P(t) for a = |x| and t = 2 / (2 + a), with P a
// degree-12 Chebyshev fit of erfc(a) exp(a^2) / t on a in [0, 11] (3.3e-10 relative), and erfc(x) =
// 2 - erfc(-x) for x < 0. a^2 of a float is exact in double, so there is none of the cancellation that
// 1 - erf(x) suffers for large x (erfc falls to 1e-45, the last float subnormal, at 10.05): the result is
// correctly rounded but for ties. Beyond 11 the double result rounds to float zero, so a is clamped there.
EMBER_VM_INLINE float verfc(float x) {
  const double xd = x;
  double a = vm_abs(xd);
  a = vm_sel(a > 11.0, 11.0, a);
  const double t = 2.0 / (2.0 + a);
  double p = -0x1.fac43bfaef7dfp-8;
  p = vm_fma(p, t, 0x1.8111cc0087ccfp-6);
  p = vm_fma(p, t, 0x1.e32b5ed1ef93dp-5);
  p = vm_fma(p, t, -0x1.a8203f06ad624p-2);
  p = vm_fma(p, t, 0x1.be545007f0abfp-1);
  p = vm_fma(p, t, -0x1.c4917347225dfp-1);
  p = vm_fma(p, t, 0x1.bffee8dc1a7bep-2);
  p = vm_fma(p, t, -0x1.9e4825bfebedep-3);
  p = vm_fma(p, t, 0x1.1aa93e86f3fd7p-3);
  p = vm_fma(p, t, 0x1.5478feddd42e0p-3);
  p = vm_fma(p, t, 0x1.fbfaf1a36364ap-3);
  p = vm_fma(p, t, 0x1.20c77f2231956p-2);
  p = vm_fma(p, t, 0x1.20de2136c478cp-2);
  const double e = vm_exp_core(-(a * a)) * (t * p);
  return static_cast<float>(vm_sel(xd < 0.0, 2.0 - e, e));
}

// Double sin/cos: pi/2 = P1 + P2 + P3 + P4 with 27-bit P1..P3 (n*Pi exact for |n| < 2^26, with or without
// FMA), Taylor polynomials to r^17 / r^18 on |r| <= pi/4.
EMBER_VM_INLINE double vm_sincos_d(double x, ::std::uint64_t q_off) {
  const double magic = 0x1.8p52;
  const double t = vm_fma(x, 0x1.45f306dc9c883p-1, magic);
  const double n = t - magic;
  double r = vm_fma(n, -0x1.921fb54p+0, x);
  r = vm_fma(n, -0x1.10b461p-30, r);
  r = vm_fma(n, -0x1.a62633p-58, r);
  r = vm_fma(n, -0x1.45c06e0e68948p-86, r);
  r = vm_sel(r > 0.8, 0.8, r);
  r = vm_sel(r < -0.8, -0.8, r);
  const double z = r * r;
  double ps = 0x1.952c77030ad4ap-49;           // 1/17!
  ps = vm_fma(ps, z, -0x1.ae7f3e733b81fp-41);  // -1/15!
  ps = vm_fma(ps, z, 0x1.6124613a86d09p-33);   // 1/13!
  ps = vm_fma(ps, z, -0x1.ae64567f544e4p-26);  // -1/11!
  ps = vm_fma(ps, z, 0x1.71de3a556c734p-19);   // 1/9!
  ps = vm_fma(ps, z, -0x1.a01a01a01a01ap-13);  // -1/7!
  ps = vm_fma(ps, z, 0x1.1111111111111p-7);    // 1/5!
  ps = vm_fma(ps, z, -0x1.5555555555555p-3);   // -1/3!
  double s = vm_fma(r * z, ps, r);
  s = vm_sel(r == 0.0, r, s);                  // sin(-0) = -0
  double pc = 0x1.6827863b97d97p-53;           // 1/18!
  pc = vm_fma(pc, z, -0x1.ae7f3e733b81fp-45);  // -1/16!
  pc = vm_fma(pc, z, 0x1.93974a8c07c9dp-37);   // 1/14!
  pc = vm_fma(pc, z, -0x1.1eed8eff8d898p-29);  // -1/12!
  pc = vm_fma(pc, z, 0x1.27e4fb7789f5cp-22);   // 1/10!
  pc = vm_fma(pc, z, -0x1.a01a01a01a01ap-16);  // -1/8!
  pc = vm_fma(pc, z, 0x1.6c16c16c16c17p-10);   // 1/6!
  pc = vm_fma(pc, z, -0x1.5555555555555p-5);   // -1/4!
  pc = vm_fma(pc, z, 0.5);
  const double c = 1.0 - pc * z;
  const ::std::uint64_t q = vm_d2u(t) + q_off;
  const ::std::uint64_t swap = 0u - (q & 1u);
  ::std::uint64_t bits = (vm_d2u(c) & swap) | (vm_d2u(s) & ~swap);
  bits ^= (q & 2u) << 62;
  return vm_u2d(bits);
}
EMBER_VM_INLINE double vsin(double x) { return vm_sincos_d(x, 0u); }
EMBER_VM_INLINE double vcos(double x) { return vm_sincos_d(x, 1u); }

EMBER_VM_INLINE double velu(double x) { return vm_sel(x > 0.0, x, vexpm1(x)); }
EMBER_VM_INLINE double velu(double x, double alpha) { return vm_sel(x > 0.0, x, alpha * vexpm1(x)); }

// ===============================================================================================================
// Array forms: y[i] = f(x[i]) for i < n.  x may equal y (in place); otherwise they must not overlap.
// ===============================================================================================================
#define EMBER_VM_ARRAY_F(NAME)                                           \
  EMBER_VM_INLINE void NAME(const float* x, float* y, ::std::size_t n) { \
    for (::std::size_t i = 0; i < n; ++i) y[i] = NAME(x[i]);             \
  }
#define EMBER_VM_ARRAY_D(NAME)                                             \
  EMBER_VM_INLINE void NAME(const double* x, double* y, ::std::size_t n) { \
    for (::std::size_t i = 0; i < n; ++i) y[i] = NAME(x[i]);               \
  }
#define EMBER_VM_ARRAY(NAME) \
  EMBER_VM_ARRAY_F(NAME)     \
  EMBER_VM_ARRAY_D(NAME)
EMBER_VM_ARRAY(vexp)
EMBER_VM_ARRAY(vexpm1)
EMBER_VM_ARRAY(vlog)
EMBER_VM_ARRAY(vlog1p)
EMBER_VM_ARRAY(vtanh)
EMBER_VM_ARRAY(vsigmoid)
EMBER_VM_ARRAY(vsoftplus)
EMBER_VM_ARRAY(verf)
EMBER_VM_ARRAY(verfc)
EMBER_VM_ARRAY_D(vsin)
EMBER_VM_ARRAY_D(vcos)
EMBER_VM_ARRAY(velu)
#undef EMBER_VM_ARRAY
#undef EMBER_VM_ARRAY_D
#undef EMBER_VM_ARRAY_F

// Float sin / cos arrays (Note [Float sin/cos]).
#if EMBER_VM_HAS_FMA
// True iff every |x[i]| is below kVmSinCosFloatMax (inf and NaN are not).
EMBER_VM_INLINE bool vm_sincos_f_near(const float* x, ::std::size_t n) {
  ::std::uint32_t top = 0;  // an unsigned max of |x|'s bits
  for (::std::size_t i = 0; i < n; ++i) {
    const ::std::uint32_t a = vm_f2u(x[i]) & 0x7fffffffu;
    top = a > top ? a : top;  // integer max, see vm_sincos_f_bounded
  }
  return top < vm_f2u(kVmSinCosFloatMax);
}
template <bool kCos>
EMBER_VM_INLINE void vm_sincos_f_loop(const float* x, float* y, ::std::size_t n, bool near) {
  if (near) {
    for (::std::size_t i = 0; i < n; ++i) y[i] = vm_sincos_f_bounded<kCos>(x[i]);
  } else {
    for (::std::size_t i = 0; i < n; ++i) y[i] = vm_sincos_f<kCos>(x[i]);
  }
}
template <bool kCos>
EMBER_VM_INLINE void vm_sincos_f_array(const float* x, float* y, ::std::size_t n) {
  const ::std::size_t kBlock = 64;
  ::std::size_t i = 0;
  for (; i + kBlock <= n; i += kBlock)
    vm_sincos_f_loop<kCos>(x + i, y + i, kBlock, vm_sincos_f_near(x + i, kBlock));
  if (i < n) vm_sincos_f_loop<kCos>(x + i, y + i, n - i, vm_sincos_f_near(x + i, n - i));
}
EMBER_VM_INLINE void vsin(const float* x, float* y, ::std::size_t n) { vm_sincos_f_array<false>(x, y, n); }
EMBER_VM_INLINE void vcos(const float* x, float* y, ::std::size_t n) { vm_sincos_f_array<true>(x, y, n); }
#else
EMBER_VM_INLINE void vsin(const float* x, float* y, ::std::size_t n) {
  for (::std::size_t i = 0; i < n; ++i) y[i] = vsin(x[i]);
}
EMBER_VM_INLINE void vcos(const float* x, float* y, ::std::size_t n) {
  for (::std::size_t i = 0; i < n; ++i) y[i] = vcos(x[i]);
}
#endif

#undef EMBER_VM_ASSUME_FMA
#undef EMBER_VM_HAS_FMA
#undef EMBER_VM_INLINE
