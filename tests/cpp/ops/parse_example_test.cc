// ParseExampleV2 and ParseSequenceExampleV2 (ops/parse_example.cc): their shape functions, and their
// kernels on records built with the protobuf classes of proto/ember/example.proto. Values are compared with
// TensorFlow's tf.io.parse_example and parse_sequence_example in tests/python/test_parse_example.py.
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

// The attributes of a node that parses feature "x" (float32) as one kind: "sparse", "dense" (of `shape`)
// or "ragged" (int64 splits).
std::vector<AttrValue> attrs(const std::string& kind, Shape shape = Shape({})) {
  const bool sparse = kind == "sparse", dense = kind == "dense", ragged = kind == "ragged";
  const auto types = [](bool has, DType d) { return has ? std::vector<DType>{d} : std::vector<DType>{}; };
  return {types(dense, DType::kFloat32),  int64_t{sparse},
          types(sparse, DType::kFloat32), types(ragged, DType::kFloat32),
          types(ragged, DType::kInt64),   dense ? std::vector<Shape>{shape} : std::vector<Shape>{}};
}

Status run(const std::vector<std::string>& records, const std::string& kind, OutputList& outs,
           Shape shape = Shape({}), TensorRef dense_default = TensorRef()) {
  const OpDef* op = OpRegistry::global().find("ParseExampleV2");
  TensorRef serialized = strings(records), names = strings({}), key = strings({"x"}), none = strings({});
  std::vector<TensorImpl*> inputs = {serialized.get(), names.get(), (kind == "sparse" ? key : none).get(),
                                     (kind == "dense" ? key : none).get(),
                                     (kind == "ragged" ? key : none).get()};
  if (kind == "dense") inputs.push_back(dense_default.get());
  std::vector<AttrValue> list = attrs(kind, shape);
  return run_kernel(*op, {inputs.data(), inputs.size()}, {list.data(), list.size()}, outs);
}

TEST(ParseExampleShape, OutputsPerKind) {
  INFER_OK("ParseExampleV2", "[?]:string;[0]:string;[0]:string;[1]:string;[0]:string;[6]",
           attrs("dense", Shape({2, 3})), "[?,2,3]");
  INFER_OK("ParseExampleV2", "[]:string;[0]:string;[0]:string;[1]:string;[0]:string;[0]",
           attrs("dense", Shape({2})), "[2]");
  INFER_OK("ParseExampleV2", "[]:string;[0]:string;[0]:string;[1]:string;[0]:string;[1]",
           attrs("dense", Shape({-1, 2})), "[?,2]");
  INFER_OK("ParseExampleV2", "[4]:string;[0]:string;[1]:string;[0]:string;[0]:string", attrs("sparse"),
           "[?,2]:int64;[?];[2]:int64");
  INFER_OK("ParseExampleV2", "[4]:string;[0]:string;[0]:string;[0]:string;[1]:string", attrs("ragged"),
           "[?];[5]:int64");
  INFER_ERROR("ParseExampleV2", "[2,2]:string;[0]:string;[0]:string;[1]:string;[0]:string;[2]",
              attrs("dense", Shape({2})), "a scalar or a vector");
  INFER_ERROR("ParseExampleV2", "[2]:string;[0]:string;[0]:string;[0]:string;[0]:string",
              attrs("dense", Shape({2})), "one entry per dense default");
  std::vector<AttrValue> bad = attrs("sparse");
  bad[1] = int64_t{2};
  INFER_ERROR("ParseExampleV2", "[2]:string;[0]:string;[1]:string;[0]:string;[0]:string", bad,
              "must be the length of sparse_types");
  INFER_ERROR("ParseExampleV2", "[2]:string;[0]:string;[0]:string;[1]:string;[0]:string;[2]",
              attrs("dense", Shape({2, -1})), "fully defined but for its first dim");
}

TEST(ParseExampleKernel, DenseWithDefaultSequenceSparseAndRagged) {
  OutputList outs;
  ASSERT_TRUE(run({record({1, 2}), "", record({3, 4})}, "dense", outs, Shape({2}),
                  testing::make_tensor({2}, {8, 9}, DType::kFloat32))
                  .ok());
  EXPECT_EQ(outs[0]->shape().to_string(), "[3,2]");
  const float* v = outs[0]->data<float>();
  EXPECT_EQ(std::vector<float>(v, v + 6), (std::vector<float>{1, 2, 8, 9, 3, 4}));  // "" is an empty Example

  outs.clear();
  ASSERT_TRUE(run({record({1}), "", record({3, 4, 5, 6})}, "dense", outs, Shape({-1, 2}),
                  testing::make_tensor({}, {7}, DType::kFloat32))
                  .code() != Code::kOk);  // one value is not a whole step of [2]
  ASSERT_TRUE(run({record({1, 2}), "", record({3, 4, 5, 6})}, "dense", outs, Shape({-1, 2}),
                  testing::make_tensor({}, {7}, DType::kFloat32))
                  .ok());
  EXPECT_EQ(outs[0]->shape().to_string(), "[3,2,2]");
  v = outs[0]->data<float>();
  EXPECT_EQ(std::vector<float>(v, v + 12), (std::vector<float>{1, 2, 7, 7, 7, 7, 7, 7, 3, 4, 5, 6}));

  outs.clear();
  ASSERT_TRUE(run({record({1}), record({2, 3, 4})}, "sparse", outs).ok());
  const int64_t* indices = outs[0]->data<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(indices, indices + 8), (std::vector<int64_t>{0, 0, 1, 0, 1, 1, 1, 2}));
  const int64_t* dense_shape = outs[2]->data<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(dense_shape, dense_shape + 2), (std::vector<int64_t>{2, 3}));

  outs.clear();
  ASSERT_TRUE(run({record({1}), record({2, 3, 4})}, "ragged", outs).ok());
  const int64_t* splits = outs[1]->data<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(splits, splits + 3), (std::vector<int64_t>{0, 1, 4}));
}

TEST(ParseExampleKernel, BadRecordsAndShapesAreInvalidArgument) {
  OutputList outs;
  const TensorRef required = testing::make_tensor({0}, {}, DType::kFloat32);
  Status s = run({"\xff\xff garbage"}, "dense", outs, Shape({2}), required);
  EXPECT_NE(s.message().find("record 0 is not a serialized tf.train.Example"), std::string::npos)
      << s.message();
  s = run({record({1, 2, 3})}, "dense", outs, Shape({2}), required);
  EXPECT_NE(s.message().find("has 3 value(s), but its shape [2] holds 2"), std::string::npos) << s.message();
  s = run({""}, "dense", outs, Shape({2}), required);
  EXPECT_NE(s.message().find("is required but could not be found in record 0"), std::string::npos)
      << s.message();
  s = run({record({1})}, "dense", outs, Shape({int64_t{1} << 40, int64_t{1} << 40}), required);
  EXPECT_NE(s.message().find("exceeds 2^63-1"), std::string::npos) << s.message();  // the shape check
}

// A SequenceExample whose feature list "x" (float32) has a step per element of `steps`.
std::string sequence_record(const std::vector<std::vector<float>>& steps) {
  proto::SequenceExample example;
  auto& list = (*example.mutable_feature_lists()->mutable_feature_list())["x"];
  for (const std::vector<float>& step : steps) {
    proto::Feature* feature = list.add_feature();
    feature->mutable_float_list();  // an empty step is a FloatList of no values
    for (float v : step) feature->mutable_float_list()->add_value(v);
  }
  return example.SerializeAsString();
}

// The attributes of a ParseSequenceExampleV2 node that parses feature list "x" (float32) as one kind:
// "sparse", "dense" (steps of `shape`) or "ragged" (int64 splits); no context features.
std::vector<AttrValue> sequence_attrs(const std::string& kind, Shape shape = Shape({})) {
  const bool sparse = kind == "sparse", dense = kind == "dense", ragged = kind == "ragged";
  const auto types = [](bool has, DType d) { return has ? std::vector<DType>{d} : std::vector<DType>{}; };
  const std::vector<DType> none;
  return {int64_t{0},
          none,
          none,
          none,
          none,
          std::vector<Shape>{},
          int64_t{sparse},
          int64_t{dense},
          types(dense, DType::kFloat32),
          types(sparse, DType::kFloat32),
          types(ragged, DType::kFloat32),
          types(ragged, DType::kInt64),
          dense ? std::vector<Shape>{shape} : std::vector<Shape>{}};
}

Status run_sequence(const std::vector<std::string>& records, const std::string& kind, OutputList& outs,
                    Shape shape = Shape({}), bool missing_assumed_empty = true) {
  const OpDef* op = OpRegistry::global().find("ParseSequenceExampleV2");
  TensorRef serialized = strings(records), names = strings({}), key = strings({"x"}), none = strings({});
  TensorRef missing = TensorImpl::allocate(DType::kBool, Shape({kind == "dense" ? 1 : 0})).value();
  if (kind == "dense") missing->mutable_data<bool>()[0] = missing_assumed_empty;
  std::vector<TensorImpl*> inputs = {serialized.get(),
                                     names.get(),
                                     none.get(),
                                     none.get(),
                                     none.get(),
                                     (kind == "sparse" ? key : none).get(),
                                     (kind == "dense" ? key : none).get(),
                                     (kind == "ragged" ? key : none).get(),
                                     missing.get()};
  std::vector<AttrValue> list = sequence_attrs(kind, shape);
  return run_kernel(*op, {inputs.data(), inputs.size()}, {list.data(), list.size()}, outs);
}

TEST(ParseSequenceExampleShape, FeatureListsHaveAStepDimension) {
  const char* inputs =
      "[?]:string;[0]:string;[0]:string;[0]:string;[0]:string;[0]:string;[1]:string;[0]:string;[1]:bool";
  INFER_OK("ParseSequenceExampleV2", inputs, sequence_attrs("dense", Shape({2})), "[?,?,2];[?]:int64");
  INFER_OK("ParseSequenceExampleV2",
           "[]:string;[0]:string;[0]:string;[0]:string;[0]:string;[0]:string;[1]:string;[0]:string;[1]:bool",
           sequence_attrs("dense", Shape({2})), "[?,2];[]:int64");
  INFER_OK("ParseSequenceExampleV2",
           "[3]:string;[0]:string;[0]:string;[0]:string;[0]:string;[1]:string;[0]:string;[0]:string;[0]:bool",
           sequence_attrs("sparse"), "[?,3]:int64;[?];[3]:int64");
  INFER_OK("ParseSequenceExampleV2",
           "[3]:string;[0]:string;[0]:string;[0]:string;[0]:string;[0]:string;[0]:string;[1]:string;[0]:bool",
           sequence_attrs("ragged"), "[?];[4]:int64;[?]:int64");
  INFER_ERROR("ParseSequenceExampleV2", inputs, sequence_attrs("dense", Shape({-1})),
              "each of feature_list_dense_shapes must be fully defined");
  std::vector<AttrValue> bad = sequence_attrs("dense", Shape({2}));
  bad[7] = int64_t{2};
  INFER_ERROR("ParseSequenceExampleV2", inputs, bad, "feature_list_dense_types (1) must be as long as");
}

TEST(ParseSequenceExampleKernel, DenseSparseAndRaggedFeatureLists) {
  OutputList outs;
  ASSERT_TRUE(run_sequence({sequence_record({{1, 2}, {3, 4}}), ""}, "dense", outs, Shape({2})).ok());
  EXPECT_EQ(outs[0]->shape().to_string(), "[2,2,2]");
  const float* v = outs[0]->data<float>();
  EXPECT_EQ(std::vector<float>(v, v + 8), (std::vector<float>{1, 2, 3, 4, 0, 0, 0, 0}));  // zero padding
  const int64_t* lengths = outs[1]->data<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(lengths, lengths + 2), (std::vector<int64_t>{2, 0}));

  outs.clear();
  ASSERT_TRUE(
      run_sequence({sequence_record({{1}, {}, {2, 3}}), sequence_record({{4}})}, "sparse", outs).ok());
  const int64_t* indices = outs[0]->data<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(indices, indices + 12),
            (std::vector<int64_t>{0, 0, 0, 0, 2, 0, 0, 2, 1, 1, 0, 0}));
  const int64_t* dense_shape = outs[2]->data<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(dense_shape, dense_shape + 3), (std::vector<int64_t>{2, 3, 2}));

  outs.clear();
  ASSERT_TRUE(
      run_sequence({sequence_record({{1}, {}, {2, 3}}), sequence_record({{4}})}, "ragged", outs).ok());
  const int64_t* outer = outs[1]->data<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(outer, outer + 3), (std::vector<int64_t>{0, 3, 4}));
  const int64_t* inner = outs[2]->data<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(inner, inner + 5), (std::vector<int64_t>{0, 1, 1, 3, 4}));
}

TEST(ParseSequenceExampleKernel, BadRecordsAreInvalidArgumentNamingTheFeatureList) {
  OutputList outs;
  Status s = run_sequence({"\xff\xff garbage"}, "dense", outs);
  EXPECT_NE(s.message().find("ParseSequenceExampleV2: record 0 is not a serialized tf.train.SequenceExample"),
            std::string::npos)
      << s.message();
  s = run_sequence({sequence_record({{1, 2}})}, "dense", outs);
  EXPECT_NE(
      s.message().find("feature list 'x' of record 0, step 0, has 2 value(s), but its shape [] holds 1"),
      std::string::npos)
      << s.message();
  s = run_sequence({""}, "dense", outs, Shape({}), /*missing_assumed_empty=*/false);
  EXPECT_NE(s.message().find("feature list 'x' is required but could not be found in record 0"),
            std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace ember
