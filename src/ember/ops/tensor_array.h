// What the ops that stack rows report about their copies, which tests read to see that rows are written
// in place: ops/tensor_array.cc's lists (Note [Lists growing in place]) and the stacks of an accumulating
// While (ops/control_flow.cc, Note [Stacking in place]).
#pragma once

#include <cstdint>

namespace ember {

/// Bytes that TensorListSetItem, TensorListPushBack and InplaceUpdate (a dense TensorArray's write) have
/// copied from the lists they write into, since the process started: the rows of a list read elsewhere
/// too, or of one that outgrew its buffer.
int64_t tensor_list_bytes_copied();

/// Bytes that accumulating While loops have copied into their stacks, since the process started: the
/// values a step did not write into their stack rows itself (the first iteration's, those of producers
/// that allocate their own outputs), and the rows a stack carries over when it grows.
int64_t while_stack_bytes_copied();

}  // namespace ember
