// Einsum (ops/einsum.cc): the shape function in the mini-language, values against a plain loop over every
// label (the definition of an Einstein sum) and gradients against finite differences. Values and
// gradients are compared with TensorFlow in tests/python/test_einsum.py and test_registry_vs_tensorflow.py.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tests/cpp/ops/grad_check.h"
#include "tests/cpp/ops/infer_testing.h"

namespace ember {
namespace {

using testing::make_tensor;
using testing::random_tensor;
using testing::run_op;

std::vector<AttrValue> eq(const std::string& equation) { return {AttrValue(equation)}; }

AttrList eq_attrs(const std::string& equation) {
  AttrList attrs;
  attrs.push_back(equation);
  return attrs;
}

TEST(EinsumShapes, Contractions) {
  INFER_OK("Einsum", "[2,3];[3,4]", eq("ij,jk->ik"), "[2,4]");
  INFER_OK("Einsum", "[5,2,3];[5,3,4]", eq("bij,bjk->bik"), "[5,2,4]");
  INFER_OK("Einsum", "[2,3]:float64", eq("ij->ji"), "[3,2]:float64");
  INFER_OK("Einsum", "[4,4]", eq("ii->i"), "[4]");
  INFER_OK("Einsum", "[4,4]", eq("ii->"), "[]");
  INFER_OK("Einsum", "[3]", eq("i->ii"), "[3,3]");
  INFER_OK("Einsum", "[2];[3]", eq("i,j->ij"), "[2,3]");
  INFER_OK("Einsum", "[2,3]:int32;[3]:int32", eq("ij,j->i"), "[2]:int32");
}

TEST(EinsumShapes, EllipsisBroadcastsAndUnknowns) {
  INFER_OK("Einsum", "[2,1,3,4];[5,4,6]", eq("...ij,...jk->...ik"), "[2,5,3,6]");
  INFER_OK("Einsum", "[?,3,4];[4,6]", eq("...ij,jk->...ik"), "[?,3,6]");
  INFER_OK("Einsum", "[?,3];[3,?]", eq("ij,jk->ik"), "[?,?]");
  INFER_OK("Einsum", "[?,3];[?,5]", eq("ij,jk->ik"), "[?,5]");
  INFER_OK("Einsum", "?;[3,5]", eq("...j,jk->...k"), "<unknown>");
  INFER_OK("Einsum", "?;[3,5]", eq("ij,jk->ik"), "[?,5]");
  INFER_OK("Einsum", "[2,3]", eq("...ij->...ji"), "[3,2]");
}

TEST(EinsumShapes, Errors) {
  INFER_ERROR("Einsum", "[2,3]", eq("ij"), "exactly one '->'");
  INFER_ERROR("Einsum", "[2,3];[3,4]", eq("ij,jk->ik->i"), "exactly one '->'");
  INFER_ERROR("Einsum", "[2,3];[4,5]", eq("ij,jk->ik"),
              "expected dimension 3 at axis 0 of the input shaped [4,5]");
  INFER_ERROR("Einsum", "[2,3]", eq("ijk->i"), "expected input 0 to have rank 3 but got: 2");
  INFER_ERROR("Einsum", "[2,3]", eq("ij->iz"), "output subscript 'z'");
  INFER_ERROR("Einsum", "[2,3,4]", eq("...i->i"), "no ellipsis");
  INFER_ERROR("Einsum", "[2,3]", eq("i1->i"), "subscripts must be letters");
  INFER_ERROR("Einsum", "[2,3]", eq("i...j...->ij"), "at most one ellipsis");
  INFER_ERROR("Einsum", "[2,3];[2,3]", eq("ij->ij"), "names 1 inputs but got 2");
  INFER_ERROR("Einsum", "[2];[2];[2]", eq("i,i,i->i"), "expecting 1 or 2 input subscripts");
  INFER_ERROR("Einsum", "[2,3];[4,3]", eq("...,...->..."), "not compatible");
  INFER_ERROR("Einsum", "[2,3]:int8", eq("ij->ji"), "must have a dtype in");
}

// ---------------------------------------------------------------- values

// The Einstein sum by its definition: every assignment of the labels, adding the product of the operands'
// elements to the output element it names (zero where an output's repeated labels disagree).
std::vector<double> reference(const std::string& terms_text, const std::string& out_term,
                              const std::vector<std::vector<int64_t>>& dims,
                              const std::vector<std::vector<double>>& values,
                              const std::map<char, int64_t>& size) {
  std::vector<std::string> terms;
  size_t start = 0;
  while (true) {
    const size_t comma = terms_text.find(',', start);
    terms.push_back(terms_text.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::vector<char> labels;
  for (const auto& [label, n] : size) labels.push_back(label);
  int64_t out_count = 1;
  for (char c : out_term) out_count *= size.at(c);
  std::vector<double> out(static_cast<size_t>(out_count), 0.0);
  std::map<char, int64_t> at;
  std::function<void(size_t)> walk = [&](size_t k) {
    if (k < labels.size()) {
      for (int64_t v = 0; v < size.at(labels[k]); ++v) {
        at[labels[k]] = v;
        walk(k + 1);
      }
      return;
    }
    double product = 1;
    for (size_t t = 0; t < terms.size(); ++t) {
      int64_t flat = 0;
      for (size_t d = 0; d < terms[t].size(); ++d) flat = flat * dims[t][d] + at[terms[t][d]];
      product *= values[t][static_cast<size_t>(flat)];
    }
    int64_t flat = 0;
    for (char c : out_term) flat = flat * size.at(c) + at[c];
    out[static_cast<size_t>(flat)] += product;
  };
  walk(0);
  return out;
}

void expect_matches_definition(const std::string& equation, std::vector<std::vector<int64_t>> dims) {
  const std::string lhs = equation.substr(0, equation.find("->"));
  const std::string out_term = equation.substr(equation.find("->") + 2);
  std::map<char, int64_t> size;
  std::vector<TensorRef> inputs;
  std::vector<std::vector<double>> values;
  size_t term_start = 0;
  for (size_t t = 0; t < dims.size(); ++t) {
    const size_t comma = lhs.find(',', term_start);
    const std::string term = lhs.substr(term_start, comma - term_start);
    term_start = comma + 1;
    int64_t n = 1;
    for (size_t d = 0; d < term.size(); ++d) {
      size[term[d]] = dims[t][d];
      n *= dims[t][d];
    }
    values.push_back(testing::random_values(n, -1, 1, 11 + static_cast<unsigned>(t)));
    inputs.push_back(make_tensor(dims[t], values.back()));
  }
  const std::vector<double> want = reference(lhs, out_term, dims, values, size);
  OutputList out = run_op(op_def("Einsum"), inputs, eq_attrs(equation));
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0]->num_elements(), static_cast<int64_t>(want.size())) << equation;
  const double* got = out[0]->data<double>();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << equation << " at " << i;
}

TEST(EinsumValues, MatchTheDefinition) {
  expect_matches_definition("ij,jk->ik", {{3, 4}, {4, 5}});
  expect_matches_definition("bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}});
  expect_matches_definition("bij,bkj->bki", {{2, 3, 4}, {2, 5, 4}});
  expect_matches_definition("ij,jk->ki", {{3, 4}, {4, 5}});
  expect_matches_definition("ij->ji", {{3, 4}});
  expect_matches_definition("ii->i", {{4, 4}});
  expect_matches_definition("ii->", {{4, 4}});
  expect_matches_definition("iji->j", {{3, 4, 3}});
  expect_matches_definition("i->ii", {{3}});
  expect_matches_definition("ij->iji", {{2, 3}});
  expect_matches_definition("i,j->ij", {{2}, {3}});
  expect_matches_definition("ij,ij->i", {{3, 4}, {3, 4}});
  expect_matches_definition("ijk,kj->", {{2, 3, 4}, {4, 3}});
  expect_matches_definition("abc,cd->dba", {{2, 3, 4}, {4, 5}});
  expect_matches_definition("bhqd,bhkd->bhqk", {{2, 2, 3, 4}, {2, 2, 5, 4}});
  expect_matches_definition("ij,jk->ikk", {{2, 3}, {3, 2}});
}

TEST(EinsumValues, EllipsisBroadcastsAndZeroSizes) {
  // [2,1] batch dims against [3]: the size-1 dim broadcasts.
  TensorRef a = random_tensor({2, 1, 3, 4}, 3), b = random_tensor({3, 4, 2}, 4);
  OutputList out = run_op(op_def("Einsum"), {a, b}, eq_attrs("...ij,...jk->...ik"));
  ASSERT_EQ(out[0]->shape().to_string(), "[2,3,3,2]");
  const double *x = a->data<double>(), *y = b->data<double>(), *z = out[0]->data<double>();
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 3; ++q)
      for (int i = 0; i < 3; ++i)
        for (int k = 0; k < 2; ++k) {
          double s = 0;
          for (int j = 0; j < 4; ++j) s += x[(p * 3 + i) * 4 + j] * y[(q * 4 + j) * 2 + k];
          EXPECT_NEAR(z[((p * 3 + q) * 3 + i) * 2 + k], s, 1e-12);
        }
  out = run_op(op_def("Einsum"), {random_tensor({2, 0}), random_tensor({0, 3})}, eq_attrs("ij,jk->ik"));
  ASSERT_EQ(out[0]->shape().to_string(), "[2,3]");
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out[0]->data<double>()[i], 0.0);
}

TEST(EinsumGrad, FiniteDifferences) {
  const std::vector<std::pair<std::string, std::vector<std::vector<int64_t>>>> cases = {
      {"ij,jk->ik", {{2, 3}, {3, 4}}},
      {"bij,bkj->bik", {{2, 2, 3}, {2, 4, 3}}},
      {"ij->ji", {{2, 3}}},
      {"ii->i", {{3, 3}}},
      {"iji->j", {{2, 3, 2}}},
      {"i->ii", {{3}}},
      {"ijk,j->ik", {{2, 3, 2}, {3}}},
      {"ij,kl->ik", {{2, 3}, {2, 2}}},
      {"...ij,...jk->...ik", {{2, 1, 2, 3}, {3, 3, 2}}},
      {"b...i,...i->b...", {{2, 3, 4}, {1, 4}}},
      {"iij,jk->ik", {{2, 2, 3}, {3, 2}}},
  };
  for (const auto& [equation, dims] : cases) {
    std::vector<TensorRef> inputs;
    for (size_t t = 0; t < dims.size(); ++t)
      inputs.push_back(random_tensor(dims[t], 5 + static_cast<unsigned>(t)));
    EXPECT_GRADIENT_OK("Einsum", inputs, eq_attrs(equation)) << equation;
  }
}

}  // namespace
}  // namespace ember
