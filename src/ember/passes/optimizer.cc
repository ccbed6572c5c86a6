#include "ember/passes/optimizer.h"

namespace ember::passes {

StatusOr<std::shared_ptr<FunctionGraph>> optimize_function(const FunctionGraph& fn,
                                                           const OptimizerOptions& options,
                                                           std::vector<PassCount>* log) {
  auto out = std::make_shared<FunctionGraph>(fn);
  FunctionGraph& g = *out;
  Status failed;
  // Adds a pass's rewrites to `total`; after a failure every later pass is skipped.
  auto run = [&](bool enabled, const char* name, auto&& pass, int& total) {
    if (!failed.ok() || !options.enabled(enabled)) return;
    StatusOr<int> rewrites = pass();
    if (!rewrites.ok()) {
      failed = rewrites.status().with_prefix(std::string(name) + ": ");
      return;
    }
    if (log != nullptr) log->push_back({name, *rewrites});
    total += *rewrites;
  };
  for (int round = 0; round < std::max(1, options.max_rounds); ++round) {
    int rewrites = 0;
    run(
        options.function_inlining, "function_inlining", [&] { return inline_function_calls(g); }, rewrites);
    run(
        options.arithmetic_optimization, "arithmetic_optimization", [&] { return simplify_arithmetic(g); },
        rewrites);
    run(
        options.common_subgraph_elimination, "common_subgraph_elimination",
        [&] { return eliminate_common_subgraphs(g); }, rewrites);
    run(
        options.constant_folding, "constant_folding",
        [&] { return fold_constants(g, options.constant_folding_max_bytes); }, rewrites);
    // Folding a constant predicate runs with constant folding: the next round inlines the branch taken.
    run(
        options.constant_folding, "constant_predicate_folding", [&] { return fold_constant_predicates(g); },
        rewrites);
    run(
        options.loop_optimization, "loop_optimization", [&] { return hoist_loop_invariants(g); }, rewrites);
    run(
        options.sibling_matmul_merging, "sibling_matmul_merging", [&] { return merge_sibling_matmuls(g); },
        rewrites);
    run(
        options.remapping, "conv_fusion", [&] { return fuse_conv(g); }, rewrites);
    run(
        options.remapping, "matmul_fusion", [&] { return fuse_matmul(g); }, rewrites);
    run(
        options.remapping, "relu_gradient_remapping", [&] { return remap_relu_gradients(g); }, rewrites);
    // After the Relu gradients became ReluGrads: the batch-norm fusion moves and folds those.
    run(
        options.remapping, "batch_norm_fusion", [&] { return fuse_batch_norm(g); }, rewrites);
    run(
        options.pruning, "pruning", [&] { return prune(g); }, rewrites);
    if (rewrites == 0) break;
  }
  int fused = 0;
  run(
      options.elementwise_fusion, "elementwise_fusion", [&] { return fuse_elementwise(g); }, fused);
  if (fused > 0)
    run(
        options.pruning, "pruning", [&] { return prune(g); }, fused);
  int ordered = 0;  // last: the passes above may have appended what an early node needs
  run(
      true, "schedule_early", [&] { return schedule_early_nodes(g); }, ordered);
  if (!failed.ok()) return failed.with_prefix("optimizing function " + fn.name + ": ");
  return out;
}

}  // namespace ember::passes
