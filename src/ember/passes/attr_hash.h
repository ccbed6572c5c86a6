// Hashing and equality of attribute lists, for passes that compare nodes (CSE).
#pragma once

#include <cstdint>

#include "ember/ops/execute.h"

namespace ember::passes {

/// Tensor attributes hash and compare by dtype, shape and bytes.
uint64_t hash_attrs(const AttrList& attrs);
bool attrs_equal(const AttrList& a, const AttrList& b);
/// Same dtype, shape and bytes.
bool tensors_equal(const TensorImpl& a, const TensorImpl& b);

}  // namespace ember::passes
