#include "ember/ops/families.h"
#include "ember/ops/registry.h"

namespace ember {

void register_linalg_ops(OpRegistry& r) {}

}  // namespace ember
