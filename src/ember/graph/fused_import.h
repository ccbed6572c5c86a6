// TensorFlow's fused contractions in a GraphDef (not a public header): grappler's remapper rewrites
// Conv2D/Conv3D/DepthwiseConv2dNative/MatMul followed by BiasAdd or FusedBatchNorm, a residual Add and an
// activation into one _FusedConv2D, _FusedConv3D, _FusedDepthwiseConv2dNative or _FusedMatMul node whose
// `fused_ops` lists what it fused and whose `args` (num_args of them) are the operands of those ops. ember's
// fused convolutions name their one activation instead (ops/nn_conv.cc). These rewrites map one
// form onto the other at import and export (Note [TensorFlow's fused nodes] in fused_import.cc).
#pragma once

#include "ember/core/status.h"
#include "ember/graph.pb.h"

namespace ember::graph_def_internal {

/// In `gd`'s graph and library functions: every TensorFlow fused node becomes ember's fused op where it
/// has one for that list of fused ops and dtype, else the plain ops it stands for (the contraction, BiasAdd
/// or an inference FusedBatchNormV3, AddV2, the activation) ending in an Identity of the node's name. A list
/// of fused ops ember cannot run is InvalidArgument naming the node and the list.
Status rewrite_tensorflow_fusions(proto::GraphDef& gd);

/// The reverse, for export: ember's fused convolutions get TensorFlow's attributes (`fused_ops` ["BiasAdd",
/// activation], `num_args` 1, _FusedConv2D's `TArgs`) in place of `activation`, so that TensorFlow imports
/// and runs them.
Status write_tensorflow_fusions(proto::GraphDef& gd);

}  // namespace ember::graph_def_internal
