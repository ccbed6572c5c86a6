// StringNGrams (tf.strings.ngrams, and tf_keras' TextVectorization `ngrams`): the n-grams of each row of
// a ragged string tensor, given as flat values and row splits, for each width in turn, optionally padded.
// Kept apart from strings.cc, whose ops map strings elementwise; this one is ragged in and out. Registered
// from register_string_ops (strings.cc).
#include <algorithm>
#include <climits>
#include <string>
#include <vector>

#include "ember/kernels/array.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

// Attribute positions, in the order they are declared below.
enum NGramAttr { kSeparator, kWidths, kLeftPad, kRightPad, kPadWidth, kPreserveShort };

// TensorFlow's kernel holds the widths and pad_width as int32.
constexpr int64_t kMaxWidth = INT32_MAX;
// The n-grams' text lives in std::strings, outside the allocator's cap, and the widths and pads come from
// attributes, so a few tokens can ask for terabytes: a result over this many bytes is ResourceExhausted.
constexpr double kMaxTextBytes = double(1 << 30);

Status check_widths(const std::string& op, const std::vector<int64_t>& widths, int64_t pad_width) {
  for (int64_t width : widths)
    if (width <= 0 || width > kMaxWidth)
      return invalid_argument(op, ": ngram_widths must be positive int32 values, got ", width);
  if (pad_width > kMaxWidth || pad_width < -kMaxWidth)
    return invalid_argument(op, ": pad_width must be an int32, got ", pad_width);
  return Status::OK();
}

struct NGramSpec {
  std::string separator, left_pad, right_pad;
  int64_t pad_width = 0;  // < 0: width - 1 for each width
  bool preserve_short = false;

  // The padding on each side of an n-gram of `width`: never more than width - 1.
  int64_t padding(int64_t width) const { return std::min(pad_width < 0 ? width - 1 : pad_width, width - 1); }

  int64_t count(int64_t length, int64_t width) const {
    return std::max<int64_t>(0, length + 2 * padding(width) - width + 1);
  }

  // The `count` n-grams of `width` over tokens[0, length), as TensorFlow builds them: left pads, tokens,
  // right pads, joined by the separator.
  void build(const std::string* tokens, int64_t length, int64_t width, int64_t count,
             std::string* out) const {
    const int64_t pad = padding(width);
    for (int64_t g = 0; g < count; ++g) {
      const int64_t left = std::max<int64_t>(0, pad - g);
      const int64_t right = std::max<int64_t>(0, pad - (count - (g + 1)));
      const int64_t taken = width - left - right;
      const int64_t first = left > 0 ? 0 : g - pad;
      std::string gram;
      for (int64_t k = 0; k < left; ++k) gram.append(left_pad).append(separator);
      for (int64_t k = 0; k + 1 < taken; ++k) gram.append(tokens[first + k]).append(separator);
      if (taken > 0) {
        gram.append(tokens[first + taken - 1]);
        for (int64_t k = 0; k < right; ++k) gram.append(separator).append(right_pad);
      } else {
        for (int64_t k = 0; k + 1 < right; ++k) gram.append(right_pad).append(separator);
        gram.append(right_pad);
      }
      out[g] = std::move(gram);
    }
  }
};

Status ngrams_shape(InferContext& ctx) {
  if (ctx.inputs[0].dtype != DType::kString)
    return invalid_argument("StringNGrams: data must be a string tensor, got ",
                            dtype_name(ctx.inputs[0].dtype));
  for (int i = 0; i < 2; ++i) {
    const Shape& s = ctx.inputs[i].shape;
    if (s.rank_known() && s.rank() != 1)
      return invalid_argument("StringNGrams: ", i == 0 ? "data" : "data_splits", " must be a vector, got ",
                              s.to_string());
  }
  EMBER_RETURN_IF_ERROR(check_widths("StringNGrams", ctx.attr_ints(kWidths), ctx.attr_int(kPadWidth)));
  ctx.outputs.push_back(TensorSpec{DType::kString, Shape({kUnknownDim})});
  ctx.outputs.push_back(TensorSpec{ctx.inputs[1].dtype, ctx.inputs[1].shape});
  return Status::OK();
}

Status ngrams_kernel(KernelContext& ctx) {
  const std::string& op = ctx.op->name;
  const TensorImpl &data = ctx.input(0), &splits_in = ctx.input(1);
  if (data.rank() != 1 || splits_in.rank() != 1)
    return invalid_argument(op, ": data and data_splits must be vectors, got ", data.shape().to_string(),
                            " and ", splits_in.shape().to_string());
  const NGramSpec spec{ctx.attr_string(kSeparator), ctx.attr_string(kLeftPad), ctx.attr_string(kRightPad),
                       ctx.attr_int(kPadWidth), ctx.attr_bool(kPreserveShort)};
  const std::vector<int64_t>& widths = ctx.attr_ints(kWidths);
  EMBER_RETURN_IF_ERROR(check_widths(op, widths, spec.pad_width));
  const int64_t nsplits = splits_in.num_elements(), nvals = data.num_elements();
  std::vector<int64_t> splits(static_cast<size_t>(nsplits));
  for (int64_t i = 0; i < nsplits; ++i)
    splits[i] = kernels::load_index(splits_in.raw_data(), splits_in.dtype(), i);
  // TensorFlow's checks: an empty splits vector is an empty batch; else 0 first, sorted, nvals last.
  if (nsplits > 0) {
    if (splits[0] != 0) return invalid_argument(op, ": data_splits must start with 0, got ", splits[0]);
    for (int64_t i = 1; i < nsplits; ++i)
      if (splits[i] < splits[i - 1] || splits[i] > nvals)
        return invalid_argument(op, ": data_splits must be sorted and at most ", nvals,
                                " (the data's size), got ", splits[i], " at position ", i, " after ",
                                splits[i - 1]);
    if (splits.back() != nvals)
      return invalid_argument(op, ": data_splits must end with ", nvals, " (the data's size), got ",
                              splits.back());
  }
  const int64_t rows = std::max<int64_t>(nsplits - 1, 0);
  std::vector<int64_t> out_splits(static_cast<size_t>(nsplits), 0);
  const std::string* tokens = data.data<std::string>();
  double text_bytes = 0;  // at most: every piece as long as the row's longest token or pad
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t length = splits[r + 1] - splits[r];
    size_t piece = std::max(spec.left_pad.size(), spec.right_pad.size());
    for (int64_t i = splits[r]; i < splits[r + 1]; ++i) piece = std::max(piece, tokens[i].size());
    const double per_token = static_cast<double>(piece + spec.separator.size());
    int64_t grams = 0;
    for (int64_t width : widths) {
      grams += spec.count(length, width);
      text_bytes += static_cast<double>(spec.count(length, width)) * static_cast<double>(width) * per_token;
    }
    // A row too short for every width is kept whole, as one n-gram, when asked.
    if (spec.preserve_short && length > 0 && grams == 0) {
      grams = 1;
      text_bytes += static_cast<double>(length + 2 * std::max<int64_t>(spec.pad_width, 0)) * per_token;
    }
    out_splits[r + 1] = out_splits[r] + grams;
  }
  if (text_bytes > kMaxTextBytes)
    return make_error(Code::kResourceExhausted, op, ": the n-grams would take up to ", text_bytes,
                      " bytes of text, more than ", kMaxTextBytes);
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 0, DType::kString, Shape({rows > 0 ? out_splits.back() : 0})));
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 1, splits_in.dtype(), splits_in.shape()));
  std::string* grams = ctx.output(0).mutable_data<std::string>();
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t length = splits[r + 1] - splits[r];
    int64_t written = 0;
    for (int64_t width : widths) {
      const int64_t count = spec.count(length, width);
      spec.build(tokens + splits[r], length, width, count, grams + out_splits[r] + written);
      written += count;
    }
    if (spec.preserve_short && length > 0 && written == 0) {
      const int64_t whole = length + 2 * std::max<int64_t>(spec.pad_width, 0);
      spec.build(tokens + splits[r], length, whole, 1, grams + out_splits[r]);
    }
  }
  TensorImpl& out = ctx.output(1);
  for (int64_t i = 0; i < nsplits; ++i) {
    if (out.dtype() == DType::kInt32) {
      out.mutable_data<int32_t>()[i] = static_cast<int32_t>(out_splits[i]);
    } else {
      out.mutable_data<int64_t>()[i] = out_splits[i];
    }
  }
  return Status::OK();
}

}  // namespace

void register_string_ngrams_op(OpRegistry& r) {
  OpBuilder("StringNGrams")
      .doc(
          "The n-grams of each row of ragged strings (data, data_splits), for each of ngram_widths in turn, "
          "padded with pad_width left_pad/right_pad tokens (-1: width - 1). "
          "([\"a\", \"b\", \"c\"], [0, 3], separator=\" \", ngram_widths=[2]) -> [\"a b\", \"b c\"], [0, 2]")
      .input("data")
      .input("data_splits", 1)
      .output("ngrams")
      .output("ngrams_splits")
      .type_var(kStringType)
      .type_var(kIndexTypes, 1)
      .attr("separator", AttrType::kString)
      .attr("ngram_widths", AttrType::kInts)
      .attr("left_pad", AttrType::kString)
      .attr("right_pad", AttrType::kString)
      .attr("pad_width", AttrType::kInt)
      .attr("preserve_short_sequences", AttrType::kBool)
      .flags(kNotDifferentiable | kKernelAllocates)
      .shape(&ngrams_shape)
      .kernel(kStringType, &ngrams_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember
