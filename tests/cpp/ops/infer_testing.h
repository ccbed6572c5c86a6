// Shape-function tests in TensorFlow's mini-language (style.md rule 10):
//   INFER_OK("MatMul", "[2,?];[?,3]", {}, "[2,3]");
//   INFER_ERROR("MatMul", "[2,3];[4,5]", {}, "inner dimensions");
// Inputs are separated by ';', each "[d0,d1,...]" with '?' for an unknown dim or "?" for unknown rank;
// an optional ":dtype" suffix sets the dtype (float32 by default). A shape-like operand given by value is
// "=[3,2]" (an int32 vector constant), "=1" (an int32 scalar constant), "=2.5:float64" or "=[1,2]:int64" (a
// constant of that dtype), "=[[1,0],[2,1]]" (an int32 matrix constant: Pad's paddings) or "=[?,2]" (a graph
// value of which tracing knows only some elements: InferContext::partial_values). Outputs are compared as
// text
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

// "=[[1,0],[2,1]]": rows of equal length, every element known.
inline ParsedInput parse_matrix_constant(const std::string& value) {
  std::vector<std::vector<int64_t>> rows;
  for (size_t open = value.find('[', 1); open != std::string::npos; open = value.find('[', open + 1)) {
    std::stringstream ss(value.substr(open + 1, value.find(']', open) - open - 1));
    std::string item;
    rows.emplace_back();
    while (std::getline(ss, item, ',')) rows.back().push_back(std::stoll(item));
  }
  ParsedInput in;
  const int64_t cols = rows.empty() ? 0 : static_cast<int64_t>(rows[0].size());
  in.spec.dtype = DType::kInt32;
  in.spec.shape = Shape{static_cast<int64_t>(rows.size()), cols};
  in.constant = TensorImpl::allocate(DType::kInt32, in.spec.shape).value();
  int32_t* out = in.constant->mutable_data<int32_t>();
  for (const auto& row : rows) {
    if (static_cast<int64_t>(row.size()) != cols) {
      ADD_FAILURE() << "rows of unequal length in " << value;
      break;
    }
    for (int64_t v : row) *out++ = static_cast<int32_t>(v);
  }
  return in;
}

// "=2.5:float64", "=[1,2]:int64": a constant of another dtype than int32 (Range's and OneHot's operands).
inline ParsedInput parse_typed_constant(const std::string& value, const std::string& dtype_text) {
  ParsedInput in;
  DType dtype;
  EXPECT_TRUE(dtype_from_name(dtype_text, &dtype)) << dtype_text;
  const bool scalar = value.empty() || value[0] != '[';
  std::vector<double> values;
  std::stringstream ss(scalar ? value : value.substr(1, value.size() - 2));
  std::string item;
  while (std::getline(ss, item, ',')) values.push_back(std::stod(item));
  in.spec.dtype = dtype;
  in.spec.shape = scalar ? Shape() : Shape{static_cast<int64_t>(values.size())};
  in.constant = TensorImpl::allocate(dtype, in.spec.shape).value();
  visit_dtype(dtype, [&]<typename T>() {
    for (size_t i = 0; i < values.size(); ++i) {
      if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>)
        in.constant->mutable_data<T>()[i] = T(static_cast<float>(values[i]));
      else
        in.constant->mutable_data<T>()[i] = static_cast<T>(values[i]);
    }
  });
  return in;
}

inline ParsedInput parse_input(const std::string& text) {
  ParsedInput in;
  if (text.empty() || text[0] != '=') {
    in.spec = parse_spec(text);
    return in;
  }
  std::string value = text.substr(1);
  if (value.rfind("[[", 0) == 0) return parse_matrix_constant(value);
  auto colon = value.find(':');
  if (colon != std::string::npos)
    return parse_typed_constant(value.substr(0, colon), value.substr(colon + 1));
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
