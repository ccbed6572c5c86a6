#include "ember/ops/families.h"
#include "ember/ops/registry.h"

namespace ember {

void register_random_ops(OpRegistry& r) {}

}  // namespace ember
