// The While kernel's way into the runtime's fast loops (runtime/fast_loop.h, Note [Fast loops] there): a
// loop whose step is a few stateless element-wise ops on small fixed-shape values runs its iterations in
// one tight loop over the step's kernels instead of one plan run each. The runtime, a higher layer,
// installs the runner, as it installs the function-call hooks (graph_ops.h).
#pragma once

#include <cstdint>
#include <functional>
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

/// Overlapped iterations (Note [Parallel iterations] in runtime/parallel_loop.cc): a StatelessWhile whose
/// iterations are independent apart from a counter and per-iteration writes runs up to
/// `parallel_iterations` bodies at once. `stack(iteration, values)` receives each iteration's accumulated
/// values (an accumulating While's), in iteration order. Returns how far it got as FastLoopRunner does
/// (nothing run when the step does not fit, and the iteration that failed left to the normal path), or the
/// error of a per-iteration write, which the caller reports at iteration `progress.iterations`.
using StackIteration = std::function<Status(int64_t iteration, std::span<const TensorRef> accumulated)>;
using ParallelLoopRunner = Status (*)(const void* step, std::span<TensorRef> vars, size_t accumulate,
                                      int64_t parallel_iterations, int64_t max_iterations,
                                      const StackIteration& stack, FastLoopProgress& progress);
void set_parallel_loop_runner(ParallelLoopRunner runner);
ParallelLoopRunner parallel_loop_runner();

/// Whether While kernels try the fast path (default on; EMBER_FAST_LOOPS=0 turns it off at start-up).
void set_fast_loops_enabled(bool enabled);
bool fast_loops_enabled();

}  // namespace ember
