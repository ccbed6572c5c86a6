#include "ember/ops/families.h"
#include "ember/ops/registry.h"

namespace ember {

void register_array_ops(OpRegistry& r) {}

}  // namespace ember
