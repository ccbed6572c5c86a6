// tf.signal's FFTs through FFTW (Debian's libfftw3: fftw3f for single, fftw3 for double precision).
//
// Note [FFT plans]
// FFTW computes with a plan made for one transform kind, precision, length and batch. Planning is not
// thread-safe (FFTW's planner keeps global state) while executing a plan is, through the new-array
// interface (fftw_execute_dft(plan, in, out)) on arrays of the planned alignment. So plans are made once
// per (kind, precision, dims, batch) under a mutex, with FFTW_ESTIMATE (no trial runs: the first call of
// a shape costs microseconds, never the measurements FFTW_MEASURE makes), cached for the life of the
// process, and executed without the lock. Plans are made on arrays that FFTW allocates (SIMD-aligned);
// an operand that is not aligned like them goes through an aligned copy. Only c2r transforms overwrite
// their input, and theirs is always a scratch copy (it is padded or cropped to the FFT lengths anyway).
#include <fftw3.h>

#include <algorithm>
#include <complex>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "ember/core/parallel.h"
#include "ember/kernels/array.h"
#include "ember/kernels/complex.h"

namespace ember::kernels {
namespace {

enum class Kind : int { kForward, kBackward, kR2C, kC2R };

// The FFTW API for one precision.
template <typename R>
struct Fftw;
template <>
struct Fftw<float> {
  using Plan = fftwf_plan;
  using Complex = fftwf_complex;
  static void* alloc(size_t n) { return fftwf_malloc(n); }
  static void free(void* p) { fftwf_free(p); }
  static int alignment(const void* p) {
    return fftwf_alignment_of(static_cast<float*>(const_cast<void*>(p)));
  }
  static Plan plan(Kind kind, int rank, const int* n, int howmany, void* in, void* out) {
    int total_in = 1, total_out = 1;
    for (int i = 0; i < rank; ++i) total_in *= n[i], total_out *= n[i];
    const int last = n[rank - 1], half = total_out / last * (last / 2 + 1);
    switch (kind) {
      case Kind::kForward:
      case Kind::kBackward:
        return fftwf_plan_many_dft(rank, n, howmany, static_cast<Complex*>(in), nullptr, 1, total_in,
                                   static_cast<Complex*>(out), nullptr, 1, total_out,
                                   kind == Kind::kForward ? FFTW_FORWARD : FFTW_BACKWARD, FFTW_ESTIMATE);
      case Kind::kR2C:
        return fftwf_plan_many_dft_r2c(rank, n, howmany, static_cast<float*>(in), nullptr, 1, total_in,
                                       static_cast<Complex*>(out), nullptr, 1, half, FFTW_ESTIMATE);
      case Kind::kC2R:
        return fftwf_plan_many_dft_c2r(rank, n, howmany, static_cast<Complex*>(in), nullptr, 1, half,
                                       static_cast<float*>(out), nullptr, 1, total_in, FFTW_ESTIMATE);
    }
    return nullptr;
  }
  static void execute(Kind kind, Plan p, void* in, void* out) {
    switch (kind) {
      case Kind::kForward:
      case Kind::kBackward:
        fftwf_execute_dft(p, static_cast<Complex*>(in), static_cast<Complex*>(out));
        break;
      case Kind::kR2C:
        fftwf_execute_dft_r2c(p, static_cast<float*>(in), static_cast<Complex*>(out));
        break;
      case Kind::kC2R:
        fftwf_execute_dft_c2r(p, static_cast<Complex*>(in), static_cast<float*>(out));
        break;
    }
  }
};
template <>
struct Fftw<double> {
  using Plan = fftw_plan;
  using Complex = fftw_complex;
  static void* alloc(size_t n) { return fftw_malloc(n); }
  static void free(void* p) { fftw_free(p); }
  static int alignment(const void* p) {
    return fftw_alignment_of(static_cast<double*>(const_cast<void*>(p)));
  }
  static Plan plan(Kind kind, int rank, const int* n, int howmany, void* in, void* out) {
    int total = 1;
    for (int i = 0; i < rank; ++i) total *= n[i];
    const int last = n[rank - 1], half = total / last * (last / 2 + 1);
    switch (kind) {
      case Kind::kForward:
      case Kind::kBackward:
        return fftw_plan_many_dft(rank, n, howmany, static_cast<Complex*>(in), nullptr, 1, total,
                                  static_cast<Complex*>(out), nullptr, 1, total,
                                  kind == Kind::kForward ? FFTW_FORWARD : FFTW_BACKWARD, FFTW_ESTIMATE);
      case Kind::kR2C:
        return fftw_plan_many_dft_r2c(rank, n, howmany, static_cast<double*>(in), nullptr, 1, total,
                                      static_cast<Complex*>(out), nullptr, 1, half, FFTW_ESTIMATE);
      case Kind::kC2R:
        return fftw_plan_many_dft_c2r(rank, n, howmany, static_cast<Complex*>(in), nullptr, 1, half,
                                      static_cast<double*>(out), nullptr, 1, total, FFTW_ESTIMATE);
    }
    return nullptr;
  }
  static void execute(Kind kind, Plan p, void* in, void* out) {
    switch (kind) {
      case Kind::kForward:
      case Kind::kBackward:
        fftw_execute_dft(p, static_cast<Complex*>(in), static_cast<Complex*>(out));
        break;
      case Kind::kR2C:
        fftw_execute_dft_r2c(p, static_cast<double*>(in), static_cast<Complex*>(out));
        break;
      case Kind::kC2R:
        fftw_execute_dft_c2r(p, static_cast<Complex*>(in), static_cast<double*>(out));
        break;
    }
  }
};

using PlanKey = std::tuple<int /*kind*/, int /*double*/, std::vector<int>, int /*howmany*/>;

std::mutex& plan_mutex() {
  static std::mutex m;
  return m;
}
std::map<PlanKey, void*>& plan_cache() {  // FFTW plans are pointers; never destroyed (Note [FFT plans])
  static auto* cache = new std::map<PlanKey, void*>;
  return *cache;
}

// An FFTW-allocated buffer, freed on scope exit.
template <typename R>
struct Aligned {
  void* p = nullptr;
  explicit Aligned(size_t bytes) : p(Fftw<R>::alloc(std::max<size_t>(bytes, 16))) {}
  ~Aligned() { Fftw<R>::free(p); }
  Aligned(const Aligned&) = delete;
  Aligned& operator=(const Aligned&) = delete;
};

// Bytes per batch element of the input and output of a transform of `kind` with lengths `n`.
template <typename R>
std::pair<size_t, size_t> batch_bytes(Kind kind, const std::vector<int>& n) {
  size_t total = 1;
  for (int d : n) total *= static_cast<size_t>(d);
  const size_t half = total / n.back() * (n.back() / 2 + 1);
  const size_t real = total * sizeof(R), complex = total * 2 * sizeof(R), half_bytes = half * 2 * sizeof(R);
  switch (kind) {
    case Kind::kR2C:
      return {real, half_bytes};
    case Kind::kC2R:
      return {half_bytes, real};
    default:
      return {complex, complex};
  }
}

template <typename R>
StatusOr<typename Fftw<R>::Plan> get_plan(Kind kind, const std::vector<int>& n, int howmany) {
  std::lock_guard<std::mutex> lock(plan_mutex());
  PlanKey key{static_cast<int>(kind), std::is_same_v<R, double> ? 1 : 0, n, howmany};
  auto it = plan_cache().find(key);
  if (it != plan_cache().end()) return static_cast<typename Fftw<R>::Plan>(it->second);
  auto [in_bytes, out_bytes] = batch_bytes<R>(kind, n);
  // FFTW_ESTIMATE plans without touching the arrays; they only fix the alignment the plan assumes.
  Aligned<R> in(in_bytes * howmany), out(out_bytes * howmany);
  if (in.p == nullptr || out.p == nullptr)
    return make_error(Code::kResourceExhausted, "FFT: out of memory planning a transform");
  auto plan = Fftw<R>::plan(kind, static_cast<int>(n.size()), n.data(), howmany, in.p, out.p);
  if (plan == nullptr) return make_error(Code::kInternal, "FFT: FFTW could not plan the transform");
  plan_cache().emplace(std::move(key), static_cast<void*>(plan));
  return plan;
}

// Runs one cached plan over `howmany` transforms from `in` to `out` (contiguous, batch-major). `in` may be
// overwritten only when `in_scratch` (c2r). Unaligned operands go through aligned copies.
template <typename R>
Status execute(Kind kind, const std::vector<int>& n, int64_t howmany, const void* in, void* out) {
  if (howmany == 0) return Status::OK();
  if (howmany > INT32_MAX) return invalid_argument("FFT: more than 2^31 - 1 transforms in one call");
  auto plan = get_plan<R>(kind, n, static_cast<int>(howmany));
  if (!plan.ok()) return plan.status();
  auto [in_bytes, out_bytes] = batch_bytes<R>(kind, n);
  const bool in_aligned = Fftw<R>::alignment(in) == 0, out_aligned = Fftw<R>::alignment(out) == 0;
  std::unique_ptr<Aligned<R>> in_copy, out_copy;
  void* src = const_cast<void*>(in);
  void* dst = out;
  if (!in_aligned) {
    in_copy = std::make_unique<Aligned<R>>(in_bytes * howmany);
    std::memcpy(in_copy->p, in, in_bytes * howmany);
    src = in_copy->p;
  }
  if (!out_aligned) {
    out_copy = std::make_unique<Aligned<R>>(out_bytes * howmany);
    dst = out_copy->p;
  }
  Fftw<R>::execute(kind, *plan, src, dst);
  if (!out_aligned) std::memcpy(out, dst, out_bytes * howmany);
  return Status::OK();
}

std::vector<int> to_int(std::span<const int64_t> dims) {
  std::vector<int> n;
  for (int64_t d : dims) n.push_back(static_cast<int>(d));
  return n;
}

// Copies the last `rank` dims of `in` (elements of `elem` bytes) into `out`, cropping or zero-padding each
// to `out`'s dims; the leading (batch) dims are the same.
void fit_inner(const TensorImpl& in, const Shape& out_shape, size_t elem, void* out) {
  const Shape& s = in.shape();
  const int rank = s.rank();
  std::memset(out, 0, static_cast<size_t>(out_shape.num_elements()) * elem);
  StridedCopy c;
  c.rank = rank;
  int64_t in_strides[kMaxRank], out_strides[kMaxRank];
  dense_strides(rank, s.dims().data(), in_strides);
  dense_strides(rank, out_shape.dims().data(), out_strides);
  for (int i = 0; i < rank; ++i) {
    c.dims[i] = std::min(s.dim(i), out_shape.dim(i));
    c.src_strides[i] = in_strides[i];
    c.dst_strides[i] = out_strides[i];
  }
  for (int i = 0; i < rank; ++i)
    if (c.dims[i] == 0) return;
  strided_copy(in.raw_data(), out, elem, c);
}

template <typename R>
void scale(void* data, int64_t n, R factor) {
  R* p = static_cast<R*>(data);
  parallel_for(n, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) p[i] *= factor;
  });
}

