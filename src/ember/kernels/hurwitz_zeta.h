// The Hurwitz zeta function zeta(s, q) = sum over k >= 0 of (k + q)^-s, in double, for the element-wise
// Polygamma row (kernels/elementwise_functors.h) and the Zeta op (ops/special_functions.cc). Like
// elementwise_functors.h it has no include guard and opens no namespace, so that each ISA copy and the JIT's
// bitcode library keep their own inline copy; it needs <cmath> and <limits>.
//
// Euler-Maclaurin summation (as Cephes' zeta): the first terms summed directly, then the integral of the
// tail and its Bernoulli corrections. Edges as TensorFlow's Zeta: s = 1 is inf, s < 1 (or NaN) NaN, q a
// non-positive integer (or -inf) inf for an even s and NaN otherwise, q non-positive non-integer NaN for a
// non-integer s.
inline double special_zeta(double s, double q) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN(),
                   kInf = std::numeric_limits<double>::infinity();
  constexpr double kEps = 1.1102230246251565e-16;
  static constexpr double kA[] = {12.0,
                                  -720.0,
                                  30240.0,
                                  -1209600.0,
                                  47900160.0,
                                  -1.8924375803183791606e9,
                                  7.47242496e10,
                                  -2.950130727918164224e12,
                                  1.1646782814350067249e14,
                                  -4.5979787224074726105e15,
                                  1.8152105401943546773e17,
                                  -7.1661652561756670113e18};
  if (s == 1) return kInf;
  if (s < 1 || s != s || q != q) return kNaN;
  if (q <= 0) {
    // At a pole q = 0, -1, ... (and -inf): inf for an even s (inf counts as even), NaN for the others.
    if (q == std::floor(q)) return (std::isinf(s) || std::fmod(s, 2.0) == 0) ? kInf : kNaN;
    if (s != std::floor(s)) return kNaN;
  }
  // s = inf: the terms with |k + q| < 1 are inf, one with |k + q| = 1 is 1, the rest 0.
  if (s == kInf) return q < 1 ? kInf : (q == 1 ? 1 : 0);
  double sum = std::pow(q, -s), a = q, b = 0;
  if (sum == 0) return 0;  // q = inf: every term is 0
  int i = 0;
  while (i < 9 || a <= 9) {
    ++i;
    a += 1;
    b = std::pow(a, -s);
    sum += b;
    if (std::fabs(b / sum) < kEps) return sum;
  }
  const double w = a;
  sum += b * w / (s - 1) - 0.5 * b;
  double fac = 1, k = 0;
  for (double coefficient : kA) {
    fac *= s + k;
    b /= w;
    const double term = fac * b / coefficient;
    sum += term;
    if (std::fabs(term / sum) < kEps) break;
    k += 1;
    fac *= s + k;
    b /= w;
    k += 1;
  }
  return sum;
}
