// The batch-norm kernels with a fused Relu (Note [Batch norm fused with Relu]): forward equals the plain
// forward followed by Relu, backward equals the plain backward of ReluGrad(dy, y), in both layouts, training
// and inference, over more rows than one block (so several blocks and the per-thread mask buffer are used).
#include "ember/kernels/batch_norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace ember {
namespace {

TensorRef random_tensor(const Shape& shape, uint32_t seed, float lo = -1, float hi = 1) {
  TensorRef t = TensorImpl::allocate(DType::kFloat32, shape).value();
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  for (int64_t i = 0; i < t->num_elements(); ++i) t->mutable_data<float>()[i] = u(gen);
  return t;
}

TensorRef empty_like(const TensorImpl& t) { return TensorImpl::allocate(t.dtype(), t.shape()).value(); }

void expect_same(const TensorImpl& a, const TensorImpl& b) {
  ASSERT_EQ(a.num_elements(), b.num_elements());
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    const float x = a.data<float>()[i], y = b.data<float>()[i];
    if (std::isnan(x) || std::isnan(y)) {
      EXPECT_TRUE(std::isnan(x) && std::isnan(y)) << i;
      continue;
    }
    EXPECT_EQ(x, y) << "element " << i;
  }
}

TEST(BatchNormKernel, FusedReluEqualsBatchNormThenRelu) {
  const int64_t N = 3, S = 50, C = 5;  // 150 rows: three blocks of 64
  for (bool channels_last : {true, false}) {
    for (bool training : {true, false}) {
      kernels::BatchNormShape s{N, C, S, channels_last};
      const Shape xs = channels_last ? Shape{N, S, C} : Shape{N, C, S};
      TensorRef x = random_tensor(xs, 1);
      x->mutable_data<float>()[7] = NAN;  // relu keeps NaN; its gradient is 0 there
      TensorRef scale = random_tensor(Shape{C}, 2), offset = random_tensor(Shape{C}, 3);
      TensorRef mean = random_tensor(Shape{C}, 4), var = random_tensor(Shape{C}, 5, 0.5, 2);
      TensorRef dy = random_tensor(xs, 6);

      TensorRef y = empty_like(*x), sm = empty_like(*mean), sv = empty_like(*var);
      ASSERT_TRUE(kernels::batch_norm_forward(s, *x, *scale, *offset, mean.get(), var.get(), 1e-3, training,
                                              *y, *sm, *sv)
                      .ok());
      TensorRef relu = empty_like(*y), masked = empty_like(*dy);
      for (int64_t i = 0; i < y->num_elements(); ++i) {
        const float v = y->data<float>()[i];
        relu->mutable_data<float>()[i] = v > 0 || v != v ? v : 0.0f;
        masked->mutable_data<float>()[i] = v > 0 ? dy->data<float>()[i] : 0.0f;
      }
      TensorRef fy = empty_like(*x), fm = empty_like(*mean), fv = empty_like(*var);
      ASSERT_TRUE(kernels::batch_norm_forward(s, *x, *scale, *offset, mean.get(), var.get(), 1e-3, training,
                                              *fy, *fm, *fv, /*relu=*/true)
                      .ok());
      expect_same(*fy, *relu);
      expect_same(*fm, *sm);
      expect_same(*fv, *sv);

      TensorRef dx = empty_like(*x), ds = empty_like(*scale), doff = empty_like(*offset);
      ASSERT_TRUE(
          kernels::batch_norm_backward(s, *masked, *x, *scale, *sm, *sv, 1e-3, training, *dx, *ds, *doff)
              .ok());
      TensorRef fdx = empty_like(*x), fds = empty_like(*scale), fdoff = empty_like(*offset);
      ASSERT_TRUE(kernels::batch_norm_backward(s, *dy, *x, *scale, *sm, *sv, 1e-3, training, *fdx, *fds,
                                               *fdoff,
                                               /*relu_output=*/fy.get())
                      .ok());
      expect_same(*fdx, *dx);
      expect_same(*fds, *ds);
      expect_same(*fdoff, *doff);
    }
  }
}

}  // namespace
}  // namespace ember
