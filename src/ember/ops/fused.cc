// FusedElementwise: a chain or DAG of element-wise ops run as one tiled kernel (kernels/fused_elementwise.h);
// FusedReduction: the same ending in a reduction over the domain's trailing dims (Note [Fused reductions]).
// Only the element-wise fusion pass (passes/fuse_elementwise.cc) creates them, in optimized graphs.
#include "ember/jit/jit.h"
#include "ember/kernels/fused_elementwise.h"
#include "ember/ops/families.h"
#include "ember/ops/registry.h"

namespace ember {
namespace {

// Attributes by position.
constexpr int kProgram = 0;
constexpr int kResults = 1;
constexpr int kShape = 2;

constexpr int kReduce = 3;  // FusedReduction: {ReduceOp, reduced value id, trailing dims reduced, keep_dims}

StatusOr<kernels::FusedProgram> decode(const AttrReader& attrs, int num_inputs, DType dtype) {
  if (attrs.attrs.size() <= kReduce)  // FusedElementwise
    return kernels::FusedProgram::decode(attrs.attr_ints(kProgram), num_inputs, attrs.attr_ints(kResults),
                                         dtype);
  std::span<const int64_t> reduce = attrs.attr_ints(kReduce);
  if (reduce.size() != 4)
    return invalid_argument("FusedReduction: 'reduce' holds {op, value, reduced dims, keep_dims}, got ",
                            reduce.size(), " ints");
  if (reduce[0] < 0 || reduce[0] >= static_cast<int64_t>(kernels::ReduceOp::kCount))
    return invalid_argument("FusedReduction: reduction op ", reduce[0], " is out of range (0..",
                            static_cast<int>(kernels::ReduceOp::kCount) - 1, ")");
  auto program = kernels::FusedProgram::decode_reducing(
      attrs.attr_ints(kProgram), num_inputs, attrs.attr_ints(kResults), dtype,
      static_cast<kernels::ReduceOp>(reduce[0]), reduce[1], reduce[2]);
  if (!program.ok()) return program.status().with_prefix("FusedReduction: ");
  return program;
}

Status fused_shape(InferContext& ctx) {
  const DType dtype = ctx.inputs[0].dtype;
  auto program = decode(ctx, static_cast<int>(ctx.inputs.size()), dtype);
  if (!program.ok()) return program.status();
  // A program fused over unknown dims keeps -1 there; the inputs' broadcast fills in what they know.
  auto domain = Shape::from_dims(ctx.attr_ints(kShape), /*allow_unknown=*/true);
  if (!domain.ok()) return domain.status().with_prefix("shape: ");
  if (!domain->fully_defined()) {
    Shape known = Shape();
    for (const TensorSpec& in : ctx.inputs) {
      auto b = broadcast_shapes(known, in.shape);
      if (b.ok()) known = *b;
    }
    for (int i = 0; known.rank_known() && i < domain->rank(); ++i) {
      const int j = known.rank() - domain->rank() + i;
      if (domain->dim(i) < 0 && j >= 0 && known.dim(j) > 1) domain->set_dim(i, known.dim(j));
    }
  }
  // Every input broadcasts to the domain; unknown dims are checked when the kernel runs.
  for (size_t k = 0; k < ctx.inputs.size(); ++k) {
    const Shape& in = ctx.inputs[k].shape;
    if (!in.rank_known()) continue;
    bool fits = in.rank() <= domain->rank();
    for (int i = 0; fits && i < in.rank(); ++i) {
      int64_t d = in.dim(i), want = domain->dim(domain->rank() - in.rank() + i);
      fits = d < 0 || want < 0 || d == 1 || d == want;
    }
    if (!fits)
      return invalid_argument("input #", k, " has shape ", in.to_string(),
                              ", which does not broadcast to the domain ", domain->to_string());
  }
  const auto& reduction = program->reduction();
  const int domain_outputs = program->num_outputs() - (reduction ? 1 : 0);
  for (int j = 0; j < domain_outputs; ++j) ctx.outputs.push_back(TensorSpec{dtype, *domain});
  if (reduction) {
    if (reduction->reduced_dims > domain->rank())
      return invalid_argument("FusedReduction: reduces the last ", reduction->reduced_dims,
                              " dims of a domain of rank ", domain->rank());
    const bool keep_dims = ctx.attr_ints(kReduce)[3] != 0;
    Shape out;
    for (int i = 0; i < domain->rank(); ++i) {
      if (i < domain->rank() - reduction->reduced_dims)
        out.push_back(domain->dim(i));
      else if (keep_dims)
        out.push_back(1);
    }
    ctx.outputs.push_back(TensorSpec{dtype, out});
  }
  return Status::OK();
}

StatusOr<std::shared_ptr<const void>> fused_prepare(const PrepareContext& ctx) {
  if (ctx.inputs.empty() || ctx.outputs.empty())
    return invalid_argument("a program needs inputs and results");
  auto program = decode(ctx, static_cast<int>(ctx.inputs.size()), ctx.inputs[0].dtype);
  if (!program.ok()) return program.status();
  SmallVector<Shape, 4> shapes;
  for (const TensorSpec& spec : ctx.inputs) shapes.push_back(spec.shape);
  // A reduction's output is not the domain: the attribute is (static shapes only, checked by prepare).
  Shape domain = ctx.outputs[0].shape;
  if (program->reduction()) {
    auto traced = Shape::from_dims(ctx.attr_ints(kShape), /*allow_unknown=*/true);
    if (!traced.ok()) return traced.status().with_prefix("shape: ");
    domain = *traced;
  }
  auto prepared = program->prepare({shapes.data(), shapes.size()}, domain);
  if (!prepared.ok()) return prepared.status();
  return std::shared_ptr<const void>(std::move(prepared).value());
}

Status fused_kernel(KernelContext& ctx) {
  if (ctx.prepared != nullptr) {
    SmallVector<TensorImpl*, 4> outputs;
    for (const TensorRef& out : ctx.outputs) outputs.push_back(out.get());
    SmallVector<const TensorImpl*, 4> inputs;
    for (const TensorImpl* in : ctx.inputs) inputs.push_back(in);
    return kernels::FusedProgram::run_prepared(
        *static_cast<const kernels::PreparedFusedProgram*>(ctx.prepared), {inputs.data(), inputs.size()},
        {outputs.data(), outputs.size()});
  }
  auto program = decode(ctx, static_cast<int>(ctx.inputs.size()), ctx.input(0).dtype());
  if (!program.ok()) return program.status();
  SmallVector<TensorImpl*, 4> outputs;
  for (const TensorRef& out : ctx.outputs) outputs.push_back(out.get());
  SmallVector<const TensorImpl*, 4> inputs;
  for (const TensorImpl* in : ctx.inputs) inputs.push_back(in);
  return program->run({inputs.data(), inputs.size()}, {outputs.data(), outputs.size()});
}

}  // namespace

void register_fused_ops(OpRegistry& r) {
  jit::install();  // native kernels for the fused programs (jit/jit.h)
  OpBuilder("FusedElementwise")
      .doc(
          "Runs an element-wise program (records {opcode, op, a, b}; opcode 1 unary, 2 binary) over tiles; "
          "the optimizer's fusion creates it. FusedElementwise([x, y], program=[2, 2, 0, 1, 1, 11, 2, -1], "
          "results=[3], shape=[2]) == sin(x * y)")
      .input("inputs")
      .output("outputs")  // one per entry of `results`
      .type_var(kNumericTypes | kBoolType)
      .attr("program", AttrType::kInts)
      .attr("results", AttrType::kInts)
      .attr("shape", AttrType::kInts)
      // Not kElementwise: broadcast inputs and several outputs, and an output may not alias an input (it is
      // written tile by tile while later instructions still read the inputs' same tile).
      // Not differentiable: the node only exists in optimized graphs, which autodiff never sees (the tape
      // replays the traced graph, and gradient functions are built from unoptimized graphs).
      .flags(kVariadicInput | kNotDifferentiable)
      .shape(&fused_shape)
      .prepare(&fused_prepare)
      .kernel(kNumericTypes | kBoolType, &fused_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("FusedReduction")
      .doc(
          "A FusedElementwise program whose value `reduce[1]` is reduced (reduce[0]: Sum 0, Mean 1, Prod 2, "
          "Max 3, Min 4) over the domain's last reduce[2] dims (keep_dims: reduce[3]); outputs: the results, "
          "then the reduction. FusedReduction([x, y], program=[2, 2, 0, 1], results=[], shape=[4], "
          "reduce=[0, 2, 1, 0]) == reduce_sum(x * y)")
      .input("inputs")
      .output("outputs")  // one per entry of `results`, then the reduction's
      .type_var(kNumericTypes)
      .attr("program", AttrType::kInts)
      .attr("results", AttrType::kInts)
      .attr("shape", AttrType::kInts)
      .attr("reduce", AttrType::kInts)
      .flags(kVariadicInput | kNotDifferentiable)  // as FusedElementwise
      .shape(&fused_shape)
      .prepare(&fused_prepare)
      .kernel(kNumericTypes, &fused_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember
