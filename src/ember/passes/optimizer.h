// The optimizer driver (architecture.md §5): runs the enabled passes to a fixed point (bounded rounds) —
// inline → simplify arithmetic → CSE → fold constants → merge sibling products → prune — then fuses
// element-wise ops.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ember/passes/pass.h"

namespace ember::passes {

struct PassCount {
  std::string pass;
  int rewrites = 0;
};

/// An optimized copy of `fn` (the traced graph stays as it is: autodiff and the graph API read it).
/// `log`, when given, receives each pass's rewrite count per round. Fails with an internal error when a
/// pass broke the graph (a bug in the pass, reported instead of crashing the executor).
StatusOr<std::shared_ptr<FunctionGraph>> optimize_function(const FunctionGraph& fn,
                                                           const OptimizerOptions& options,
                                                           std::vector<PassCount>* log = nullptr);

}  // namespace ember::passes
