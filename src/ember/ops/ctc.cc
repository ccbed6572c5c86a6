// CTC ops: TensorFlow's CTCLoss, CTCGreedyDecoder and CTCBeamSearchDecoder, and CTCLossDense, the loss
// TensorFlow 2's tf.nn.ctc_loss computes for dense labels (Note [TensorFlow 2's dense CTC] in
// kernels/ctc.cc). Kernels: kernels/ctc.h. Python: python/ember/ops/ctc_ops.py.
#include "ember/kernels/ctc.h"

#include <algorithm>
#include <string>

#include "ember/ops/families.h"
#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

constexpr DTypeSet kCtcTypes = dtype_bit(DType::kFloat32) | dtype_bit(DType::kFloat64);

Status check_rank(const OpDef* op, const char* what, const Shape& s, int rank) {
  if (s.rank_known() && s.rank() != rank)
    return invalid_argument(op->name, ": ", what, " must have rank ", rank, ", got shape ", s.to_string());
  return Status::OK();
}

/// Merges two dims that must agree (TensorFlow's InferenceContext::Merge).
Status merge_dim(const OpDef* op, const char* what, int64_t a, int64_t b, int64_t* out) {
  if (a >= 0 && b >= 0 && a != b) return invalid_argument(op->name, ": ", what, " differ: ", a, " vs. ", b);
  *out = a >= 0 ? a : b;
  return Status::OK();
}

int64_t dim_or_unknown(const Shape& s, int i) { return s.rank_known() ? s.dim(i) : kUnknownDim; }

kernels::CtcDims dims_of(const TensorImpl& logits) {
  return {logits.shape().dim(0), logits.shape().dim(1), logits.shape().dim(2)};
}

// ---- CTCLoss(inputs [max_time, batch, classes], labels_indices [n, 2] int64, labels_values [n] int32,
//      sequence_length [batch] int32) -> loss [batch], gradient [max_time, batch, classes]

Status ctc_loss_shape(InferContext& ctx) {
  const Shape &in = ctx.inputs[0].shape, &ix = ctx.inputs[1].shape, &vals = ctx.inputs[2].shape,
              &len = ctx.inputs[3].shape;
  EMBER_RETURN_IF_ERROR(check_rank(ctx.op, "inputs", in, 3));
  EMBER_RETURN_IF_ERROR(check_rank(ctx.op, "labels_indices", ix, 2));
  EMBER_RETURN_IF_ERROR(check_rank(ctx.op, "labels_values", vals, 1));
  EMBER_RETURN_IF_ERROR(check_rank(ctx.op, "sequence_length", len, 1));
  int64_t unused, batch;
  EMBER_RETURN_IF_ERROR(merge_dim(ctx.op, "the rows of labels_indices and labels_values",
                                  dim_or_unknown(ix, 0), dim_or_unknown(vals, 0), &unused));
  EMBER_RETURN_IF_ERROR(merge_dim(ctx.op, "the batch sizes of inputs and sequence_length",
                                  dim_or_unknown(in, 1), dim_or_unknown(len, 0), &batch));
  const DType dtype = ctx.inputs[0].dtype;
  ctx.outputs.push_back(TensorSpec{dtype, Shape{batch}});
  ctx.outputs.push_back(TensorSpec{
      dtype, in.rank_known() ? Shape{in.dim(0), batch, in.dim(2)} : Shape{kUnknownDim, batch, kUnknownDim}});
  return Status::OK();
}

// The label sequence of each batch row from a SparseTensor [batch, max_label] whose indices must be in
// row-major order, as TensorFlow's SparseTensor::IndicesValid requires.
Status sparse_labels(const TensorImpl& indices, const TensorImpl& values, int64_t batch,
                     std::vector<std::vector<int>>* labels) {
  const int64_t n = indices.shape().dim(0);
  if (indices.shape().dim(1) != 2)
    return invalid_argument("CTCLoss: labels_indices must have 2 columns ([batch, time]), got shape ",
                            indices.shape().to_string());
  const int64_t* ix = indices.data<int64_t>();
  const int32_t* v = values.data<int32_t>();
  int64_t max_label = 0;
  for (int64_t i = 0; i < n; ++i) max_label = std::max(max_label, ix[2 * i + 1] + 1);
  labels->assign(static_cast<size_t>(batch), {});
  for (int64_t i = 0; i < n; ++i) {
    const int64_t b = ix[2 * i], t = ix[2 * i + 1];
    if (b < 0 || b >= batch || t < 0)
      return invalid_argument("CTCLoss: label SparseTensor is not valid: indices[", i, "] = [", b, ",", t,
                              "] is out of bounds: need 0 <= index < [", batch, ",", max_label, "]");
    if (i > 0) {
      const int64_t pb = ix[2 * i - 2], pt = ix[2 * i - 1];
      if (b < pb || (b == pb && t < pt))
        return invalid_argument("CTCLoss: label SparseTensor is not valid: indices[", i, "] = [", b, ",", t,
                                "] is out of order");
      if (b == pb && t == pt)
        return invalid_argument("CTCLoss: label SparseTensor is not valid: indices[", i, "] = [", b, ",", t,
                                "] is repeated");
    }
    (*labels)[static_cast<size_t>(b)].push_back(v[i]);
  }
  return Status::OK();
}

template <typename T>
Status ctc_loss_typed(KernelContext& ctx) {
  const TensorImpl &in = ctx.input(0), &ix = ctx.input(1), &vals = ctx.input(2), &len = ctx.input(3);
  if (in.rank() != 3)
    return invalid_argument("CTCLoss: inputs is not a 3-Tensor, got shape ", in.shape().to_string());
  if (len.rank() != 1)
    return invalid_argument("CTCLoss: sequence_length is not a vector, got shape ", len.shape().to_string());
  if (ix.rank() != 2)
    return invalid_argument("CTCLoss: labels_indices is not a matrix, got shape ", ix.shape().to_string());
  if (vals.rank() != 1)
    return invalid_argument("CTCLoss: labels_values is not a vector, got shape ", vals.shape().to_string());
  const kernels::CtcDims d = dims_of(in);
  if (d.batch != len.shape().dim(0))
    return invalid_argument("CTCLoss: len(sequence_length) != batch_size.  len(sequence_length):  ",
                            len.shape().dim(0), " batch_size: ", d.batch);
  if (ix.shape().dim(0) != vals.shape().dim(0))
    return invalid_argument(
        "CTCLoss: labels_indices and labels_values must contain the same number of rows, but "
        "saw shapes: ",
        ix.shape().to_string(), " vs. ", vals.shape().to_string());
  if (d.batch == 0) return invalid_argument("CTCLoss: batch_size must not be 0");
  std::vector<std::vector<int>> labels;
  EMBER_RETURN_IF_ERROR(sparse_labels(ix, vals, d.batch, &labels));
  const int32_t* seq_len = len.data<int32_t>();
  for (int64_t b = 0; b < d.batch; ++b)
    if (!(seq_len[b] <= d.max_time))
      return invalid_argument("CTCLoss: sequence_length(", b, ") <= ", d.max_time,
                              " (max_time) is false: got ", seq_len[b]);
  return kernels::ctc_loss<T>(in.data<T>(), d, seq_len, labels, ctx.attr_bool(0), ctx.attr_bool(1),
                              ctx.attr_bool(2), ctx.output(0).mutable_data<T>(),
                              ctx.output(1).mutable_data<T>());
}

Status ctc_loss_kernel(KernelContext& ctx) {
  return ctx.input(0).dtype() == DType::kFloat64 ? ctc_loss_typed<double>(ctx) : ctc_loss_typed<float>(ctx);
}

// ---- CTCLossDense(logits [max_time, batch, classes], labels [batch, max_label], label_length [batch],
//      logit_length [batch]; blank_index) -> loss [batch], gradient [max_time, batch, classes]

Status ctc_loss_dense_shape(InferContext& ctx) {
  const Shape &in = ctx.inputs[0].shape, &labels = ctx.inputs[1].shape;
  EMBER_RETURN_IF_ERROR(check_rank(ctx.op, "logits", in, 3));
  EMBER_RETURN_IF_ERROR(check_rank(ctx.op, "labels", labels, 2));
  EMBER_RETURN_IF_ERROR(check_rank(ctx.op, "label_length", ctx.inputs[2].shape, 1));
  EMBER_RETURN_IF_ERROR(check_rank(ctx.op, "logit_length", ctx.inputs[3].shape, 1));
  int64_t batch;
  EMBER_RETURN_IF_ERROR(merge_dim(ctx.op, "the batch sizes of logits and labels", dim_or_unknown(in, 1),
                                  dim_or_unknown(labels, 0), &batch));
  EMBER_RETURN_IF_ERROR(merge_dim(ctx.op, "the batch sizes of logits and label_length", batch,
                                  dim_or_unknown(ctx.inputs[2].shape, 0), &batch));
  EMBER_RETURN_IF_ERROR(merge_dim(ctx.op, "the batch sizes of logits and logit_length", batch,
                                  dim_or_unknown(ctx.inputs[3].shape, 0), &batch));
  const int64_t classes = dim_or_unknown(in, 2);
  if (classes >= 0) {
    const int64_t blank = ctx.attr_int(0);
    if (blank < 0 || blank >= classes)
      return invalid_argument(ctx.op->name, ": blank_index must be in [0, ", classes, "), got ", blank);
  }
  const DType dtype = ctx.inputs[0].dtype;
  ctx.outputs.push_back(TensorSpec{dtype, Shape{batch}});
  ctx.outputs.push_back(TensorSpec{dtype, Shape{dim_or_unknown(in, 0), batch, classes}});
  return Status::OK();
}

std::vector<int64_t> as_int64(const TensorImpl& t) {
  std::vector<int64_t> out(static_cast<size_t>(t.num_elements()));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = t.dtype() == DType::kInt64 ? t.data<int64_t>()[i] : t.data<int32_t>()[i];
  return out;
}

template <typename T>
Status ctc_loss_dense_typed(KernelContext& ctx) {
  const TensorImpl &in = ctx.input(0), &labels = ctx.input(1);
  const kernels::CtcDims d = dims_of(in);
  for (int i = 1; i < 4; ++i)
    if (ctx.input(i).shape().dim(0) != d.batch)
      return invalid_argument("CTCLossDense: ", ctx.op->inputs[i].name, " has ", ctx.input(i).shape().dim(0),
                              " rows but the logits' batch size is ", d.batch);
  const int64_t blank = ctx.attr_int(0);
  if (blank < 0 || blank >= d.classes)
    return invalid_argument("CTCLossDense: blank_index must be in [0, ", d.classes, "), got ", blank);
  const std::vector<int64_t> lab = as_int64(labels), label_length = as_int64(ctx.input(2)),
                             logit_length = as_int64(ctx.input(3));
  kernels::ctc_loss_dense<T>(in.data<T>(), d, lab.data(), labels.shape().dim(1), label_length.data(),
                             logit_length.data(), blank, ctx.output(0).mutable_data<T>(),
                             ctx.output(1).mutable_data<T>());
  return Status::OK();
}

Status ctc_loss_dense_kernel(KernelContext& ctx) {
  return ctx.input(0).dtype() == DType::kFloat64 ? ctc_loss_dense_typed<double>(ctx)
                                                 : ctc_loss_dense_typed<float>(ctx);
}

// ---- The decoders: (inputs [max_time, batch, classes], sequence_length [batch] int32) -> per path
//      decoded_indices [n, 2], decoded_values [n], decoded_shape [2] (int64), then log_probability.

Status decoder_shape(InferContext& ctx, int paths) {
  const Shape &in = ctx.inputs[0].shape, &len = ctx.inputs[1].shape;
  EMBER_RETURN_IF_ERROR(check_rank(ctx.op, "inputs", in, 3));
  EMBER_RETURN_IF_ERROR(check_rank(ctx.op, "sequence_length", len, 1));
  int64_t batch;
  EMBER_RETURN_IF_ERROR(merge_dim(ctx.op, "the batch sizes of inputs and sequence_length",
                                  dim_or_unknown(in, 1), dim_or_unknown(len, 0), &batch));
  for (int p = 0; p < paths; ++p) ctx.outputs.push_back(TensorSpec{DType::kInt64, Shape{kUnknownDim, 2}});
  for (int p = 0; p < paths; ++p) ctx.outputs.push_back(TensorSpec{DType::kInt64, Shape{kUnknownDim}});
  for (int p = 0; p < paths; ++p) ctx.outputs.push_back(TensorSpec{DType::kInt64, Shape{2}});
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, Shape{batch, paths}});
  return Status::OK();
}

Status greedy_shape(InferContext& ctx) { return decoder_shape(ctx, 1); }

Status beam_shape(InferContext& ctx) {
  if (ctx.attr_int(0) < 1)
    return invalid_argument(ctx.op->name, ": beam_width must be >= 1, got ", ctx.attr_int(0));
  if (ctx.attr_int(1) < 1)
    return invalid_argument(ctx.op->name, ": top_paths must be >= 1, got ", ctx.attr_int(1));
  return decoder_shape(ctx, static_cast<int>(ctx.attr_int(1)));
}

// TensorFlow's CTCDecodeHelper checks; FailedPrecondition where TensorFlow raises it.
Status check_decoder_inputs(const KernelContext& ctx, kernels::CtcDims* d) {
  const TensorImpl &in = ctx.input(0), &len = ctx.input(1);
  const std::string& op = ctx.op->name;
  if (in.rank() != 3)
    return invalid_argument(op, ": inputs is not a 3-Tensor, got shape ", in.shape().to_string());
  if (in.num_elements() == 0)
    return invalid_argument(op, ": inputs must not be empty, got shape ", in.shape().to_string());
  *d = dims_of(in);
  if (len.rank() != 1)
    return invalid_argument(op, ": sequence_length is not a vector, got shape ", len.shape().to_string());
  if (len.shape().dim(0) != d->batch)
    return make_error(Code::kFailedPrecondition, op,
                      ": len(sequence_length) != batch_size.  len(sequence_length):  ", len.shape().dim(0),
                      " batch_size: ", d->batch);
  for (int64_t b = 0; b < d->batch; ++b)
    if (!(len.data<int32_t>()[b] <= d->max_time))
      return make_error(Code::kFailedPrecondition, op, ": sequence_length(", b, ") <= ", d->max_time,
                        " (max_time) is false: got ", len.data<int32_t>()[b]);
  return Status::OK();
}

// Writes path p of every row as a SparseTensor [batch, longest] into outputs p, paths + p, 2 * paths + p.
Status store_paths(KernelContext& ctx, const kernels::CtcPaths& paths, int top_paths) {
  const int64_t batch = static_cast<int64_t>(paths.size());
  for (int p = 0; p < top_paths; ++p) {
    int64_t n = 0, longest = 0;
    for (const auto& row : paths) {
      n += static_cast<int64_t>(row[p].size());
      longest = std::max(longest, static_cast<int64_t>(row[p].size()));
    }
    EMBER_RETURN_IF_ERROR(allocate_output(ctx, p, DType::kInt64, Shape{n, 2}));
    EMBER_RETURN_IF_ERROR(allocate_output(ctx, top_paths + p, DType::kInt64, Shape{n}));
    EMBER_RETURN_IF_ERROR(allocate_output(ctx, 2 * top_paths + p, DType::kInt64, Shape{2}));
    int64_t* ix = ctx.output(p).mutable_data<int64_t>();
    int64_t* vals = ctx.output(top_paths + p).mutable_data<int64_t>();
    int64_t k = 0;
    for (int64_t b = 0; b < batch; ++b) {
      const std::vector<int>& seq = paths[static_cast<size_t>(b)][p];
      for (size_t t = 0; t < seq.size(); ++t, ++k) {
        ix[2 * k] = b;
        ix[2 * k + 1] = static_cast<int64_t>(t);
        vals[k] = seq[t];
      }
    }
    int64_t* shape = ctx.output(2 * top_paths + p).mutable_data<int64_t>();
    shape[0] = batch;
    shape[1] = longest;
  }
  return Status::OK();
}

template <typename T>
Status greedy_typed(KernelContext& ctx) {
  kernels::CtcDims d;
  EMBER_RETURN_IF_ERROR(check_decoder_inputs(ctx, &d));
  const int64_t attr_blank = ctx.attr_int(1);
  const int64_t blank = attr_blank < 0 ? d.classes + attr_blank : attr_blank;
  if (blank < 0 || blank >= d.classes)
    return invalid_argument("CTCGreedyDecoder: blank_index expected to be between ", -d.classes, " and ",
                            d.classes - 1, " but was ", attr_blank);
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 3, ctx.input(0).dtype(), Shape{d.batch, 1}));
  kernels::CtcPaths paths;
  kernels::ctc_greedy_decode<T>(ctx.input(0).data<T>(), d, ctx.input(1).data<int32_t>(), ctx.attr_bool(0),
                                static_cast<int>(blank), &paths, ctx.output(3).mutable_data<T>());
  return store_paths(ctx, paths, 1);
}

Status greedy_kernel(KernelContext& ctx) {
  return ctx.input(0).dtype() == DType::kFloat64 ? greedy_typed<double>(ctx) : greedy_typed<float>(ctx);
}

template <typename T>
Status beam_typed(KernelContext& ctx) {
  kernels::CtcDims d;
  EMBER_RETURN_IF_ERROR(check_decoder_inputs(ctx, &d));
  const int top_paths = static_cast<int>(ctx.attr_int(1));
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 3 * top_paths, ctx.input(0).dtype(), Shape{d.batch, top_paths}));
  kernels::CtcPaths paths;
  EMBER_RETURN_IF_ERROR(kernels::ctc_beam_search_decode<T>(
      ctx.input(0).data<T>(), d, ctx.input(1).data<int32_t>(), static_cast<int>(ctx.attr_int(0)), top_paths,
      ctx.attr_bool(2), &paths, ctx.output(3 * top_paths).mutable_data<T>()));
  return store_paths(ctx, paths, top_paths);
}

Status beam_kernel(KernelContext& ctx) {
  return ctx.input(0).dtype() == DType::kFloat64 ? beam_typed<double>(ctx) : beam_typed<float>(ctx);
}

// ---- Gradient

using namespace gradient;  // NOLINT(google-build-using-namespace): rules read as math

// d loss[b] / d logits[:, b, :] is the kernel's gradient output: scale it by the incoming gradient per
// row. As TensorFlow's rule, it ignores a gradient arriving at the gradient output and wraps that output in
// PreventGradient, so a second derivative through the loss raises instead of silently giving zeros.
void ctc_loss_grad(GradContext& c) {
  AttrList attrs;
  attrs.push_back(std::string(
      "Currently there is no way to take the second derivative of ctc_loss due to the fused implementation's "
      "interaction with tf.gradients()"));
  c.set(0, expand_dims(c.grad(0), -1) * emit1("PreventGradient", {c.output(1)}, std::move(attrs)));
}

}  // namespace

void register_ctc_ops(OpRegistry& r) {
  OpBuilder("CTCLoss")
      .doc(
          "CTC loss -log p(labels | inputs) per batch row and its gradient w.r.t. the time-major logits; "
          "labels are a SparseTensor's indices and values, the blank is the last class. inputs=zeros([1, 1, "
          "2]), labels_indices=[[0, 0]], labels_values=[0], sequence_length=[1] -> loss [0.6931472]")
      .input("inputs")
      .input_fixed("labels_indices", dtype_bit(DType::kInt64))
      .input_fixed("labels_values", dtype_bit(DType::kInt32))
      .input_fixed("sequence_length", dtype_bit(DType::kInt32))
      .output("loss")
      .output("gradient")
      .type_var(kCtcTypes)
      .attr("preprocess_collapse_repeated", AttrType::kBool, false)
      .attr("ctc_merge_repeated", AttrType::kBool, true)
      .attr("ignore_longer_outputs_than_inputs", AttrType::kBool, false)
      .shape(&ctc_loss_shape)
      .kernel(kCtcTypes, &ctc_loss_kernel)
      .grad(&ctc_loss_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("CTCLossDense")
      .doc(
          "tf.nn.ctc_loss's loss for dense labels [batch, max_label] (TensorFlow 2 computes it with an HMM "
          "in "
          "TensorFlow ops, not CTCLoss) and its gradient; any blank class. logits=zeros([1, 1, 2]), "
          "labels=[[1]], "
          "label_length=[1], logit_length=[1], blank_index=0 -> loss [0.6931472]")
      .input("logits")
      .input_fixed("labels", kIndexTypes)
      .input_fixed("label_length", kIndexTypes)
      .input_fixed("logit_length", kIndexTypes)
      .output("loss")
      .output("gradient")
      .type_var(kCtcTypes)
      .attr("blank_index", AttrType::kInt, int64_t{0})
      .shape(&ctc_loss_dense_shape)
      .kernel(kCtcTypes, &ctc_loss_dense_kernel)
      .grad(&ctc_loss_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("CTCGreedyDecoder")
      .doc(
          "Best-path CTC decoding of time-major logits: the arg-max class per frame, repeats merged when "
          "merge_repeated, blanks (blank_index, default the last class) dropped; a SparseTensor and -sum(max "
          "logit) per row. inputs=[[[0., 1., 0.]], [[2., 0., 0.]]], sequence_length=[2] -> values [1, 0]")
      .input("inputs")
      .input_fixed("sequence_length", dtype_bit(DType::kInt32))
      .output("decoded_indices")
      .output("decoded_values")
      .output("decoded_shape")
      .output("log_probability")
      .type_var(kCtcTypes)
      .attr("merge_repeated", AttrType::kBool, false)
      .attr("blank_index", AttrType::kInt, int64_t{-1})
      .flags(kNotDifferentiable | kKernelAllocates)
      .shape(&greedy_shape)
      .kernel(kCtcTypes, &greedy_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("CTCBeamSearchDecoder")
      .doc(
          "Beam-search CTC decoding of time-major logits (blank = last class): top_paths SparseTensors of "
          "label "
          "sequences and their log probabilities [batch, top_paths]. inputs=[[[0., 2., 0.]]], "
          "sequence_length=[1], beam_width=2, top_paths=1 -> values [1]")
      .input("inputs")
      .input_fixed("sequence_length", dtype_bit(DType::kInt32))
      .output("decoded_indices")
      .output("decoded_values")
      .output("decoded_shape")
      .output("log_probability")
      .type_var(kCtcTypes)
      .attr("beam_width", AttrType::kInt)
      .attr("top_paths", AttrType::kInt)
      .attr("merge_repeated", AttrType::kBool, true)
      .flags(kNotDifferentiable | kKernelAllocates)
      .shape(&beam_shape)
      .kernel(kCtcTypes, &beam_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember
