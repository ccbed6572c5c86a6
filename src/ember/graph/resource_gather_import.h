// TensorFlow's ResourceGather and ResourceGatherNd in a GraphDef being imported (not a public header):
// ember gathers from a read of the variable (Variable.sparse_read), so it has no such ops; this rewrite
// turns each into that read and the gather before import, so imported graphs run and differentiate as
// ember's own.
#pragma once

#include "ember/core/status.h"
#include "ember/graph.pb.h"

namespace ember::graph_def_internal {

/// In `gd`'s graph and library functions: every ResourceGather(resource, indices) becomes
/// GatherV2(ReadVariableOp(resource), indices, batch_dims) and every ResourceGatherNd a GatherNd of the
/// read, keeping the node's name (so its readers find the same output); the read takes its control inputs
/// (automatic control dependencies order it after the variable's earlier writes).
Status rewrite_resource_gathers(proto::GraphDef& gd);

}  // namespace ember::graph_def_internal
