// ember's C++ API: eager tensors and ops with no Python in the process.
//
//   #include "ember/ember.h"
//   ember::Tensor x = ember::Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
//   ember::Tensor y = ember::matmul(x, x) + 1.0f;      // runs now, on the intra-op pool
//   std::cout << y.to_string() << "\n";
//
// Every op of the registry is reachable by name through ember::call_op; the headers below give them
// TensorFlow's names. Errors throw ember::StatusError carrying the op's message.
#pragma once

#include "ember/api/array.h"
#include "ember/api/config.h"
#include "ember/api/control_flow.h"
#include "ember/api/function.h"
#include "ember/api/gradient_tape.h"
#include "ember/api/linalg.h"
#include "ember/api/math.h"
#include "ember/api/nn.h"
#include "ember/api/profiler.h"
#include "ember/api/random.h"
#include "ember/api/reduction.h"
#include "ember/api/saved_model.h"
#include "ember/api/tensor.h"
#include "ember/api/variable.h"
