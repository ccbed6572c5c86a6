// Linear algebra: MatMul, with TensorFlow's BatchMatMulV2 semantics (rank >= 2, batch dims broadcast as
// in NumPy). Kernels: kernels/matmul.h. Einsum (einsum.cc), the MatrixDiagV3 family (matrix_diag.cc) and the
// LAPACK ops (linalg_lapack.cc) register from here.
#include <string>

#include "ember/kernels/complex.h"
#include "ember/kernels/matmul.h"
#include "ember/ops/families.h"
#include "ember/ops/gradient.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
void register_lapack_ops(OpRegistry& r);            // linalg_lapack.cc
void register_eig_lu_ops(OpRegistry& r);            // linalg_eig_lu.cc
void register_schur_function_ops(OpRegistry& r);    // linalg_schur.cc
void register_tridiagonal_solve_op(OpRegistry& r);  // linalg_tridiagonal.cc
void register_einsum_ops(OpRegistry& r);            // einsum.cc
void register_matrix_diag_ops(OpRegistry& r);       // matrix_diag.cc

namespace {

Shape batch_dims(const Shape& s) {
  Shape out;
  for (int i = 0; i < s.rank() - 2; ++i) out.push_back(s.dim(i));
  return out;
}

// "MatMul: in[0] is [2,3], in[1] is [4,5]; " — the prefix of every shape error.
std::string operands(const Shape& a, const Shape& b, bool ta, bool tb) {
  std::string s = "MatMul: in[0] is " + a.to_string() + (ta ? " (transposed)" : "") + ", in[1] is " +
                  b.to_string() + (tb ? " (transposed)" : "") + "; ";
  return s;
}

Status matmul_shape(InferContext& ctx) {
  const TensorSpec& x = ctx.inputs[0];
  const Shape &a = x.shape, &b = ctx.inputs[1].shape;
  const bool ta = ctx.attr_bool(0), tb = ctx.attr_bool(1);
  if (a.rank_known() && a.rank() < 2)
    return invalid_argument(operands(a, b, ta, tb), "in[0] must have rank >= 2, got rank ", a.rank());
  if (b.rank_known() && b.rank() < 2)
    return invalid_argument(operands(a, b, ta, tb), "in[1] must have rank >= 2, got rank ", b.rank());
  if (!a.rank_known() || !b.rank_known()) {
    // The batch rank is unknown, so nothing about the output is.
    ctx.outputs.push_back(TensorSpec{x.dtype, Shape::unknown_rank()});
    return Status::OK();
  }
  const int ra = a.rank(), rb = b.rank();
  const int64_t m = ta ? a.dim(ra - 1) : a.dim(ra - 2), ka = ta ? a.dim(ra - 2) : a.dim(ra - 1);
  const int64_t kb = tb ? b.dim(rb - 1) : b.dim(rb - 2), n = tb ? b.dim(rb - 2) : b.dim(rb - 1);
  if (ka >= 0 && kb >= 0 && ka != kb)
    return invalid_argument(operands(a, b, ta, tb), "inner dimensions ", ka, " and ", kb, " differ");
  auto batch = broadcast_shapes(batch_dims(a), batch_dims(b));
  if (!batch.ok())
    return invalid_argument(operands(a, b, ta, tb), "batch dimensions ", batch_dims(a).to_string(), " and ",
                            batch_dims(b).to_string(), " are not broadcastable");
  Shape out = *batch;
  out.push_back(m);
  out.push_back(n);
  ctx.outputs.push_back(TensorSpec{x.dtype, out});
  return Status::OK();
}

Status matmul_kernel(KernelContext& ctx) {
  if (is_complex(ctx.input(0).dtype()))
    return kernels::complex_matmul(ctx.input(0), ctx.input(1), ctx.attr_bool(0), ctx.attr_bool(1),
                                   ctx.output(0));
  return kernels::matmul(ctx.input(0), ctx.input(1), ctx.attr_bool(0), ctx.attr_bool(1), ctx.output(0));
}

// With C = op(A) op(B) (op = transpose or not), dC/dA is dy op(B)^T laid out as A (transposed back if A
// was), and likewise for B; each case below is the one MatMul that yields that layout directly, so no
// Transpose op is emitted. Broadcast batch dims are summed back with reduce_to.
void matmul_grad(GradContext& c) {
  using gradient::matmul;
  using gradient::reduce_to;
  GradTensor a = c.input(0), b = c.input(1), dy = c.grad();
  const bool ta = c.attr_bool(0), tb = c.attr_bool(1);
  GradTensor da, db;
  if (!ta && !tb) {
    da = matmul(dy, b, false, true);
    db = matmul(a, dy, true, false);
  } else if (!ta && tb) {
    da = matmul(dy, b, false, false);
    db = matmul(dy, a, true, false);
  } else if (ta && !tb) {
    da = matmul(b, dy, false, true);
    db = matmul(a, dy, false, false);
  } else {
    da = matmul(b, dy, true, true);
    db = matmul(dy, a, true, true);
  }
  c.set(0, reduce_to(da, a));
  c.set(1, reduce_to(db, b));
}

// ---- _FusedMatMul(a, b, bias): activation(MatMul(a, b) + bias), written by the optimizer's MatMul fusion
// (passes/fuse_matmul.cc) or read from TensorFlow's optimized graphs. Attributes as TensorFlow's, but
// `fused_ops` is TensorFlow's list of strings joined with commas ("BiasAdd,Relu"; Note [Attributes in a
// GraphDef] converts) and batch dims are allowed (TensorFlow's op is 2-D).

constexpr int kFusedOps = 3, kNumArgs = 2, kLeakyReluAlpha = 5;  // attribute positions

StatusOr<kernels::FusedActivation> fused_activation(const OpDef* op, const AttrReader& attrs) {
  using kernels::FusedActivation;
  if (attrs.attr_int(kNumArgs) != 1)
    return invalid_argument(op->name, ": num_args must be 1 (the bias), got ", attrs.attr_int(kNumArgs));
  const std::string& fused_ops = attrs.attr_string(kFusedOps);
  const std::string_view ops(fused_ops), lead = "BiasAdd,";
  FusedActivation activation = FusedActivation::kNone;
  // _MklSwish after a product is imported as plain ops (graph/fused_import.cc).
  if (ops == "BiasAdd" ||
      (ops.starts_with(lead) && kernels::fused_activation_named(ops.substr(lead.size()), &activation) &&
       activation != FusedActivation::kNone && activation != FusedActivation::kSwish))
    return activation;
  return invalid_argument(op->name,
                          ": fused_ops must be BiasAdd, optionally followed by one of Relu, Relu6, Elu, "
                          "LeakyRelu, Tanh, Sigmoid, GeluExact, GeluApproximate; got [",
                          fused_ops, "]");
}

// The product's last dim, where known.
int64_t product_columns(const Shape& product) {
  return product.rank_known() ? product.dim(product.rank() - 1) : kUnknownDim;
}

Status fused_matmul_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(fused_activation(ctx.op, ctx).status());
  EMBER_RETURN_IF_ERROR(matmul_shape(ctx));
  return check_bias(ctx.op, ctx.inputs[2].shape, product_columns(ctx.outputs[0].shape),
                    "column of the product");
}

Status fused_matmul_kernel(KernelContext& ctx) {
  auto activation = fused_activation(ctx.op, ctx);
  EMBER_RETURN_IF_ERROR(activation.status());
  EMBER_RETURN_IF_ERROR(check_bias(ctx.op, ctx.input(2).shape(), product_columns(ctx.output(0).shape()),
                                   "column of the product"));
  kernels::MatMulEpilogue epilogue;
  epilogue.bias = &ctx.input(2);
  epilogue.activation = *activation;
  epilogue.leakyrelu_alpha = ctx.attr_float(kLeakyReluAlpha);
  return kernels::matmul(ctx.input(0), ctx.input(1), ctx.attr_bool(0), ctx.attr_bool(1), epilogue,
                         ctx.output(0));
}

}  // namespace

void register_linalg_ops(OpRegistry& r) {
  constexpr DTypeSet kMatMulTypes =
      kFloatTypes | dtype_bit(DType::kInt32) | dtype_bit(DType::kInt64) | kComplexTypes;
  OpBuilder("MatMul")
      .doc(
          "Matrix product over the last two dims; batch dims broadcast. matmul([[1, 2]], [[3], [4]]) == "
          "[[11]]")
      .input("a")
      .input("b")
      .output("product")
      .type_var(kMatMulTypes)
      .attr("transpose_a", AttrType::kBool, false)
      .attr("transpose_b", AttrType::kBool, false)
      .shape(&matmul_shape)
      .kernel(kMatMulTypes, &matmul_kernel)
      .grad(&gradient::holomorphic_grad<&matmul_grad>)
      .batching(BatchingRule::kCustom)
      .done(r);
  OpBuilder("_FusedMatMul")
      .doc(
          "activation(MatMul(a, b) + bias) in one pass over the product: TensorFlow's remapper op, written "
          "by the optimizer's MatMul fusion. _FusedMatMul([[1., 2.]], [[3.], [4.]], [-20.], "
          "fused_ops='BiasAdd,Relu') == [[0.]]")
      .input("a")
      .input("b")
      .input("bias")
      .output("product")
      .type_var(kFloatTypes)
      .attr("transpose_a", AttrType::kBool, false)
      .attr("transpose_b", AttrType::kBool, false)
      .attr("num_args", AttrType::kInt, int64_t{1})
      .attr("fused_ops", AttrType::kString, std::string("BiasAdd"))
      .attr("epsilon", AttrType::kFloat, 0.0001)  // TensorFlow's, for its batch-norm fusions; unused
      .attr("leakyrelu_alpha", AttrType::kFloat, 0.2)
      // Not differentiable: the node only exists in optimized graphs, which autodiff never sees.
      .flags(kNotDifferentiable)
      .shape(&fused_matmul_shape)
      .kernel(kFloatTypes, &fused_matmul_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  register_lapack_ops(r);
  register_eig_lu_ops(r);
  register_schur_function_ops(r);
  register_tridiagonal_solve_op(r);
  register_einsum_ops(r);
  register_matrix_diag_ops(r);
}

}  // namespace ember
