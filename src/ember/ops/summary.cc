// ContextWriteSummary and ContextFlushSummary: tf.summary's ops, writing through the call-time context of
// ops/summary.h. Stateful, so they are never folded or pruned and keep program order with the other
// stateful ops of a function.
#include "ember/ops/summary.h"

#include <mutex>

#include "ember/core/resource.h"
#include "ember/ops/registry.h"

namespace ember {
namespace {

std::mutex g_mu;
std::shared_ptr<const SummaryContext> g_published;
thread_local std::shared_ptr<const SummaryContext> t_context;

// ContextWriteSummary(condition: bool, step: int64, tensor: T) -> written: bool
// attrs: tag, metadata, kind, param, sample_rate, payload
Status write_shape(InferContext& ctx) {
  if (ctx.inputs[0].dtype != DType::kBool)
    return invalid_argument("ContextWriteSummary: condition must be bool, got ",
                            dtype_name(ctx.inputs[0].dtype));
  if (ctx.inputs[1].dtype != DType::kInt64)
    return invalid_argument("ContextWriteSummary: step must be int64, got ", dtype_name(ctx.inputs[1].dtype));
  for (int i = 0; i < 2; ++i)
    if (ctx.inputs[i].shape.rank_known() && ctx.inputs[i].shape.rank() != 0)
      return invalid_argument("ContextWriteSummary: ", i == 0 ? "condition" : "step",
                              " must be a scalar, got shape ", ctx.inputs[i].shape.to_string());
  int64_t kind = ctx.attr_int(2);
  if (kind < SummaryRequest::kTensor || kind > SummaryRequest::kPayload)
    return invalid_argument("ContextWriteSummary: kind must be in [0, 4], got ", kind);
  ctx.outputs.push_back(TensorSpec{DType::kBool, Shape()});
  return Status::OK();
}

// metadata and payload are protobuf bytes; string attributes hold text (they print and export as such),
// so the bytes travel as hex.
StatusOr<std::string> from_hex(const std::string& hex, const char* what) {
  if (hex.size() % 2 != 0) return invalid_argument("ContextWriteSummary: ", what, " must be hex, odd length");
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out(hex.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) {
    int hi = digit(hex[2 * i]), lo = digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return invalid_argument("ContextWriteSummary: ", what, " must be hex");
    out[i] = static_cast<char>(hi * 16 + lo);
  }
  return out;
}

StatusOr<int64_t> resolve_step(int64_t given, const SummaryContext& context) {
  if (given != kSummaryStepFromContext) return given;
  if (context.step_variable != 0) {
    auto variable = ResourceManager::global().find(context.step_variable, "ContextWriteSummary");
    if (!variable.ok()) return variable.status();
    TensorRef value = (*variable)->read();
    if (value->num_elements() != 1 || (value->dtype() != DType::kInt64 && value->dtype() != DType::kInt32))
      return invalid_argument("ContextWriteSummary: the step variable must hold one integer, got ",
                              dtype_name(value->dtype()), " ", value->shape().to_string());
    return value->dtype() == DType::kInt64 ? value->data<int64_t>()[0]
                                           : static_cast<int64_t>(value->data<int32_t>()[0]);
  }
  if (context.has_step) return context.step;
  return invalid_argument(
      "No step set. Please specify one either through the `step` argument or through "
      "tf.summary.experimental.set_step()");
}

Status write_kernel(KernelContext& ctx) {
  bool& written = ctx.output(0).mutable_data<bool>()[0];
  written = false;
  if (ctx.input(0).shape().rank() != 0 || ctx.input(1).shape().rank() != 0)
    return invalid_argument("ContextWriteSummary: condition and step must be scalars");
  std::shared_ptr<const SummaryContext> context = current_summary_context();
  if (!context->writer) return Status::OK();
  if (context->record == SummaryContext::Record::kNever) return Status::OK();
  if (context->record == SummaryContext::Record::kDeferred && !ctx.input(0).data<bool>()[0])
    return Status::OK();
  StatusOr<int64_t> step = resolve_step(ctx.input(1).data<int64_t>()[0], *context);
  if (!step.ok()) return step.status();
  StatusOr<std::string> metadata = from_hex(ctx.attr_string(1), "metadata");
  if (!metadata.ok()) return metadata.status();
  StatusOr<std::string> payload = from_hex(ctx.attr_string(5), "payload");
  if (!payload.ok()) return payload.status();
  SummaryRequest request;
  request.step = *step;
  request.tensor = &ctx.input(2);
  request.tag = ctx.attr_string(0);
  request.metadata = *metadata;
  request.kind = ctx.attr_int(2);
  request.param = ctx.attr_int(3);
  request.sample_rate = ctx.attr_float(4);
  request.payload = *payload;
  EMBER_RETURN_IF_ERROR(context->writer->write_summary(request).with_prefix("ContextWriteSummary: "));
  written = true;
  return Status::OK();
}

Status flush_shape(InferContext& ctx) { return Status::OK(); }

Status flush_kernel(KernelContext& ctx) {
  std::shared_ptr<const SummaryContext> context = current_summary_context();
  if (!context->writer) return Status::OK();
  return context->writer->flush().with_prefix("ContextFlushSummary: ");
}

}  // namespace

void set_summary_context(std::shared_ptr<const SummaryContext> context) {
  if (!context) context = std::make_shared<const SummaryContext>();
  t_context = context;
  std::lock_guard<std::mutex> lock(g_mu);
  g_published = std::move(context);
}

std::shared_ptr<const SummaryContext> current_summary_context() {
  if (t_context) return t_context;
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_published) g_published = std::make_shared<const SummaryContext>();
  return g_published;
}

void register_summary_ops(OpRegistry& r) {
  OpBuilder("ContextWriteSummary")
      .doc(
          "Writes one summary to the default summary writer of the moment it runs (tf.summary.scalar and "
          "friends; docs/summary.md); returns whether it wrote. With no default writer -> False")
      .input_fixed("condition", dtype_bit(DType::kBool))
      .input_fixed("step", dtype_bit(DType::kInt64))
      .input("tensor")
      .type_var(kAllTypes)
      .output("written")
      .attr("tag", AttrType::kString)
      .attr("metadata", AttrType::kString, std::string())  // hex of a SummaryMetadata
      .attr("kind", AttrType::kInt, int64_t{0})
      .attr("param", AttrType::kInt, int64_t{0})
      .attr("sample_rate", AttrType::kFloat, 0.0)
      .attr("payload", AttrType::kString, std::string())  // hex of a TensorProto (kPayload)
      .dispatch_on_input(2)
      .flags(kStateful | kNotDifferentiable)
      .shape(&write_shape)
      .kernel(kAllTypes, &write_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("ContextFlushSummary")
      .doc(
          "Flushes the default summary writer of the moment it runs (tf.summary.flush). "
          "ContextFlushSummary()")
      .type_var(kAllTypes)
      .dispatch_on_output()  // no inputs; the kernel handles every dtype itself
      .flags(kStateful | kNotDifferentiable)
      .shape(&flush_shape)
      .kernel(kAllTypes, &flush_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember
