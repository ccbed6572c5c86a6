// Issue 12, item 13: everything a variable or a function leaves behind in process-wide registries and
// caches goes when the object goes, so programs that create and drop them forever run in constant memory.
#include <gtest/gtest.h>

#include <cstdio>

#include "ember/core/resource.h"
#include "ember/ember.h"
#include "ember/jit/jit.h"

namespace ember {
namespace {

double resident_mib() {
  long pages_total = 0, pages_resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  if (std::fscanf(f, "%ld %ld", &pages_total, &pages_resident) != 2) pages_resident = 0;
  std::fclose(f);
  return static_cast<double>(pages_resident) * 4096.0 / (1 << 20);
}

TEST(ResourceLifetime, MillionDroppedVariablesLeaveNothingBehind) {
  const size_t live_before = ResourceManager::global().num_live_variables();
  for (int i = 0; i < 2000; ++i) Variable warm(Tensor(1.0f), "warm");
  const double before = resident_mib();
  for (int i = 0; i < 1000000; ++i) Variable v(Tensor(static_cast<float>(i)), "v");
  EXPECT_EQ(ResourceManager::global().num_live_variables(), live_before);
  // ~330 bytes per variable used to stay behind: 1M of them would be over 300 MiB.
  EXPECT_LT(resident_mib() - before, 16.0);
}

TEST(ResourceLifetime, DeletedVariableErrorsStayClearAfterTheNameIsForgotten) {
  int64_t first_id = 0;
  {
    Variable first(Tensor(1.0f), "first_of_many");
    first_id = first.id();
  }
  auto recent = ResourceManager::global().find(first_id, "ReadVariableOp");
  ASSERT_FALSE(recent.ok());
  EXPECT_NE(recent.status().message().find("'first_of_many' has been deleted"), std::string::npos);
  for (int i = 0; i < 5000; ++i) Variable v(Tensor(1.0f), "filler");
  auto old = ResourceManager::global().find(first_id, "ReadVariableOp");
  ASSERT_FALSE(old.ok());
  EXPECT_EQ(old.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(old.status().message().find("resource id " + std::to_string(first_id) + " has been deleted"),
            std::string::npos);
  auto never = ResourceManager::global().find(first_id + 1000000000, "ReadVariableOp");
  EXPECT_EQ(never.status().code(), Code::kNotFound);
}

// A function differentiated once builds a forward/backward pair; the callee plan cache, the gradient
// pairs and the function library must all let go of it when the function goes.
void make_use_and_drop_function(const Tensor& x, bool under_tape) {
  Variable w(Tensor({1.0f, 2.0f}), "w");
  auto f = function([&w](const Tensor& a) { return reduce_sum(a * w.read() + 1.0f); });
  if (!under_tape) {
    f(x);
    return;
  }
  GradientTape tape;
  tape.watch(x);
  Tensor y = f(x);
  tape.stop();
  auto grads = tape.gradient(y, {x});
  ASSERT_EQ(grads.size(), 1u);
}

TEST(ResourceLifetime, HundredThousandDroppedFunctionsLeaveNothingBehind) {
  Tensor x({1.0f, 2.0f});
  for (int i = 0; i < 200; ++i) make_use_and_drop_function(x, i % 2 == 0);
  // The warm-up's fused kernels compile on the JIT's thread; with a cold kernel cache LLVM's first compile
  // (~15 MiB) would otherwise land inside the measurement.
  jit::wait_for_pending();
  const double before = resident_mib();
  for (int i = 0; i < 100000; ++i) make_use_and_drop_function(x, i % 10 == 0);
  // Each differentiated function used to keep ~30 KB (its forward graph and plan) for ever.
  EXPECT_LT(resident_mib() - before, 16.0);
}

}  // namespace
}  // namespace ember