// Note [Multi-dimensional FFTs]
// FFTW_ESTIMATE plans for 2-D and 3-D transforms run the outer axes as strided column transforms, whose
// power-of-two strides thrash the cache: 512 x 512 complex64 took 60-100 ms here against 0.4 ms for its 512
// row transforms. So every transform is 1-D along contiguous rows: the innermost axis directly, each outer
// axis by swapping it innermost (kernels::transpose, cache-blocked), transforming the rows and swapping
// back. That is the row-column algorithm with the strided passes made contiguous; a real transform is its
// 1-D real transform along the innermost axis plus complex ones along the others.
template <typename R>
Status c2c_outer_axes(void* data, const Shape& shape, int rank, Kind kind) {
  const int r = shape.rank();
  if (rank < 2 || shape.num_elements() == 0) return Status::OK();
  const size_t bytes = static_cast<size_t>(shape.num_elements()) * 2 * sizeof(R);
  Aligned<R> swapped(bytes), transformed(bytes);
  const std::vector<int64_t> dims = shape.dim_vector();
  for (int axis = r - 2; axis >= r - rank; --axis) {
    std::vector<int> perm(r);
    for (int i = 0; i < r; ++i) perm[i] = i;
    std::swap(perm[axis], perm[r - 1]);  // its own inverse
    std::vector<int64_t> swapped_dims = dims;
    std::swap(swapped_dims[axis], swapped_dims[r - 1]);
    transpose(data, swapped.p, 2 * sizeof(R), dims, perm);
    const int64_t n = dims[axis];
    EMBER_RETURN_IF_ERROR(
        execute<R>(kind, {static_cast<int>(n)}, shape.num_elements() / n, swapped.p, transformed.p));
    transpose(transformed.p, data, 2 * sizeof(R), swapped_dims, perm);
  }
  return Status::OK();
}

template <typename R>
Status fft_typed(const TensorImpl& in, int rank, bool inverse, TensorImpl& out) {
  const Shape& s = in.shape();
  std::vector<int> n = to_int(s.dims().subspan(s.rank() - rank));
  int64_t inner = 1;
  for (int d : n) inner *= d;
  if (inner == 0 || in.num_elements() == 0) return Status::OK();
  const Kind kind = inverse ? Kind::kBackward : Kind::kForward;
  const int last = n.back();
  EMBER_RETURN_IF_ERROR(
      execute<R>(kind, {last}, in.num_elements() / last, in.raw_data(), out.mutable_raw_data()));
  EMBER_RETURN_IF_ERROR(c2c_outer_axes<R>(out.mutable_raw_data(), s, rank, kind));
  if (inverse) scale<R>(out.mutable_raw_data(), 2 * out.num_elements(), R(1) / static_cast<R>(inner));
  return Status::OK();
}

template <typename R>
Status rfft_typed(const TensorImpl& in, std::span<const int64_t> fft_length, TensorImpl& out) {
  const int rank = static_cast<int>(fft_length.size());
  Shape padded = in.shape();
  for (int i = 0; i < rank; ++i) padded.set_dim(padded.rank() - rank + i, fft_length[i]);
  int64_t inner = 1;
  for (int64_t d : fft_length) inner *= d;
  if (out.num_elements() == 0) return Status::OK();
  if (inner == 0) {
    std::memset(out.mutable_raw_data(), 0, out.nbytes());
    return Status::OK();
  }
  // The real transform along rows, then complex ones along the outer axes (Note [Multi-dimensional FFTs]).
  const int last = static_cast<int>(fft_length[rank - 1]);
  const int64_t rows = padded.num_elements() / last;
  if (padded == in.shape()) {
    EMBER_RETURN_IF_ERROR(execute<R>(Kind::kR2C, {last}, rows, in.raw_data(), out.mutable_raw_data()));
  } else {
    Aligned<R> scratch(static_cast<size_t>(padded.num_elements()) * sizeof(R));
    fit_inner(in, padded, sizeof(R), scratch.p);
    EMBER_RETURN_IF_ERROR(execute<R>(Kind::kR2C, {last}, rows, scratch.p, out.mutable_raw_data()));
  }
  return c2c_outer_axes<R>(out.mutable_raw_data(), out.shape(), rank, Kind::kForward);
}

