// Overlapped loop iterations (TensorFlow's parallel_iterations; Note [Parallel iterations] in
// parallel_loop.cc): a StatelessWhile step whose iterations depend on each other only through a counter
// and per-iteration writes is split into a cheap control part run ahead, the per-iteration work run
// for several iterations at once, and the writes applied in iteration order.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "ember/ops/loop_fast_path.h"
#include "ember/runtime/executor.h"

namespace ember {

class ParallelLoop {
 public:
  /// The split of a loop step (its optimized function: `num_vars` loop variables, then `accumulate`
  /// accumulated values, then the condition), or null when its iterations are not independent.
  static std::shared_ptr<const ParallelLoop> build(const FunctionGraph& step, size_t num_vars,
                                                   size_t accumulate);

  /// Runs iterations from `vars` (the condition was true for them) with up to `parallel_iterations`
  /// bodies in flight, as ParallelLoopRunner describes.
  Status run(std::span<TensorRef> vars, int64_t parallel_iterations, int64_t max_iterations,
             const StackIteration& stack, FastLoopProgress& progress) const;

  /// Counters for tests and the docs' measurements: iterations run overlapped, the most iterations
  /// issued at once (one wave), and the most bodies seen running at the same moment.
  static int64_t iterations_run();
  static int64_t max_in_flight();
  static int64_t max_running();
  static void reset_counters();

 private:
  std::vector<int32_t> control_, invariant_, carried_;  // loop variable indices of each kind
  std::vector<int32_t> read_carried_;  // carried variables whose written rows the step also reads
  std::vector<size_t> read_index_;     // per read_carried_: its write's index among the fed values
  size_t num_fed_ = 0, accumulate_ = 0;
  std::unique_ptr<CompiledFunction> control_fn_;  // (control, invariant) -> (next control, condition)
  std::unique_ptr<CompiledFunction> work_fn_;     // (control, invariant) -> (fed values, accumulated)
  std::unique_ptr<CompiledFunction> writer_fn_;   // (carried, fed values) -> next carried
};

}  // namespace ember
