// tf.signal's FFTs: FFT/IFFT (1-3 D, complex to complex) and RFFT/IRFFT (1-3 D, real to half-spectrum and
// back, with TensorFlow's fft_length cropping or zero-padding), each beside its gradient rule. Kernels:
// kernels/fft.cc (FFTW). Gradients follow TensorFlow's convention for complex values (docs/complex.md).
#include <climits>
#include <complex>
#include <string>
#include <vector>

#include "ember/kernels/complex.h"
#include "ember/ops/families.h"
#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

using namespace gradient;  // NOLINT(google-build-using-namespace): the rules read as formulas

constexpr DTypeSet kRealTypes = dtype_bit(DType::kFloat32) | dtype_bit(DType::kFloat64);

// The FFT rank an op transforms: FFT/IFFT/RFFT/IRFFT 1, ...2D 2, ...3D 3.
int fft_rank(const OpDef& op) {
  const char last = op.name.back();
  return last == 'D' ? op.name[op.name.size() - 2] - '0' : 1;
}

Status check_rank(const OpDef& op, const Shape& s) {
  const int k = fft_rank(op);
  if (s.rank_known() && s.rank() < k)
    return invalid_argument(op.name, ": input must have rank >= ", k, ", got shape ", s.to_string());
  return Status::OK();
}

// ---- FFT, IFFT, FFT2D, IFFT2D, FFT3D, IFFT3D
Status fft_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_rank(*ctx.op, ctx.inputs[0].shape));
  ctx.outputs.push_back(ctx.inputs[0]);
  return Status::OK();
}

template <bool kInverse>
Status fft_kernel(KernelContext& ctx) {
  for (int64_t d : ctx.input(0).shape().dims())
    if (d > INT32_MAX)  // FFTW takes int lengths and counts
      return invalid_argument(ctx.op->name, ": dimension ", d, " is more than 2^31 - 1");
  return kernels::fft(ctx.input(0), fft_rank(*ctx.op), kInverse, ctx.output(0));
}

// The number of elements one transform covers, as a complex scalar of x's dtype (static dims only).
double transform_size(const GradTensor& x, int rank, std::string_view op) {
  const std::vector<int64_t> dims = static_dims(x, op);
  double n = 1;
  for (int i = 0; i < rank; ++i) n *= static_cast<double>(dims[dims.size() - 1 - i]);
  return n;
}

const char* fft_name(int rank, bool inverse) {
  static const char* names[2][3] = {{"FFT", "FFT2D", "FFT3D"}, {"IFFT", "IFFT2D", "IFFT3D"}};
  return names[inverse ? 1 : 0][rank - 1];
}

// y = F x is linear: dx = F^H dy = N ifft(dy); for y = F^-1 x, dx = fft(dy) / N.
template <bool kInverse>
void fft_grad(GradContext& c) {
  const int rank = fft_rank(*c.op);
  const double n = transform_size(c.input(0), rank, c.op->name);
  GradTensor back = unary(fft_name(rank, !kInverse), c.grad());
  c.set(0, kInverse ? back / n : back * n);
}

// ---- RFFT*, IRFFT*: input 1 is fft_length, an int32 vector of `rank` lengths.
StatusOr<std::vector<int64_t>> fft_lengths(const OpDef& op, const PartialValue& v, bool* known) {
  const int k = fft_rank(op);
  if (v.length_known && static_cast<int>(v.values.size()) != k)
    return invalid_argument(op.name, ": fft_length must have ", k, " element(s), got ", v.values.size());
  *known = v.fully_known();
  std::vector<int64_t> out(k, -1);
  if (v.length_known)
    for (int i = 0; i < k; ++i) {
      const int64_t n = v.values[i];
      if (n != PartialValue::kUnknown && n < 0)
        return invalid_argument(op.name, ": fft_length must be >= 0, got ", n);
      out[i] = n == PartialValue::kUnknown ? -1 : n;
    }
  return out;
}

template <bool kInverse>
Status rfft_shape(InferContext& ctx) {
  const TensorSpec& x = ctx.inputs[0];
  EMBER_RETURN_IF_ERROR(check_rank(*ctx.op, x.shape));
  bool known = false;
  auto lengths = fft_lengths(*ctx.op, ctx.value_of(1), &known);
  if (!lengths.ok()) return lengths.status();
  const DType out_dtype = kInverse ? real_dtype(x.dtype) : complex_dtype(x.dtype);
  if (!x.shape.rank_known()) {
    ctx.outputs.push_back(TensorSpec{out_dtype, Shape::unknown_rank()});
    return Status::OK();
  }
  Shape out = x.shape;
  const int k = static_cast<int>(lengths->size());
  for (int i = 0; i < k; ++i) out.set_dim(out.rank() - k + i, (*lengths)[i]);
  const int64_t last = (*lengths)[k - 1];
  if (!kInverse) out.set_dim(out.rank() - 1, last < 0 ? -1 : last / 2 + 1);
  ctx.outputs.push_back(TensorSpec{out_dtype, out});
  return Status::OK();
}

template <bool kInverse>
Status rfft_kernel(KernelContext& ctx) {
  const std::vector<int64_t> lengths = ctx.int_values(1);
  const int k = fft_rank(*ctx.op);
  if (static_cast<int>(lengths.size()) != k)
    return invalid_argument(ctx.op->name, ": fft_length must have ", k, " element(s), got ", lengths.size());
  for (int64_t n : lengths)
    if (n < 0 || n > INT32_MAX)  // FFTW takes int lengths
      return invalid_argument(ctx.op->name, ": fft_length must be in [0, 2^31 - 1], got ", n);
  return kInverse ? kernels::irfft(ctx.input(0), lengths, ctx.output(0))
                  : kernels::rfft(ctx.input(0), lengths, ctx.output(0));
}

const char* rfft_name(int rank, bool inverse) {
  static const char* names[2][3] = {{"RFFT", "RFFT2D", "RFFT3D"}, {"IRFFT", "IRFFT2D", "IRFFT3D"}};
  return names[inverse ? 1 : 0][rank - 1];
}

// A complex constant of shape [m] (broadcast against the last axis): 1 at the ends of the half spectrum
// (bin 0, and bin n/2 when n is even), `interior` elsewhere.
GradTensor half_spectrum_weights(int64_t n, double interior, DType dtype) {
  const int64_t m = n / 2 + 1;
  auto t = TensorImpl::allocate(dtype, Shape{m});
  if (!t.ok()) check_ok(t.status());
  TensorRef ref = std::move(t).value();
  for (int64_t k = 0; k < m; ++k) {
    const bool end = k == 0 || (n % 2 == 0 && k == n / 2);
    const double w = end ? 1.0 : interior;
    if (dtype == DType::kComplex64)
      ref->mutable_data<complex64>()[k] = complex64(static_cast<float>(w), 0.f);
    else
      ref->mutable_data<complex128>()[k] = complex128(w, 0.0);
  }
  AttrList attrs;
  attrs.push_back(std::move(ref));
  return emit("Const", {}, std::move(attrs))[0];
}

// `g` cropped or zero-padded in its last `rank` dims to those of `like` (TensorFlow's fft_length may differ
// from the input's dims).
GradTensor fit_to(const GradTensor& g, const GradTensor& like, int rank, std::string_view op) {
  const std::vector<int64_t> have = static_dims(g, op), want = static_dims(like, op);
  if (have == want) return g;
  GradTensor out = g;
  std::vector<int64_t> begin(have.size(), 0), size = have;
  bool crop = false, pad = false;
  std::vector<int64_t> paddings(2 * have.size(), 0);
  for (size_t i = have.size() - rank; i < have.size(); ++i) {
    if (want[i] < have[i]) size[i] = want[i], crop = true;
    if (want[i] > have[i]) paddings[2 * i + 1] = want[i] - have[i], pad = true;
  }
  if (crop) out = emit1("Slice", {out, int_vector(begin), int_vector(size)});
  if (pad) {
    GradTensor p = reshape(int_vector(paddings), {static_cast<int64_t>(have.size()), 2});
    AttrList attrs;
    attrs.push_back(0.0);
    attrs.push_back(std::string("CONSTANT"));
    out = emit1("Pad", {out, p}, std::move(attrs));
  }
  return out;
}

// Note [Real FFT gradients]
// y = rfft(x) keeps bins 0..n/2 of the DFT of real x. For a real loss, TensorFlow's dy (dL/dRe + i dL/dIm)
// gives dx_j = Re(sum over kept bins k of dy_k e^{+2 pi i jk/n}). n * irfft(w * dy) computes exactly that
// when the interior bins (those whose mirror image irfft adds back) are weighted by w = 1/2: irfft counts
// each of them twice and reads only the real part of the end bins. Conversely x = irfft(y) reads
// each interior bin twice and the ends once, divided by n: dy = rfft(dx) * (2 for interior bins, 1 at the
// ends) / n. The outer axes of the 2-D and 3-D forms are full complex transforms, which need no weights.
void rfft_grad(GradContext& c) {
  const int rank = fft_rank(*c.op);
  const std::vector<int64_t> n = known_ints(c.input(1), c.op->name, "fft_length");
  double total = 1;
  for (int64_t d : n) total *= static_cast<double>(d);
  GradTensor dy = c.grad();
  GradTensor w = half_spectrum_weights(n.back(), 0.5, dy.dtype());
  GradTensor dx = emit1(rfft_name(rank, true), {dy * w, c.input(1)}) * total;
  c.set(0, fit_to(dx, c.input(0), rank, c.op->name));
}

void irfft_grad(GradContext& c) {
  const int rank = fft_rank(*c.op);
  const std::vector<int64_t> n = known_ints(c.input(1), c.op->name, "fft_length");
  double total = 1;
  for (int64_t d : n) total *= static_cast<double>(d);
  GradTensor spectrum = emit1(rfft_name(rank, false), {c.grad(), c.input(1)});
  GradTensor w = half_spectrum_weights(n.back(), 2.0, spectrum.dtype());
  c.set(0, fit_to(spectrum * w / total, c.input(0), rank, c.op->name));
}

}  // namespace

void register_fft_ops(OpRegistry& r) {
  for (int rank = 1; rank <= 3; ++rank) {
    for (bool inverse : {false, true}) {
      const std::string dims = rank == 1 ? "last dim" : "last " + std::to_string(rank) + " dims";
      const std::string doc =
          inverse ? "Inverse DFT over the " + dims + ", scaled by 1/n. ifft([4+0j, 0j]) == [2+0j, 2+0j]"
                  : "DFT over the " + dims + " (complex). fft([1+0j, 1+0j]) == [2+0j, 0j]";
      OpBuilder(fft_name(rank, inverse))
          .doc(doc)
          .input("input")
          .output("output")
          .type_var(kComplexTypes)
          .shape(&fft_shape)
          .kernel(kComplexTypes, inverse ? &fft_kernel<true> : &fft_kernel<false>)
          .grad(inverse ? &fft_grad<true> : &fft_grad<false>)
          .batching(BatchingRule::kElementwise)
          .done(r);
      const std::string rdoc =
          inverse ? "Real signal of lengths fft_length from the half spectrum over the " + dims +
                        ". irfft([2+0j, 0j], [2]) == [1., 1.]"
                  : "Half spectrum (bins 0..n/2) of the real DFT over the " + dims +
                        ", input cropped or zero-padded to fft_length. rfft([1., 1.], [2]) == [2+0j, 0j]";
      OpBuilder(rfft_name(rank, inverse))
          .doc(rdoc)
          .input("input")
          .input_shape_like("fft_length")
          .output("output")
          .type_var(inverse ? kComplexTypes : kRealTypes)
          .shape(inverse ? &rfft_shape<true> : &rfft_shape<false>)
          .kernel(inverse ? kComplexTypes : kRealTypes, inverse ? &rfft_kernel<true> : &rfft_kernel<false>)
          .grad(inverse ? &irfft_grad : &rfft_grad)
          .batching(BatchingRule::kFallback)
          .done(r);
    }
  }
}

}  // namespace ember
