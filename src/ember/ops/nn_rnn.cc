// TensorFlow's whole-sequence LSTM ops: BlockLSTMV2 (gate layout i, f, c, o, as Keras's LSTM) and its
// gradient op BlockLSTMGradV2, with TensorFlow's operands and attributes. ember.keras's LSTM runs on them
// (python/ember/keras/layers/recurrent.py, Note [How the loop runs]); kernels: kernels/lstm.h.
#include <string>

#include "ember/kernels/lstm.h"
#include "ember/ops/families.h"
#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"

namespace ember {
namespace {

constexpr DTypeSet kLstmTypes = dtype_bit(DType::kFloat32);

// Operand order shared by both ops: seq_len_max, x, cs_prev, h_prev, w, wci, wcf, wco, b.
constexpr const char* kOperandNames[] = {"seq_len_max", "x",   "cs_prev", "h_prev", "w",
                                         "wci",         "wcf", "wco",     "b"};

// The dims the operands imply: T, B, I (x), C (cell); each unknown (kUnknownDim) until an operand fixes it.
struct LstmDims {
  int64_t T = kUnknownDim, B = kUnknownDim, I = kUnknownDim, C = kUnknownDim;
};

Status merge(const OpDef* op, const char* what, int64_t* dim, int64_t value) {
  if (value < 0) return Status::OK();
  if (*dim >= 0 && *dim != value)
    return invalid_argument(op->name, ": ", what, " is ", value, ", but the other operands imply ", *dim);
  *dim = value;
  return Status::OK();
}

Status want_rank(const OpDef* op, int input, const Shape& s, int rank) {
  if (!s.rank_known() || s.rank() == rank) return Status::OK();
  return invalid_argument(op->name, ": ", kOperandNames[input], " must be ", rank, "-D, got shape ",
                          s.to_string());
}

// Checks the nine operands' ranks and dims against each other; `shape(i)` is operand i's shape.
template <typename ShapeOf>
Status lstm_dims(const OpDef* op, ShapeOf shape, LstmDims* d) {
  EMBER_RETURN_IF_ERROR(want_rank(op, 0, shape(0), 0));
  const Shape& x = shape(1);
  EMBER_RETURN_IF_ERROR(want_rank(op, 1, x, 3));
  if (x.rank_known()) {
    d->T = x.dim(0);
    d->B = x.dim(1);
    d->I = x.dim(2);
  }
  for (int k : {2, 3}) {
    const Shape& s = shape(k);
    EMBER_RETURN_IF_ERROR(want_rank(op, k, s, 2));
    if (!s.rank_known()) continue;
    const std::string what = std::string(kOperandNames[k]);
    EMBER_RETURN_IF_ERROR(merge(op, (what + "'s batch dim (x's dim 1)").c_str(), &d->B, s.dim(0)));
    EMBER_RETURN_IF_ERROR(merge(op, (what + "'s cell size").c_str(), &d->C, s.dim(1)));
  }
  for (int k : {5, 6, 7}) {
    EMBER_RETURN_IF_ERROR(want_rank(op, k, shape(k), 1));
    if (shape(k).rank_known())
      EMBER_RETURN_IF_ERROR(merge(op, (std::string(kOperandNames[k]) + "'s size (the cell size)").c_str(),
                                  &d->C, shape(k).dim(0)));
  }
  const Shape& b = shape(8);
  EMBER_RETURN_IF_ERROR(want_rank(op, 8, b, 1));
  if (b.rank_known() && b.dim(0) >= 0) {
    if (b.dim(0) % 4 != 0)
      return invalid_argument(op->name, ": b must hold 4 * cell size values (gates i, f, c, o), got shape ",
                              b.to_string());
    EMBER_RETURN_IF_ERROR(merge(op, "b's size / 4 (the cell size)", &d->C, b.dim(0) / 4));
  }
  const Shape& w = shape(4);
  EMBER_RETURN_IF_ERROR(want_rank(op, 4, w, 2));
  if (w.rank_known()) {
    if (w.dim(1) >= 0 && d->C >= 0 && w.dim(1) != 4 * d->C)
      return invalid_argument(op->name, ": w must be [input size + cell size, 4 * cell size] = [",
                              d->I >= 0 ? std::to_string(d->I + d->C) : std::string("?"), ", ", 4 * d->C,
                              "], got shape ", w.to_string());
    if (w.dim(1) >= 0 && d->C < 0 && w.dim(1) % 4 == 0) d->C = w.dim(1) / 4;
    if (w.dim(0) >= 0 && d->I >= 0 && d->C >= 0 && w.dim(0) != d->I + d->C)
      return invalid_argument(op->name, ": w must be [input size + cell size, 4 * cell size] = [",
                              d->I + d->C, ", ", 4 * d->C, "], got shape ", w.to_string());
  }
  return Status::OK();
}

Status check_grad_operands(const OpDef* op, const LstmDims& d, int first, int count, const Shape* const* s) {
  const Shape want{d.T, d.B, d.C};
  for (int k = 0; k < count; ++k) {
    if (!s[k]->rank_known()) continue;
    if (s[k]->rank() != 3 || !s[k]->is_compatible_with(want))
      return invalid_argument(op->name, ": input ", first + k,
                              " (a forward output or its gradient) must be [T, B, ",
                              "cell size] = ", want.to_string(), ", got shape ", s[k]->to_string());
  }
  return Status::OK();
}

Status block_lstm_shape(InferContext& ctx) {
  LstmDims d;
  EMBER_RETURN_IF_ERROR(lstm_dims(
      ctx.op, [&](int i) -> const Shape& { return ctx.inputs[i].shape; }, &d));
  const DType dtype = ctx.inputs[1].dtype;
  if (ctx.op->name == "BlockLSTMV2") {
    for (int k = 0; k < 7; ++k) ctx.outputs.push_back(TensorSpec{dtype, Shape{d.T, d.B, d.C}});
    return Status::OK();
  }
  const Shape* rest[9];
  for (int k = 0; k < 9; ++k) rest[k] = &ctx.inputs[9 + k].shape;
  EMBER_RETURN_IF_ERROR(check_grad_operands(ctx.op, d, 9, 9, rest));
  ctx.outputs.push_back(TensorSpec{dtype, Shape{d.T, d.B, d.I}});
  ctx.outputs.push_back(TensorSpec{dtype, Shape{d.B, d.C}});
  ctx.outputs.push_back(TensorSpec{dtype, Shape{d.B, d.C}});
  const int64_t rows = d.I >= 0 && d.C >= 0 ? d.I + d.C : kUnknownDim;
  ctx.outputs.push_back(TensorSpec{dtype, Shape{rows, d.C >= 0 ? 4 * d.C : kUnknownDim}});
  for (int k = 0; k < 3; ++k) ctx.outputs.push_back(TensorSpec{dtype, Shape{d.C}});
  ctx.outputs.push_back(TensorSpec{dtype, Shape{d.C >= 0 ? 4 * d.C : kUnknownDim}});
  return Status::OK();
}

// The operands of a run, checked again on the actual shapes (a graph may hold unknown dims).
StatusOr<kernels::LstmOperands> operands(const KernelContext& ctx) {
  LstmDims d;
  EMBER_RETURN_IF_ERROR(lstm_dims(
      ctx.op, [&](int i) -> const Shape& { return ctx.input(i).shape(); }, &d));
  const int64_t seq_len_max = ctx.input(0).dtype() == DType::kInt64 ? ctx.input(0).data<int64_t>()[0] : -1;
  if (seq_len_max < 0 || seq_len_max > d.T)
    return invalid_argument(ctx.op->name, ": seq_len_max must be in [0, ", d.T, "] (x's time steps), got ",
                            seq_len_max);
  const bool peephole = ctx.attr_bool(ctx.op->attr_index("use_peephole"));
  return kernels::LstmOperands{&ctx.input(1), &ctx.input(2), &ctx.input(3), &ctx.input(4), &ctx.input(5),
                               &ctx.input(6), &ctx.input(7), &ctx.input(8), seq_len_max,   peephole};
}

Status block_lstm_kernel(KernelContext& ctx) {
  auto in = operands(ctx);
  EMBER_RETURN_IF_ERROR(in.status());
  TensorImpl* out[7];
  for (int k = 0; k < 7; ++k) out[k] = &ctx.output(k);
  const double clip = ctx.attr_float(ctx.op->attr_index("cell_clip"));
  return kernels::lstm_forward(*in, static_cast<float>(clip), out);
}

Status block_lstm_grad_kernel(KernelContext& ctx) {
  auto in = operands(ctx);
  EMBER_RETURN_IF_ERROR(in.status());
  LstmDims d;
  EMBER_RETURN_IF_ERROR(lstm_dims(
      ctx.op, [&](int i) -> const Shape& { return ctx.input(i).shape(); }, &d));
  const Shape want{d.T, d.B, d.C};
  for (int k = 9; k < 18; ++k)
    if (ctx.input(k).shape() != want)
      return invalid_argument(ctx.op->name, ": input ", k, " (a forward output or its gradient) must be ",
                              want.to_string(), ", got shape ", ctx.input(k).shape().to_string());
  const TensorImpl* fwd[7];
  for (int k = 0; k < 7; ++k) fwd[k] = &ctx.input(9 + k);
  TensorImpl* out[8];
  for (int k = 0; k < 8; ++k) out[k] = &ctx.output(k);
  return kernels::lstm_backward(*in, fwd, ctx.input(16), ctx.input(17), out);
}

using namespace gradient;  // NOLINT(google-build-using-namespace): rules read as math

// As TensorFlow's (rnn_grad.py): only cs and h carry gradient back; the gate outputs i, f, o, ci and co are
// saved values for the backward pass, whose gradients are ignored.
void block_lstm_grad(GradContext& c) {
  AttrList attrs;
  attrs.push_back(c.attrs[c.op->attr_index("use_peephole")]);
  std::vector<GradTensor> in;
  for (int k = 0; k < 9; ++k) in.push_back(c.input(k));
  for (int k = 0; k < 7; ++k) in.push_back(c.output(k));
  in.push_back(c.grad(1));
  in.push_back(c.grad(6));
  auto g = emit("BlockLSTMGradV2", in, std::move(attrs));
  for (int k = 1; k < 9; ++k) c.set(k, g[k - 1]);
}

OpBuilder lstm_operands(const char* name) {
  OpBuilder b(name);
  b.input_fixed("seq_len_max", dtype_bit(DType::kInt64));
  for (int k = 1; k < 9; ++k) b.input(kOperandNames[k]);
  b.type_var(kLstmTypes);
  b.dispatch_on_input(1);  // x: input 0 is the int64 seq_len_max
  return b;
}

}  // namespace

void register_rnn_ops(OpRegistry& r) {
  lstm_operands("BlockLSTMV2")
      .doc(
          "An LSTM over all of x's time steps (x [T, B, I]; w [I + C, 4C] and b [4C] with gates i, f, c, o): "
          "z = [x_t, h] @ w + b, i, f, o = sigmoid(z_i, z_f, z_o) (peepholes wci, wcf, wco when "
          "use_peephole), "
          "ci = tanh(z_c), cs = ci * i + cs_prev * f (clipped to cell_clip when > 0), co = tanh(cs), "
          "h = o * co; returns i, cs, f, o, ci, co, h, each [T, B, C], zero past seq_len_max.")
      .output("i")
      .output("cs")
      .output("f")
      .output("o")
      .output("ci")
      .output("co")
      .output("h")
      .attr("cell_clip", AttrType::kFloat, 0.0)
      .attr("use_peephole", AttrType::kBool, false)
      .shape(&block_lstm_shape)
      .kernel(kLstmTypes, &block_lstm_kernel)
      .grad(&block_lstm_grad)
      .batching(BatchingRule::kFallback)
      .done(r);
  // Not differentiable, as TensorFlow's (which registers no gradient for it).
  lstm_operands("BlockLSTMGradV2")
      .doc(
          "The gradients of BlockLSTMV2 w.r.t. x, cs_prev, h_prev, w, wci, wcf, wco and b, from its "
          "operands, "
          "its seven outputs and the gradients arriving at its cs and h outputs (cs_grad, h_grad).")
      .input("i")
      .input("cs")
      .input("f")
      .input("o")
      .input("ci")
      .input("co")
      .input("h")
      .input("cs_grad")
      .input("h_grad")
      .output("x_grad")
      .output("cs_prev_grad")
      .output("h_prev_grad")
      .output("w_grad")
      .output("wci_grad")
      .output("wcf_grad")
      .output("wco_grad")
      .output("b_grad")
      .attr("use_peephole", AttrType::kBool, false)
      .flags(kNotDifferentiable)
      .shape(&block_lstm_shape)
      .kernel(kLstmTypes, &block_lstm_grad_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember
