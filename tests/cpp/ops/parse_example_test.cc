// ParseExampleFeature (ops/parse_example.cc): its shape function, and its kernel on records built with the
// protobuf classes of proto/ember/example.proto. Values are compared with TensorFlow's tf.io.parse_example
// in tests/python/test_parse_example.py.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ember/example.pb.h"
#include "ember/ops/execute.h"
#include "tests/cpp/ops/grad_check.h"
#include "tests/cpp/ops/infer_testing.h"

namespace ember {
namespace {

std::string record(const std::vector<float>& x) {
  proto::Example example;
  auto& feature = (*example.mutable_features()->mutable_feature())["x"];
  for (float v : x) feature.mutable_float_list()->add_value(v);
  return example.SerializeAsString();
}

TensorRef strings(const std::vector<std::string>& values) {
  TensorRef t = TensorImpl::allocate(DType::kString, Shape({static_cast<int64_t>(values.size())})).value();
  for (size_t i = 0; i < values.size(); ++i) t->mutable_data<std::string>()[i] = values[i];
  return t;
}

std::vector<AttrValue> attrs(const std::string& kind, std::vector<int64_t> shape, bool required = true) {
  return {std::string("x"), kind,     DType::kFloat32,
          std::move(shape), required, testing::make_tensor({2}, {8, 9}, DType::kFloat32),
          DType::kInt64};
}

Status run(const std::vector<std::string>& records, const std::vector<AttrValue>& a, OutputList& outs) {
  const OpDef* op = OpRegistry::global().find("ParseExampleFeature");
  TensorRef input = strings(records);
  TensorImpl* inputs[] = {input.get()};
  AttrList list;
  for (const AttrValue& value : a) list.push_back(value);
  return run_kernel(*op, {inputs, 1}, {list.data(), list.size()}, outs);
}

TEST(ParseExampleShape, OutputsPerKind) {
  INFER_OK("ParseExampleFeature", "[?]:string", attrs("dense", {2, 3}), "[?,2,3]");
  INFER_OK("ParseExampleFeature", "[]:string", attrs("dense", {2}), "[2]");
  INFER_OK("ParseExampleFeature", "[4]:string", attrs("var_len", {}), "[?,2]:int64;[?];[2]:int64");
  INFER_OK("ParseExampleFeature", "[4]:string", attrs("ragged", {}), "[?];[5]:int64");
  INFER_ERROR("ParseExampleFeature", "[2,2]:string", attrs("dense", {2}), "a scalar or a vector");
  INFER_ERROR("ParseExampleFeature", "[2]:string", attrs("sparse", {}), "kind must be");
}

TEST(ParseExampleKernel, DenseWithDefaultVarLenAndRagged) {
  OutputList outs;
  ASSERT_TRUE(run({record({1, 2}), "", record({3, 4})}, attrs("dense", {2}, /*required=*/false), outs).ok());
  EXPECT_EQ(outs[0]->shape().to_string(), "[3,2]");
  const float* v = outs[0]->data<float>();
  EXPECT_EQ(std::vector<float>(v, v + 6), (std::vector<float>{1, 2, 8, 9, 3, 4}));  // "" is an empty Example

  outs.clear();
  ASSERT_TRUE(run({record({1}), record({2, 3, 4})}, attrs("var_len", {}), outs).ok());
  const int64_t* indices = outs[0]->data<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(indices, indices + 8), (std::vector<int64_t>{0, 0, 1, 0, 1, 1, 1, 2}));
  const int64_t* dense_shape = outs[2]->data<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(dense_shape, dense_shape + 2), (std::vector<int64_t>{2, 3}));

  outs.clear();
  ASSERT_TRUE(run({record({1}), record({2, 3, 4})}, attrs("ragged", {}), outs).ok());
  const int64_t* splits = outs[1]->data<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(splits, splits + 3), (std::vector<int64_t>{0, 1, 4}));
}

TEST(ParseExampleKernel, BadRecordsAndShapesAreInvalidArgument) {
  OutputList outs;
  Status s = run({"\xff\xff garbage"}, attrs("dense", {2}), outs);
  EXPECT_NE(s.message().find("record 0 is not a serialized tf.train.Example"), std::string::npos)
      << s.message();
  s = run({record({1, 2, 3})}, attrs("dense", {2}), outs);
  EXPECT_NE(s.message().find("has 3 value(s), but its shape [2] holds 2"), std::string::npos) << s.message();
  s = run({""}, attrs("dense", {2}), outs);
  EXPECT_NE(s.message().find("is required but could not be found in record 0"), std::string::npos)
      << s.message();
  s = run({record({1})}, attrs("dense", {int64_t{1} << 40, int64_t{1} << 40}), outs);
  EXPECT_NE(s.message().find("exceeds 2^63-1"), std::string::npos) << s.message();  // the shape check
}

}  // namespace
}  // namespace ember
