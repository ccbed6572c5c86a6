// Random ops. Kernels: kernels/random.h; seeds: kernels/seed.h.
//
// Stateful ops (RandomUniform, RandomStandardNormal, TruncatedNormal, RandomUniformInt) take the
// (seed, seed2) pair that tf.random.get_seed computes (the C++ façade, api/random.h, and the Python
// layer compute it from the global and op seeds). Each kernel owns a Philox stream per (op, dtype,
// seed, seed2) in SeedState, advanced by every call, so two calls differ and resetting the global seed
// replays them; (0, 0) means seeded from the OS. Stateless ops are pure functions of their seed input
// and shape: no state, foldable and deduplicable.
#include "ember/kernels/random.h"

#include <limits>
#include <string>

#include "ember/kernels/seed.h"
#include "ember/ops/families.h"
#include "ember/ops/registry.h"

namespace ember {
namespace {

using kernels::RandomDistribution;

std::string dtype_set_names(DTypeSet set) {
  std::string s;
  for (int i = 0; i < kNumDTypes; ++i) {
    if (set & (1u << i))
      s += std::string(s.empty() ? "" : ", ") + std::string(dtype_name(static_cast<DType>(i)));
  }
  return "{" + s + "}";
}

/// The output spec from the `shape` operand (input 0) and a dtype that must be in `allowed`.
Status random_output(InferContext& ctx, DType dtype, DTypeSet allowed) {
  if (!dtype_in(dtype, allowed))
    return invalid_argument(ctx.op->name, ": dtype must be one of ", dtype_set_names(allowed), ", got ",
                            dtype_name(dtype));
  auto shape = ctx.shape_operand(0);
  if (!shape.ok()) return shape.status();
  ctx.outputs.push_back(TensorSpec{dtype, *shape});
  return Status::OK();
}

/// minval < maxval (unless the output is empty: zero impossible draws are fine, as in TensorFlow), and
/// both representable in the output dtype.
Status check_int_range(InferContext& ctx, int64_t lo, int64_t hi, DType dtype) {
  if (dtype == DType::kInt32) {
    constexpr int64_t kMin = std::numeric_limits<int32_t>::min(), kMax = std::numeric_limits<int32_t>::max();
    if (lo < kMin || lo > kMax || hi < kMin || hi > kMax)
      return invalid_argument(ctx.op->name, ": minval ", lo, " and maxval ", hi, " must fit in int32");
  }
  if (lo >= hi && ctx.outputs[0].shape.num_elements() != 0 && ctx.outputs[0].shape.fully_defined())
    return invalid_argument(ctx.op->name, ": Need minval < maxval, got ", lo, " >= ", hi);
  return Status::OK();
}

/// The Philox stream of one stateful kernel execution: attrs seed and seed2 at `seed_attr`, +1.
kernels::PhiloxState stateful_start(const KernelContext& ctx, int seed_attr, DType dtype, int64_t n) {
  const uint64_t kernel_id = kernels::random_kernel_id(ctx.op->name, static_cast<uint64_t>(dtype) + 1);
  const kernels::SeedPair seeds{ctx.attr_int(seed_attr), ctx.attr_int(seed_attr + 1)};
  return kernels::SeedState::global().stateful_call(kernel_id, seeds, n);
}

/// The Philox stream of a stateless op from its seed input [s0, s1] (int32 or int64, sign-extended).
kernels::PhiloxState stateless_start(const TensorImpl& seed) {
  int64_t s[2] = {0, 0};
  visit_dtype<kIndexTypes>(seed.dtype(), [&]<typename T>() {
    s[0] = static_cast<int64_t>(seed.data<T>()[0]);
    s[1] = static_cast<int64_t>(seed.data<T>()[1]);
  });
  return kernels::stateless_philox_state(s[0], s[1]);
}

Status check_seed_input(InferContext& ctx) {
  const Shape& seed = ctx.inputs[1].shape;
  if (seed.rank_known() && (seed.rank() != 1 || (seed.dim(0) >= 0 && seed.dim(0) != 2)))
    return invalid_argument(ctx.op->name, ": seed must have shape [2], got ", seed.to_string());
  return Status::OK();
}

// ---- Stateful float ops: input shape; attrs dtype, seed, seed2.

Status stateful_float_shape(InferContext& ctx) { return random_output(ctx, ctx.attr_dtype(0), kFloatTypes); }

template <RandomDistribution kDist>
Status stateful_float_kernel(KernelContext& ctx) {
  TensorImpl& out = ctx.output(0);
  return kernels::fill_random(kDist, stateful_start(ctx, 1, out.dtype(), out.num_elements()), out);
}

// ---- RandomUniformInt: input shape; attrs minval, maxval, dtype, seed, seed2.

Status stateful_int_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(random_output(ctx, ctx.attr_dtype(2), kIndexTypes));
  return check_int_range(ctx, ctx.attr_int(0), ctx.attr_int(1), ctx.attr_dtype(2));
}

Status stateful_int_kernel(KernelContext& ctx) {
  TensorImpl& out = ctx.output(0);
  if (out.num_elements() == 0) return Status::OK();
  if (ctx.attr_int(0) >= ctx.attr_int(1))  // checked here when the shape was unknown while tracing
    return invalid_argument(ctx.op->name, ": Need minval < maxval, got ", ctx.attr_int(0),
                            " >= ", ctx.attr_int(1));
  return kernels::fill_random_int(stateful_start(ctx, 3, out.dtype(), out.num_elements()), ctx.attr_int(0),
                                  ctx.attr_int(1), out);
}

// ---- Stateless float ops: inputs shape and seed [2]; attr dtype (TensorFlow's order).

Status stateless_float_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_seed_input(ctx));
  return random_output(ctx, ctx.attr_dtype(0), kFloatTypes);
}

