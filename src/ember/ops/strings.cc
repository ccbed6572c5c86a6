// tf.strings: the ops on string tensors (TensorFlow's names and attributes): StringLength, StringJoin,
// ReduceJoin, StringFormat, StringToNumber, AsString, RegexReplace/StaticRegexReplace,
// RegexFullMatch/StaticRegexFullMatch, Substr, StringUpper/StringLower, StringStrip, StringSplitV2,
// StringToHashBucketFast, UnicodeDecode, UnicodeEncode and UnicodeTranscode. None is differentiable
// (TensorFlow registers no gradients for them). The byte-level algorithms are in kernels/strings.h; regular
// expressions are RE2's, TensorFlow's syntax. Python: python/ember/strings.py. Design: docs/strings.md.
#include "ember/kernels/strings.h"

#include <re2/re2.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "ember/ops/families.h"
#include "ember/ops/print.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

constexpr uint32_t kStringOpFlags = kNotDifferentiable;

const std::string* strings_of(const TensorImpl& t) { return t.data<std::string>(); }
std::string* strings_of(TensorImpl& t) { return t.mutable_data<std::string>(); }

Status check_string_input(const InferContext& ctx, int i) {
  if (ctx.inputs[i].dtype != DType::kString)
    return invalid_argument(ctx.op->name, ": input ",
                            ctx.op->inputs[std::min<size_t>(i, ctx.op->inputs.size() - 1)].name,
                            " must be a string tensor, got ", dtype_name(ctx.inputs[i].dtype));
  return Status::OK();
}

// Output 0: `dtype` with input 0's shape.
template <DType kOut>
Status like_input_shape(InferContext& ctx) {
  ctx.outputs.push_back({kOut, ctx.inputs[0].shape});
  return Status::OK();
}

Status scalar_string_input(const KernelContext& ctx, int i, const char* what, std::string* out) {
  const TensorImpl& t = ctx.input(i);
  if (t.rank() != 0)
    return invalid_argument(ctx.op->name, ": ", what, " must be a scalar, got shape ", t.shape().to_string());
  *out = strings_of(t)[0];
  return Status::OK();
}

// ---- StringLength(input; unit) -> int32

Status unit_attr(const std::string& op, const std::string& unit, bool* utf8) {
  if (unit != "BYTE" && unit != "UTF8_CHAR")
    return invalid_argument(op, ": unit must be \"BYTE\" or \"UTF8_CHAR\", got \"", unit, "\"");
  *utf8 = unit == "UTF8_CHAR";
  return Status::OK();
}

Status string_length_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_string_input(ctx, 0));
  bool utf8;
  EMBER_RETURN_IF_ERROR(unit_attr(ctx.op->name, ctx.attr_string(0), &utf8));
  return like_input_shape<DType::kInt32>(ctx);
}

Status string_length_kernel(KernelContext& ctx) {
  bool utf8;
  EMBER_RETURN_IF_ERROR(unit_attr(ctx.op->name, ctx.attr_string(0), &utf8));
  const std::string* in = strings_of(ctx.input(0));
  int32_t* out = ctx.output(0).mutable_data<int32_t>();
  for (int64_t i = 0; i < ctx.input(0).num_elements(); ++i)
    out[i] = static_cast<int32_t>(utf8 ? kernels::utf8_length(in[i]) : static_cast<int64_t>(in[i].size()));
  return Status::OK();
}

// ---- StringJoin(inputs: N * string; separator): inputs of one shape, scalars broadcast.

Status string_join_shape(InferContext& ctx) {
  Shape shape;  // scalar unless an input is not
  bool have = false;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    EMBER_RETURN_IF_ERROR(check_string_input(ctx, static_cast<int>(i)));
    const Shape& s = ctx.inputs[i].shape;
    if (s.rank_known() && s.rank() == 0) continue;
    if (!have) {
      shape = s;
      have = true;
    } else if (!shape.is_compatible_with(s)) {
      return invalid_argument("StringJoin: inputs must be scalars or have one shape; got ", shape.to_string(),
                              " and ", s.to_string());
    } else if (!shape.fully_defined()) {
      shape = s;
    }
  }
  ctx.outputs.push_back({DType::kString, shape});
  return Status::OK();
}

Status string_join_kernel(KernelContext& ctx) {
  const std::string& sep = ctx.attr_string(0);
  TensorImpl& out = ctx.output(0);
  for (size_t k = 0; k < ctx.inputs.size(); ++k) {
    const TensorImpl& in = ctx.input(static_cast<int>(k));
    if (in.rank() != 0 && in.shape() != out.shape())
      return invalid_argument("StringJoin: input ", k, " has shape ", in.shape().to_string(), ", expected ",
                              out.shape().to_string(), " or a scalar");
  }
  auto piece = [&](size_t k, int64_t i) -> const std::string& {
    const TensorImpl& in = ctx.input(static_cast<int>(k));
    return strings_of(in)[in.rank() == 0 ? 0 : i];
  };
  std::string* dst = strings_of(out);
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    size_t size = ctx.inputs.empty() ? 0 : sep.size() * (ctx.inputs.size() - 1);
    for (size_t k = 0; k < ctx.inputs.size(); ++k) size += piece(k, i).size();
    dst[i].reserve(size);  // one allocation per result
    for (size_t k = 0; k < ctx.inputs.size(); ++k) {
      if (k > 0) dst[i] += sep;
      dst[i] += piece(k, i);
    }
  }
  return Status::OK();
}

// ---- ReduceJoin(inputs: string, reduction_indices: int32; keep_dims, separator)

Status reduce_axes(const std::string& op, std::vector<int64_t> axes, int rank, std::vector<bool>* reduced) {
  reduced->assign(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank)
      return invalid_argument(op, ": axis ", a, " is out of range for a tensor of rank ", rank);
    (*reduced)[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
  }
  return Status::OK();
}

Status reduce_join_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_string_input(ctx, 0));
  const Shape& in = ctx.inputs[0].shape;
  const bool keep = ctx.attr_bool(0);
  PartialValue axes = ctx.value_of(1);
  if (!in.rank_known() || !axes.fully_known()) {
    ctx.outputs.push_back({DType::kString, Shape::unknown_rank()});
    return Status::OK();
  }
  std::vector<bool> reduced;
  EMBER_RETURN_IF_ERROR(reduce_axes("ReduceJoin", axes.values, in.rank(), &reduced));
  Shape out;
  for (int d = 0; d < in.rank(); ++d) {
    if (!reduced[static_cast<size_t>(d)])
      out.push_back(in.dim(d));
    else if (keep)
      out.push_back(1);
  }
  ctx.outputs.push_back({DType::kString, out});
  return Status::OK();
}

Status reduce_join_kernel(KernelContext& ctx) {
  const TensorImpl& in = ctx.input(0);
  const std::string& sep = ctx.attr_string(1);
  std::vector<bool> reduced;
  EMBER_RETURN_IF_ERROR(reduce_axes("ReduceJoin", ctx.int_values(1), in.rank(), &reduced));
  // Row-major over the input visits each output's elements in row-major order of the reduced dims.
  std::vector<int64_t> out_strides(static_cast<size_t>(in.rank()), 0);
  int64_t stride = 1;
  for (int d = in.rank() - 1; d >= 0; --d) {
    if (reduced[static_cast<size_t>(d)]) continue;
    out_strides[static_cast<size_t>(d)] = stride;
    stride *= in.shape().dim(d);
  }
  std::string* dst = strings_of(ctx.output(0));
  std::vector<bool> started(static_cast<size_t>(ctx.output(0).num_elements()), false);
  std::vector<int64_t> index(static_cast<size_t>(in.rank()), 0);
  const std::string* src = strings_of(in);
  int64_t at = 0;
  for (int64_t i = 0; i < in.num_elements(); ++i) {
    if (started[static_cast<size_t>(at)]) dst[at] += sep;
    started[static_cast<size_t>(at)] = true;
    dst[at] += src[i];
    for (int d = in.rank() - 1; d >= 0; --d) {
      const size_t u = static_cast<size_t>(d);
      if (++index[u] < in.shape().dim(d)) {
        at += out_strides[u];
        break;
      }
      at -= out_strides[u] * (in.shape().dim(d) - 1);
      index[u] = 0;
    }
  }
  return Status::OK();
}

// ---- StringFormat(inputs: list of any dtype; template, placeholder, summarize) -> scalar string

Status string_format_shape(InferContext& ctx) {
  const std::string& tmpl = ctx.attr_string(0);
  const std::string& placeholder = ctx.attr_string(1);
  if (placeholder.empty()) return invalid_argument("StringFormat: the placeholder must not be empty");
  size_t count = 0;
  for (size_t at = tmpl.find(placeholder); at != std::string::npos;
       at = tmpl.find(placeholder, at + placeholder.size()))
    ++count;
  if (count != ctx.inputs.size())
    return invalid_argument("StringFormat: the template has ", count, " placeholders but ", ctx.inputs.size(),
                            " tensors were given");
  ctx.outputs.push_back({DType::kString, Shape()});
  return Status::OK();
}

Status string_format_kernel(KernelContext& ctx) {
  const std::string& tmpl = ctx.attr_string(0);
  const std::string& placeholder = ctx.attr_string(1);
  std::ostringstream os;
  size_t start = 0;
  size_t next = 0;
  for (size_t at = tmpl.find(placeholder); at != std::string::npos; at = tmpl.find(placeholder, start)) {
    os << tmpl.substr(start, at - start);
    if (next >= ctx.inputs.size()) return invalid_argument("StringFormat: more placeholders than tensors");
    format_tensor(os, ctx.input(static_cast<int>(next++)), ctx.attr_int(2));
    start = at + placeholder.size();
  }
  os << tmpl.substr(start);
  strings_of(ctx.output(0))[0] = os.str();
  return Status::OK();
}

// ---- StringToNumber(string_tensor; out_type)

Status to_number_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_string_input(ctx, 0));
  const DType out = ctx.attr_dtype(0);
  if (out != DType::kFloat32 && out != DType::kFloat64 && out != DType::kInt32 && out != DType::kInt64)
    return invalid_argument("StringToNumber: out_type must be float32, float64, int32 or int64, got ",
                            dtype_name(out));
  ctx.outputs.push_back({out, ctx.inputs[0].shape});
  return Status::OK();
}

// TensorFlow's SafeStringToNumeric: surrounding whitespace is allowed, the rest must be the number.
template <typename T>
bool parse_number(const std::string& text, T* out) {
  size_t b = 0, e = text.size();
  while (b < e && kernels::is_ascii_space(static_cast<unsigned char>(text[b]))) ++b;
  while (e > b && kernels::is_ascii_space(static_cast<unsigned char>(text[e - 1]))) --e;
  if (b == e) return false;
  const std::string s = text.substr(b, e - b);
  char* end = nullptr;
  errno = 0;
  if constexpr (std::is_floating_point_v<T>) {
    const double v = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size()) return false;
    *out = static_cast<T>(v);
  } else {
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (end != s.c_str() + s.size() || errno == ERANGE) return false;
    if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max()) return false;
    *out = static_cast<T>(v);
  }
  return true;
}

Status to_number_kernel(KernelContext& ctx) {
  const TensorImpl& in = ctx.input(0);
  const std::string* src = strings_of(in);
  Status status;
  visit_dtype(ctx.output(0).dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int32_t> ||
                  std::is_same_v<T, int64_t>) {
      T* out = ctx.output(0).mutable_data<T>();
      for (int64_t i = 0; i < in.num_elements() && status.ok(); ++i)
        if (!parse_number(src[i], &out[i]))
          status = invalid_argument("StringToNumber could not correctly convert string: ", src[i]);
    }
  });
  return status;
}

// ---- AsString(input; precision, scientific, shortest, width, fill)

struct AsStringFormat {
  std::string spec;  // printf flags, width and precision, without the conversion
  bool scientific = false, shortest = false;
};

Status as_string_format(const AttrReader& a, DType dtype, AsStringFormat* f) {
  const int64_t precision = a.attr_int(0), width = a.attr_int(3);
  const std::string& fill = a.attr_string(4);
  f->scientific = a.attr_bool(1);
  f->shortest = a.attr_bool(2);
  if (f->scientific && f->shortest)
    return invalid_argument("AsString: cannot select both scientific and shortest notation");
  const bool real_parts = is_floating(dtype) || is_complex(dtype);
  if (precision > -1 && !real_parts)
    return invalid_argument("AsString: precision not supported for dtype ", dtype_name(dtype));
  if ((f->scientific || f->shortest) && !real_parts)
    return invalid_argument(
        "AsString: scientific and shortest notation apply to floats and complex numbers, got ",
        dtype_name(dtype));
  if (fill.size() > 1)
    return invalid_argument("AsString: fill must be at most one character, got \"", fill, "\"");
  if (!fill.empty() && std::string(" +-0#").find(fill[0]) == std::string::npos)
    return invalid_argument("AsString: fill must be one of ' ', '+', '-', '0', '#', got '", fill, "'");
  if (width > 1000 || precision > 1000)
    return invalid_argument("AsString: width and precision must be at most 1000");
  f->spec = "%" + fill;
  if (width > -1) f->spec += std::to_string(width);
  if (precision > -1) f->spec += "." + std::to_string(precision);
  return Status::OK();
}

Status as_string_shape(InferContext& ctx) {
  AsStringFormat f;
  EMBER_RETURN_IF_ERROR(as_string_format(ctx, ctx.inputs[0].dtype, &f));
  return like_input_shape<DType::kString>(ctx);
}

std::string printf_string(const std::string& format, auto value) {
  const int n = std::snprintf(nullptr, 0, format.c_str(), value);
  std::string s(static_cast<size_t>(std::max(n, 0)), '\0');
  std::snprintf(s.data(), s.size() + 1, format.c_str(), value);
  return s;
}

Status as_string_kernel(KernelContext& ctx) {
  const TensorImpl& in = ctx.input(0);
  AsStringFormat f;
  EMBER_RETURN_IF_ERROR(as_string_format(ctx, in.dtype(), &f));
  std::string* dst = strings_of(ctx.output(0));
  const std::string real_format = f.spec + (f.scientific ? "e" : f.shortest ? "g" : "f");
  visit_dtype<kAllTypesAndString | kComplexTypes>(in.dtype(), [&]<typename T>() {
    const T* src = in.data<T>();
    for (int64_t i = 0; i < in.num_elements(); ++i) {
      if constexpr (std::is_same_v<T, complex64> || std::is_same_v<T, complex128>) {
        // As TensorFlow: "(real,imag)", each part formatted as a float of the attributes (width included).
        dst[i] = "(" + printf_string(real_format, static_cast<double>(src[i].real())) + "," +
                 printf_string(real_format, static_cast<double>(src[i].imag())) + ")";
      } else if constexpr (std::is_same_v<T, std::string>) {
        dst[i] = printf_string(f.spec + "s", src[i].c_str());
      } else if constexpr (std::is_same_v<T, bool>) {
        dst[i] = printf_string(f.spec + "s", src[i] ? "true" : "false");
      } else if constexpr (std::is_integral_v<T>) {
        dst[i] = printf_string(f.spec + "lld", static_cast<long long>(src[i]));
      } else {
        double v;
        if constexpr (std::is_same_v<T, double>)
          v = src[i];
        else
          v = static_cast<double>(static_cast<float>(src[i]));
        dst[i] = printf_string(real_format, v);
      }
    }
  });
  return Status::OK();
}

// ---- RegexReplace / StaticRegexReplace, RegexFullMatch / StaticRegexFullMatch

Status compile(const std::string& op, const std::string& pattern, std::unique_ptr<RE2>* out) {
  RE2::Options options;
  options.set_log_errors(false);
  auto re = std::make_unique<RE2>(pattern, options);
  if (!re->ok()) return invalid_argument(op, ": invalid pattern \"", pattern, "\": ", re->error());
  *out = std::move(re);
  return Status::OK();
}

Status regex_replace(KernelContext& ctx, const std::string& pattern, const std::string& rewrite,
                     bool global) {
  std::unique_ptr<RE2> re;
  EMBER_RETURN_IF_ERROR(compile(ctx.op->name, pattern, &re));
  std::string error;
  if (!re->CheckRewriteString(rewrite, &error))
    return invalid_argument(ctx.op->name, ": invalid rewrite \"", rewrite, "\": ", error);
  const TensorImpl& in = ctx.input(0);
  const std::string* src = strings_of(in);
  std::string* dst = strings_of(ctx.output(0));
  for (int64_t i = 0; i < in.num_elements(); ++i) {
    dst[i] = src[i];
    if (global)
      RE2::GlobalReplace(&dst[i], *re, rewrite);
    else
      RE2::Replace(&dst[i], *re, rewrite);
  }
  return Status::OK();
}

Status regex_replace_shape(InferContext& ctx) {
  for (int i = 0; i < 3; ++i) EMBER_RETURN_IF_ERROR(check_string_input(ctx, i));
  return like_input_shape<DType::kString>(ctx);
}

Status regex_replace_kernel(KernelContext& ctx) {
  std::string pattern, rewrite;
  EMBER_RETURN_IF_ERROR(scalar_string_input(ctx, 1, "pattern", &pattern));
  EMBER_RETURN_IF_ERROR(scalar_string_input(ctx, 2, "rewrite", &rewrite));
  return regex_replace(ctx, pattern, rewrite, ctx.attr_bool(0));
}

Status static_regex_replace_kernel(KernelContext& ctx) {
  return regex_replace(ctx, ctx.attr_string(0), ctx.attr_string(1), ctx.attr_bool(2));
}

Status regex_full_match(KernelContext& ctx, const std::string& pattern) {
  std::unique_ptr<RE2> re;
  EMBER_RETURN_IF_ERROR(compile(ctx.op->name, pattern, &re));
  const TensorImpl& in = ctx.input(0);
  const std::string* src = strings_of(in);
  bool* dst = ctx.output(0).mutable_data<bool>();
  for (int64_t i = 0; i < in.num_elements(); ++i) dst[i] = RE2::FullMatch(src[i], *re);
  return Status::OK();
}

Status regex_full_match_shape(InferContext& ctx) {
  for (size_t i = 0; i < ctx.inputs.size(); ++i)
    EMBER_RETURN_IF_ERROR(check_string_input(ctx, static_cast<int>(i)));
  return like_input_shape<DType::kBool>(ctx);
}

Status regex_full_match_kernel(KernelContext& ctx) {
  std::string pattern;
  EMBER_RETURN_IF_ERROR(scalar_string_input(ctx, 1, "pattern", &pattern));
  return regex_full_match(ctx, pattern);
}

Status static_regex_full_match_kernel(KernelContext& ctx) {
  return regex_full_match(ctx, ctx.attr_string(0));
}

// ---- Substr(input, pos, len; unit)

Status substr_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_string_input(ctx, 0));
  bool utf8;
  EMBER_RETURN_IF_ERROR(unit_attr("Substr", ctx.attr_string(0), &utf8));
  const Shape& pos = ctx.inputs[1].shape;
  const Shape& len = ctx.inputs[2].shape;
  if (pos.rank_known() && len.rank_known() && !pos.is_compatible_with(len))
    return invalid_argument("Substr: pos and len must have the same shape, got ", pos.to_string(), " and ",
                            len.to_string());
  if (!ctx.inputs[0].shape.rank_known() || !pos.rank_known()) {
    ctx.outputs.push_back({DType::kString, Shape::unknown_rank()});
    return Status::OK();
  }
  auto shape = broadcast_shapes(ctx.inputs[0].shape, pos);
  if (!shape.ok()) return shape.status().with_prefix("Substr: input and pos: ");
  ctx.outputs.push_back({DType::kString, *shape});
  return Status::OK();
}

std::string quoted_bytes(const std::string& s) {
  std::string out = "b'";
  for (unsigned char c : s) {
    if (c == '\'' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out + "'";
}

Status substr_kernel(KernelContext& ctx) {
  bool utf8;
  EMBER_RETURN_IF_ERROR(unit_attr("Substr", ctx.attr_string(0), &utf8));
  const TensorImpl& in = ctx.input(0);
  const TensorImpl& pos_t = ctx.input(1);
  const TensorImpl& len_t = ctx.input(2);
  if (pos_t.shape() != len_t.shape())
    return invalid_argument("Substr: pos and len must have the same shape, got ", pos_t.shape().to_string(),
                            " and ", len_t.shape().to_string());
  TensorImpl& out = ctx.output(0);
  const auto is = kernels::broadcast_sources(in.shape(), out.shape());
  const auto ip = kernels::broadcast_sources(pos_t.shape(), out.shape());
  auto read = [](const TensorImpl& t, int64_t i) {
    return t.dtype() == DType::kInt32 ? int64_t{t.data<int32_t>()[i]} : t.data<int64_t>()[i];
  };
  const std::string* src = strings_of(in);
  std::string* dst = strings_of(out);
  for (size_t i = 0; i < is.size(); ++i) {
    const std::string& s = src[is[i]];
    const int64_t size = utf8 ? kernels::utf8_length(s) : static_cast<int64_t>(s.size());
    int64_t pos = read(pos_t, ip[i]);
    const int64_t len = read(len_t, ip[i]);
    if (pos > size || pos < -size)
      return invalid_argument("pos ", pos, " out of range for string ", quoted_bytes(s), " at index ", i);
    if (pos < 0) pos += size;
    const int64_t take = std::max<int64_t>(0, std::min(len, size - pos));
    if (utf8) {
      const size_t b = kernels::utf8_offset(s, pos);
      const size_t e = kernels::utf8_offset(s, pos + take);
      dst[i] = s.substr(b, e - b);
    } else {
      dst[i] = s.substr(static_cast<size_t>(pos), static_cast<size_t>(take));
    }
  }
  return Status::OK();
}

// ---- StringUpper / StringLower (ASCII, TensorFlow's encoding ""), StringStrip

template <bool kUpper>
Status change_case_kernel(KernelContext& ctx) {
  if (!ctx.attr_string(0).empty())
    return invalid_argument(ctx.op->name, ": only encoding \"\" (ASCII) is supported, got \"",
                            ctx.attr_string(0), "\"");
  const TensorImpl& in = ctx.input(0);
  const std::string* src = strings_of(in);
  std::string* dst = strings_of(ctx.output(0));
  for (int64_t i = 0; i < in.num_elements(); ++i) {
    dst[i] = src[i];
    for (char& c : dst[i]) {
      if (kUpper && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
      if (!kUpper && c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return Status::OK();
}

Status strip_kernel(KernelContext& ctx) {
  const TensorImpl& in = ctx.input(0);
  const std::string* src = strings_of(in);
  std::string* dst = strings_of(ctx.output(0));
  for (int64_t i = 0; i < in.num_elements(); ++i) {
    size_t b = 0, e = src[i].size();
    while (b < e && kernels::is_ascii_space(static_cast<unsigned char>(src[i][b]))) ++b;
    while (e > b && kernels::is_ascii_space(static_cast<unsigned char>(src[i][e - 1]))) --e;
    dst[i] = src[i].substr(b, e - b);
  }
  return Status::OK();
}

Status string_unary_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_string_input(ctx, 0));
  return like_input_shape<DType::kString>(ctx);
}

// ---- StringSplitV2(input: [batch] string, sep: scalar string; maxsplit) -> indices, values, shape

Status split_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_string_input(ctx, 0));
  EMBER_RETURN_IF_ERROR(check_string_input(ctx, 1));
  const Shape& in = ctx.inputs[0].shape;
  if (in.rank_known() && in.rank() != 1)
    return invalid_argument("StringSplitV2: input must be a vector, got shape ", in.to_string());
  const Shape& sep = ctx.inputs[1].shape;
  if (sep.rank_known() && sep.rank() != 0)
    return invalid_argument("StringSplitV2: sep must be a scalar, got shape ", sep.to_string());
  ctx.outputs.push_back({DType::kInt64, Shape({-1, 2})});
  ctx.outputs.push_back({DType::kString, Shape({-1})});
  ctx.outputs.push_back({DType::kInt64, Shape({2})});
  return Status::OK();
}

Status split_kernel(KernelContext& ctx) {
  const TensorImpl& in = ctx.input(0);
  if (in.rank() != 1)
    return invalid_argument("StringSplitV2: input must be a vector, got shape ", in.shape().to_string());
  std::string sep;
  EMBER_RETURN_IF_ERROR(scalar_string_input(ctx, 1, "sep", &sep));
  const int64_t maxsplit = ctx.attr_int(0);
  const std::string* src = strings_of(in);
  std::vector<std::vector<std::string_view>> pieces(static_cast<size_t>(in.num_elements()));
  int64_t total = 0, widest = 0;
  for (int64_t i = 0; i < in.num_elements(); ++i) {
    pieces[static_cast<size_t>(i)] = kernels::split(src[i], sep, maxsplit);
    const int64_t n = static_cast<int64_t>(pieces[static_cast<size_t>(i)].size());
    total += n;
    widest = std::max(widest, n);
  }
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 0, DType::kInt64, Shape({total, 2})));
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 1, DType::kString, Shape({total})));
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 2, DType::kInt64, Shape({2})));
  int64_t* indices = ctx.output(0).mutable_data<int64_t>();
  std::string* values = strings_of(ctx.output(1));
  int64_t k = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    for (size_t j = 0; j < pieces[i].size(); ++j, ++k) {
      indices[2 * k] = static_cast<int64_t>(i);
      indices[2 * k + 1] = static_cast<int64_t>(j);
      values[k] = std::string(pieces[i][j]);
    }
  }
  int64_t* shape = ctx.output(2).mutable_data<int64_t>();
  shape[0] = in.num_elements();
  shape[1] = widest;
  return Status::OK();
}

// ---- StringToHashBucketFast(input; num_buckets) -> int64

Status hash_bucket_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_string_input(ctx, 0));
  if (ctx.attr_int(0) < 1)
    return invalid_argument("StringToHashBucketFast: num_buckets must be at least 1, got ", ctx.attr_int(0));
  return like_input_shape<DType::kInt64>(ctx);
}

Status hash_bucket_kernel(KernelContext& ctx) {
  const uint64_t buckets = static_cast<uint64_t>(ctx.attr_int(0));
  const TensorImpl& in = ctx.input(0);
  const std::string* src = strings_of(in);
  int64_t* dst = ctx.output(0).mutable_data<int64_t>();
  for (int64_t i = 0; i < in.num_elements(); ++i)
    dst[i] = static_cast<int64_t>(kernels::fingerprint64(src[i]) % buckets);
  return Status::OK();
}

// ---- UnicodeDecode(input; input_encoding, errors, replacement_char, replace_control_characters, Tsplits)
// -> row_splits [n + 1], char_values [total]: the code points of each (flattened) input string.

Status unicode_decode_attrs(const AttrReader& a) {
  std::string enc = a.attr_string(0);
  std::transform(enc.begin(), enc.end(), enc.begin(), [](unsigned char c) { return std::toupper(c); });
  if (enc != "UTF-8" && enc != "UTF8")
    return invalid_argument("UnicodeDecode: only input_encoding \"UTF-8\" is supported, got \"",
                            a.attr_string(0), "\"");
  const std::string& errors = a.attr_string(1);
  if (errors != "strict" && errors != "replace" && errors != "ignore")
    return invalid_argument("UnicodeDecode: errors must be \"strict\", \"replace\" or \"ignore\", got \"",
                            errors, "\"");
  const DType splits = a.attr_dtype(4);
  if (splits != DType::kInt32 && splits != DType::kInt64)
    return invalid_argument("UnicodeDecode: Tsplits must be int32 or int64, got ", dtype_name(splits));
  return Status::OK();
}

Status unicode_decode_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_string_input(ctx, 0));
  EMBER_RETURN_IF_ERROR(unicode_decode_attrs(ctx));
  const Shape& in = ctx.inputs[0].shape;
  const int64_t rows = in.fully_defined() ? in.num_elements() + 1 : -1;
  ctx.outputs.push_back({ctx.attr_dtype(4), Shape({rows})});
  ctx.outputs.push_back({DType::kInt32, Shape({-1})});
  return Status::OK();
}

Status unicode_decode_kernel(KernelContext& ctx) {
  EMBER_RETURN_IF_ERROR(unicode_decode_attrs(ctx));
  const std::string& errors = ctx.attr_string(1);
  const int64_t replacement = ctx.attr_int(2);
  const bool replace_control = ctx.attr_bool(3);
  const TensorImpl& in = ctx.input(0);
  const std::string* src = strings_of(in);
  std::vector<int64_t> splits{0};
  std::vector<int32_t> chars;
  for (int64_t i = 0; i < in.num_elements(); ++i) {
    const std::string& s = src[i];
    for (size_t pos = 0; pos < s.size();) {
      int32_t cp = kernels::decode_utf8(s, &pos);
      if (cp < 0) {
        if (errors == "strict")
          return invalid_argument("UnicodeDecode: invalid UTF-8 in string ", quoted_bytes(s), " at index ",
                                  i);
        if (errors == "ignore") continue;
        cp = static_cast<int32_t>(replacement);
      } else if (replace_control && cp < 0x20) {  // C0 only: TensorFlow keeps DEL and the C1 controls
        cp = static_cast<int32_t>(replacement);
      }
      chars.push_back(cp);
    }
    splits.push_back(static_cast<int64_t>(chars.size()));
  }
  const DType split_type = ctx.attr_dtype(4);
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 0, split_type, Shape({static_cast<int64_t>(splits.size())})));
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 1, DType::kInt32, Shape({static_cast<int64_t>(chars.size())})));
  for (size_t i = 0; i < splits.size(); ++i) {
    if (split_type == DType::kInt32)
      ctx.output(0).mutable_data<int32_t>()[i] = static_cast<int32_t>(splits[i]);
    else
      ctx.output(0).mutable_data<int64_t>()[i] = splits[i];
  }
  std::copy(chars.begin(), chars.end(), ctx.output(1).mutable_data<int32_t>());
  return Status::OK();
}

// ---- UnicodeEncode(input_values int32, input_splits; errors, output_encoding, replacement_char, Tsplits)
// -> one string per row of the ragged code points: row i is input_values[splits[i]:splits[i + 1]].

Status unicode_encode_attrs(const AttrReader& a, kernels::UnicodeEncoding* encoding) {
  const std::string& errors = a.attr_string(0);
  if (errors != "strict" && errors != "replace" && errors != "ignore")
    return invalid_argument("UnicodeEncode: errors must be \"strict\", \"replace\" or \"ignore\", got \"",
                            errors, "\"");
  const std::string& enc = a.attr_string(1);
  if (enc == "UTF-8")
    *encoding = kernels::UnicodeEncoding::kUtf8;
  else if (enc == "UTF-16-BE")
    *encoding = kernels::UnicodeEncoding::kUtf16Be;
  else if (enc == "UTF-32-BE")
    *encoding = kernels::UnicodeEncoding::kUtf32Be;
  else
    return invalid_argument(
        "UnicodeEncode: output_encoding must be \"UTF-8\", \"UTF-16-BE\" or \"UTF-32-BE\", "
        "got \"",
        enc, "\"");
  const DType splits = a.attr_dtype(3);
  if (splits != DType::kInt32 && splits != DType::kInt64)
    return invalid_argument("UnicodeEncode: Tsplits must be int32 or int64, got ", dtype_name(splits));
  return Status::OK();
}

Status unicode_encode_shape(InferContext& ctx) {
  kernels::UnicodeEncoding encoding;
  EMBER_RETURN_IF_ERROR(unicode_encode_attrs(ctx, &encoding));
  const TensorSpec& values = ctx.inputs[0];
  const TensorSpec& splits = ctx.inputs[1];
  if (splits.dtype != ctx.attr_dtype(3))
    return invalid_argument("UnicodeEncode: input_splits must be ", dtype_name(ctx.attr_dtype(3)),
                            " (Tsplits), got ", dtype_name(splits.dtype));
  if (values.shape.rank_known() && values.shape.rank() != 1)
    return invalid_argument("UnicodeEncode: input_values must be a vector, got shape ",
                            values.shape.to_string());
  if (splits.shape.rank_known() && splits.shape.rank() != 1)
    return invalid_argument("UnicodeEncode: input_splits must be a vector, got shape ",
                            splits.shape.to_string());
  const int64_t n = splits.shape.rank_known() ? splits.shape.dim(0) : -1;
  if (n == 0) return invalid_argument("UnicodeEncode: input_splits must hold at least one element, got none");
  ctx.outputs.push_back({DType::kString, Shape({n < 0 ? -1 : n - 1})});
  return Status::OK();
}

Status unicode_encode_kernel(KernelContext& ctx) {
  kernels::UnicodeEncoding encoding;
  EMBER_RETURN_IF_ERROR(unicode_encode_attrs(ctx, &encoding));
  const std::string& errors = ctx.attr_string(0);
  const int64_t replacement = ctx.attr_int(2);
  const TensorImpl& values = ctx.input(0);
  const std::vector<int64_t> splits = ctx.int_values(1);
  const int64_t total = values.num_elements();
  if (splits.empty()) return invalid_argument("UnicodeEncode: input_splits must hold at least one element");
  if (splits.front() != 0)
    return invalid_argument("UnicodeEncode: input_splits must start at 0, got ", splits.front());
  for (size_t i = 1; i < splits.size(); ++i)
    if (splits[i] < splits[i - 1] || splits[i] > total)
      return invalid_argument("UnicodeEncode: input_splits must be non-decreasing and at most the ", total,
                              " input_values, got ", splits[i], " after ", splits[i - 1], " at index ", i);
  if (splits.back() != total)
    return invalid_argument("UnicodeEncode: input_splits must end at the ", total, " input_values, got ",
                            splits.back());
  if (errors == "replace" && !kernels::is_unicode_scalar(replacement))
    return invalid_argument("UnicodeEncode: replacement_char ", replacement,
                            " is not a Unicode scalar value");
  const int32_t* cps = values.data<int32_t>();
  EMBER_RETURN_IF_ERROR(
      allocate_output(ctx, 0, DType::kString, Shape({static_cast<int64_t>(splits.size()) - 1})));
  std::string* out = strings_of(ctx.output(0));
  for (size_t row = 0; row + 1 < splits.size(); ++row) {
    for (int64_t k = splits[row]; k < splits[row + 1]; ++k) {
      int32_t cp = cps[k];
      if (!kernels::is_unicode_scalar(cp)) {
        if (errors == "strict")
          return invalid_argument("UnicodeEncode: code point ", cp, " at index ", k,
                                  " is out of range for Unicode or is a surrogate");
        if (errors == "ignore") continue;
        cp = static_cast<int32_t>(replacement);
      }
      kernels::encode_unicode(cp, encoding, &out[row]);
    }
  }
  return Status::OK();
}

// ---- UnicodeTranscode(input; input_encoding, output_encoding, errors, replacement_char,
// replace_control_characters) -> each string re-encoded, shape of input.
//
// Note [Ill-formed UTF-16 and UTF-32]
// TensorFlow decodes with ICU's converters, whose errors in UTF-16-BE and UTF-32-BE are these (checked
// against TensorFlow by test_strings_transcode.py): in UTF-16-BE an unpaired surrogate unit is one error and
// the unit after it is read afresh, a trailing odd byte is one error and so is a high surrogate with the
// 0 or 1 bytes left after it; in UTF-32-BE each 4 bytes that are
// not a scalar value (a surrogate, or past U+10FFFF) are one error, and 1-3 trailing bytes are one. UTF-8
// errors are Note [Ill-formed UTF-8]'s maximal subparts. Byte order marks are characters like any other.

enum class InputEncoding { kUtf8, kUtf16Be, kUtf32Be };

// ICU's converter names are case-insensitive and take aliases; ember reads the three the op can write.
bool input_encoding_of(std::string name, InputEncoding* out) {
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::toupper(c); });
  if (name == "UTF-8" || name == "UTF8") {
    *out = InputEncoding::kUtf8;
  } else if (name == "UTF-16-BE" || name == "UTF-16BE" || name == "UTF16BE") {
    *out = InputEncoding::kUtf16Be;
  } else if (name == "UTF-32-BE" || name == "UTF-32BE" || name == "UTF32BE") {
    *out = InputEncoding::kUtf32Be;
  } else {
    return false;
  }
  return true;
}

// The next code point of `s` from `*pos` in `encoding`, or -1 for one ill-formed unit (Note [Ill-formed
// UTF-16 and UTF-32]); `*pos` advances past what was read.
int32_t decode_next(std::string_view s, size_t* pos, InputEncoding encoding) {
  const auto byte = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(s[k])); };
  const size_t i = *pos;
  switch (encoding) {
    case InputEncoding::kUtf8:
      return kernels::decode_utf8(s, pos);
    case InputEncoding::kUtf16Be: {
      if (i + 2 > s.size()) {
        *pos = s.size();
        return -1;
      }
      const uint32_t unit = byte(i) << 8 | byte(i + 1);
      *pos = i + 2;
      if (unit < 0xD800 || unit > 0xDFFF) return static_cast<int32_t>(unit);
      if (unit >= 0xDC00) return -1;
      if (i + 4 > s.size()) {  // a high surrogate and what is left of the string: one truncated sequence
        *pos = s.size();
        return -1;
      }
      const uint32_t low = byte(i + 2) << 8 | byte(i + 3);
      if (low < 0xDC00 || low > 0xDFFF) return -1;
      *pos = i + 4;
      return static_cast<int32_t>(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00));
    }
    case InputEncoding::kUtf32Be: {
      if (i + 4 > s.size()) {
        *pos = s.size();
        return -1;
      }
      const uint32_t cp = byte(i) << 24 | byte(i + 1) << 16 | byte(i + 2) << 8 | byte(i + 3);
      *pos = i + 4;
      return cp <= 0x10FFFF && kernels::is_unicode_scalar(static_cast<int32_t>(cp)) ? static_cast<int32_t>(cp)
                                                                                    : -1;
    }
  }
  return -1;
}

Status unicode_transcode_attrs(const AttrReader& a, InputEncoding* in, kernels::UnicodeEncoding* out) {
  if (!input_encoding_of(a.attr_string(0), in))
    return invalid_argument(
        "UnicodeTranscode: input_encoding must be \"UTF-8\", \"UTF-16-BE\" or \"UTF-32-BE\" "
        "(ember reads no other ICU encoding), got \"",
        a.attr_string(0), "\"");
  const std::string& enc = a.attr_string(1);
  if (enc == "UTF-8")
    *out = kernels::UnicodeEncoding::kUtf8;
  else if (enc == "UTF-16-BE")
    *out = kernels::UnicodeEncoding::kUtf16Be;
  else if (enc == "UTF-32-BE")
    *out = kernels::UnicodeEncoding::kUtf32Be;
  else
    return invalid_argument(
        "UnicodeTranscode: output_encoding must be \"UTF-8\", \"UTF-16-BE\" or \"UTF-32-BE\", got \"", enc,
        "\"");
  const std::string& errors = a.attr_string(2);
  if (errors != "strict" && errors != "replace" && errors != "ignore")
    return invalid_argument("UnicodeTranscode: errors must be \"strict\", \"replace\" or \"ignore\", got \"",
                            errors, "\"");
  return Status::OK();
}

Status unicode_transcode_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_string_input(ctx, 0));
  InputEncoding in;
  kernels::UnicodeEncoding out;
  EMBER_RETURN_IF_ERROR(unicode_transcode_attrs(ctx, &in, &out));
  return like_input_shape<DType::kString>(ctx);
}

Status unicode_transcode_kernel(KernelContext& ctx) {
  InputEncoding in_encoding;
  kernels::UnicodeEncoding out_encoding;
  EMBER_RETURN_IF_ERROR(unicode_transcode_attrs(ctx, &in_encoding, &out_encoding));
  const std::string& errors = ctx.attr_string(2);
  const int64_t replacement = ctx.attr_int(3);
  const bool replace_control = ctx.attr_bool(4);
  if (replacement < 0 || replacement > 0x10FFFF)
    return invalid_argument("UnicodeTranscode: replacement_char must be a code point in [0, 0x10FFFF], got ",
                            replacement);
  // A surrogate replacement is written as its bare code unit in UTF-16 and UTF-32, and as U+FFFD in UTF-8
  // (ICU's converters do so).
  const bool utf8_surrogate =
      out_encoding == kernels::UnicodeEncoding::kUtf8 && !kernels::is_unicode_scalar(replacement);
  const int32_t written_replacement = utf8_surrogate ? 0xFFFD : static_cast<int32_t>(replacement);
  const TensorImpl& in = ctx.input(0);
  const std::string* src = strings_of(in);
  std::string* dst = strings_of(ctx.output(0));
  for (int64_t i = 0; i < in.num_elements(); ++i) {
    const std::string& s = src[i];
    std::string out;
    out.reserve(s.size());
    for (size_t pos = 0; pos < s.size();) {
      int32_t cp = decode_next(s, &pos, in_encoding);
      if (cp < 0) {
        if (errors == "strict")
          return invalid_argument("UnicodeTranscode: invalid ", ctx.attr_string(0), " in string ",
                                  quoted_bytes(s), " at index ", i, " (errors=\"strict\")");
        if (errors == "ignore") continue;
        cp = written_replacement;
      } else if (replace_control && cp < 0x20) {  // C0 only, as UnicodeDecode
        cp = written_replacement;
      }
      kernels::encode_unicode(cp, out_encoding, &out);
    }
    dst[i] = std::move(out);
  }
  return Status::OK();
}

}  // namespace

void register_string_ngrams_op(OpRegistry& r);  // string_ngrams.cc
void register_bytes_ops(OpRegistry& r);         // strings_bytes.cc

void register_string_ops(OpRegistry& r) {
  register_string_ngrams_op(r);
  register_bytes_ops(r);
  OpBuilder("StringLength")
      .doc("The length of each string, in bytes or (unit=\"UTF8_CHAR\") characters. length([\"hé\"]) == [3]")
      .input("input")
      .output("output")
      .type_var(kStringType)
      .attr("unit", AttrType::kString, std::string("BYTE"))
      .flags(kStringOpFlags)
      .shape(&string_length_shape)
      .kernel(kStringType, &string_length_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("StringJoin")
      .doc(
          "Joins strings element-wise (scalars broadcast). join([\"a\", [\"b\", \"c\"]], \"-\") == [\"a-b\", "
          "\"a-c\"]")
      .input_list("inputs")
      .output("output")
      .type_var(kStringType)
      .attr("separator", AttrType::kString, std::string())
      .flags(kStringOpFlags)
      .shape(&string_join_shape)
      .kernel(kStringType, &string_join_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("ReduceJoin")
      .doc(
          "Joins the strings along axes. reduce_join([[\"a\", \"b\"], [\"c\", \"d\"]], 1) == [\"ab\", "
          "\"cd\"]")
      .input("inputs")
      .input_shape_like("reduction_indices")
      .output("output")
      .type_var(kStringType)
      .attr("keep_dims", AttrType::kBool, false)
      .attr("separator", AttrType::kString, std::string())
      .flags(kStringOpFlags)
      .shape(&reduce_join_shape)
      .kernel(kStringType, &reduce_join_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("StringFormat")
      .doc(
          "Formats tensors into a template, as tf.print writes them. format(\"x={}\", [[1, 2]]) == \"x=[1 "
          "2]\"")
      .input_fixed("inputs", kAllTypesAndString | kComplexTypes)
      .output("output")
      .type_var(kStringType)
      .attr("template", AttrType::kString, std::string("%s"))
      .attr("placeholder", AttrType::kString, std::string("%s"))
      .attr("summarize", AttrType::kInt, int64_t{3})
      .dispatch_on_output()
      .flags(kVariadicInput | kVariadicMayBeEmpty | kStringOpFlags)
      .shape(&string_format_shape)
      .kernel(kStringType, &string_format_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("StringToNumber")
      .doc("Parses each string as a number of out_type. to_number([\"1.5\"]) == [1.5]")
      .input("string_tensor")
      .output("output")
      .type_var(kStringType)
      .attr("out_type", AttrType::kDType, DType::kFloat32)
      .flags(kStringOpFlags)
      .shape(&to_number_shape)
      .kernel(kStringType, &to_number_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("AsString")
      .doc("Formats each element as a string (printf-style attributes). as_string([1, 2]) == [\"1\", \"2\"]")
      .input("input")
      .output("output")
      .type_var(kAllTypesAndString | kComplexTypes)
      .attr("precision", AttrType::kInt, int64_t{-1})
      .attr("scientific", AttrType::kBool, false)
      .attr("shortest", AttrType::kBool, false)
      .attr("width", AttrType::kInt, int64_t{-1})
      .attr("fill", AttrType::kString, std::string())
      .flags(kStringOpFlags)
      .shape(&as_string_shape)
      .kernel(kAllTypesAndString | kComplexTypes, &as_string_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("RegexReplace")
      .doc("Replaces matches of an RE2 pattern. regex_replace(\"aaa bb\", \"a+\", \"x\") == \"x bb\"")
      .input("input")
      .input("pattern")
      .input("rewrite")
      .output("output")
      .type_var(kStringType)
      .attr("replace_global", AttrType::kBool, true)
      .flags(kStringOpFlags)
      .shape(&regex_replace_shape)
      .kernel(kStringType, &regex_replace_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("StaticRegexReplace")
      .doc(
          "RegexReplace with the pattern and rewrite as attributes. (\"aaa bb\", pattern=\"a+\", "
          "rewrite=\"x\") -> \"x bb\"")
      .input("input")
      .output("output")
      .type_var(kStringType)
      .attr("pattern", AttrType::kString)
      .attr("rewrite", AttrType::kString)
      .attr("replace_global", AttrType::kBool, true)
      .flags(kStringOpFlags)
      .shape(&string_unary_shape)
      .kernel(kStringType, &static_regex_replace_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("RegexFullMatch")
      .doc(
          "Whether each string matches an RE2 pattern entirely. regex_full_match([\"ab\", \"b\"], \"a.*\") "
          "== [True, False]")
      .input("input")
      .input("pattern")
      .output("output")
      .type_var(kStringType)
      .flags(kStringOpFlags)
      .shape(&regex_full_match_shape)
      .kernel(kStringType, &regex_full_match_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("StaticRegexFullMatch")
      .doc("RegexFullMatch with the pattern as an attribute. ([\"ab\"], pattern=\"a.*\") -> [True]")
      .input("input")
      .output("output")
      .type_var(kStringType)
      .attr("pattern", AttrType::kString)
      .flags(kStringOpFlags)
      .shape(&regex_full_match_shape)
      .kernel(kStringType, &static_regex_full_match_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("Substr")
      .doc(
          "Substrings from pos (negative: from the end), at most len long. substr(\"hello\", 1, 3) == "
          "\"ell\"")
      .input("input")
      .input("pos", 1)
      .input("len", 1)
      .output("output")
      .type_var(kStringType)
      .type_var(kIndexTypes, 1)
      .attr("unit", AttrType::kString, std::string("BYTE"))
      .flags(kStringOpFlags)
      .shape(&substr_shape)
      .kernel(kStringType, &substr_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  struct CaseOp {
    const char* name;
    const char* doc;
    KernelFn kernel;
  };
  for (const CaseOp& op : {CaseOp{"StringUpper", "ASCII letters to upper case. upper(\"ab\") == \"AB\"",
                                  &change_case_kernel<true>},
                           CaseOp{"StringLower", "ASCII letters to lower case. lower(\"AB\") == \"ab\"",
                                  &change_case_kernel<false>}}) {
    OpBuilder(op.name)
        .doc(op.doc)
        .input("input")
        .output("output")
        .type_var(kStringType)
        .attr("encoding", AttrType::kString, std::string())
        .flags(kStringOpFlags)
        .shape(&string_unary_shape)
        .kernel(kStringType, op.kernel)
        .batching(BatchingRule::kFallback)
        .done(r);
  }
  OpBuilder("StringStrip")
      .doc("Removes leading and trailing whitespace. strip(\" a \") == \"a\"")
      .input("input")
      .output("output")
      .type_var(kStringType)
      .flags(kStringOpFlags)
      .shape(&string_unary_shape)
      .kernel(kStringType, &strip_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("StringSplitV2")
      .doc(
          "Splits each string of a vector (on whitespace when sep is \"\"), as sparse indices, values and "
          "shape. "
          "([\"a b\"], \"\") -> indices [[0, 0], [0, 1]], values [\"a\", \"b\"], shape [1, 2]")
      .input("input")
      .input("sep")
      .output("indices")
      .output("values")
      .output("shape")
      .type_var(kStringType)
      .attr("maxsplit", AttrType::kInt, int64_t{-1})
      .flags(kStringOpFlags | kKernelAllocates)
      .shape(&split_shape)
      .kernel(kStringType, &split_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("StringToHashBucketFast")
      .doc("FarmHash Fingerprint64 of each string modulo num_buckets, as TensorFlow. ([\"a\"], 10) -> [4]")
      .input("input")
      .output("output")
      .type_var(kStringType)
      .attr("num_buckets", AttrType::kInt)
      .flags(kStringOpFlags)
      .shape(&hash_bucket_shape)
      .kernel(kStringType, &hash_bucket_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("UnicodeDecode")
      .doc(
          "The code points of each UTF-8 string, as row_splits and char_values. ([\"hé\"]) -> [0, 2], [104, "
          "233]")
      .input("input")
      .output("row_splits")
      .output("char_values")
      .type_var(kStringType)
      .attr("input_encoding", AttrType::kString)
      .attr("errors", AttrType::kString, std::string("replace"))
      .attr("replacement_char", AttrType::kInt, int64_t{65533})
      .attr("replace_control_characters", AttrType::kBool, false)
      .attr("Tsplits", AttrType::kDType, DType::kInt64)
      .flags(kStringOpFlags | kKernelAllocates)
      .shape(&unicode_decode_shape)
      .kernel(kStringType, &unicode_decode_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("UnicodeTranscode")
      .doc(
          "Each string re-encoded from input_encoding to output_encoding (UTF-8, UTF-16-BE, UTF-32-BE), "
          "ill-formed "
          "input per errors. (\"h\\xff\", UTF-8 -> UTF-16-BE) -> \"\\0h\\xff\\xfd\"")
      .input("input")
      .output("output")
      .type_var(kStringType)
      .attr("input_encoding", AttrType::kString)
      .attr("output_encoding", AttrType::kString)
      .attr("errors", AttrType::kString, std::string("replace"))
      .attr("replacement_char", AttrType::kInt, int64_t{65533})
      .attr("replace_control_characters", AttrType::kBool, false)
      .flags(kStringOpFlags)
      .shape(&unicode_transcode_shape)
      .kernel(kStringType, &unicode_transcode_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("UnicodeEncode")
      .doc(
          "One string per row of ragged code points (input_values split by input_splits), in "
          "output_encoding. "
          "([104, 233], [0, 2]) -> [\"hé\"]")
      .input("input_values")
      .input("input_splits", 1)
      .output("output")
      .type_var(dtype_bit(DType::kInt32))
      .type_var(kIndexTypes, 1)
      .attr("errors", AttrType::kString, std::string("replace"))
      .attr("output_encoding", AttrType::kString)
      .attr("replacement_char", AttrType::kInt, int64_t{65533})
      .attr("Tsplits", AttrType::kDType, DType::kInt64)
      .flags(kStringOpFlags | kKernelAllocates)
      .shape(&unicode_encode_shape)
      .kernel(DType::kInt32, &unicode_encode_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember
