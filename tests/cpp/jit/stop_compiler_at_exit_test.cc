// ember_cpp_tests may end while the background compiler runs its first compile, and exit destroys LLVM's
// static objects before ember's exit handler stops that thread (Note [The compile thread] in jit.cc): the
// test binary stops it after the last test, as a C++ program calls ember::config::shutdown().
#include <gtest/gtest.h>

#include "ember/jit/jit.h"

namespace {

class StopBackgroundCompiler : public ::testing::Environment {
 public:
  void TearDown() override { ember::jit::shutdown(); }
};

const ::testing::Environment* const kStopBackgroundCompiler =
    ::testing::AddGlobalTestEnvironment(new StopBackgroundCompiler);

}  // namespace