template <typename R>
Status irfft_typed(const TensorImpl& in, std::span<const int64_t> fft_length, TensorImpl& out) {
  const int rank = static_cast<int>(fft_length.size());
  Shape half = in.shape();
  for (int i = 0; i < rank; ++i) half.set_dim(half.rank() - rank + i, fft_length[i]);
  half.set_dim(half.rank() - 1, fft_length[rank - 1] / 2 + 1);
  int64_t inner = 1;
  for (int64_t d : fft_length) inner *= d;
  if (out.num_elements() == 0) return Status::OK();
  if (inner == 0) return Status::OK();
  // c2r overwrites its input: always a scratch copy (Note [FFT plans]). The outer axes are inverted first,
  // then the real transform runs along rows (Note [Multi-dimensional FFTs]).
  Aligned<R> scratch(static_cast<size_t>(half.num_elements()) * 2 * sizeof(R));
  fit_inner(in, half, 2 * sizeof(R), scratch.p);
  EMBER_RETURN_IF_ERROR(c2c_outer_axes<R>(scratch.p, half, rank, Kind::kBackward));
  const int last = static_cast<int>(fft_length[rank - 1]);
  EMBER_RETURN_IF_ERROR(
      execute<R>(Kind::kC2R, {last}, out.num_elements() / last, scratch.p, out.mutable_raw_data()));
  scale<R>(out.mutable_raw_data(), out.num_elements(), R(1) / static_cast<R>(inner));
  return Status::OK();
}

}  // namespace

Status fft(const TensorImpl& in, int rank, bool inverse, TensorImpl& out) {
  if (in.dtype() == DType::kComplex64) return fft_typed<float>(in, rank, inverse, out);
  return fft_typed<double>(in, rank, inverse, out);
}

Status rfft(const TensorImpl& in, std::span<const int64_t> fft_length, TensorImpl& out) {
  if (in.dtype() == DType::kFloat32) return rfft_typed<float>(in, fft_length, out);
  return rfft_typed<double>(in, fft_length, out);
}

Status irfft(const TensorImpl& in, std::span<const int64_t> fft_length, TensorImpl& out) {
  if (in.dtype() == DType::kComplex64) return irfft_typed<float>(in, fft_length, out);
  return irfft_typed<double>(in, fft_length, out);
}

size_t fft_plan_cache_size() {
  std::lock_guard<std::mutex> lock(plan_mutex());
  return plan_cache().size();
}

}  // namespace ember::kernels
