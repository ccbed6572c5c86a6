// The ops that iterate a tf.data dataset inside a graph function (docs/data.md, "Iterating inside a
// function"): DatasetIteratorCreate makes an iterator over a dataset the Python package registered,
// DatasetIteratorNext gives (has_value, components...) and DatasetIteratorDelete drops it. Datasets live in
// the Python package, which installs these hooks when it loads; without them the ops fail with
// FailedPrecondition.
#pragma once

#include <cstdint>
#include <vector>

#include "ember/core/status.h"
#include "ember/core/tensor_impl.h"

namespace ember {

struct DatasetHooks {
  /// A new iterator over dataset `dataset`: its handle.
  StatusOr<int64_t> (*create)(int64_t dataset) = nullptr;
  /// The next element's components (true), or false at the end.
  StatusOr<bool> (*next)(int64_t handle, std::vector<TensorRef>& components) = nullptr;
  Status (*release)(int64_t handle) = nullptr;
};
void set_dataset_hooks(DatasetHooks hooks);

}  // namespace ember
