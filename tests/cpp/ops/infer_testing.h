// Shape-function tests in TensorFlow's mini-language (style.md rule 10):
//   INFER_OK("MatMul", "[2,?];[?,3]", {}, "[2,3]");
//   INFER_ERROR("MatMul", "[2,3];[4,5]", {}, "inner dimensions");
// Inputs are separated by ';', each "[d0,d1,...]" with '?' for an unknown dim or "?" for unknown rank;
// an optional ":dtype" suffix sets the dtype (float32 by default). Outputs are compared as text
// ("[2,3]" or "[2,3]:bool"; several outputs joined by ';').
#pragma once

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "ember/ops/execute.h"
#include "ember/ops/registry.h"

namespace ember::testing {

inline TensorSpec parse_spec(const std::string& text) {
  TensorSpec spec;
  std::string shape_text = text;
  auto colon = text.find(':');
  if (colon != std::string::npos) {
    shape_text = text.substr(0, colon);
    DType d;
    EXPECT_TRUE(dtype_from_name(text.substr(colon + 1), &d)) << text;
    spec.dtype = d;
  }
  if (shape_text == "?") {
    spec.shape = Shape::unknown_rank();
    return spec;
  }
  std::vector<int64_t> dims;
  std::string inner = shape_text.substr(1, shape_text.size() - 2);
  std::stringstream ss(inner);
  std::string item;
  while (std::getline(ss, item, ',')) dims.push_back(item == "?" ? kUnknownDim : std::stoll(item));
  spec.shape = Shape(dims);
  return spec;
}

inline std::vector<TensorSpec> parse_specs(const std::string& text) {
  std::vector<TensorSpec> specs;
  if (text.empty()) return specs;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ';')) specs.push_back(parse_spec(item));
  return specs;
}

inline std::string format_specs(const SmallVector<TensorSpec, 2>& specs) {
  std::string out;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (i) out += ";";
    out += specs[i].shape.to_string();
    if (specs[i].dtype != DType::kFloat32) out += ::ember::internal::str_cat(":", dtype_name(specs[i].dtype));
  }
  return out;
}

inline Status run_infer(const std::string& op_name, const std::string& inputs, std::vector<AttrValue> attrs,
                        std::string* result) {
  const OpDef* op = OpRegistry::global().find(op_name);
  if (op == nullptr) return make_error(Code::kNotFound, "no op ", op_name);
  auto specs = parse_specs(inputs);
  AttrList attr_list;
  for (auto& a : attrs) attr_list.push_back(a);
  EMBER_RETURN_IF_ERROR(complete_attrs(*op, attr_list));
  std::vector<const TensorImpl*> constants(specs.size(), nullptr);
  SmallVector<TensorSpec, 2> outputs;
  EMBER_RETURN_IF_ERROR(infer_op(*op, specs, constants, {attr_list.data(), attr_list.size()}, outputs));
  *result = format_specs(outputs);
  return Status::OK();
}

}  // namespace ember::testing

#define INFER_OK(op, inputs, attrs, expected)                                      \
  do {                                                                             \
    std::string _result;                                                           \
    ::ember::Status _s = ::ember::testing::run_infer(op, inputs, attrs, &_result); \
    ASSERT_TRUE(_s.ok()) << _s.to_string();                                        \
    EXPECT_EQ(_result, expected) << op << " on " << inputs;                        \
  } while (0)

#define INFER_ERROR(op, inputs, attrs, substring)                                  \
  do {                                                                             \
    std::string _result;                                                           \
    ::ember::Status _s = ::ember::testing::run_infer(op, inputs, attrs, &_result); \
    ASSERT_FALSE(_s.ok()) << "expected an error, got " << _result;                 \
    EXPECT_NE(_s.message().find(substring), std::string::npos) << _s.message();    \
  } while (0)
