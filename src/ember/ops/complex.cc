// Complex numbers: Complex (from real and imaginary parts), Real, Imag, Conj, ComplexAbs, Angle, each beside
// its gradient rule, following TensorFlow's convention for complex gradients (Note [Complex gradients] in
// ops/gradient.h, docs/complex.md). The element-wise arithmetic on complex values is the rows of
// kernels/elementwise_ops.h that declare complex dtypes; MatMul and the reductions take them too.
#include <cmath>
#include <complex>
#include <cstring>
#include <vector>

#include "ember/core/parallel.h"
#include "ember/kernels/array.h"
#include "ember/ops/families.h"
#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

using namespace gradient;  // NOLINT(google-build-using-namespace): the rules read as formulas

constexpr DTypeSet kPartTypes = dtype_bit(DType::kFloat32) | dtype_bit(DType::kFloat64);

// ---- Complex(real, imag): broadcasting, float32 -> complex64, float64 -> complex128.
Status complex_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(broadcast_binary_shape(ctx));
  ctx.outputs[0].dtype = complex_dtype(ctx.inputs[0].dtype);
  return Status::OK();
}

// `in` laid out with `out`'s shape: itself when the shapes agree, else a broadcast copy in `storage`.
const void* broadcast_operand(const TensorImpl& in, const Shape& out, std::vector<char>& storage) {
  if (in.shape() == out) return in.raw_data();
  const size_t elem = dtype_size(in.dtype());
  storage.resize(static_cast<size_t>(out.num_elements()) * elem);
  int64_t strides[kMaxRank];
  kernels::dense_strides(in.rank(), in.shape().dims().data(), strides);
  kernels::StridedCopy c;
  c.rank = out.rank();
  const int lead = out.rank() - in.rank();
  for (int i = 0; i < out.rank(); ++i) {
    c.dims[i] = out.dim(i);
    c.src_strides[i] = (i < lead || in.shape().dim(i - lead) == 1) ? 0 : strides[i - lead];
  }
  kernels::dense_strides(c.rank, c.dims, c.dst_strides);
  kernels::strided_copy(in.raw_data(), storage.data(), elem, c);
  return storage.data();
}

template <typename R>
void zip_complex(const R* re, const R* im, std::complex<R>* out, int64_t n) {
  parallel_for(n, 4, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) out[i] = std::complex<R>(re[i], im[i]);
  });
}

Status complex_kernel(KernelContext& ctx) {
  TensorImpl& out = ctx.output(0);
  if (out.num_elements() == 0) return Status::OK();
  std::vector<char> re_storage, im_storage;
  const void* re = broadcast_operand(ctx.input(0), out.shape(), re_storage);
  const void* im = broadcast_operand(ctx.input(1), out.shape(), im_storage);
  if (out.dtype() == DType::kComplex64)
    zip_complex(static_cast<const float*>(re), static_cast<const float*>(im), out.mutable_data<complex64>(),
                out.num_elements());
  else
    zip_complex(static_cast<const double*>(re), static_cast<const double*>(im),
                out.mutable_data<complex128>(), out.num_elements());
  return Status::OK();
}

// The parts of dy go to the parts, summed back over broadcast dims.
void complex_grad(GradContext& c) {
  GradTensor re = c.input(0), im = c.input(1), dy = c.grad();
  c.set(0, reduce_to(unary("Real", dy), re, im));
  c.set(1, reduce_to(unary("Imag", dy), im, re));
}

// ---- Real, Imag, ComplexAbs, Angle: complex -> its real dtype; Conj: complex -> complex.
Status to_real_shape(InferContext& ctx) {
  ctx.outputs.push_back(TensorSpec{real_dtype(ctx.inputs[0].dtype), ctx.inputs[0].shape});
  return Status::OK();
}

// out[i] = f(in[i]); f's result type (complex or its part) is the output's element type.
template <typename F>
Status map_complex(KernelContext& ctx, F f) {
  const TensorImpl& in = ctx.input(0);
  TensorImpl& out = ctx.output(0);
  const int64_t n = in.num_elements();
  auto run = [&]<typename C>() {
    using O = decltype(f(C()));
    const C* src = in.data<C>();
    O* dst = out.mutable_data<O>();
    parallel_for(n, 8, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) dst[i] = f(src[i]);
    });
  };
  if (in.dtype() == DType::kComplex64)
    run.template operator()<complex64>();
  else
    run.template operator()<complex128>();
  return Status::OK();
}

struct RealPart {
  template <typename C>
  auto operator()(C z) const {
    return z.real();
  }
};
struct ImagPart {
  template <typename C>
  auto operator()(C z) const {
    return z.imag();
  }
};
struct Conjugate {
  template <typename C>
  C operator()(C z) const {
    return std::conj(z);
  }
};
struct Magnitude {
  template <typename C>
  auto operator()(C z) const {
    return std::abs(z);  // hypot: no overflow for large parts
  }
};
struct Argument {
  template <typename C>
  auto operator()(C z) const {
    return std::arg(z);
  }
};

template <typename F>
Status map_kernel(KernelContext& ctx) {
  return map_complex(ctx, F{});
}

GradTensor make_complex(const GradTensor& re, const GradTensor& im) { return binary("Complex", re, im); }

// Real(z) = x: dz = dy + 0i. Imag(z) = y: dz = 0 + dy i.
void real_grad(GradContext& c) {
  GradTensor dy = c.grad();
  c.set(0, make_complex(dy, zeros_like(dy)));
}
void imag_grad(GradContext& c) {
  GradTensor dy = c.grad();
  c.set(0, make_complex(zeros_like(dy), dy));
}
void conj_grad(GradContext& c) { c.set(0, unary("Conj", c.grad())); }
// |z|: dz = dy z / |z| (0 at z == 0, as TensorFlow's div_no_nan).
void complex_abs_grad(GradContext& c) {
  GradTensor z = c.input(0), r = c.output(0), dy = c.grad();
  GradTensor zero = zeros_like(r);
  GradTensor nonzero = compare("NotEqual", r, zero);
  GradTensor safe_r = select(nonzero, r, ones_like(r));
  GradTensor scale = select(nonzero, dy / safe_r, zero);
  c.set(0, make_complex(scale, zeros_like(scale)) * z);
}
// arg(z) = atan2(y, x): d/dx = -y / |z|^2, d/dy = x / |z|^2, so dz = dy (-y + x i) / |z|^2 = -dy / conj(... )
// written as TensorFlow's: -dy / (y + x i), which is that value.
void angle_grad(GradContext& c) {
  GradTensor z = c.input(0), dy = c.grad();
  GradTensor flipped = make_complex(unary("Imag", z), unary("Real", z));
  c.set(0, -(make_complex(dy, zeros_like(dy)) * reciprocal(flipped)));
}

}  // namespace

void register_complex_ops(OpRegistry& r) {
  OpBuilder("Complex")
      .doc("real + imag * 1j with broadcasting (float32 parts give complex64). complex([1.], [2.]) == [1+2j]")
      .input("real")
      .input("imag")
      .output("out")
      .type_var(kPartTypes)
      .shape(&complex_shape)
      .kernel(kPartTypes, &complex_kernel)
      .grad(&complex_grad)
      .batching(BatchingRule::kBroadcasting)
      .done(r);
  struct Part {
    const char* name;
    ShapeFn shape;
    KernelFn kernel;
    GradFn grad;
    const char* doc;
  };
  const Part parts[] = {
      {"Real", &to_real_shape, &map_kernel<RealPart>, &real_grad, "The real part. real([1+2j]) == [1.]"},
      {"Imag", &to_real_shape, &map_kernel<ImagPart>, &imag_grad, "The imaginary part. imag([1+2j]) == [2.]"},
      {"Conj", &same_as_input_shape, &map_kernel<Conjugate>, &conj_grad,
       "The complex conjugate. conj([1+2j]) == [1-2j]"},
      {"ComplexAbs", &to_real_shape, &map_kernel<Magnitude>, &complex_abs_grad,
       "The magnitude |z| (real). abs([3+4j]) == [5.]"},
      {"Angle", &to_real_shape, &map_kernel<Argument>, &angle_grad,
       "The argument atan2(imag, real), in [-pi, pi]. angle([1j]) == [1.5707964]"},
  };
  for (const Part& p : parts) {
    OpBuilder(p.name)
        .doc(p.doc)
        .input("input")
        .output("output")
        .type_var(kComplexTypes)
        .shape(p.shape)
        .kernel(kComplexTypes, p.kernel)
        .grad(p.grad)
        .batching(BatchingRule::kElementwise)
        .done(r);
  }
}

}  // namespace ember