template <RandomDistribution kDist>
Status stateless_float_kernel(KernelContext& ctx) {
  return kernels::fill_random(kDist, stateless_start(ctx.input(1)), ctx.output(0));
}

// ---- StatelessRandomUniformInt: inputs shape and seed [2]; attrs minval, maxval, dtype.

Status stateless_int_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_seed_input(ctx));
  EMBER_RETURN_IF_ERROR(random_output(ctx, ctx.attr_dtype(2), kIndexTypes));
  return check_int_range(ctx, ctx.attr_int(0), ctx.attr_int(1), ctx.attr_dtype(2));
}

Status stateless_int_kernel(KernelContext& ctx) {
  TensorImpl& out = ctx.output(0);
  if (out.num_elements() == 0) return Status::OK();
  if (ctx.attr_int(0) >= ctx.attr_int(1))
    return invalid_argument(ctx.op->name, ": Need minval < maxval, got ", ctx.attr_int(0),
                            " >= ", ctx.attr_int(1));
  return kernels::fill_random_int(stateless_start(ctx.input(1)), ctx.attr_int(0), ctx.attr_int(1), out);
}

struct FloatRandomDecl {
  const char* name;
  const char* stateless_name;
  KernelFn stateful_kernel;
  KernelFn stateless_kernel;
  const char* what;  // completes the doc lines
};

#define EMBER_DIST(kDist) \
  &stateful_float_kernel<RandomDistribution::kDist>, &stateless_float_kernel<RandomDistribution::kDist>

const FloatRandomDecl kFloatRandomOps[] = {
    {"RandomUniform", "StatelessRandomUniform", EMBER_DIST(kUniform), "uniform in [0, 1)"},
    {"RandomStandardNormal", "StatelessRandomNormal", EMBER_DIST(kNormal), "standard normal"},
    {"TruncatedNormal", "StatelessTruncatedNormal", EMBER_DIST(kTruncatedNormal),
     "standard normal truncated to (-2, 2) (redrawn outside)"},
};
#undef EMBER_DIST

}  // namespace

void register_random_ops(OpRegistry& r) {
  for (const FloatRandomDecl& d : kFloatRandomOps) {
    OpBuilder(d.name)
        .doc(std::string("Floats ") + d.what +
             " from the stateful stream of (seed, seed2); (0, 0) seeds from "
             "the OS. " +
             d.name + "(shape=[2, 3], dtype=float32, seed=1, seed2=5) -> a [2, 3] tensor")
        .input_shape_like("shape")
        .output("output")
        .type_var(kFloatTypes)
        .attr("dtype", AttrType::kDType, DType::kFloat32)
        .attr("seed", AttrType::kInt, int64_t{0})
        .attr("seed2", AttrType::kInt, int64_t{0})
        .flags(kStateful | kNotDifferentiable)
        .dispatch_on_output()
        .shape(&stateful_float_shape)
        .kernel(kFloatTypes, d.stateful_kernel)
        .batching(BatchingRule::kFallback)
        .done(r);
    OpBuilder(d.stateless_name)
        .doc(std::string("Floats ") + d.what + ", a pure function of seed [s0, s1] and shape. " +
             d.stateless_name + "(shape=[3], seed=[1, 2]) is the same [3] tensor on every call")
        .input_shape_like("shape")
        .input_fixed("seed", kIndexTypes)
        .output("output")
        .type_var(kFloatTypes)
        .attr("dtype", AttrType::kDType, DType::kFloat32)
        .flags(kNotDifferentiable)
        .dispatch_on_output()
        .shape(&stateless_float_shape)
        .kernel(kFloatTypes, d.stateless_kernel)
        .batching(BatchingRule::kFallback)
        .done(r);
  }
  OpBuilder("RandomUniformInt")
      .doc(
          "Integers uniform in [minval, maxval) from the stateful stream of (seed, seed2). "
          "RandomUniformInt(shape=[4], minval=0, maxval=10, dtype=int32, seed=1, seed2=3) -> e.g. [9, 0, 7, "
          "9]")
      .input_shape_like("shape")
      .output("output")
      .type_var(kIndexTypes)
      .attr("minval", AttrType::kInt)
      .attr("maxval", AttrType::kInt)
      .attr("dtype", AttrType::kDType, DType::kInt32)
      .attr("seed", AttrType::kInt, int64_t{0})
      .attr("seed2", AttrType::kInt, int64_t{0})
      .flags(kStateful | kNotDifferentiable)
      .dispatch_on_output()
      .shape(&stateful_int_shape)
      .kernel(kIndexTypes, &stateful_int_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("StatelessRandomUniformInt")
      .doc(
          "Integers uniform in [minval, maxval), a pure function of seed [s0, s1] and shape. "
          "StatelessRandomUniformInt(shape=[3], seed=[7, 11], minval=0, maxval=100) == [5, 47, 62]")
      .input_shape_like("shape")
      .input_fixed("seed", kIndexTypes)
      .output("output")
      .type_var(kIndexTypes)
      .attr("minval", AttrType::kInt)
      .attr("maxval", AttrType::kInt)
      .attr("dtype", AttrType::kDType, DType::kInt32)
      .flags(kNotDifferentiable)
      .dispatch_on_output()
      .shape(&stateless_int_shape)
      .kernel(kIndexTypes, &stateless_int_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember
