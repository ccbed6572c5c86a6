// Convolution ops with TensorFlow's names, operands and attributes: Conv2D, Conv3D and
// DepthwiseConv2dNative, each with its two backprop ops (the gradients are ops, so a GraphDef of a training
// step matches TensorFlow's). Kernels: kernels/conv.h (oneDNN for float32).
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ember/kernels/conv.h"
#include "ember/ops/families.h"
#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

// The three ops of one convolution: forward, gradient w.r.t. the input, gradient w.r.t. the filter. They
// declare the same attributes in the same order, so a gradient rule passes its op's attributes on.
struct ConvFamily {
  const char* forward;
  const char* backprop_input;
  const char* backprop_filter;
  int nd;
  bool depthwise;
};

constexpr ConvFamily kConv2D{"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", 2, false};
constexpr ConvFamily kConv3D{"Conv3D", "Conv3DBackpropInputV2", "Conv3DBackpropFilterV2", 3, false};
constexpr ConvFamily kDepthwise{"DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput",
                                "DepthwiseConv2dNativeBackpropFilter", 2, true};

const ConvFamily& family_of(const OpDef* op) {
  for (const ConvFamily* f : {&kConv2D, &kConv3D, &kDepthwise})
    if (op->name == f->forward || op->name == f->backprop_input || op->name == f->backprop_filter) return *f;
  // The fused ops, the only others of this file.
  if (op->name == "_FusedDepthwiseConv2dNative") return kDepthwise;
  return op->name == "_FusedConv3D" ? kConv3D : kConv2D;
}

std::string ints_text(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

/// The attributes of a convolution, validated: what does not depend on the operands' shapes.
struct ConvAttrs {
  int nd = 2;
  bool channels_last = true;
  std::string padding;
  std::vector<int64_t> strides, dilations, explicit_paddings;  // full length (nd + 2; 2 * (nd + 2))
  int channel_dim = 0;                                         // in the activation's dims
  int spatial_dim(int i) const { return channels_last ? 1 + i : 2 + i; }
};

Status read_attrs(const OpDef* op, const AttrReader& a, ConvAttrs* out) {
  const ConvFamily& f = family_of(op);
  const std::string& name = op->name;
  ConvAttrs c;
  c.nd = f.nd;
  const std::string& format = a.attr_string(op->attr_index("data_format"));
  const std::string last = f.nd == 2 ? "NHWC" : "NDHWC", first = f.nd == 2 ? "NCHW" : "NCDHW";
  if (format != last && format != first)
    return invalid_argument(name, ": data_format must be \"", last, "\" or \"", first, "\", got \"", format,
                            "\"");
  c.channels_last = format == last;
  c.channel_dim = c.channels_last ? f.nd + 1 : 1;
  c.padding = a.attr_string(op->attr_index("padding"));
  const int explicit_index = op->attr_index("explicit_paddings");
  if (c.padding != "SAME" && c.padding != "VALID" && !(c.padding == "EXPLICIT" && explicit_index >= 0))
    return invalid_argument(
        name, ": padding must be ",
        explicit_index >= 0 ? "\"SAME\", \"VALID\" or \"EXPLICIT\"" : "\"SAME\" or \"VALID\"", ", got \"",
        c.padding, "\"");
  const int rank = f.nd + 2;
  for (const char* attr : {"strides", "dilations"}) {
    const std::vector<int64_t>& v = a.attr_ints(op->attr_index(attr));
    if (static_cast<int>(v.size()) != rank)
      return invalid_argument(name, ": ", attr, " must have ", rank,
                              " elements (one per dimension of the input), got ", ints_text(v));
    for (int64_t s : v)
      if (s < 1) return invalid_argument(name, ": ", attr, " must all be >= 1, got ", ints_text(v));
    if (v[0] != 1 || v[c.channel_dim] != 1)
      return invalid_argument(name, ": ", attr, " in the batch and channel dimensions must be 1, got ",
                              ints_text(v), " (data_format ", format, ")");
    (attr[0] == 's' ? c.strides : c.dilations) = v;
  }
  if (explicit_index >= 0) c.explicit_paddings = a.attr_ints(explicit_index);
  if (c.padding == "EXPLICIT") {
    const std::vector<int64_t>& p = c.explicit_paddings;
    if (static_cast<int>(p.size()) != 2 * rank)
      return invalid_argument(
          name, ": explicit_paddings must have ", 2 * rank,
          " elements (a before and an after per input dimension) with padding \"EXPLICIT\", got ",
          ints_text(p));
    for (int64_t v : p)
      if (v < 0) return invalid_argument(name, ": explicit_paddings must be >= 0, got ", ints_text(p));
    if (p[0] || p[1] || p[2 * c.channel_dim] || p[2 * c.channel_dim + 1])
      return invalid_argument(name, ": explicit_paddings in the batch and channel dimensions must be 0, got ",
                              ints_text(p));
  } else if (!c.explicit_paddings.empty()) {
    return invalid_argument(name, ": explicit_paddings must be empty unless padding is \"EXPLICIT\", got ",
                            ints_text(c.explicit_paddings));
  }
  *out = std::move(c);
  return Status::OK();
}

/// The geometry of a convolution of `input` by `filter` (dims may be unknown, kUnknownDim, while
/// tracing: the results derived from them are unknown too) and the output's shape.
Status geometry(const OpDef* op, const ConvAttrs& c, const Shape& input, const Shape& filter,
                kernels::ConvGeometry* g, Shape* output) {
  const ConvFamily& f = family_of(op);
  const std::string& name = op->name;
  const int rank = c.nd + 2;
  if (input.rank() != rank)
    return invalid_argument(name, ": input must be ", rank, "-D (",
                            c.channels_last ? "channels last" : "channels first", "), got shape ",
                            input.to_string());
  if (filter.rank() != rank)
    return invalid_argument(name, ": filter must be ", rank, "-D [",
                            c.nd == 2 ? "height, width" : "depth, height, width", ", in_channels, ",
                            f.depthwise ? "channel_multiplier" : "out_channels", "], got shape ",
                            filter.to_string());
  g->nd = c.nd;
  g->channels_last = c.channels_last;
  g->batch = input.dim(0);
  g->in_channels = input.dim(c.channel_dim);
  const int64_t filter_in = filter.dim(c.nd), filter_out = filter.dim(c.nd + 1);
  if (f.depthwise) {
    if (g->in_channels >= 0 && filter_in >= 0 && g->in_channels != filter_in)
      return invalid_argument(name, ": filter's in_channels (dimension ", c.nd, ", ", filter_in,
                              ") must equal the input's channels (", g->in_channels, "); input is ",
                              input.to_string(), ", filter is ", filter.to_string());
    if (g->in_channels < 0) g->in_channels = filter_in;
    g->groups = g->in_channels;
    g->out_channels = g->in_channels >= 0 && filter_out >= 0 ? g->in_channels * filter_out : kUnknownDim;
  } else {
    g->out_channels = filter_out;
    g->groups = 1;
    if (g->in_channels >= 0 && filter_in >= 0) {
      if (filter_in == 0 || g->in_channels == 0 || g->in_channels % filter_in != 0)
        return invalid_argument(name, ": the input's channels (", g->in_channels,
                                ") must be a positive multiple of the filter's in_channels (dimension ", c.nd,
                                ", ", filter_in, "); input is ", input.to_string(), ", filter is ",
                                filter.to_string());
      g->groups = g->in_channels / filter_in;
      if (filter_out >= 0 && filter_out % g->groups != 0)
        return invalid_argument(name, ": the filter's out_channels (", filter_out,
                                ") must be a multiple of the number of groups (", g->groups, "); input is ",
                                input.to_string(), ", filter is ", filter.to_string());
    }
  }
  Shape out;
  out.push_back(g->batch);
  if (!c.channels_last) out.push_back(g->out_channels);
  for (int i = 0; i < c.nd; ++i) {
    const int64_t in = input.dim(c.spatial_dim(i)), k = filter.dim(i);
    const int64_t s = c.strides[c.spatial_dim(i)], d = c.dilations[c.spatial_dim(i)];
    g->in[i] = in, g->kernel[i] = k, g->stride[i] = s, g->dilation[i] = d;
    int64_t o = kUnknownDim;
    if (in >= 0 && k >= 0) {
      const int64_t effective = (k - 1) * d + 1;
      if (c.padding == "VALID") {
        o = (in - effective + s) / s;
        g->pad_before[i] = g->pad_after[i] = 0;
      } else if (c.padding == "SAME") {
        o = (in + s - 1) / s;
        const int64_t total = std::max<int64_t>(0, (o - 1) * s + effective - in);
        g->pad_before[i] = total / 2, g->pad_after[i] = total - total / 2;
      } else {
        const int64_t before = c.explicit_paddings[2 * c.spatial_dim(i)];
        const int64_t after = c.explicit_paddings[2 * c.spatial_dim(i) + 1];
        o = (in + before + after - effective + s) / s;
        g->pad_before[i] = before, g->pad_after[i] = after;
      }
      if (o < 0)
        return invalid_argument(name, ": the output would have a negative size along spatial dimension ", i,
                                " (input size ", in, ", effective filter size ", effective, " = (", k,
                                " - 1) * dilation ", d, " + 1, stride ", s, ", padding ", c.padding,
                                "); input is ", input.to_string(), ", filter is ", filter.to_string());
    }
    g->out[i] = o;
    out.push_back(o);
  }
  if (c.channels_last) out.push_back(g->out_channels);
  *output = out;
  return Status::OK();
}

Shape with_rank(const Shape& s, int rank) {
  if (s.rank_known()) return s;
  Shape out;
  for (int i = 0; i < rank; ++i) out.push_back(kUnknownDim);
  return out;
}

bool merge_into(const Shape& a, Shape* b) {  // fills b's unknown dims from a; false if they conflict
  if (!a.rank_known()) return true;
  if (!b->rank_known()) return *b = a, true;
  if (a.rank() != b->rank()) return false;
  for (int i = 0; i < a.rank(); ++i) {
    if (b->dim(i) < 0)
      b->set_dim(i, a.dim(i));
    else if (a.dim(i) >= 0 && a.dim(i) != b->dim(i))
      return false;
  }
  return true;
}

// ---- Forward: (input, filter) -> output.

Status forward_shape(InferContext& ctx) {
  ConvAttrs c;
  EMBER_RETURN_IF_ERROR(read_attrs(ctx.op, ctx, &c));
  kernels::ConvGeometry g;
  Shape out;
  EMBER_RETURN_IF_ERROR(geometry(ctx.op, c, with_rank(ctx.inputs[0].shape, c.nd + 2),
                                 with_rank(ctx.inputs[1].shape, c.nd + 2), &g, &out));
  ctx.outputs.push_back(TensorSpec{ctx.inputs[0].dtype, out});
  return Status::OK();
}

Status forward_kernel(KernelContext& ctx) {
  ConvAttrs c;
  EMBER_RETURN_IF_ERROR(read_attrs(ctx.op, ctx, &c));
  kernels::ConvGeometry g;
  Shape out;
  EMBER_RETURN_IF_ERROR(geometry(ctx.op, c, ctx.input(0).shape(), ctx.input(1).shape(), &g, &out));
  return kernels::conv_forward(g, ctx.input(0), ctx.input(1), ctx.output(0));
}

// ---- _FusedConv2D(input, filter, args): activation(Conv2D(input, filter) + args[0] [+ args[1]]), args the
// bias and optionally a residual of the output's shape; written by the optimizer's conv fusion
// (passes/fuse_conv.cc; Note [Fused convolutions] in kernels/conv.cc).

StatusOr<kernels::FusedActivation> activation_of(const OpDef* op, const AttrReader& a) {
  const std::string& name = a.attr_string(op->attr_index("activation"));
  kernels::FusedActivation activation;
  if (kernels::fused_activation_named(name, &activation)) return activation;
  return invalid_argument(op->name,
                          ": activation must be \"\", \"Relu\", \"Relu6\", \"Elu\", \"LeakyRelu\", \"Tanh\", "
                          "\"Sigmoid\", \"_MklSwish\", \"GeluExact\" or \"GeluApproximate\", got \"",
                          name, "\"");
}

// args is [bias] or [bias, residual]; a residual has the output's shape (nothing broadcasts).
Status check_args(const OpDef* op, std::span<const Shape* const> args, const Shape& out, int channel_dim) {
  if (args.empty() || args.size() > 2)
    return invalid_argument(op->name, ": args must be [bias] or [bias, residual], got ", args.size(),
                            " tensors");
  EMBER_RETURN_IF_ERROR(
      check_bias(op, *args[0], out.rank_known() ? out.dim(channel_dim) : kUnknownDim, "output channel"));
  if (args.size() == 2) {
    Shape merged = *args[1];
    if (!merge_into(out, &merged))
      return invalid_argument(op->name, ": the residual (args[1]) must have the output's shape ",
                              out.to_string(), ", got ", args[1]->to_string());
  }
  return Status::OK();
}

Status fused_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(activation_of(ctx.op, ctx).status());
  EMBER_RETURN_IF_ERROR(forward_shape(ctx));
  ConvAttrs c;
  EMBER_RETURN_IF_ERROR(read_attrs(ctx.op, ctx, &c));
  std::vector<const Shape*> args;
  for (size_t i = 2; i < ctx.inputs.size(); ++i) args.push_back(&ctx.inputs[i].shape);
  return check_args(ctx.op, args, ctx.outputs[0].shape, c.channel_dim);
}

Status fused_kernel(KernelContext& ctx) {
  ConvAttrs c;
  EMBER_RETURN_IF_ERROR(read_attrs(ctx.op, ctx, &c));
  auto activation = activation_of(ctx.op, ctx);
  EMBER_RETURN_IF_ERROR(activation.status());
  kernels::ConvGeometry g;
  Shape out;
  EMBER_RETURN_IF_ERROR(geometry(ctx.op, c, ctx.input(0).shape(), ctx.input(1).shape(), &g, &out));
  std::vector<const Shape*> args;
  for (size_t i = 2; i < ctx.inputs.size(); ++i) args.push_back(&ctx.input(static_cast<int>(i)).shape());
  EMBER_RETURN_IF_ERROR(check_args(ctx.op, args, out, c.channel_dim));
  kernels::ConvEpilogue epilogue;
  epilogue.bias = &ctx.input(2);
  if (args.size() == 2) epilogue.residual = &ctx.input(3);
  epilogue.activation = *activation;
  epilogue.alpha = ctx.attr_float(ctx.op->attr_index("leakyrelu_alpha"));
  return kernels::conv_forward_fused(g, ctx.input(0), ctx.input(1), epilogue, ctx.output(0));
}

// ---- Backprop ops: one operand is the shape (`input_sizes` or `filter_sizes`) of the result.

/// Checks out_backprop's shape against the output the geometry gives.
Status check_out_backprop(const OpDef* op, const Shape& expected, const Shape& got) {
  Shape merged = got;
  if (!merge_into(expected, &merged))
    return invalid_argument(op->name, ": out_backprop must have the shape of the forward op's output, ",
                            expected.to_string(), ", got ", got.to_string());
  return Status::OK();
}

Status backprop_shape(InferContext& ctx, bool of_input) {
  ConvAttrs c;
  EMBER_RETURN_IF_ERROR(read_attrs(ctx.op, ctx, &c));
  const int rank = c.nd + 2;
  const int sizes_index = of_input ? 0 : 1;
  Shape sizes;
  EMBER_RETURN_IF_ERROR(ctx.shape_operand(sizes_index).status());
  sizes = ctx.shape_operand(sizes_index).value();
  if (sizes.rank_known() && sizes.rank() != rank)
    return invalid_argument(ctx.op->name, ": ", of_input ? "input_sizes" : "filter_sizes", " must have ",
                            rank, " elements, got ", sizes.rank(), " (", sizes.to_string(), ")");
  sizes = with_rank(sizes, rank);
  const Shape input = of_input ? sizes : with_rank(ctx.inputs[0].shape, rank);
  const Shape filter = of_input ? with_rank(ctx.inputs[1].shape, rank) : sizes;
  kernels::ConvGeometry g;
  Shape out;
  EMBER_RETURN_IF_ERROR(geometry(ctx.op, c, input, filter, &g, &out));
  EMBER_RETURN_IF_ERROR(check_out_backprop(ctx.op, out, ctx.inputs[2].shape));
  ctx.outputs.push_back(TensorSpec{ctx.inputs[of_input ? 1 : 0].dtype, sizes});
  return Status::OK();
}

Status backprop_input_shape(InferContext& ctx) { return backprop_shape(ctx, true); }
Status backprop_filter_shape(InferContext& ctx) { return backprop_shape(ctx, false); }

Status backprop_kernel(KernelContext& ctx, bool of_input) {
  ConvAttrs c;
  EMBER_RETURN_IF_ERROR(read_attrs(ctx.op, ctx, &c));
  const Shape& result = ctx.output(0).shape();
  const Shape& input = of_input ? result : ctx.input(0).shape();
  const Shape& filter = of_input ? ctx.input(1).shape() : result;
  kernels::ConvGeometry g;
  Shape out;
  EMBER_RETURN_IF_ERROR(geometry(ctx.op, c, input, filter, &g, &out));
  EMBER_RETURN_IF_ERROR(check_out_backprop(ctx.op, out, ctx.input(2).shape()));
  if (of_input) return kernels::conv_backward_data(g, ctx.input(1), ctx.input(2), ctx.output(0));
  return kernels::conv_backward_filter(g, ctx.input(0), ctx.input(2), ctx.output(0));
}

Status backprop_input_kernel(KernelContext& ctx) { return backprop_kernel(ctx, true); }
Status backprop_filter_kernel(KernelContext& ctx) { return backprop_kernel(ctx, false); }

// ---- Gradient rules (ops/gradient.h): each op's gradients are the family's other two ops.

using namespace gradient;  // NOLINT(google-build-using-namespace): rules read as math

AttrList same_attrs(const GradContext& c) {
  AttrList attrs;
  for (const AttrValue& a : c.attrs) attrs.push_back(a);
  return attrs;
}

GradTensor conv(const ConvFamily& f, const GradContext& c, const GradTensor& x, const GradTensor& w) {
  return emit1(f.forward, {x, w}, same_attrs(c));
}
GradTensor conv_input_grad(const ConvFamily& f, const GradContext& c, const GradTensor& x,
                           const GradTensor& w, const GradTensor& dy) {
  return emit1(f.backprop_input, {shape_of(x), w, dy}, same_attrs(c));
}
GradTensor conv_filter_grad(const ConvFamily& f, const GradContext& c, const GradTensor& x,
                            const GradTensor& w, const GradTensor& dy) {
  return emit1(f.backprop_filter, {x, shape_of(w), dy}, same_attrs(c));
}

void forward_grad(GradContext& c) {
  const ConvFamily& f = family_of(c.op);
  const GradTensor x = c.input(0), w = c.input(1), dy = c.grad();
  c.set(0, conv_input_grad(f, c, x, w, dy));
  c.set(1, conv_filter_grad(f, c, x, w, dy));
}

// BackpropInput(sizes, w, dy) is linear in w and in dy: its gradient g (shaped as the input) flows to w as
// the filter gradient of a convolution of g, and to dy as the convolution of g by w.
void backprop_input_grad(GradContext& c) {
  const ConvFamily& f = family_of(c.op);
  const GradTensor w = c.input(1), dy = c.input(2), g = c.grad();
  c.set(1, conv_filter_grad(f, c, g, w, dy));
  c.set(2, conv(f, c, g, w));
}

// BackpropFilter(x, sizes, dy): g is shaped as the filter.
void backprop_filter_grad(GradContext& c) {
  const ConvFamily& f = family_of(c.op);
  const GradTensor x = c.input(0), dy = c.input(2), g = c.grad();
  c.set(0, conv_input_grad(f, c, x, g, dy));
  c.set(2, conv(f, c, x, g));
}

// As TensorFlow 2.21's CPU kernels: every convolution and backprop op takes half, bfloat16, float and double
// (16-bit ones compute in float32, Note [16-bit convolutions] in kernels/conv.cc). The fused ops, which the
// optimizer writes only for float32 chains (and GraphDef import for float and double nodes), keep float and
// double.
constexpr DTypeSet kFusedConvTypes = dtype_bit(DType::kFloat32) | dtype_bit(DType::kFloat64);
constexpr DTypeSet kConvTypes = kFusedConvTypes | dtype_bit(DType::kFloat16) | dtype_bit(DType::kBFloat16);

OpBuilder& conv_attrs(OpBuilder& b, const ConvFamily& f) {
  const int rank = f.nd + 2;
  b.attr("strides", AttrType::kInts);
  if (&f == &kConv2D) b.attr("use_cudnn_on_gpu", AttrType::kBool, true);
  b.attr("padding", AttrType::kString);
  if (f.nd == 2) b.attr("explicit_paddings", AttrType::kInts, std::vector<int64_t>{});
  b.attr("data_format", AttrType::kString, std::string(f.nd == 2 ? "NHWC" : "NDHWC"));
  b.attr("dilations", AttrType::kInts, std::vector<int64_t>(rank, 1));
  return b;
}

void register_family(OpRegistry& r, const ConvFamily& f, const std::string& doc) {
  const std::string filter_dims = f.nd == 2 ? "[height, width, " : "[depth, height, width, ";
  const std::string filter_doc =
      filter_dims + (f.depthwise ? "in_channels, channel_multiplier]" : "in_channels, out_channels]");
  // TensorFlow's Conv2D and Conv2DBackpropInput take int32 too (its CPU kernels in NHWC only; ember's direct
  // loops in either layout); its other convolution ops do not.
  const DTypeSet types = &f == &kConv2D ? kConvTypes | dtype_bit(DType::kInt32) : kConvTypes;
  OpBuilder fwd(f.forward);
  fwd.doc(doc + " filter is " + filter_doc + ".")
      .input("input")
      .input("filter")
      .output("output")
      .type_var(types);
  conv_attrs(fwd, f).shape(&forward_shape).kernel(types, &forward_kernel).grad(&forward_grad);
  fwd.batching(BatchingRule::kCustom).done(r);  // pfor.py folds the examples into N

  OpBuilder in(f.backprop_input);
  in.doc(std::string("The gradient of ") + f.forward + " w.r.t. its input, whose shape is input_sizes. " +
         f.backprop_input + "(input_sizes=[1, 3, 3, 1], filter, out_backprop) is [1, 3, 3, 1].")
      .input_shape_like("input_sizes")
      .input("filter")
      .input("out_backprop")
      .output("output")
      .type_var(types)
      .dispatch_on_input(1);
  conv_attrs(in, f)
      .shape(&backprop_input_shape)
      .kernel(types, &backprop_input_kernel)
      .grad(&backprop_input_grad);
  in.batching(BatchingRule::kCustom).done(r);  // pfor.py folds out_backprop's examples into N

  OpBuilder filt(f.backprop_filter);
  filt.doc(std::string("The gradient of ") + f.forward + " w.r.t. its filter, whose shape is filter_sizes. " +
           f.backprop_filter + "(input, filter_sizes=[3, 3, 1, 8], out_backprop) is [3, 3, 1, 8].")
      .input("input")
      .input_shape_like("filter_sizes")
      .input("out_backprop")
      .output("output")
      .type_var(kConvTypes);
  conv_attrs(filt, f)
      .shape(&backprop_filter_shape)
      .kernel(kConvTypes, &backprop_filter_kernel)
      .grad(&backprop_filter_grad);
  filt.batching(BatchingRule::kFallback).done(r);
}

// _FusedConv2D / _FusedConv3D / _FusedDepthwiseConv2dNative: the family's forward op with a bias and an
// activation.
void register_fused(OpRegistry& r, const ConvFamily& f, const std::string& example) {
  const std::string name = std::string("_Fused") + f.forward;
  OpBuilder fused(name);
  fused
      .doc("activation(" + std::string(f.forward) +
           "(input, filter) + args[0] [+ args[1]]), args the bias and optionally a residual of the output's "
           "shape: the optimizer's conv fusion writes it (TensorFlow's remapper writes an op of this name "
           "with "
           "a list of fused ops; ember's names its one activation: \"\", Relu, Relu6, Elu, LeakyRelu with "
           "leakyrelu_alpha, Tanh, Sigmoid, _MklSwish (x * sigmoid(x)), GeluExact or GeluApproximate). " +
           example)
      .input("input")
      .input("filter")
      .input_list("args")
      .output("output")
      .type_var(kFusedConvTypes);
  conv_attrs(fused, f)
      .attr("activation", AttrType::kString, std::string())
      .attr("leakyrelu_alpha", AttrType::kFloat, 0.2)
      // Not differentiable: the node only exists in optimized graphs, which autodiff never sees.
      .flags(kNotDifferentiable)
      .shape(&fused_shape)
      .kernel(kFusedConvTypes, &fused_kernel);
  fused.batching(BatchingRule::kFallback).done(r);
}

}  // namespace

void register_conv_ops(OpRegistry& r) {
  register_family(
      r, kConv2D,
      "2-D convolution (cross-correlation, as TensorFlow) of a 4-D input, NHWC or NCHW, with strides, "
      "dilations and SAME/VALID/EXPLICIT padding; in_channels may be a fraction of the input's channels "
      "(grouped). conv2d(ones([1, 3, 3, 1]), ones([2, 2, 1, 1]), [1, 1, 1, 1], 'VALID') == "
      "4 * ones([1, 2, 2, 1]).");
  register_fused(r, kConv2D,
                 "_FusedConv2D(ones([1, 3, 3, 1]), ones([2, 2, 1, 1]), [[-5.]], [1, 1, 1, 1], 'VALID', "
                 "activation='Relu') == zeros([1, 2, 2, 1]).");
  register_family(
      r, kConv3D,
      "3-D convolution of a 5-D input, NDHWC or NCDHW, with strides, dilations and SAME/VALID padding. "
      "conv3d(ones([1, 2, 2, 2, 1]), ones([2, 2, 2, 1, 1]), [1] * 5, 'VALID') == 8 * ones([1, 1, 1, 1, 1]).");
  register_fused(r, kConv3D,
                 "_FusedConv3D(ones([1, 2, 2, 2, 1]), ones([2, 2, 2, 1, 1]), [[-5.]], [1] * 5, 'VALID', "
                 "activation='Relu') == 3 * ones([1, 1, 1, 1, 1]).");
  register_family(
      r, kDepthwise,
      "Depthwise 2-D convolution: each input channel c is convolved with its own channel_multiplier "
      "filters, giving output channels c * channel_multiplier + m. "
      "depthwise_conv2d_native(ones([1, 2, 2, 2]), ones([2, 2, 2, 3]), [1] * 4, 'VALID') == "
      "4 * ones([1, 1, 1, 6]).");
  register_fused(
      r, kDepthwise,
      "_FusedDepthwiseConv2dNative(ones([1, 2, 2, 2]), ones([2, 2, 2, 3]), [[-5.] * 6], [1] * 4, 'VALID', "
      "activation='Relu') == zeros([1, 1, 1, 6]).");
}

}  // namespace ember
