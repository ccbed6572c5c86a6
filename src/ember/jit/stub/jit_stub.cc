// The JIT layer of a build without LLVM (cmake -DEMBER_JIT=OFF, or llvm-15-dev missing): fused programs
// run on the interpreter only, and fast loops on their first tier.
#include "ember/jit/jit.h"
#include "ember/jit/native_loop.h"
#include "ember/kernels/fused_elementwise.h"

namespace ember::jit {

void install() {}
bool available() { return false; }
Mode mode() { return Mode::kOff; }
void set_mode(Mode) {}
void wait_for_pending() {}
void shutdown() {}
void request_native_loop(const LoopProgram&, std::shared_ptr<NativeLoopSlot>) {}
Stats stats() {
  Stats s;
  auto counts = kernels::fused_run_counts();
  s.native_runs = counts.native;
  s.interpreted_runs = counts.interpreted;
  return s;
}
HoldCompiles::HoldCompiles() = default;
HoldCompiles::~HoldCompiles() = default;
std::string cache_directory() { return ""; }

}  // namespace ember::jit
