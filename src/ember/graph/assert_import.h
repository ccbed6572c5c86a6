// TensorFlow's Assert in a GraphDef being imported (not a public header): its data is a list of tensors,
// strings among them; ember has no string tensors, and its Assert holds the text in a `template` attribute
// with a slot per tensor (ops/print.cc). This rewrite turns one into the other before import.
#pragma once

#include "ember/core/status.h"
#include "ember/graph.pb.h"

namespace ember::graph_def_internal {

/// In `gd`'s graph and library functions: every Assert whose data inputs that are strings are scalar
/// DT_STRING Consts gets those strings folded into its `template` ("[text]", as TensorFlow prints them)
/// and keeps only its other tensors as data; scalar DT_STRING Consts nothing reads are removed.
Status rewrite_tensorflow_asserts(proto::GraphDef& gd);

}  // namespace ember::graph_def_internal
