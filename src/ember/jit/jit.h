// Native fused kernels, tiered (docs/fusion.md). A fused element-wise program starts on the tile
// interpreter (kernels/fused_elementwise.h) the moment its plan is compiled; this layer compiles it in the
// background, on one low-priority thread, to native code for the running CPU (LLVM 15's ORC JIT: the
// program's element functions inlined into one loop that the vectorizer widens to AVX2 / AVX-512), and the
// binding switches to it between calls (Note [Native fused kernels] in fused_elementwise.h).
//
// Compiled kernels are cached by the program's fingerprint (program, scalar inputs, CPU, LLVM and library
// version) in memory while a binding uses them and on disk in $XDG_CACHE_HOME/ember/jit (~/.cache/ember/jit;
// EMBER_JIT_CACHE_DIR overrides, EMBER_JIT_CACHE=0 disables it, EMBER_JIT_CACHE_MAX_BYTES bounds it).
//
// Modes: EMBER_JIT=0 turns it off (the interpreter only); EMBER_JIT=sync compiles on request and waits,
// so tests are deterministic; anything else is the default, background compilation. set_mode changes it
// for bindings made afterwards.
//
// Layer: above kernels (it compiles kernels::FusedProgram), below ops (ops/fused.cc installs it).
#pragma once

#include <cstdint>
#include <string>

namespace ember::jit {

enum class Mode { kOff, kAsync, kSync };

/// Installs the compiler into the fused kernel (once; the mode is read from EMBER_JIT the first time).
void install();
/// Whether this build has the JIT at all.
bool available();
Mode mode();
void set_mode(Mode mode);
/// Blocks until no compilation is queued or running.
void wait_for_pending();
/// Stops the compile thread after its current job (queued jobs are dropped; their programs stay on the
/// interpreter). Exit from the main thread calls it before static objects are destroyed; Python calls it
/// from an atexit hook, before the interpreter finalizes (Note [The compile thread] in jit.cc).
void shutdown();

struct Stats {
  int64_t requested = 0;     // bindings that asked for native code
  int64_t compiled = 0;      // kernels compiled by LLVM in this process
  int64_t disk_hits = 0;     // kernels loaded from the disk cache
  int64_t memory_hits = 0;   // kernels already loaded for another binding
  int64_t disk_rejects = 0;  // cache files found corrupt or truncated (deleted, then recompiled)
  int64_t failures = 0;      // programs that could not be compiled (they stay on the interpreter)
  int64_t native_runs = 0;   // fused runs on native code
  int64_t interpreted_runs = 0;
  double compile_seconds = 0;   // time spent compiling (not loading)
  int64_t queued_bindings = 0;  // bindings held by queued jobs, dropped ones not yet swept included
};
Stats stats();

/// For tests: while one is alive, the compile thread takes no job from the queue, as if starved (requests
/// still queue; wait_for_pending would wait until it goes).
class HoldCompiles {
 public:
  HoldCompiles();
  ~HoldCompiles();
  HoldCompiles(const HoldCompiles&) = delete;
  HoldCompiles& operator=(const HoldCompiles&) = delete;
};

/// The disk cache's directory ("" when it is off).
std::string cache_directory();

}  // namespace ember::jit
