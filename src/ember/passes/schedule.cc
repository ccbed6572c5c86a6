// Where a plan runs the nodes flagged kScheduleEarly. The executor runs a function's nodes in graph order
// (one at a time on one core), and the trace orders them as the program created them: an asynchronous
// collective's start (distribute/collective_ops.cc, Note [Overlapping collectives]) that an optimizer
// creates after the whole backward pass would start only then, with nothing left to overlap. Sorting the
// graph with the flagged nodes visited first (GraphEditor::finish) puts each right after the nodes it
// needs, so it starts as soon as its inputs exist.
#include "ember/passes/pass.h"

namespace ember::passes {

StatusOr<int> schedule_early_nodes(FunctionGraph& fn) {
  const Graph& g = fn.graph;
  for (int32_t i = 0; i < g.num_nodes(); ++i) {
    if (!g.node(i).op->has_flag(kScheduleEarly)) continue;
    GraphEditor editor(fn);
    EMBER_RETURN_IF_ERROR(editor.finish(/*prune=*/false));
    return 0;  // an order, not a rewrite: the optimizer's rounds do not count it
  }
  return 0;
}

}  // namespace ember::passes
