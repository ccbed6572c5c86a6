// The SparseSegment ops' shape function (ops/sparse_segment.cc) in the mini-language: the row count is
// num_segments where given (and known), else unknown until the kernel reads the last segment id. Values and
// gradients are compared with TensorFlow in tests/python/test_sparse_segment.py.
#include <gtest/gtest.h>

#include "tests/cpp/ops/infer_testing.h"

namespace ember {
namespace {

TEST(SparseSegmentShape, RowsFromNumSegmentsOrUnknown) {
  for (const char* op : {"SparseSegmentSum", "SparseSegmentMean", "SparseSegmentSqrtN"}) {
    INFER_OK(op, "[5,2,3];[4]:int32;[4]:int64", {AttrValue(false)}, "[?,2,3]");
    INFER_OK(std::string(op) + "WithNumSegments", "[5,2];[4]:int64;[4]:int32;=7", {AttrValue(false)},
             "[7,2]");
    INFER_OK(std::string(op) + "WithNumSegments", "[5,2];[4]:int64;[4]:int32;[]:int32", {AttrValue(false)},
             "[?,2]");
  }
}

TEST(SparseSegmentShape, RefusesMismatchedVectors) {
  INFER_ERROR("SparseSegmentSum", "[5,2];[4]:int32;[3]:int32", {AttrValue(false)},
              "should have the same size");
  INFER_ERROR("SparseSegmentMean", "[5,2];[4,1]:int32;[4]:int32", {AttrValue(false)},
              "indices should be a vector");
  INFER_ERROR("SparseSegmentSqrtN", "[5,2];[4]:int32;[4,1]:int32", {AttrValue(false)},
              "segment_ids should be a vector");
  INFER_ERROR("SparseSegmentSum", "[];[1]:int32;[1]:int32", {AttrValue(false)}, "at least 1-D");
  INFER_ERROR("SparseSegmentSumWithNumSegments", "[5,2];[4]:int32;[4]:int32;[2]:int32", {AttrValue(false)},
              "num_segments should be a scalar");
  INFER_ERROR("SparseSegmentSumWithNumSegments", "[5,2];[4]:int32;[4]:int32;=-1", {AttrValue(false)},
              "num_segments must be >= 0");
}

}  // namespace
}  // namespace ember
