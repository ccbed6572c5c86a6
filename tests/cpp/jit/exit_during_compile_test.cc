// A C++ program that exits while the background compiler runs, without calling ember::config::shutdown():
// exit must stop the compile thread before LLVM's static objects are destroyed (Note [The compile thread] in
// jit.cc). Each case runs in a fresh process (a "threadsafe" death test re-executes this binary), so the
// LLVM statics that compiles make lazily are made there, after ember's exit handler was registered, as in
// a short program.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ember/jit/jit.h"
#include "ember/kernels/fused_elementwise.h"

namespace ember::jit {
namespace {

using kernels::BinaryOp;
using kernels::FusedProgram;
using kernels::UnaryOp;

// Prepares (and so queues for compiling) a chain of `length` transcendental steps; `salt` varies the ops,
// so that two chains are two kernels, not one found in memory. The binding is returned to keep the job.
std::shared_ptr<const kernels::PreparedFusedProgram> queue_compile(int length, int salt) {
  const UnaryOp steps[] = {UnaryOp::kTanh, UnaryOp::kSin, UnaryOp::kExp};
  std::vector<int64_t> code;
  int64_t v = 0;
  for (int i = 0; i < length; ++i) {
    v = kernels::append_unary(code, 2, steps[(i + salt) % 3], v);
    v = kernels::append_binary(code, 2, BinaryOp::kMul, v, 1);
  }
  FusedProgram program = FusedProgram::decode(code, 2, std::vector<int64_t>{v}, DType::kFloat32).value();
  std::vector<Shape> shapes{Shape({4096}), Shape({4096})};
  return program.prepare(shapes, Shape({4096})).value();
}

// The child: one compile finishes (LLVM has made its lazy statics, after the exit handler), a second is
// queued or running, and the process exits from the main thread.
[[noreturn]] void exit_while_compiling() {
  install();
  set_mode(Mode::kAsync);
  auto first = queue_compile(8, 0);
  wait_for_pending();
  if (available() && stats().compiled == 0) std::_Exit(3);  // no compile: the case would prove nothing
  static std::shared_ptr<const kernels::PreparedFusedProgram> second;
  second = queue_compile(60, 1);
  // Time for the lowest-priority thread to take the job (a compile of 60 steps outlasts it); had it not,
  // the case would pass without testing anything, never fail wrongly.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::exit(0);
}

// The same, with every request (and install()) from another thread: the main thread never touched the
// JIT, as in a C++ program whose functions are first traced on worker threads.
[[noreturn]] void exit_while_compiling_for_another_thread() {
  static std::shared_ptr<const kernels::PreparedFusedProgram> first, second;
  bool compiled = true;
  std::thread requester([&] {
    install();
    set_mode(Mode::kAsync);
    first = queue_compile(8, 0);
    wait_for_pending();
    compiled = !available() || stats().compiled > 0;
    second = queue_compile(60, 1);
  });
  requester.join();
  if (!compiled) std::_Exit(3);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::exit(0);
}

class ExitDuringCompileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process, not a fork of this one
    // No disk cache: the kernels are compiled, not loaded.
    const char* old = std::getenv("EMBER_JIT_CACHE");
    had_cache_ = old != nullptr;
    if (had_cache_) old_cache_ = old;
    ::setenv("EMBER_JIT_CACHE", "0", 1);
  }
  void TearDown() override {
    if (had_cache_)
      ::setenv("EMBER_JIT_CACHE", old_cache_.c_str(), 1);
    else
      ::unsetenv("EMBER_JIT_CACHE");
  }
  bool had_cache_ = false;
  std::string old_cache_;
};

TEST_F(ExitDuringCompileTest, ExitFromMainStopsTheCompileThreadFirst) {
  for (int run = 0; run < 3; ++run)
    EXPECT_EXIT(exit_while_compiling(), ::testing::ExitedWithCode(0), "") << "run " << run;
}

TEST_F(ExitDuringCompileTest, ExitFromMainStopsACompileThatAnotherThreadRequested) {
  for (int run = 0; run < 3; ++run)
    EXPECT_EXIT(exit_while_compiling_for_another_thread(), ::testing::ExitedWithCode(0), "") << "run " << run;
}

}  // namespace
}  // namespace ember::jit
