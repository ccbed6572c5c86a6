// The floating-point environment ember's kernels run under. TensorFlow's CPU kernels run with
// flush-to-zero (FTZ: a subnormal result becomes zero) and denormals-are-zero (DAZ: a subnormal input reads
// as zero) set in the x86 MXCSR register, so float32 1e-40 * 1 is 0 there; ember sets the same two bits
// wherever its kernels run, and only there: the calling thread gets its own mode back after every op and
// every function call, so NumPy beside ember keeps its subnormals. docs/subnormals.md has TensorFlow's
// behaviour case by case and where ember sets the bits (Note [Where denormals flush]).
//
// Off x86-64 every function here does nothing: MXCSR is x86's (AArch64's FPCR.FZ would be the analogue,
// not needed yet).
#pragma once

#include <cstdint>

#if defined(__x86_64__) || defined(_M_X64)
#include <xmmintrin.h>
#define EMBER_HAS_MXCSR 1
#else
#define EMBER_HAS_MXCSR 0
#endif

namespace ember {

/// MXCSR's flush-to-zero (bit 15) and denormals-are-zero (bit 6) bits.
inline constexpr uint32_t kFlushDenormals = 0x8040;

/// The FTZ and DAZ bits of this thread's MXCSR (kFlushDenormals when both are set; 0 off x86-64).
inline uint32_t denormal_flags() {
#if EMBER_HAS_MXCSR
  return _mm_getcsr() & kFlushDenormals;
#else
  return 0;
#endif
}

/// Sets this thread's FTZ and DAZ bits to `flags` (a subset of kFlushDenormals), leaving the rest of MXCSR.
inline void set_denormal_flags(uint32_t flags) {
#if EMBER_HAS_MXCSR
  const uint32_t csr = _mm_getcsr();
  const uint32_t wanted = (csr & ~kFlushDenormals) | (flags & kFlushDenormals);
  if (wanted != csr)
    _mm_setcsr(wanted);  // an MXCSR write costs more than the read: skip it when it is a no-op
#else
  (void)flags;
#endif
}

/// Runs the enclosing scope with FTZ and DAZ set on this thread and restores the thread's own bits at its
/// end. Nested scopes cost one MXCSR read each.
class ScopedFlushDenormals {
 public:
  ScopedFlushDenormals() : saved_(denormal_flags()) {
    if (saved_ != kFlushDenormals) set_denormal_flags(kFlushDenormals);
  }
  ~ScopedFlushDenormals() {
    if (saved_ != kFlushDenormals) set_denormal_flags(saved_);
  }
  ScopedFlushDenormals(const ScopedFlushDenormals&) = delete;
  ScopedFlushDenormals& operator=(const ScopedFlushDenormals&) = delete;

 private:
  uint32_t saved_;
};

/// Opened by every thread of a parallel region ember starts: a worker (any thread but the region's caller)
/// runs the region under the caller's bits, `caller_flags` (read before the region), and flushes again after
/// it, as OpenMP's workers always do between ember's regions (Note [Where denormals flush]).
class RegionDenormalFlags {
 public:
  RegionDenormalFlags(uint32_t caller_flags, bool is_worker) : is_worker_(is_worker) {
    if (is_worker_) set_denormal_flags(caller_flags);
  }
  ~RegionDenormalFlags() {
    if (is_worker_) set_denormal_flags(kFlushDenormals);
  }
  RegionDenormalFlags(const RegionDenormalFlags&) = delete;
  RegionDenormalFlags& operator=(const RegionDenormalFlags&) = delete;

 private:
  bool is_worker_;
};

/// Makes sure the first `threads` threads of OpenMP's pool flush denormals before a region that ember does
/// not open itself (oneDNN's), whose workers it cannot reach from inside. Runs a region the first time a
/// team this large is asked for; a no-op after (and always off x86-64).
void flush_denormals_on_pool(int threads);

}  // namespace ember
