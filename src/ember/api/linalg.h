// C++ façade: linalg ops.
#pragma once

#include "ember/api/tensor.h"

namespace ember {}  // namespace ember
