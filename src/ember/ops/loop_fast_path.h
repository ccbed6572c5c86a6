// The While kernel's way into the runtime's fast loops (runtime/fast_loop.h, Note [Fast loops] there): a
// loop whose step is a few stateless element-wise ops on small fixed-shape values runs its iterations in
// one tight loop over the step's kernels instead of one plan run each. The runtime, a higher layer,
// installs the runner, as it installs the function-call hooks (graph_ops.h).
#pragma once

#include <cstdint>
#include <span>

#include "ember/core/status.h"
#include "ember/core/tensor_impl.h"

namespace ember {

/// How far a fast run got: `iterations` completed; `finished` when the condition turned false after the
/// last of them. A run that stops unfinished (the step does not qualify, the iteration budget ran out, a
/// kernel failed) leaves the loop variables at the start of the iteration it did not complete, so the
/// normal path takes over from there and reports what went wrong in its own words.
struct FastLoopProgress {
  int64_t iterations = 0;
  bool finished = false;
};

/// Runs at most `max_iterations` iterations of the loop step `step` (the handle resolve_loop_step gave)
/// from `vars`, which it replaces with the values after the completed iterations.
using FastLoopRunner = FastLoopProgress (*)(const void* step, std::span<TensorRef> vars,
                                            int64_t max_iterations);
void set_fast_loop_runner(FastLoopRunner runner);
FastLoopRunner fast_loop_runner();

/// Whether While kernels try the fast path (default on; EMBER_FAST_LOOPS=0 turns it off at start-up).
void set_fast_loops_enabled(bool enabled);
bool fast_loops_enabled();

}  // namespace ember
