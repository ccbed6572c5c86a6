// The FFTW kernels: values against a direct DFT, the plan cache (one plan per shape, reused), and cropping
// and padding to fft_length.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>
#include <vector>

#include "ember/ember.h"
#include "ember/kernels/complex.h"

namespace ember {
namespace {

TensorRef complex_tensor(const Shape& shape, int seed) {
  TensorRef t = TensorImpl::allocate(DType::kComplex64, shape).value();
  complex64* p = t->mutable_data<complex64>();
  for (int64_t i = 0; i < t->num_elements(); ++i)
    p[i] = complex64(std::sin(0.37f * static_cast<float>(i + seed)),
                     std::cos(0.11f * static_cast<float>(i * seed)));
  return t;
}

std::vector<std::complex<double>> dft(const complex64* x, int64_t n, double sign) {
  std::vector<std::complex<double>> out(n);
  for (int64_t k = 0; k < n; ++k)
    for (int64_t j = 0; j < n; ++j)
      out[k] += std::complex<double>(x[j]) * std::polar(1.0, sign * 2 * std::numbers::pi * j * k / n);
  return out;
}

TEST(FftKernel, MatchesADirectDftAndReusesItsPlan) {
  TensorRef x = complex_tensor(Shape({3, 12}), 1);
  TensorRef y = TensorImpl::allocate(DType::kComplex64, Shape({3, 12})).value();
  ASSERT_TRUE(kernels::fft(*x, 1, false, *y).ok());
  const size_t plans = kernels::fft_plan_cache_size();
  for (int row = 0; row < 3; ++row) {
    auto expected = dft(x->data<complex64>() + row * 12, 12, -1);
    for (int k = 0; k < 12; ++k) {
      EXPECT_NEAR(y->data<complex64>()[row * 12 + k].real(), expected[k].real(), 1e-4);
      EXPECT_NEAR(y->data<complex64>()[row * 12 + k].imag(), expected[k].imag(), 1e-4);
    }
  }
  ASSERT_TRUE(kernels::fft(*x, 1, false, *y).ok());
  EXPECT_EQ(kernels::fft_plan_cache_size(), plans);  // the second call of a shape plans nothing
  TensorRef back = TensorImpl::allocate(DType::kComplex64, Shape({3, 12})).value();
  ASSERT_TRUE(kernels::fft(*y, 1, true, *back).ok());  // the inverse is scaled by 1/n
  for (int64_t i = 0; i < 36; ++i)
    EXPECT_NEAR(std::abs(back->data<complex64>()[i] - x->data<complex64>()[i]), 0, 1e-5);
}

TEST(FftKernel, RealTransformsCropAndPad) {
  TensorRef x = TensorImpl::allocate(DType::kFloat64, Shape({5})).value();
  for (int i = 0; i < 5; ++i) x->mutable_data<double>()[i] = i + 1;
  const int64_t padded[] = {8};
  TensorRef y = TensorImpl::allocate(DType::kComplex128, Shape({5})).value();
  ASSERT_TRUE(kernels::rfft(*x, padded, *y).ok());
  EXPECT_NEAR(y->data<complex128>()[0].real(), 15, 1e-12);  // the padding adds zeros
  const int64_t cropped[] = {2};
  TensorRef z = TensorImpl::allocate(DType::kComplex128, Shape({2})).value();
  ASSERT_TRUE(kernels::rfft(*x, cropped, *z).ok());
  EXPECT_NEAR(z->data<complex128>()[0].real(), 3, 1e-12);   // 1 + 2
  EXPECT_NEAR(z->data<complex128>()[1].real(), -1, 1e-12);  // 1 - 2
  TensorRef r = TensorImpl::allocate(DType::kFloat64, Shape({8})).value();
  ASSERT_TRUE(kernels::irfft(*y, padded, *r).ok());
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(r->data<double>()[i], i < 5 ? i + 1 : 0, 1e-12);
}

}  // namespace
}  // namespace ember
