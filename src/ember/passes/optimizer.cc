#include "ember/passes/optimizer.h"

namespace ember::passes {

std::shared_ptr<FunctionGraph> optimize_function(const FunctionGraph& fn, const OptimizerOptions& options,
                                                 std::vector<PassCount>* log) {
  auto out = std::make_shared<FunctionGraph>(fn);
  FunctionGraph& g = *out;
  auto run = [&](bool enabled, const char* name, auto&& pass) {
    if (!options.enabled(enabled)) return 0;
    int rewrites = pass();
    if (log != nullptr) log->push_back({name, rewrites});
    return rewrites;
  };
  for (int round = 0; round < std::max(1, options.max_rounds); ++round) {
    int rewrites = 0;
    rewrites += run(options.function_inlining, "function_inlining", [&] { return inline_function_calls(g); });
    rewrites += run(options.arithmetic_optimization, "arithmetic_optimization",
                    [&] { return simplify_arithmetic(g); });
    rewrites += run(options.common_subgraph_elimination, "common_subgraph_elimination",
                    [&] { return eliminate_common_subgraphs(g); });
    rewrites += run(options.constant_folding, "constant_folding",
                    [&] { return fold_constants(g, options.constant_folding_max_bytes); });
    rewrites += run(options.sibling_matmul_merging, "sibling_matmul_merging",
                    [&] { return merge_sibling_matmuls(g); });
    rewrites += run(options.pruning, "pruning", [&] { return prune(g); });
    if (rewrites == 0) break;
  }
  if (run(options.elementwise_fusion, "elementwise_fusion", [&] { return fuse_elementwise(g); }) > 0)
    run(options.pruning, "pruning", [&] { return prune(g); });
  return out;
}

}  // namespace ember::passes
