// EnsureShape's shape function (ops/print.cc) in the INFER_OK mini-language: the static shape after it is
// what the input's and the expected shape know together; a static mismatch is an error while tracing. Its
// run-time check and message are compared with TensorFlow's in tests/python/test_debugging.py.
#include <gtest/gtest.h>

#include "tests/cpp/ops/infer_testing.h"

namespace ember {
namespace {

std::vector<AttrValue> expect(std::vector<int64_t> dims, bool unknown_rank = false) {
  return {AttrValue(std::move(dims)), AttrValue(unknown_rank)};
}

TEST(EnsureShapeShapes, MergesTheExpectedShapeIntoTheStaticOne) {
  INFER_OK("EnsureShape", "[?,?]", expect({-1, 3}), "[?,3]");
  INFER_OK("EnsureShape", "[2,?]", expect({-1, 3}), "[2,3]");
  INFER_OK("EnsureShape", "[2,3]:int32", expect({2, 3}), "[2,3]:int32");
  INFER_OK("EnsureShape", "?", expect({4, -1}), "[4,?]");
  INFER_OK("EnsureShape", "[2,3]", expect({}, /*unknown_rank=*/true), "[2,3]");
  INFER_OK("EnsureShape", "[]", expect({}), "[]");
}

TEST(EnsureShapeShapes, StaticMismatchesAreErrors) {
  INFER_ERROR("EnsureShape", "[3]", expect({5}), "Dimension 0 in both shapes must be equal, but are 5 and 3");
  INFER_ERROR("EnsureShape", "[2,3]", expect({-1, 3, 1}), "Shape must be rank 3 but is rank 2");
}

}  // namespace
}  // namespace ember
