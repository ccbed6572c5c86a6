// Shape functions of the set ops (ops/sets.cc) in the mini-language. Values and errors are compared with
// TensorFlow's tf.sets on random sets in tests/python/test_sets.py.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/cpp/ops/infer_testing.h"

namespace ember {
namespace {

std::vector<AttrValue> set_attrs(const std::string& operation) {
  return {AttrValue(operation), AttrValue(true)};
}

TEST(SetsShape, SetSizeKeepsTheRankWithoutTheLastDim) {
  INFER_OK("SetSize", "[5,3]:int64;[5]:int32;[3]:int64", {AttrValue(true)}, "[?,?]:int32");
  INFER_OK("SetSize", "[5,?]:int64;[5]:string;[?]:int64", {AttrValue(true)}, "<unknown>:int32");
  INFER_ERROR("SetSize", "[5,1]:int64;[5]:int32;[1]:int64", {AttrValue(true)}, "Invalid rank 1");
  INFER_ERROR("SetSize", "[5,2]:int64;[5]:int32;[1,2]:int64", {AttrValue(true)}, "must be a vector");
}

TEST(SetsShape, SetOperationsGiveASparseTensorOfTheOperandsRank) {
  INFER_OK("DenseToDenseSetOperation", "[2,3]:int32;[2,5]:int32", set_attrs("union"),
           "[?,2]:int64;[?]:int32;[2]:int64");
  INFER_OK("DenseToDenseSetOperation", "[2,?,3]:uint8;?:uint8", set_attrs("a-b"),
           "[?,3]:int64;[?]:uint8;[3]:int64");
  INFER_OK("DenseToSparseSetOperation", "?:string;[4,3]:int64;[4]:string;[3]:int64", set_attrs("b-a"),
           "[?,3]:int64;[?]:string;[3]:int64");
  INFER_OK("SparseToSparseSetOperation", "[4,2]:int64;[4]:int8;[2]:int64;[1,2]:int64;[1]:int8;[2]:int64",
           set_attrs("intersection"), "[?,2]:int64;[?]:int8;[2]:int64");
  INFER_ERROR("DenseToDenseSetOperation", "[2]:int32;[2,5]:int32", set_attrs("union"),
              "Shape [2] has rank 1 < 2");
  INFER_ERROR("DenseToDenseSetOperation", "[2,3]:int32;[2,5,1]:int32", set_attrs("union"),
              "Mismatched shapes");
  INFER_ERROR("DenseToDenseSetOperation", "[2,3]:int32;[2,5]:int32", set_attrs("xor"),
              "Invalid set_operation xor");
  INFER_ERROR("DenseToDenseSetOperation", "[2,3]:float32;[2,5]:float32", set_attrs("union"), "dtype");
}

TEST(DecodeCsvShape, OneOutputPerDefaultOfTheRecordsShape) {
  const std::vector<AttrValue> attrs = {AttrValue(std::vector<DType>{DType::kInt32, DType::kString}),
                                        AttrValue(std::string(",")), AttrValue(true),
                                        AttrValue(std::string("")), AttrValue(std::vector<int64_t>{})};
  INFER_OK("DecodeCSV", "[2,?]:string;[1]:int32;[0]:string", attrs, "[2,?]:int32;[2,?]:string");
  INFER_ERROR("DecodeCSV", "[2]:string;[1]:int64;[0]:string", attrs, "record_defaults[0] is int64");
  INFER_ERROR("DecodeCSV", "[2]:string;[1,1]:int32;[0]:string", attrs, "at most rank 1");
  std::vector<AttrValue> bad = attrs;
  bad[1] = AttrValue(std::string("ab"));
  INFER_ERROR("DecodeCSV", "[2]:string;[1]:int32;[0]:string", bad, "field_delim should be only 1 char");
  bad = attrs;
  bad[4] = AttrValue(std::vector<int64_t>{1, 0});
  INFER_ERROR("DecodeCSV", "[2]:string;[1]:int32;[0]:string", bad, "strictly increasing");
}

}  // namespace
}  // namespace ember
