#include "ember/passes/pass.h"

namespace ember::passes {

int prune(FunctionGraph& fn) {
  int before = fn.graph.num_nodes();
  GraphEditor editor(fn);
  editor.finish(/*prune=*/true);
  return before - fn.graph.num_nodes();
}

}  // namespace ember::passes
