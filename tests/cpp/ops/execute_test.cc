// The op execution boundary (ops/execute.cc): whatever a shape function or kernel throws becomes an error
// Status naming the op, and every inferred output shape is size-checked (issue 12, item 9).
#include "ember/ops/execute.h"

#include <gtest/gtest.h>

#include <new>
#include <stdexcept>
#include <vector>

namespace ember {
namespace {

Status throws_bad_alloc(InferContext&) { throw std::bad_alloc(); }
Status throws_length_error(InferContext&) { throw std::length_error("vector::_M_default_append"); }
Status scalar_output(InferContext& ctx) {
  ctx.outputs.push_back(TensorSpec{DType::kFloat32, Shape()});
  return Status::OK();
}
Status too_large_output(InferContext& ctx) {
  // A shape function whose arithmetic went wrong: the boundary must refuse it before allocating.
  ctx.outputs.push_back(TensorSpec{DType::kFloat32, Shape({int64_t{1} << 40, 0, int64_t{1} << 40})});
  return Status::OK();
}
Status kernel_throws_bad_alloc(KernelContext&) { throw std::bad_alloc(); }
Status kernel_throws_runtime_error(KernelContext&) { throw std::runtime_error("boom"); }

OpDef test_op(const char* name, ShapeFn shape_fn, KernelFn kernel) {
  OpDef op;
  op.name = name;
  op.shape_fn = shape_fn;
  op.dispatch_input = -1;
  for (KernelFn& k : op.kernels) k = kernel;
  return op;
}

Status run(const OpDef& op) {
  OutputList outputs;
  return run_kernel(op, {}, {}, outputs);
}

TEST(ExecuteBoundary, ShapeFunctionExceptionsBecomeErrors) {
  Status s = run(test_op("ThrowsInInference", &throws_bad_alloc, &kernel_throws_bad_alloc));
  EXPECT_EQ(s.code(), Code::kResourceExhausted);
  EXPECT_NE(s.message().find("ThrowsInInference: out of memory"), std::string::npos) << s.message();
  s = run(test_op("TooLong", &throws_length_error, &kernel_throws_bad_alloc));
  EXPECT_EQ(s.code(), Code::kResourceExhausted);
  EXPECT_NE(s.message().find("TooLong"), std::string::npos) << s.message();
}

TEST(ExecuteBoundary, KernelExceptionsBecomeErrors) {
  Status s = run(test_op("KernelOom", &scalar_output, &kernel_throws_bad_alloc));
  EXPECT_EQ(s.code(), Code::kResourceExhausted);
  EXPECT_NE(s.message().find("KernelOom: out of memory while running its kernel"), std::string::npos)
      << s.message();
  s = run(test_op("KernelThrows", &scalar_output, &kernel_throws_runtime_error));
  EXPECT_EQ(s.code(), Code::kInternal);
  EXPECT_NE(s.message().find("boom"), std::string::npos) << s.message();
}

TEST(ExecuteBoundary, InferredShapesPastInt64AreRejected) {
  Status s = run(test_op("HugeOutput", &too_large_output, &kernel_throws_runtime_error));
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("HugeOutput: output #0"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace ember
