// Shape functions of BlockLSTMV2 and BlockLSTMGradV2 (src/ember/ops/nn_rnn.cc); their values, gradients and
// errors against TensorFlow are in tests/python/test_nn_rnn.py.
#include <gtest/gtest.h>

#include <string>

#include "tests/cpp/ops/infer_testing.h"

namespace ember {
namespace {

// Seven (forward) or nine (gradient's extra) copies of `spec`, joined as the mini-language joins them.
std::string repeat(const std::string& spec, int n) {
  std::string out;
  for (int k = 0; k < n; ++k) out += (k ? ";" : "") + spec;
  return out;
}

TEST(BlockLstmShape, OutputsAreStepsByBatchByCell) {
  INFER_OK("BlockLSTMV2", "[]:int64;[3,2,4];[2,5];[2,5];[9,20];[5];[5];[5];[20]", {}, repeat("[3,2,5]", 7));
  // Unknown dims are filled in from the other operands: the cell size from b, the batch from h_prev.
  INFER_OK("BlockLSTMV2", "[]:int64;[?,?,4];?;[2,?];[?,?];?;?;?;[20]", {}, repeat("[?,2,5]", 7));
  INFER_OK("BlockLSTMGradV2", "[]:int64;[3,2,4];[2,5];[2,5];[9,20];[5];[5];[5];[20];" + repeat("[3,2,5]", 9),
           {}, "[3,2,4];[2,5];[2,5];[9,20];[5];[5];[5];[20]");
}

TEST(BlockLstmShape, InconsistentOperandsAreErrors) {
  INFER_ERROR("BlockLSTMV2", "[]:int64;[3,2];[2,5];[2,5];[9,20];[5];[5];[5];[20]", {}, "x must be 3-D");
  INFER_ERROR("BlockLSTMV2", "[]:int64;[3,2,4];[2,5];[2,5];[8,20];[5];[5];[5];[20]", {}, "w must be");
  INFER_ERROR("BlockLSTMV2", "[]:int64;[3,2,4];[3,5];[2,5];[9,20];[5];[5];[5];[20]", {}, "batch dim");
  INFER_ERROR("BlockLSTMV2", "[]:int64;[3,2,4];[2,5];[2,5];[9,20];[5];[5];[5];[18]", {}, "4 * cell size");
  INFER_ERROR("BlockLSTMV2", "[2]:int64;[3,2,4];[2,5];[2,5];[9,20];[5];[5];[5];[20]", {},
              "seq_len_max must be 0-D");
  INFER_ERROR("BlockLSTMGradV2",
              "[]:int64;[3,2,4];[2,5];[2,5];[9,20];[5];[5];[5];[20];" + repeat("[3,2,5]", 8) + ";[3,2,6]", {},
              "input 17");
}

}  // namespace
}  // namespace ember
