// Buffers over memory another library owns (DLPack imports, core/allocator.h): the owner's release runs
// exactly once, when the last tensor or view over the memory goes, and ember never writes over it. And the
// cap on one allocation that fuzzers lower.
#include "ember/core/allocator.h"

#include <gtest/gtest.h>

#include <vector>

#include "ember/core/tensor_impl.h"

namespace ember {
namespace {

TEST(ExternalBuffer, ReleasedOnceWhenTheLastViewGoes) {
  std::vector<float> memory = {1, 2, 3, 4, 5, 6};
  int released = 0;
  Buffer* buffer = Buffer::wrap_external(
      memory.data(), memory.size() * sizeof(float), [](void* count) { ++*static_cast<int*>(count); },
      &released);
  EXPECT_TRUE(buffer->external());
  {
    TensorRef t = TensorImpl::adopt_buffer(buffer, DType::kFloat32, Shape({2, 3}));
    EXPECT_EQ(t->raw_data(), memory.data());
    EXPECT_EQ(t->data<float>()[5], 6.0f);
    TensorRef view = TensorImpl::view(*t, Shape({5}), sizeof(float));
    t = TensorRef();
    EXPECT_EQ(released, 0);  // the view still reads the memory
    EXPECT_EQ(view->data<float>()[0], 2.0f);
  }
  EXPECT_EQ(released, 1);
}

TEST(ExternalBuffer, OwnBuffersAreNotExternal) {
  auto t = TensorImpl::allocate(DType::kFloat32, Shape({4}));
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE((*t)->buffer()->external());
}

TEST(AllocationLimit, ALargerRequestIsResourceExhaustedAndTheLimitCanBeRestored) {
  set_max_allocation_bytes(size_t{1} << 20);
  auto big = TensorImpl::allocate(DType::kFloat32, Shape({1 << 20}));  // 4 MiB
  auto small = TensorImpl::allocate(DType::kFloat32, Shape({1024}));
  set_max_allocation_bytes(~size_t{0});  // back to the default (the 1 TiB ceiling)
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), Code::kResourceExhausted);
  EXPECT_TRUE(small.ok());
  EXPECT_TRUE(TensorImpl::allocate(DType::kFloat32, Shape({1 << 20})).ok());
}

}  // namespace
}  // namespace ember
