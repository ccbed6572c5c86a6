// StringNGrams (ops/string_ngrams.cc): its shape function and errors here; its values against TensorFlow's
// raw op in tests/python/test_registry_vs_tensorflow.py and
// tests/python/test_saved_model_text_vectorization.py (TextVectorization's ngrams).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/cpp/ops/infer_testing.h"

namespace ember {
namespace {

std::vector<AttrValue> ngram_attrs(std::vector<int64_t> widths) {
  return {std::string(" "), std::move(widths), std::string("<"), std::string(">"), int64_t{-1}, false};
}

TEST(StringNGramsShape, RaggedInRaggedOut) {
  INFER_OK("StringNGrams", "[5]:string;[3]:int64", ngram_attrs({1, 2}), "[?]:string;[3]:int64");
  INFER_OK("StringNGrams", "[?]:string;[?]:int32", ngram_attrs({2}), "[?]:string;[?]:int32");
  INFER_ERROR("StringNGrams", "[5,1]:string;[3]:int64", ngram_attrs({2}), "data must be a vector");
  INFER_ERROR("StringNGrams", "[5]:string;[3]:int64", ngram_attrs({2, 0}), "must be positive");
}

}  // namespace
}  // namespace ember
