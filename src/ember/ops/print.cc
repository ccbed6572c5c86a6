// PrintV2: ember.print / tf.print, and Assert: tf.debugging.Assert. Stateful ops (it always runs and keeps
// program order with the other stateful ops of a function); a template holds the text around the tensors,
// each tensor's place marked by kTensorSlot. EnsureShape (tf.ensure_shape), the run-time check of a shape,
// lives here with Assert, and so does CheckNumerics (tf.debugging.check_numerics), the run-time check for
// NaN and Inf. Timestamp (tf.timestamp), the wall clock read when the op runs, is stateful for the same
// reason: it must run in program order and never fold into a constant while tracing.
#include "ember/ops/print.h"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string_view>

#include "ember/ops/families.h"
#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

constexpr char kTensorSlot = '\x1f';

// A float as TensorFlow writes it: with the type's guaranteed digits (6 for float, 15 for double) when they
// read back as the same value, else with the digits that always read back (9, 17): 0.1f is "0.1", 1/3.f is
// "0.333333343".
template <typename T>
std::string shortest_digits(T value) {
  constexpr bool kFloat = std::is_same_v<T, float>;
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.*g", kFloat ? 6 : 15, static_cast<double>(value));
  const T back = kFloat ? std::strtof(buffer, nullptr) : static_cast<T>(std::strtod(buffer, nullptr));
  if (back != value && value == value)
    std::snprintf(buffer, sizeof buffer, "%.*g", kFloat ? 9 : 17, static_cast<double>(value));
  return buffer;
}

constexpr std::string_view kFilePrefix = "file://";

bool is_file_stream(std::string_view stream) {
  return stream.size() > kFilePrefix.size() && stream.substr(0, kFilePrefix.size()) == kFilePrefix;
}

Status print_shape(InferContext& ctx) {
  const std::string& stream = ctx.attr_string(1);
  if (stream != "stderr" && stream != "stdout" && !is_file_stream(stream))
    return invalid_argument(
        "PrintV2: output_stream must be \"stderr\", \"stdout\" or \"file://<path>\", got \"", stream, "\"");
  return Status::OK();  // no outputs
}

// TensorFlow appends to the file on every print, so a log accumulates across calls and processes.
Status append_to_file(const std::string& path, const std::string& text) {
  FILE* file = std::fopen(path.c_str(), "a");
  if (file == nullptr)
    return invalid_argument("PrintV2: cannot open \"", path, "\" for appending: ", std::strerror(errno));
  size_t written = std::fwrite(text.data(), 1, text.size(), file);
  bool closed = std::fclose(file) == 0;
  if (written != text.size() || !closed)
    return invalid_argument("PrintV2: writing to \"", path, "\" failed: ", std::strerror(errno));
  return Status::OK();
}

Status print_kernel(KernelContext& ctx) {
  std::ostringstream os;
  size_t next = 0;
  for (char c : std::get<std::string>(ctx.attrs[0])) {
    if (c != kTensorSlot) {
      os << c;
      continue;
    }
    if (next >= ctx.inputs.size())
      return invalid_argument("PrintV2: the template has more slots than tensors");
    format_tensor(os, ctx.input(static_cast<int>(next++)), ctx.attr_int(3));
  }
  os << std::get<std::string>(ctx.attrs[2]);
  std::string text = os.str();
  const std::string& target = std::get<std::string>(ctx.attrs[1]);
  if (is_file_stream(target)) return append_to_file(target.substr(kFilePrefix.size()), text);
  FILE* stream = target == "stdout" ? stdout : stderr;
  std::fwrite(text.data(), 1, text.size(), stream);
  std::fflush(stream);
  return Status::OK();
}

// ---- Assert(condition, data..., template, summarize)

Status timestamp_shape(InferContext& ctx) {
  ctx.outputs.push_back(TensorSpec{DType::kFloat64, Shape()});
  return Status::OK();
}

// Seconds since the Unix epoch, to the microsecond, as TensorFlow's EnvTime reads them.
Status timestamp_kernel(KernelContext& ctx) {
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  ctx.output(0).mutable_data<double>()[0] = static_cast<double>(micros) / 1e6;
  return Status::OK();
}

Status assert_shape(InferContext& ctx) {
  const TensorSpec& condition = ctx.inputs[0];
  if (condition.dtype != DType::kBool)
    return invalid_argument("Assert: the condition must be a bool scalar, got ", dtype_name(condition.dtype));
  if (condition.shape.rank_known() && condition.shape.rank() != 0)
    return invalid_argument("Assert: the condition must be a scalar, got shape ",
                            condition.shape.to_string());
  return Status::OK();  // no outputs
}

// TensorFlow's text: "assertion failed: [message] [1 2 3]", each datum in brackets (a tensor of rank >= 1
// brings its own).
Status assert_kernel(KernelContext& ctx) {
  const TensorImpl& condition = ctx.input(0);
  if (condition.shape().rank() != 0)
    return invalid_argument("Assert: the condition must be a scalar, got shape ",
                            condition.shape().to_string());
  if (condition.data<bool>()[0]) return Status::OK();
  std::ostringstream os;
  os << "assertion failed: ";
  int next = 1;
  for (char c : ctx.attr_string(0)) {
    if (c != kTensorSlot) {
      os << c;
      continue;
    }
    if (next >= static_cast<int>(ctx.inputs.size()))
      return invalid_argument("Assert: the template has more slots than tensors");
    const TensorImpl& datum = ctx.input(next++);
    if (datum.shape().rank() == 0) os << "[";
    format_tensor(os, datum, ctx.attr_int(1), /*quote_strings=*/false);
    if (datum.shape().rank() == 0) os << "]";
  }
  return invalid_argument(os.str());
}

// ---- EnsureShape(input, shape, unknown_rank)

StatusOr<Shape> expected_shape(const AttrReader& attrs) {
  if (attrs.attr_bool(1)) return Shape::unknown_rank();
  auto shape = Shape::from_dims(attrs.attr_ints(0), /*allow_unknown=*/true);  // -1: any size
  if (!shape.ok()) return shape.status().with_prefix("EnsureShape: shape: ");
  return shape;
}

// The static shape after the op is what both shapes know (TensorFlow's shape function merges them), so a
// function traced with [None, None] continues with [None, 3] after ensure_shape(x, [None, 3]).
Status incompatible_shape(const Shape& got, const Shape& expected) {  // TensorFlow's run-time text
  return invalid_argument("Shape of tensor input ", got.to_string(),
                          " is not compatible with expected shape ", expected.to_string(), ".");
}

Status ensure_shape_shape(InferContext& ctx) {
  auto expected = expected_shape(ctx);
  if (!expected.ok()) return expected.status();
  const Shape& in = ctx.inputs[0].shape;
  // A concrete input (eager, or folded while tracing) fails as the kernel would.
  if (!ctx.constants.empty() && ctx.constants[0] != nullptr && !expected->is_compatible_with(in))
    return incompatible_shape(in, *expected);
  if (!in.rank_known() || !expected->rank_known()) {
    ctx.outputs.push_back({ctx.inputs[0].dtype, in.rank_known() ? in : *expected});
    return Status::OK();
  }
  if (in.rank() != expected->rank())
    return invalid_argument("EnsureShape: Shape must be rank ", expected->rank(), " but is rank ", in.rank(),
                            ": the input is ", in.to_string(), ", the expected shape ",
                            expected->to_string());
  std::vector<int64_t> merged = in.dim_vector();
  for (int i = 0; i < in.rank(); ++i) {
    int64_t want = expected->dim(i);
    if (want < 0) continue;
    if (merged[i] >= 0 && merged[i] != want)
      return invalid_argument("EnsureShape: Dimension ", i, " in both shapes must be equal, but are ", want,
                              " and ", merged[i], ". Shapes are ", expected->to_string(), " and ",
                              in.to_string(), ".");
    merged[i] = want;
  }
  auto shape = Shape::from_dims(merged, /*allow_unknown=*/true);
  if (!shape.ok()) return shape.status();
  ctx.outputs.push_back({ctx.inputs[0].dtype, *shape});
  return Status::OK();
}

Status ensure_shape_kernel(KernelContext& ctx) {
  auto expected = expected_shape(ctx);
  if (!expected.ok()) return expected.status();
  const TensorImpl& in = ctx.input(0);
  if (!expected->is_compatible_with(in.shape())) return incompatible_shape(in.shape(), *expected);
  ctx.outputs[0] = TensorImpl::view(in, in.shape());
  return Status::OK();
}

// EnsureShape and CheckNumerics pass the gradient through.
void pass_through_grad(GradContext& c) { c.set(0, c.grad()); }

// ---- CheckNumerics(tensor, message): the input, after checking it holds no NaN and no Inf; stateful, as
// TensorFlow's, so a function always runs it and never folds it away.

Status check_numerics_kernel(KernelContext& ctx) {
  const TensorImpl& in = ctx.input(0);
  bool nan = false, inf = false;
  visit_dtype<kFloatTypes>(in.dtype(), [&]<typename T>() {
    const T* p = in.data<T>();
    for (int64_t i = 0; i < in.num_elements() && !(nan && inf); ++i) {
      double v;
      if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
        v = static_cast<float>(p[i]);
      } else {
        v = p[i];
      }
      nan = nan || std::isnan(v);
      inf = inf || std::isinf(v);
    }
  });
  if (nan || inf)  // TensorFlow's message
    return invalid_argument(ctx.attr_string(0), " : Tensor had ",
                            inf && nan ? "Inf and NaN"
                            : nan      ? "NaN"
                                       : "Inf",
                            " values");
  ctx.outputs[0] = TensorImpl::view(in, in.shape());
  return Status::OK();
}

}  // namespace

// TensorFlow's summarized layout: "[1 2 3]", "[[1 2]\n [3 4]]", "[0 1 2 ... 7 8 9]".
void format_tensor(std::ostringstream& os, const TensorImpl& t, int64_t summarize, bool quote_strings) {
  const Shape& shape = t.shape();
  auto strides = contiguous_strides(shape);
  visit_dtype<kAllTypesAndString | kComplexTypes>(t.dtype(), [&]<typename T>() {
    const T* data = t.data<T>();
    auto elem = [&](int64_t i) {
      if constexpr (std::is_same_v<T, complex64> || std::is_same_v<T, complex128>)
        // Python's and NumPy's "(1.5-2j)". TensorFlow prints "?" for each complex element; the values are
        // more use (docs/complex.md).
        os << '(' << shortest_digits(data[i].real()) << (std::signbit(data[i].imag()) ? "" : "+")
           << shortest_digits(data[i].imag()) << "j)";
      else if constexpr (std::is_same_v<T, std::string>)
        os << (quote_strings ? "\"" : "") << data[i] << (quote_strings ? "\"" : "");  // tf.print's, Assert's
      else if constexpr (std::is_same_v<T, bool>)
        os << (data[i] ? 1 : 0);
      else if constexpr (sizeof(T) == 1)
        os << static_cast<int>(data[i]);
      else if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>)
        os << shortest_digits(static_cast<float>(data[i]));
      else if constexpr (std::is_floating_point_v<T>)
        os << shortest_digits(data[i]);
      else
        os << data[i];
    };
    auto rec = [&](auto&& self, int dim, int64_t offset) -> void {
      if (dim == shape.rank()) {
        elem(offset);
        return;
      }
      os << "[";
      int64_t n = shape.dim(dim);
      bool elide = summarize >= 0 && n - summarize > summarize;  // n > 2 * summarize, without overflow
      // As NumPy (and TensorFlow): blocks of rank k are separated by k - 1 blank lines; an elision is "..."
      // between two separators.
      const std::string separator =
          dim + 1 == shape.rank()
              ? std::string(" ")
              : std::string(static_cast<size_t>(shape.rank() - dim - 1), '\n') + std::string(dim + 1, ' ');
      if (elide && summarize == 0) {  // only the elision, after a separator, as TensorFlow: "[ ...]"
        os << separator << "...]";
        return;
      }
      for (int64_t i = 0; i < n; ++i) {
        if (elide && i == summarize) {
          os << "..." << separator;
          i = n - summarize;
        }
        self(self, dim + 1, offset + i * strides[dim]);
        if (i + 1 < n) os << separator;
      }
      os << "]";
    };
    if (t.num_elements() == 0 && shape.rank() > 1 && shape.dim(0) > 0) {
      // An empty tensor with rows prints as TensorFlow's: only the elision ("[\n ...]" for [2, 0]), never
      // one bracket pair per row (a [2^62, 0] tensor would never finish).
      os << "[" << std::string(static_cast<size_t>(shape.rank() - 1), '\n') << " ...]";
      return;
    }
    rec(rec, 0, 0);
  });
}

void register_print_ops(OpRegistry& r) {
  OpBuilder("EnsureShape")
      .doc(
          "The input, after checking at run time that its shape is compatible with `shape` (-1: any size); "
          "the static shape becomes what both know. ensure_shape([1, 2], [2]) == [1, 2]")
      .input("input")
      .output("output")
      .type_var(kAllTypesAndString | kComplexTypes)
      .attr("shape", AttrType::kInts)
      .attr("unknown_rank", AttrType::kBool, false)
      .flags(kKernelAllocates)
      .shape(&ensure_shape_shape)
      .kernel(kAllTypesAndString | kComplexTypes, &ensure_shape_kernel)
      .grad(&pass_through_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("CheckNumerics")
      .doc(
          "The input, after checking that it holds no NaN or Inf (else InvalidArgumentError with `message`). "
          "check_numerics([1., 2.], \"x\") == [1., 2.]")
      .input("tensor")
      .output("output")
      .type_var(kFloatTypes)
      .attr("message", AttrType::kString)
      .flags(kStateful | kKernelAllocates)
      .shape(&same_as_input_shape)
      .kernel(kFloatTypes, &check_numerics_kernel)
      .grad(&pass_through_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("PrintV2")
      .doc(
          "Prints tensors in a template to stderr, stdout or (\"file://<path>\") appended to a file, in "
          "program order. print(\"x:\", [1, 2]) -> x: "
          "[1 2]")
      .input_fixed("inputs", kAllTypesAndComplex)
      .type_var(kAllTypesAndComplex)
      .attr("template", AttrType::kString)
      .attr("output_stream", AttrType::kString, std::string("stderr"))
      .attr("end", AttrType::kString, std::string("\n"))
      .attr("summarize", AttrType::kInt, int64_t{3})
      .dispatch_on_output()  // it may have no inputs; the kernel handles every dtype itself
      .flags(kVariadicInput | kVariadicMayBeEmpty | kStateful | kNotDifferentiable)
      .shape(&print_shape)
      .kernel(kAllTypesAndComplex, &print_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("Timestamp")
      .doc("The time the op runs, in seconds since the Unix epoch (float64). Timestamp() -> 1.7e9")
      .output("ts")
      .type_var(dtype_bit(DType::kFloat64))
      .dispatch_on_output()
      .flags(kStateful | kNotDifferentiable)
      .shape(&timestamp_shape)
      .kernel(dtype_bit(DType::kFloat64), &timestamp_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("Assert")
      .doc(
          "Fails with InvalidArgumentError, printing the data, when the condition is false; nothing when it "
          "holds. Assert(x > 0, [\"x:\", x]) with x = -1 -> assertion failed: [x:] [-1]")
      .input_fixed("condition", dtype_bit(DType::kBool))
      .input_fixed("data", kAllTypesAndString | kComplexTypes)
      .type_var(kAllTypes)
      .attr("template", AttrType::kString)
      .attr("summarize", AttrType::kInt, int64_t{3})
      .dispatch_on_input(0)
      .flags(kVariadicInput | kVariadicMayBeEmpty | kStateful | kNotDifferentiable)
      .shape(&assert_shape)
      .kernel(dtype_bit(DType::kBool), &assert_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember
