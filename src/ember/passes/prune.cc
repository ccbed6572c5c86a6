#include "ember/passes/pass.h"

namespace ember::passes {

StatusOr<int> prune(FunctionGraph& fn) {
  int before = fn.graph.num_nodes();
  GraphEditor editor(fn);
  EMBER_RETURN_IF_ERROR(editor.finish(/*prune=*/true));
  return before - fn.graph.num_nodes();
}

}  // namespace ember::passes
