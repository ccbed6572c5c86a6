// What ops/tensor_array.cc's lists report about themselves: the bytes their element writes copy, which
// tests read to see that a list written where it dies grows in place (Note [Lists growing in place]).
#pragma once

#include <cstdint>

namespace ember {

/// Bytes that TensorListSetItem and TensorListPushBack have copied from the lists they write into, since
/// the process started: the rows of a list read elsewhere too, or of one that outgrew its buffer.
int64_t tensor_list_bytes_copied();

}  // namespace ember
