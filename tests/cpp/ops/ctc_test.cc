// The CTC ops (ops/ctc.cc): their shape functions and the errors tracing can raise; values, gradients,
// decodings and run-time errors against TensorFlow in tests/python/test_ctc_ops.py.
#include <gtest/gtest.h>

#include <vector>

#include "tests/cpp/ops/infer_testing.h"

namespace ember {
namespace {

std::vector<AttrValue> loss_attrs() { return {false, true, false}; }

TEST(CTCLossShape, LossPerRowAndGradientLikeTheLogits) {
  INFER_OK("CTCLoss", "[7,3,5];[4,2]:int64;[4]:int32;[3]:int32", loss_attrs(), "[3];[7,3,5]");
  INFER_OK("CTCLoss", "[7,?,5]:float64;[?,2]:int64;[?]:int32;[3]:int32", loss_attrs(),
           "[3]:float64;[7,3,5]:float64");
  INFER_OK("CTCLoss", "?;[?,2]:int64;[?]:int32;[?]:int32", loss_attrs(), "[?];[?,?,?]");
  INFER_ERROR("CTCLoss", "[7,5];[4,2]:int64;[4]:int32;[3]:int32", loss_attrs(), "inputs must have rank 3");
  INFER_ERROR("CTCLoss", "[7,3,5];[4]:int64;[4]:int32;[3]:int32", loss_attrs(),
              "labels_indices must have rank 2");
  INFER_ERROR("CTCLoss", "[7,3,5];[4,2]:int64;[5]:int32;[3]:int32", loss_attrs(),
              "rows of labels_indices and labels_values differ");
  INFER_ERROR("CTCLoss", "[7,3,5];[4,2]:int64;[4]:int32;[2]:int32", loss_attrs(),
              "batch sizes of inputs and sequence_length differ");
}

TEST(CTCLossDenseShape, BlankMustBeAClass) {
  INFER_OK("CTCLossDense", "[7,3,5];[3,4]:int32;[3]:int32;[3]:int64", {int64_t{4}}, "[3];[7,3,5]");
  INFER_ERROR("CTCLossDense", "[7,3,5];[2,4]:int32;[3]:int32;[3]:int32", {int64_t{0}},
              "batch sizes of logits and labels differ");
  INFER_ERROR("CTCLossDense", "[7,3,5];[3,4]:int32;[3]:int32;[3]:int32", {int64_t{5}},
              "blank_index must be in");
}

TEST(CTCDecoderShape, SparseTensorsPerPathAndLogProbabilities) {
  INFER_OK("CTCGreedyDecoder", "[7,3,5];[3]:int32", std::vector<AttrValue>({false, int64_t{-1}}),
           "[?,2]:int64;[?]:int64;[2]:int64;[3,1]");
  INFER_OK("CTCBeamSearchDecoder", "[7,?,5]:float64;[3]:int32",
           std::vector<AttrValue>({int64_t{4}, int64_t{2}, true}),
           "[?,2]:int64;[?,2]:int64;[?]:int64;[?]:int64;[2]:int64;[2]:int64;[3,2]:float64");
  INFER_ERROR("CTCGreedyDecoder", "[7,3];[3]:int32", std::vector<AttrValue>({false, int64_t{-1}}),
              "inputs must have rank 3");
  INFER_ERROR("CTCBeamSearchDecoder", "[7,3,5];[3]:int32",
              std::vector<AttrValue>({int64_t{0}, int64_t{1}, true}), "beam_width must be >= 1");
  INFER_ERROR("CTCBeamSearchDecoder", "[7,3,5];[2]:int32",
              std::vector<AttrValue>({int64_t{4}, int64_t{1}, true}),
              "batch sizes of inputs and sequence_length differ");
}

}  // namespace
}  // namespace ember
