// C++ façade: reductions.
#pragma once

#include "ember/api/tensor.h"

namespace ember {}  // namespace ember
