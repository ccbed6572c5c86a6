// The convolution kernels: float32 runs on oneDNN and agrees with ember's direct loops (what float64 and
// declined geometries run on) in every layout; float16 and bfloat16 are the float32 kernels rounded once; the
// primitive cache is bounded and reused.
#include "ember/kernels/conv.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "ember/core/half.h"

namespace ember {
namespace {

TensorRef random_tensor(DType dtype, const Shape& shape, uint32_t seed) {
  TensorRef t = TensorImpl::allocate(dtype, shape).value();
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int64_t i = 0; i < t->num_elements(); ++i) {
    if (dtype == DType::kFloat32)
      t->mutable_data<float>()[i] = static_cast<float>(u(gen));
    else
      t->mutable_data<double>()[i] = u(gen);
  }
  return t;
}

TensorRef as_float64(const TensorImpl& t) {
  TensorRef out = TensorImpl::allocate(DType::kFloat64, t.shape()).value();
  for (int64_t i = 0; i < t.num_elements(); ++i) out->mutable_data<double>()[i] = t.data<float>()[i];
  return out;
}

kernels::ConvGeometry geometry(bool channels_last, int64_t groups) {
  kernels::ConvGeometry g;
  g.nd = 2, g.channels_last = channels_last, g.batch = 2, g.in_channels = 4, g.out_channels = 6,
  g.groups = groups;
  g.in[0] = 7, g.in[1] = 8, g.kernel[0] = 3, g.kernel[1] = 2, g.stride[0] = 2, g.dilation[1] = 2;
  g.pad_before[0] = 1, g.pad_after[0] = 1, g.pad_before[1] = 1, g.pad_after[1] = 1;
  g.out[0] = (7 + 2 - 3) / 2 + 1, g.out[1] = (8 + 2 - 3) / 1 + 1;
  return g;
}

Shape activation(const kernels::ConvGeometry& g, int64_t c, const int64_t* s) {
  return g.channels_last ? Shape{g.batch, s[0], s[1], c} : Shape{g.batch, c, s[0], s[1]};
}

TEST(ConvKernel, OneDnnAgreesWithTheDirectLoops) {
  for (bool last : {true, false}) {
    for (int64_t groups : {1, 2}) {
      const kernels::ConvGeometry g = geometry(last, groups);
      TensorRef x = random_tensor(DType::kFloat32, activation(g, g.in_channels, g.in), 1);
      TensorRef w = random_tensor(DType::kFloat32, Shape{3, 2, g.in_channels / groups, g.out_channels}, 2);
      TensorRef dy = random_tensor(DType::kFloat32, activation(g, g.out_channels, g.out), 3);
      TensorRef y = TensorImpl::allocate(DType::kFloat32, dy->shape()).value();
      TensorRef dx = TensorImpl::allocate(DType::kFloat32, x->shape()).value();
      TensorRef dw = TensorImpl::allocate(DType::kFloat32, w->shape()).value();
      ASSERT_TRUE(kernels::conv_forward(g, *x, *w, *y).ok());
      EXPECT_EQ(kernels::conv_last_impl().find("ember"), std::string::npos) << kernels::conv_last_impl();
      ASSERT_TRUE(kernels::conv_backward_data(g, *w, *dy, *dx).ok());
      ASSERT_TRUE(kernels::conv_backward_filter(g, *x, *dy, *dw).ok());
      // The same in float64: the direct loops.
      TensorRef y64 = TensorImpl::allocate(DType::kFloat64, dy->shape()).value();
      TensorRef dx64 = TensorImpl::allocate(DType::kFloat64, x->shape()).value();
      TensorRef dw64 = TensorImpl::allocate(DType::kFloat64, w->shape()).value();
      ASSERT_TRUE(kernels::conv_forward(g, *as_float64(*x), *as_float64(*w), *y64).ok());
      EXPECT_EQ(kernels::conv_last_impl(), "ember:direct");
      ASSERT_TRUE(kernels::conv_backward_data(g, *as_float64(*w), *as_float64(*dy), *dx64).ok());
      ASSERT_TRUE(kernels::conv_backward_filter(g, *as_float64(*x), *as_float64(*dy), *dw64).ok());
      for (auto [f32, f64] : {std::pair{y.get(), y64.get()}, {dx.get(), dx64.get()}, {dw.get(), dw64.get()}})
        for (int64_t i = 0; i < f32->num_elements(); ++i)
          ASSERT_NEAR(f32->data<float>()[i], f64->data<double>()[i], 1e-4)
              << "layout " << last << " groups " << groups;
    }
  }
}

// A float32 tensor's values rounded to 16 bits (`Half`), and a 16-bit tensor's values widened to float32.
template <typename Half>
TensorRef rounded(const TensorImpl& t, DType dtype) {
  TensorRef out = TensorImpl::allocate(dtype, t.shape()).value();
  for (int64_t i = 0; i < t.num_elements(); ++i) out->mutable_data<Half>()[i] = Half(t.data<float>()[i]);
  return out;
}
template <typename Half>
TensorRef widened(const TensorImpl& t) {
  TensorRef out = TensorImpl::allocate(DType::kFloat32, t.shape()).value();
  for (int64_t i = 0; i < t.num_elements(); ++i) out->mutable_data<float>()[i] = t.data<Half>()[i];
  return out;
}

// Note [16-bit convolutions]: each pass is the float32 pass over the widened operands, rounded once.
template <typename Half>
void expect_float32_rounded_once(DType dtype) {
  const kernels::ConvGeometry g = geometry(true, 2);
  const Shape x_shape = activation(g, g.in_channels, g.in), y_shape = activation(g, g.out_channels, g.out);
  const Shape w_shape{3, 2, g.in_channels / g.groups, g.out_channels};
  TensorRef x = rounded<Half>(*random_tensor(DType::kFloat32, x_shape, 4), dtype);
  TensorRef w = rounded<Half>(*random_tensor(DType::kFloat32, w_shape, 5), dtype);
  TensorRef dy = rounded<Half>(*random_tensor(DType::kFloat32, y_shape, 6), dtype);
  auto same = [&](const TensorImpl& half, const TensorImpl& wide, const char* what) {
    TensorRef expected = rounded<Half>(wide, dtype);
    for (int64_t i = 0; i < half.num_elements(); ++i)
      ASSERT_EQ(half.data<Half>()[i].bits, expected->data<Half>()[i].bits) << what << " element " << i;
  };
  TensorRef y = TensorImpl::allocate(dtype, y_shape).value();
  TensorRef y32 = TensorImpl::allocate(DType::kFloat32, y_shape).value();
  ASSERT_TRUE(kernels::conv_forward(g, *x, *w, *y).ok());
  EXPECT_EQ(kernels::conv_last_impl().rfind("f32 via ", 0), 0u) << kernels::conv_last_impl();
  ASSERT_TRUE(kernels::conv_forward(g, *widened<Half>(*x), *widened<Half>(*w), *y32).ok());
  same(*y, *y32, "forward");
  TensorRef dx = TensorImpl::allocate(dtype, x_shape).value();
  TensorRef dx32 = TensorImpl::allocate(DType::kFloat32, x_shape).value();
  ASSERT_TRUE(kernels::conv_backward_data(g, *w, *dy, *dx).ok());
  ASSERT_TRUE(kernels::conv_backward_data(g, *widened<Half>(*w), *widened<Half>(*dy), *dx32).ok());
  same(*dx, *dx32, "backward data");
  TensorRef dw = TensorImpl::allocate(dtype, w_shape).value();
  TensorRef dw32 = TensorImpl::allocate(DType::kFloat32, w_shape).value();
  ASSERT_TRUE(kernels::conv_backward_filter(g, *x, *dy, *dw).ok());
  ASSERT_TRUE(kernels::conv_backward_filter(g, *widened<Half>(*x), *widened<Half>(*dy), *dw32).ok());
  same(*dw, *dw32, "backward filter");
}

TEST(ConvKernel, SixteenBitIsFloat32RoundedOnce) {
  expect_float32_rounded_once<float16>(DType::kFloat16);
  expect_float32_rounded_once<bfloat16>(DType::kBFloat16);
}

// _FusedConv3D's kernel: a 3-D convolution with bias, a residual and Relu is one oneDNN primitive (the
// residual a binary post-op), equal to the float64 direct loops followed by the bias, the residual and the
// Relu.
TEST(ConvKernel, FusedThreeDimensionalConvolutionRunsOnOneDnn) {
  kernels::ConvGeometry g;
  g.nd = 3, g.channels_last = true, g.batch = 2, g.in_channels = 3, g.out_channels = 4, g.groups = 1;
  for (int d = 0; d < 3; ++d) g.in[d] = 5, g.kernel[d] = 2, g.out[d] = 4;
  const Shape x_shape{2, 5, 5, 5, 3}, w_shape{2, 2, 2, 3, 4}, y_shape{2, 4, 4, 4, 4};
  TensorRef x = random_tensor(DType::kFloat32, x_shape, 7), w = random_tensor(DType::kFloat32, w_shape, 8);
  TensorRef bias = random_tensor(DType::kFloat32, Shape{4}, 9);
  TensorRef residual = random_tensor(DType::kFloat32, y_shape, 10);
  TensorRef y64 = TensorImpl::allocate(DType::kFloat64, y_shape).value();
  ASSERT_TRUE(kernels::conv_forward(g, *as_float64(*x), *as_float64(*w), *y64).ok());
  for (const bool with_residual : {false, true}) {
    TensorRef y = TensorImpl::allocate(DType::kFloat32, y_shape).value();
    kernels::ConvEpilogue epilogue;
    epilogue.bias = bias.get();
    epilogue.residual = with_residual ? residual.get() : nullptr;
    epilogue.activation = kernels::FusedActivation::kRelu;
    ASSERT_TRUE(kernels::conv_forward_fused(g, *x, *w, epilogue, *y).ok());
    EXPECT_EQ(kernels::conv_last_impl().find("ember"), std::string::npos) << kernels::conv_last_impl();
    for (int64_t i = 0; i < y->num_elements(); ++i) {
      const double sum = y64->data<double>()[i] + bias->data<float>()[i % 4] +
                         (with_residual ? residual->data<float>()[i] : 0.0);
      ASSERT_NEAR(y->data<float>()[i], std::max(0.0, sum), 1e-4)
          << i << (with_residual ? " with" : " without");
    }
  }
}

TEST(ConvKernel, CacheIsBoundedAndReused) {
  kernels::conv_cache_clear();
  const kernels::ConvGeometry g = geometry(true, 1);
  TensorRef x = random_tensor(DType::kFloat32, activation(g, g.in_channels, g.in), 1);
  TensorRef w = random_tensor(DType::kFloat32, Shape{3, 2, 4, 6}, 2);
  TensorRef y = TensorImpl::allocate(DType::kFloat32, activation(g, g.out_channels, g.out)).value();
  ASSERT_TRUE(kernels::conv_forward(g, *x, *w, *y).ok());
  ASSERT_TRUE(kernels::conv_forward(g, *x, *w, *y).ok());
  EXPECT_EQ(kernels::conv_cache_size(), 1u);
  kernels::set_conv_cache_capacity(2);
  for (int64_t batch = 1; batch <= 4; ++batch) {
    kernels::ConvGeometry b = g;
    b.batch = batch;
    TensorRef xb = random_tensor(DType::kFloat32, activation(b, b.in_channels, b.in), 4);
    TensorRef yb = TensorImpl::allocate(DType::kFloat32, activation(b, b.out_channels, b.out)).value();
    ASSERT_TRUE(kernels::conv_forward(b, *xb, *w, *yb).ok());
    EXPECT_LE(kernels::conv_cache_size(), 2u);
  }
  kernels::set_conv_cache_capacity(128);
  kernels::conv_cache_clear();
  EXPECT_EQ(kernels::conv_cache_size(), 0u);
}

}  // namespace
}  // namespace ember
