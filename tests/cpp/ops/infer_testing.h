// Shape-function tests in TensorFlow's mini-language (style.md rule 10):
//   INFER_OK("MatMul", "[2,?];[?,3]", {}, "[2,3]");
//   INFER_ERROR("MatMul", "[2,3];[4,5]", {}, "inner dimensions");
// Inputs are separated by ';', each "[d0,d1,...]" with '?' for an unknown dim or "?" for unknown rank;
// an optional ":dtype" suffix sets the dtype (float32 by default). A shape-like operand given by value is
// "=[3,2]" (an int32 vector constant), "=1" (an int32 scalar constant) or "=[?,2]" (a graph value of
// which tracing knows only some elements: InferContext::partial_values). Outputs are compared as text
// ("[2,3]" or "[2,3]:bool"; several outputs joined by ';').
#pragma once

#include <gtest/gtest.h>

#include <memory>
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

// One input of the mini-language: its spec, and its constant or partial value when given by value.
struct ParsedInput {
  TensorSpec spec;
  TensorRef constant;
  std::unique_ptr<PartialValue> partial;
};

inline ParsedInput parse_input(const std::string& text) {
  ParsedInput in;
  if (text.empty() || text[0] != '=') {
    in.spec = parse_spec(text);
    return in;
  }
  std::string value = text.substr(1);
  PartialValue p;
  p.length_known = true;
  p.scalar = value.empty() || value[0] != '[';
  std::string inner = p.scalar ? value : value.substr(1, value.size() - 2);
  std::stringstream ss(inner);
  std::string item;
  while (std::getline(ss, item, ','))
    p.values.push_back(item == "?" ? PartialValue::kUnknown : std::stoll(item));
  in.spec.dtype = DType::kInt32;
  in.spec.shape = p.scalar ? Shape() : Shape{static_cast<int64_t>(p.values.size())};
  if (p.fully_known()) {
    in.constant = TensorImpl::allocate(DType::kInt32, in.spec.shape).value();
    for (size_t i = 0; i < p.values.size(); ++i)
      in.constant->mutable_data<int32_t>()[i] = static_cast<int32_t>(p.values[i]);
  } else {
    in.partial = std::make_unique<PartialValue>(std::move(p));
  }
  return in;
}

inline std::vector<ParsedInput> parse_inputs(const std::string& text) {
  std::vector<ParsedInput> inputs;
  if (text.empty()) return inputs;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ';')) inputs.push_back(parse_input(item));
  return inputs;
}

inline std::vector<TensorSpec> parse_specs(const std::string& text) {
  std::vector<TensorSpec> specs;
  for (const ParsedInput& in : parse_inputs(text)) specs.push_back(in.spec);
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
  std::vector<ParsedInput> parsed = parse_inputs(inputs);
  std::vector<TensorSpec> specs;
  std::vector<const TensorImpl*> constants;
  std::vector<const PartialValue*> partials;
  for (const ParsedInput& in : parsed) {
    specs.push_back(in.spec);
    constants.push_back(in.constant.get());
    partials.push_back(in.partial.get());
  }
  AttrList attr_list;
  for (auto& a : attrs) attr_list.push_back(a);
  EMBER_RETURN_IF_ERROR(complete_attrs(*op, attr_list));
  SmallVector<TensorSpec, 2> outputs;
  EMBER_RETURN_IF_ERROR(
      infer_op(*op, specs, constants, {attr_list.data(), attr_list.size()}, outputs, partials));
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
