// Shared between tape.cc (recording, backprop) and function_gradient.cc (graph functions under a tape).
#pragma once

#include "ember/autodiff/tape.h"

namespace ember::autodiff::internal {

/// The bits of the tapes recording on this thread.
uint32_t active_mask();
/// The bits of the tapes recording on this thread that claim `t` (Note [Tape slots and generations]).
uint32_t recording_mask(const TensorImpl* t);
/// Records `op` on the tapes recording on this thread that watch an input (or, for ReadVariableOp, the
/// variable), given its `outputs` already computed: execute_op's recording step, and tf.gradients' for the
/// nodes a trace built before anything recorded (graph_gradients.cc).
void record_op(const OpDef& op, std::span<TensorImpl* const> inputs, std::span<const AttrValue> attrs,
               OutputList& outputs);
/// Which recording tapes watch variable `id` (watching it now where watch_accessed_variables says so).
uint32_t variable_mask(int64_t id);
/// A fresh serial number for a node.
uint64_t next_serial();
/// Links each differentiable output to `node` (taking ownership of the caller's reference to it). An
/// output that already has a link, or (unless `link_held_tensors`) that someone else holds, is replaced
/// by a fresh alias, which is linked instead.
void link_outputs(TapeNode* node, std::span<TensorRef> outputs, bool link_held_tensors = false);
/// A fresh alias of `node`'s output `i` that points back at the node, so a rule reading the output is
/// recorded by outer tapes as depending on it (second derivatives through tanh's y, exp's y, ...).
TensorRef relinked_output(const TapeNode& node, int32_t i);
/// The edge to `t`'s producer if a tape in `mask` recorded it, else an empty edge.
Edge input_edge(TensorImpl* t, uint32_t mask);
/// An edge to a new read of variable `id` recorded by the tapes in `mask` (empty when `mask` is 0).
Edge variable_edge(int64_t id, uint32_t mask);

/// PartitionedCall while a tape records: runs the callee's forward-with-intermediates function and records
/// one node whose backward is the callee's gradient function (function_gradient.cc).
Status execute_function_call(const OpDef& op, std::span<TensorImpl* const> inputs,
                             std::span<const AttrValue> attrs, OutputList& outputs);

/// If, Case and While (and their stateless forms) while a tape records: runs the op over forward functions
/// that also return the intermediates its gradient reads and records one node whose backward is again one
/// such op (control_flow_gradient.cc).
Status execute_control_flow(const OpDef& op, std::span<TensorImpl* const> inputs,
                            std::span<const AttrValue> attrs, OutputList& outputs);

}  // namespace ember::autodiff::internal
