// Pooling ops with TensorFlow's names, operands and attributes: MaxPool, AvgPool, MaxPool3D, AvgPool3D, their
// gradient ops (MaxPoolGrad, AvgPoolGrad, ...) and the max-pool gradient's own gradient (MaxPoolGradGrad).
// 1-D pooling is 2-D pooling over a height of 1, in Python, as in TensorFlow. Kernels: kernels/pool.h.
#include <string>

#include "ember/kernels/pool.h"
#include "ember/ops/families.h"
#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"

namespace ember {
namespace {

struct PoolFamily {
  const char* forward;
  const char* grad;       // MaxPoolGrad(orig_input, orig_output, grad) / AvgPoolGrad(orig_input_shape, grad)
  const char* grad_grad;  // max only
  int nd;
  bool max;
};

constexpr PoolFamily kMaxPool{"MaxPool", "MaxPoolGrad", "MaxPoolGradGrad", 2, true};
constexpr PoolFamily kAvgPool{"AvgPool", "AvgPoolGrad", nullptr, 2, false};
constexpr PoolFamily kMaxPool3D{"MaxPool3D", "MaxPool3DGrad", "MaxPool3DGradGrad", 3, true};
constexpr PoolFamily kAvgPool3D{"AvgPool3D", "AvgPool3DGrad", nullptr, 3, false};

enum class Role { kForward, kGrad, kGradGrad };

const PoolFamily& family_of(const OpDef* op, Role* role = nullptr) {
  for (const PoolFamily* f : {&kMaxPool, &kAvgPool, &kMaxPool3D, &kAvgPool3D}) {
    Role r = op->name == f->forward ? Role::kForward : op->name == f->grad ? Role::kGrad : Role::kGradGrad;
    if (op->name == f->forward || op->name == f->grad || (f->grad_grad && op->name == f->grad_grad)) {
      if (role) *role = r;
      return *f;
    }
  }
  return kMaxPool;  // unreachable: only these ops use this file's functions
}

std::string ints_text(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

struct PoolAttrs {
  int nd = 2;
  bool channels_last = true;
  std::string padding;
  std::vector<int64_t> ksize, strides, explicit_paddings;
  int channel_dim = 0;
  int spatial_dim(int i) const { return channels_last ? 1 + i : 2 + i; }
};

Status read_attrs(const OpDef* op, const AttrReader& a, PoolAttrs* out) {
  const PoolFamily& f = family_of(op);
  const std::string& name = op->name;
  PoolAttrs c;
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
  for (const char* attr : {"ksize", "strides"}) {
    const std::vector<int64_t>& v = a.attr_ints(op->attr_index(attr));
    if (static_cast<int>(v.size()) != rank)
      return invalid_argument(name, ": ", attr, " must have ", rank,
                              " elements (one per dimension of the input), got ", ints_text(v));
    for (int64_t s : v)
      if (s < 1) return invalid_argument(name, ": ", attr, " must all be >= 1, got ", ints_text(v));
    if (v[0] != 1 || v[c.channel_dim] != 1)
      return make_error(Code::kUnimplemented, name, ": pooling over the batch or channel dimension (", attr,
                        " ", ints_text(v), ", data_format ", format, ") is not supported");
    (attr[0] == 'k' ? c.ksize : c.strides) = v;
  }
  if (explicit_index >= 0) c.explicit_paddings = a.attr_ints(explicit_index);
  if (c.padding == "EXPLICIT") {
    const std::vector<int64_t>& p = c.explicit_paddings;
    if (static_cast<int>(p.size()) != 2 * rank)
      return invalid_argument(name, ": explicit_paddings must have ", 2 * rank,
                              " elements with padding \"EXPLICIT\", got ", ints_text(p));
    for (int64_t v : p)
      if (v < 0) return invalid_argument(name, ": explicit_paddings must be >= 0, got ", ints_text(p));
    if (p[0] || p[1] || p[2 * c.channel_dim] || p[2 * c.channel_dim + 1])
      return invalid_argument(name, ": explicit_paddings in the batch and channel dimensions must be 0, got ",
                              ints_text(p));
  }
  *out = std::move(c);
  return Status::OK();
}

Shape with_rank(const Shape& s, int rank) {
  if (s.rank_known()) return s;
  Shape out;
  for (int i = 0; i < rank; ++i) out.push_back(kUnknownDim);
  return out;
}

/// The geometry of pooling `input` (dims may be unknown while tracing) and the pooled shape.
Status geometry(const OpDef* op, const PoolAttrs& c, const Shape& input, kernels::PoolGeometry* g,
                Shape* output) {
  const int rank = c.nd + 2;
  if (input.rank() != rank)
    return invalid_argument(op->name, ": input must be ", rank, "-D, got shape ", input.to_string());
  g->nd = c.nd;
  g->channels_last = c.channels_last;
  g->batch = input.dim(0);
  g->channels = input.dim(c.channel_dim);
  Shape out = input;
  for (int i = 0; i < c.nd; ++i) {
    const int d = c.spatial_dim(i);
    const int64_t in = input.dim(d), k = c.ksize[d], s = c.strides[d];
    g->in[i] = in, g->window[i] = k, g->stride[i] = s;
    int64_t o = kUnknownDim;
    if (in >= 0) {
      if (c.padding == "VALID") {
        o = (in - k + s) / s;
      } else if (c.padding == "SAME") {
        o = (in + s - 1) / s;
        const int64_t total = std::max<int64_t>(0, (o - 1) * s + k - in);
        g->pad_before[i] = total / 2, g->pad_after[i] = total - total / 2;
      } else {
        g->pad_before[i] = c.explicit_paddings[2 * d], g->pad_after[i] = c.explicit_paddings[2 * d + 1];
        if (g->pad_before[i] >= k || g->pad_after[i] >= k)
          return invalid_argument(op->name, ": explicit padding must be smaller than the window, got ",
                                  ints_text(c.explicit_paddings), " for ksize ", ints_text(c.ksize));
        o = (in + g->pad_before[i] + g->pad_after[i] - k + s) / s;
      }
      if (o < 0)
        return invalid_argument(op->name, ": the window (ksize ", k, ") is larger than the input (", in,
                                ") along spatial dimension ", i, " (padding ", c.padding, "); input is ",
                                input.to_string());
    }
    g->out[i] = o;
    out.set_dim(d, o);
  }
  *output = out;
  return Status::OK();
}

Status check_same(const OpDef* op, const char* what, const Shape& expected, const Shape& got) {
  if (!expected.rank_known() || !got.rank_known()) return Status::OK();
  bool ok = expected.rank() == got.rank();
  for (int i = 0; ok && i < got.rank(); ++i)
    ok = expected.dim(i) < 0 || got.dim(i) < 0 || expected.dim(i) == got.dim(i);
  if (!ok)
    return invalid_argument(op->name, ": ", what, " must have shape ", expected.to_string(), ", got ",
                            got.to_string());
  return Status::OK();
}

// Operands: forward (input); MaxPoolGrad (orig_input, orig_output, grad); AvgPoolGrad (orig_input_shape,
// grad); MaxPoolGradGrad (orig_input, orig_output, grad).
Status pool_shape(InferContext& ctx) {
  Role role;
  const PoolFamily& f = family_of(ctx.op, &role);
  PoolAttrs c;
  EMBER_RETURN_IF_ERROR(read_attrs(ctx.op, ctx, &c));
  const int rank = c.nd + 2;
  Shape input;
  if (role == Role::kGrad && !f.max) {
    StatusOr<Shape> sizes = ctx.shape_operand(0);
    EMBER_RETURN_IF_ERROR(sizes.status());
    input = sizes.value();
    if (input.rank_known() && input.rank() != rank)
      return invalid_argument(ctx.op->name, ": orig_input_shape must have ", rank, " elements, got ",
                              input.to_string());
  } else {
    input = ctx.inputs[0].shape;
  }
  input = with_rank(input, rank);
  kernels::PoolGeometry g;
  Shape out;
  EMBER_RETURN_IF_ERROR(geometry(ctx.op, c, input, &g, &out));
  const DType dtype = ctx.inputs[role == Role::kGrad && !f.max ? 1 : 0].dtype;
  if (role == Role::kForward) {
    ctx.outputs.push_back(TensorSpec{dtype, out});
    return Status::OK();
  }
  if (f.max) {
    EMBER_RETURN_IF_ERROR(check_same(ctx.op, "orig_output", out, ctx.inputs[1].shape));
    const Shape& grad = ctx.inputs[2].shape;
    EMBER_RETURN_IF_ERROR(check_same(ctx.op, "grad", role == Role::kGrad ? out : input, grad));
    ctx.outputs.push_back(TensorSpec{dtype, role == Role::kGrad ? input : out});
    return Status::OK();
  }
  EMBER_RETURN_IF_ERROR(check_same(ctx.op, "grad", out, ctx.inputs[1].shape));
  ctx.outputs.push_back(TensorSpec{dtype, input});
  return Status::OK();
}

Status pool_kernel(KernelContext& ctx) {
  Role role;
  const PoolFamily& f = family_of(ctx.op, &role);
  PoolAttrs c;
  EMBER_RETURN_IF_ERROR(read_attrs(ctx.op, ctx, &c));
  const bool avg_grad = role == Role::kGrad && !f.max;
  const Shape& input = avg_grad ? ctx.output(0).shape() : ctx.input(0).shape();
  kernels::PoolGeometry g;
  Shape out;
  EMBER_RETURN_IF_ERROR(geometry(ctx.op, c, input, &g, &out));
  if (role == Role::kForward)
    return f.max ? kernels::max_pool(g, ctx.input(0), ctx.output(0))
                 : kernels::avg_pool(g, ctx.input(0), ctx.output(0));
  if (avg_grad) {
    EMBER_RETURN_IF_ERROR(check_same(ctx.op, "grad", out, ctx.input(1).shape()));
    return kernels::avg_pool_grad(g, ctx.input(1), ctx.output(0));
  }
  EMBER_RETURN_IF_ERROR(check_same(ctx.op, "orig_output", out, ctx.input(1).shape()));
  EMBER_RETURN_IF_ERROR(check_same(ctx.op, "grad", role == Role::kGrad ? out : input, ctx.input(2).shape()));
  if (role == Role::kGrad) return kernels::max_pool_grad(g, ctx.input(0), ctx.input(2), ctx.output(0));
  return kernels::max_pool_grad_grad(g, ctx.input(0), ctx.input(2), ctx.output(0));
}

// ---- Gradient rules

using namespace gradient;  // NOLINT(google-build-using-namespace): rules read as math

/// The op's attributes for `target` of its family, by name (MaxPool's explicit_paddings has no place in
/// MaxPoolGradGrad, which TensorFlow gives no explicit padding).
AttrList attrs_for(const GradContext& c, std::string_view target) {
  const OpDef& to = op_def(target);
  AttrList attrs;
  for (const AttrDef& a : to.attrs) {
    const int i = c.op->attr_index(a.name);
    if (i >= 0)
      attrs.push_back(c.attrs[i]);
    else
      attrs.push_back(a.default_value);
  }
  const int explicit_index = c.op->attr_index("explicit_paddings");
  if (explicit_index >= 0 && to.attr_index("explicit_paddings") < 0 &&
      c.attr_string(c.op->attr_index("padding")) == "EXPLICIT")
    check_ok(
        make_error(Code::kUnimplemented, c.op->name, ": the gradient of a gradient with EXPLICIT padding"));
  return attrs;
}

void pool_grad(GradContext& c) {
  Role role;
  const PoolFamily& f = family_of(c.op, &role);
  if (role == Role::kForward) {
    if (f.max)
      c.set(0, emit1(f.grad, {c.input(0), c.output(0), c.grad()}, attrs_for(c, f.grad)));
    else
      c.set(0, emit1(f.grad, {shape_of(c.input(0)), c.grad()}, attrs_for(c, f.grad)));
    return;
  }
  if (!f.max) {  // AvgPoolGrad is linear in grad: its gradient is the pooling of the incoming one
    c.set(1, emit1(f.forward, {c.grad()}, attrs_for(c, f.forward)));
    return;
  }
  // MaxPoolGrad routes grad to each window's maximum; MaxPoolGradGrad gathers from there: each is the other's
  // transpose. The maxima's positions are piecewise constant in x, so x and y get zeros.
  c.set(0, zeros_like(c.input(0)));
  c.set(1, zeros_like(c.input(1)));
  const char* other = role == Role::kGrad ? f.grad_grad : f.grad;
  c.set(2, emit1(other, {c.input(0), c.input(1), c.grad()}, attrs_for(c, other)));
}

constexpr DTypeSet kPoolTypes = dtype_bit(DType::kFloat32) | dtype_bit(DType::kFloat64);

void pool_attrs(OpBuilder& b, const PoolFamily& f, bool explicit_padding) {
  b.attr("ksize", AttrType::kInts).attr("strides", AttrType::kInts).attr("padding", AttrType::kString);
  if (explicit_padding) b.attr("explicit_paddings", AttrType::kInts, std::vector<int64_t>{});
  b.attr("data_format", AttrType::kString, std::string(f.nd == 2 ? "NHWC" : "NDHWC"));
}

void register_family(OpRegistry& r, const PoolFamily& f, const std::string& doc) {
  const bool explicit_padding = &f == &kMaxPool;  // TensorFlow's MaxPool and MaxPoolGrad only
  OpBuilder fwd(f.forward);
  fwd.doc(doc).input("input").output("output").type_var(kPoolTypes);
  pool_attrs(fwd, f, explicit_padding);
  fwd.shape(&pool_shape)
      .kernel(kPoolTypes, &pool_kernel)
      .grad(&pool_grad)
      .batching(BatchingRule::kCustom)  // pfor.py folds the examples into N
      .done(r);

  OpBuilder grad(f.grad);
  if (f.max) {
    grad.doc(std::string("The gradient of ") + f.forward +
             ": grad of each window added at the first maximum of orig_input in it (shaped as orig_input). " +
             f.grad + "(x, max_pool(x), ones_like(max_pool(x)), ...) is 1 at each window's maximum.")
        .input("orig_input")
        .input("orig_output")
        .input("grad");
  } else {
    grad.doc(std::string("The gradient of ") + f.forward +
             ": grad of each window spread evenly over its elements inside the input, whose shape is "
             "orig_input_shape. " +
             f.grad + "([1, 2, 2, 1], [[[[4.]]]], ksize=[1, 2, 2, 1], ...) == ones([1, 2, 2, 1]).")
        .input_shape_like("orig_input_shape")
        .input("grad")
        .dispatch_on_input(1);
  }
  grad.output("output").type_var(kPoolTypes);
  pool_attrs(grad, f, explicit_padding);
  grad.shape(&pool_shape)
      .kernel(kPoolTypes, &pool_kernel)
      .grad(&pool_grad)
      .batching(BatchingRule::kCustom)  // pfor.py: fold the incoming gradient (and the images) into N
      .done(r);

  if (!f.grad_grad) return;
  OpBuilder gg(f.grad_grad);
  gg.doc(std::string("The gradient of ") + f.grad +
         ": the element of grad (shaped as orig_input) at each window's "
         "first maximum of orig_input, shaped as orig_output. " +
         f.grad_grad + "(x, max_pool(x), x, ...) == max_pool(x).")
      .input("orig_input")
      .input("orig_output")
      .input("grad")
      .output("output")
      .type_var(kPoolTypes);
  pool_attrs(gg, f, false);
  gg.shape(&pool_shape)
      .kernel(kPoolTypes, &pool_kernel)
      .grad(&pool_grad)
      .batching(BatchingRule::kCustom)
      .done(r);
}

}  // namespace

void register_pool_ops(OpRegistry& r) {
  register_family(
      r, kMaxPool,
      "Max over ksize windows of a 4-D input (NHWC or NCHW) moved by strides, SAME/VALID/EXPLICIT padding "
      "(padding never wins). max_pool([[[[1.], [2.]], [[3.], [4.]]]], [1, 2, 2, 1], [1, 1, 1, 1], 'VALID') "
      "== [[[[4.]]]]");
  register_family(
      r, kAvgPool,
      "Mean over ksize windows of a 4-D input; SAME padding averages only the elements inside the input. "
      "avg_pool([[[[1.], [2.]], [[3.], [4.]]]], [1, 2, 2, 1], [1, 1, 1, 1], 'VALID') == [[[[2.5]]]]");
  register_family(
      r, kMaxPool3D,
      "Max over ksize windows of a 5-D input (NDHWC or NCDHW). "
      "max_pool3d(reshape(range(8.), [1, 2, 2, 2, 1]), [1, 2, 2, 2, 1], [1] * 5, 'VALID') == [[[[[7.]]]]]");
  register_family(r, kAvgPool3D,
                  "Mean over ksize windows of a 5-D input (NDHWC or NCDHW). "
                  "avg_pool3d(reshape(range(8.), [1, 2, 2, 2, 1]), [1, 2, 2, 2, 1], [1] * 5, 'VALID') == "
                  "[[[[[3.5]]]]]");
}

}  // namespace ember
