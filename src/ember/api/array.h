// C++ façade: array ops.
#pragma once

#include "ember/api/tensor.h"

namespace ember {}  // namespace ember
