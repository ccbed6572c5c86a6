// Formatting tensors as text, as tf.print and tf.strings.format write them.
#pragma once

#include <cstdint>
#include <sstream>

#include "ember/core/tensor_impl.h"

namespace ember {

/// TensorFlow's summarized layout: "[1 2 3]", "[[1 2]\n [3 4]]", "[0 1 2 ... 7 8 9]" (at most `summarize`
/// elements at each end of a dimension; all when negative); string elements are quoted ("[\"a\" \"b\"]")
/// unless `quote_strings` is false (TensorFlow's Assert prints them bare: "[a b]").
void format_tensor(std::ostringstream& os, const TensorImpl& t, int64_t summarize, bool quote_strings = true);

}  // namespace ember
