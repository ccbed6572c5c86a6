// Random ops. Kernels: kernels/random.h; seeds: kernels/seed.h.
//
// Stateful ops (RandomUniform, RandomStandardNormal, TruncatedNormal, RandomUniformInt) take the
// (seed, seed2) pair that tf.random.get_seed computes (the C++ façade, api/random.h, and the Python
// layer compute it from the global and op seeds). Each kernel owns a Philox stream per (op, dtype,
// seed, seed2) in SeedState, advanced by every call, so two calls differ and resetting the global seed
// replays them; (0, 0) means seeded from the OS. Stateless ops are pure functions of their seed input
// and shape: no state, foldable and deduplicable.
#include "ember/kernels/random.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "ember/core/resource.h"
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

// ---- tf.random.Generator (python/ember/ops/stateful_random_ops.py), TF 2.21's design: the state is an
// int64 [3] variable [counter_lo, counter_hi, key]; RngReadAndSkip returns it and advances the counter,
// and the draw is a *V2 stateless op on that (key, counter). TF's V2 ops take uint64 key and counter;
// ember has no uint64, so they are int64 tensors holding the same bits.

constexpr int64_t kAlgPhilox = 1, kAlgThreeFry = 2, kAlgAutoSelect = 3;

/// The algorithm operand: Philox, or auto_select (Philox on CPU, as TF). ThreeFry is TF's too, but only
/// on XLA; its CPU kernels reject it as well.
Status check_alg(const char* op, int64_t alg) {
  if (alg == kAlgPhilox || alg == kAlgAutoSelect) return Status::OK();
  if (alg == kAlgThreeFry)
    return make_error(Code::kUnimplemented, op,
                      ": algorithm 2 (threefry) is only supported with XLA; use 1 (philox)");
  return invalid_argument(op, ": unsupported algorithm id ", alg, "; expected 1 (philox) or 3 (auto_select)");
}

int64_t scalar_int(const TensorImpl& t) {
  int64_t v = 0;
  visit_dtype<kIndexTypes>(t.dtype(), [&]<typename T>() { v = static_cast<int64_t>(t.data<T>()[0]); });
  return v;
}

Status check_scalar(InferContext& ctx, int i, const char* what) {
  const Shape& s = ctx.inputs[i].shape;
  if (s.rank_known() && s.rank() != 0)
    return invalid_argument(ctx.op->name, ": ", what, " must be a scalar, got shape ", s.to_string());
  return Status::OK();
}

/// RngReadAndSkip: attr resource; inputs alg and delta. Output: the state before the skip.
Status read_and_skip_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_scalar(ctx, 0, "alg"));
  EMBER_RETURN_IF_ERROR(check_scalar(ctx, 1, "delta"));
  ctx.outputs.push_back(TensorSpec{DType::kInt64, Shape({3})});
  return Status::OK();
}

Status read_and_skip_kernel(KernelContext& ctx) {
  const char* op = ctx.op->name.c_str();
  EMBER_RETURN_IF_ERROR(check_alg(op, scalar_int(ctx.input(0))));
  const int64_t delta = scalar_int(ctx.input(1));
  if (delta < 0) return invalid_argument(op, ": delta must be >= 0, got ", delta);
  auto variable = ResourceManager::global().find(ctx.attr_int(0), op);
  if (!variable.ok()) return variable.status();
  VariableResource& v = *variable.value();
  if (v.dtype() != DType::kInt64 || v.shape() != Shape({3}))
    return invalid_argument(op, ": the RNG state variable '", v.name(),
                            "' must be int64 of shape [3] (philox), got ", dtype_name(v.dtype()), " ",
                            v.shape().to_string());
  int64_t* out = ctx.output(0).mutable_data<int64_t>();
  return v.update([&](const TensorRef& current) -> StatusOr<TensorRef> {
    const int64_t* s = current->data<int64_t>();
    std::copy(s, s + 3, out);
    // Each output reserves 256 blocks, as the draws do (seed.h's kStatefulBlocksPerOutput), so skip(n) leaves
    // the state where a draw of n values would.
    const auto c0 = static_cast<uint64_t>(s[0]), c1 = static_cast<uint64_t>(s[1]);
    const kernels::PhiloxCounter next = kernels::philox_skip(
        kernels::PhiloxCounter{static_cast<uint32_t>(c0), static_cast<uint32_t>(c0 >> 32),
                               static_cast<uint32_t>(c1), static_cast<uint32_t>(c1 >> 32)},
        static_cast<uint64_t>(delta) * kernels::kStatefulBlocksPerOutput);
    auto updated = TensorImpl::allocate(DType::kInt64, Shape({3}), current->device());
    if (!updated.ok()) return updated.status();
    int64_t* u = updated.value()->mutable_data<int64_t>();
    u[0] = static_cast<int64_t>(uint64_t{next[0]} | (uint64_t{next[1]} << 32));
    u[1] = static_cast<int64_t>(uint64_t{next[2]} | (uint64_t{next[3]} << 32));
    u[2] = s[2];
    return std::move(updated).value();
  });
}

/// V2 stateless ops: inputs shape, key [1], counter [2], alg.
Status check_key_counter(InferContext& ctx) {
  const Shape& key = ctx.inputs[1].shape;
  const Shape& counter = ctx.inputs[2].shape;
  if (key.rank_known() && (key.rank() != 1 || (key.dim(0) >= 0 && key.dim(0) != 1)))
    return invalid_argument(ctx.op->name, ": key must have shape [1], got ", key.to_string());
  if (counter.rank_known() && (counter.rank() != 1 || (counter.dim(0) >= 0 && counter.dim(0) != 2)))
    return invalid_argument(ctx.op->name, ": counter must have shape [2] (philox), got ",
                            counter.to_string());
  return check_scalar(ctx, 3, "alg");
}

StatusOr<kernels::PhiloxState> key_counter_start(const KernelContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_alg(ctx.op->name.c_str(), scalar_int(ctx.input(3))));
  const auto k = static_cast<uint64_t>(ctx.input(1).data<int64_t>()[0]);
  const int64_t* c = ctx.input(2).data<int64_t>();
  const auto c0 = static_cast<uint64_t>(c[0]), c1 = static_cast<uint64_t>(c[1]);
  return kernels::PhiloxState{{static_cast<uint32_t>(k), static_cast<uint32_t>(k >> 32)},
                              {static_cast<uint32_t>(c0), static_cast<uint32_t>(c0 >> 32),
                               static_cast<uint32_t>(c1), static_cast<uint32_t>(c1 >> 32)}};
}

Status v2_float_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_key_counter(ctx));
  return random_output(ctx, ctx.attr_dtype(0), kFloatTypes);
}

template <RandomDistribution kDist>
Status v2_float_kernel(KernelContext& ctx) {
  auto start = key_counter_start(ctx);
  if (!start.ok()) return start.status();
  return kernels::fill_random(kDist, *start, ctx.output(0));
}

Status v2_int_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_key_counter(ctx));
  EMBER_RETURN_IF_ERROR(random_output(ctx, ctx.attr_dtype(2), kIndexTypes));
  return check_int_range(ctx, ctx.attr_int(0), ctx.attr_int(1), ctx.attr_dtype(2));
}

Status v2_int_kernel(KernelContext& ctx) {
  auto start = key_counter_start(ctx);
  if (!start.ok()) return start.status();
  TensorImpl& out = ctx.output(0);
  if (out.num_elements() == 0) return Status::OK();
  if (ctx.attr_int(0) >= ctx.attr_int(1))
    return invalid_argument(ctx.op->name, ": Need minval < maxval, got ", ctx.attr_int(0),
                            " >= ", ctx.attr_int(1));
  return kernels::fill_random_int(*start, ctx.attr_int(0), ctx.attr_int(1), out);
}

Status v2_full_int_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_key_counter(ctx));
  return random_output(ctx, ctx.attr_dtype(0), kIndexTypes);
}

Status v2_full_int_kernel(KernelContext& ctx) {
  auto start = key_counter_start(ctx);
  if (!start.ok()) return start.status();
  return kernels::fill_random_full_int(*start, ctx.output(0));
}

/// StatelessRandomUniformFullInt: inputs shape, seed [2]; attr dtype.
Status stateless_full_int_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_seed_input(ctx));
  return random_output(ctx, ctx.attr_dtype(0), kIndexTypes);
}

Status stateless_full_int_kernel(KernelContext& ctx) {
  return kernels::fill_random_full_int(stateless_start(ctx.input(1)), ctx.output(0));
}

// ---- Multinomial / StatelessMultinomial: inputs logits [batch, classes], num_samples (scalar).
// Each row: cdf of exp(logit - max finite logit) in double over the finite logits, then each sample is
// upper_bound(cdf, u * total) with u a double in [0, 1) from two consecutive words of the stream (TF's
// SimplePhilox::RandDouble). The rows read one sequential stream, which is TensorFlow's result whenever it
// runs the op as one shard (its shards skip to start_row * (num_samples + 3) / 4 blocks).

Status multinomial_shape(InferContext& ctx, int out_dtype_attr) {
  const Shape& logits = ctx.inputs[0].shape;
  const DType out = ctx.attr_dtype(out_dtype_attr);
  if (!dtype_in(out, kIndexTypes))
    return invalid_argument(ctx.op->name, ": output_dtype must be int32 or int64, got ", dtype_name(out));
  if (logits.rank_known() && logits.rank() != 2)
    return invalid_argument(ctx.op->name, ": logits should be a matrix [batch_size, num_classes], got shape ",
                            logits.to_string());
  EMBER_RETURN_IF_ERROR(check_scalar(ctx, 1, "num_samples"));
  int64_t n = -1;
  if (const TensorImpl* c = ctx.constant(1)) {
    n = scalar_int(*c);
    if (n < 0) return invalid_argument(ctx.op->name, ": num_samples should be nonnegative, got ", n);
  }
  if (logits.rank_known() && logits.dim(1) == 0 && n > 0)
    return invalid_argument(ctx.op->name, ": num_classes should be positive, got 0");
  const int64_t dims[2] = {logits.rank_known() ? logits.dim(0) : -1, n};
  auto shape = Shape::from_dims(dims, /*allow_unknown=*/true);
  if (!shape.ok()) return shape.status();
  ctx.outputs.push_back(TensorSpec{out, *shape});
  return Status::OK();
}

Status multinomial_fill(KernelContext& ctx, const kernels::PhiloxState& start) {
  const TensorImpl& logits = ctx.input(0);
  TensorImpl& out = ctx.output(0);
  const int64_t batch = logits.shape().dim(0), classes = logits.shape().dim(1);
  const int64_t samples = out.shape().dim(1);
  if (samples > 0 && classes == 0)
    return invalid_argument(ctx.op->name, ": num_classes should be positive, got 0");
  std::vector<double> cdf;
  try {
    cdf.resize(static_cast<size_t>(classes));
  } catch (const std::bad_alloc&) {
    return make_error(Code::kResourceExhausted, ctx.op->name, ": out of memory for ", classes, " classes");
  }
  kernels::PhiloxStream stream(start);
  bool ok = visit_dtype<kFloatTypes>(logits.dtype(), [&]<typename T>() {
    const T* x = logits.data<T>();
    for (int64_t b = 0; b < batch; ++b) {
      const T* row = x + b * classes;
      double max = std::numeric_limits<double>::lowest();
      for (int64_t j = 0; j < classes; ++j) {
        const double v = static_cast<double>(row[j]);
        if (std::isfinite(v)) max = std::max(max, v);
      }
      double total = 0;
      for (int64_t j = 0; j < classes; ++j) {
        const double v = static_cast<double>(row[j]);
        if (std::isfinite(v)) total += std::exp(v - max);
        cdf[j] = total;
      }
      for (int64_t s = 0; s < samples; ++s) {
        const uint32_t hi = stream.next_u32(), lo = stream.next_u32();
        const double target = kernels::philox_u64_to_double01(hi, lo) * total;
        const int64_t k = std::upper_bound(cdf.begin(), cdf.end(), target) - cdf.begin();
        if (out.dtype() == DType::kInt32) {
          out.mutable_data<int32_t>()[b * samples + s] = static_cast<int32_t>(k);
        } else {
          out.mutable_data<int64_t>()[b * samples + s] = k;
        }
      }
    }
  });
  if (!ok)
    return invalid_argument(ctx.op->name, ": logits must be floating point, got ",
                            dtype_name(logits.dtype()));
  return Status::OK();
}

int64_t ceil4(int64_t n) { return (n + 3) / 4 * 4; }

/// Multinomial attrs: seed, seed2, output_dtype.
Status multinomial_kernel(KernelContext& ctx) {
  const TensorImpl& out = ctx.output(0);
  const int64_t rows = out.shape().dim(0), samples = out.shape().dim(1);
  const uint64_t id =
      kernels::random_kernel_id(ctx.op->name, static_cast<uint64_t>(ctx.input(0).dtype()) + 1 +
                                                  (static_cast<uint64_t>(out.dtype()) << 8));
  const kernels::SeedPair seeds{ctx.attr_int(0), ctx.attr_int(1)};
  const kernels::PhiloxState start =
      kernels::SeedState::global().stateful_call(id, seeds, rows * ceil4(samples));
  return multinomial_fill(ctx, start);
}

/// StatelessMultinomial: inputs logits, num_samples, seed [2]; attr output_dtype.
Status stateless_multinomial_shape(InferContext& ctx) {
  const Shape& seed = ctx.inputs[2].shape;
  if (seed.rank_known() && (seed.rank() != 1 || (seed.dim(0) >= 0 && seed.dim(0) != 2)))
    return invalid_argument(ctx.op->name, ": seed must have shape [2], got ", seed.to_string());
  return multinomial_shape(ctx, 0);
}

Status stateless_multinomial_kernel(KernelContext& ctx) {
  return multinomial_fill(ctx, stateless_start(ctx.input(2)));
}

// ---- RandomShuffle: input value; attrs seed, seed2. Fisher-Yates from the first element up: element i
// swaps with i + next word % (n - i) (TF's RandomShuffle with a SingleSampleAdapter); rows of a
// rank >= 2 value move whole.

Status shuffle_shape(InferContext& ctx) {
  ctx.outputs.push_back(ctx.inputs[0]);
  return Status::OK();
}

Status shuffle_kernel(KernelContext& ctx) {
  const TensorImpl& in = ctx.input(0);
  TensorImpl& out = ctx.output(0);
  const int64_t n = in.shape().rank() == 0 ? 1 : in.shape().dim(0);
  const size_t row_bytes = n == 0 ? 0 : in.nbytes() / static_cast<size_t>(n);
  if (in.shape().rank() == 0 || n <= 1) {
    std::memcpy(out.mutable_raw_data(), in.raw_data(), in.nbytes());
    return Status::OK();
  }
  const uint64_t id = kernels::random_kernel_id(ctx.op->name, static_cast<uint64_t>(in.dtype()) + 1);
  const kernels::SeedPair seeds{ctx.attr_int(0), ctx.attr_int(1)};
  // TF reserves n - 1 words (ReserveSamples32); a 64-bit draw per swap past int32 sizes.
  const bool wide = n > std::numeric_limits<int32_t>::max();
  const uint64_t words = static_cast<uint64_t>(n - 1) * (wide ? 2 : 1);
  kernels::PhiloxStream stream(kernels::SeedState::global().stateful_call_blocks(id, seeds, (words + 3) / 4));
  std::vector<int64_t> perm;
  try {
    perm.resize(static_cast<size_t>(n));
  } catch (const std::bad_alloc&) {
    return make_error(Code::kResourceExhausted, ctx.op->name, ": out of memory for ", n, " rows");
  }
  for (int64_t i = 0; i < n; ++i) perm[i] = i;
  for (int64_t i = 0; i + 1 < n; ++i) {
    uint64_t bits = stream.next_u32();
    if (wide) bits |= static_cast<uint64_t>(stream.next_u32()) << 32;
    std::swap(perm[i], perm[i + static_cast<int64_t>(bits % static_cast<uint64_t>(n - i))]);
  }
  const char* src = static_cast<const char*>(in.raw_data());
  char* dst = static_cast<char*>(out.mutable_raw_data());
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * row_bytes, src + perm[i] * row_bytes, row_bytes);
  return Status::OK();
}

// ---- Gamma and Poisson. Stateful (RandomGamma, RandomPoissonV2): inputs shape, param; output shape +
// param's shape. Stateless (StatelessRandomGammaV2, StatelessRandomPoisson): inputs shape, seed, param;
// output `shape`, which must end with param's shape.

constexpr DTypeSet kGammaTypes = dtype_bit(DType::kFloat16) | dtype_bit(DType::kFloat32) |
                                 dtype_bit(DType::kFloat64);  // TF's: no bfloat16
constexpr DTypeSet kPoissonTypes = kGammaTypes | kIndexTypes;

Status append_dims(InferContext& ctx, const Shape& lead, const Shape& tail, DType dtype) {
  if (!lead.rank_known() || !tail.rank_known()) {
    ctx.outputs.push_back(TensorSpec{dtype, Shape::unknown_rank()});
    return Status::OK();
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < lead.rank(); ++i) dims.push_back(lead.dim(i));
  for (int i = 0; i < tail.rank(); ++i) dims.push_back(tail.dim(i));
  auto shape = Shape::from_dims(dims, /*allow_unknown=*/true);
  if (!shape.ok()) return shape.status();
  ctx.outputs.push_back(TensorSpec{dtype, *shape});
  return Status::OK();
}

/// The output `shape` of a stateless op must end with the parameter's shape.
Status stateless_param_shape(InferContext& ctx, int param, DType dtype, DTypeSet allowed) {
  EMBER_RETURN_IF_ERROR(check_seed_input(ctx));
  EMBER_RETURN_IF_ERROR(random_output(ctx, dtype, allowed));
  const Shape& out = ctx.outputs[0].shape;
  const Shape& p = ctx.inputs[param].shape;
  if (out.rank_known() && p.rank_known()) {
    bool ok = p.rank() <= out.rank();
    for (int i = 1; ok && i <= p.rank(); ++i) {
      const int64_t a = out.dim(out.rank() - i), b = p.dim(p.rank() - i);
      ok = a < 0 || b < 0 || a == b;
    }
    if (!ok)
      return invalid_argument(ctx.op->name, ": shape ", out.to_string(), " must end with the shape of ",
                              ctx.op->inputs[param].name, ", ", p.to_string());
  }
  return Status::OK();
}

int64_t per_param(const TensorImpl& out, const TensorImpl& param) {
  return param.num_elements() == 0 ? 0 : out.num_elements() / param.num_elements();
}

Status gamma_shape(InferContext& ctx) {
  auto shape = ctx.shape_operand(0);
  if (!shape.ok()) return shape.status();
  return append_dims(ctx, *shape, ctx.inputs[1].shape, ctx.inputs[1].dtype);
}

Status gamma_kernel(KernelContext& ctx) {
  TensorImpl& out = ctx.output(0);
  const TensorImpl& alpha = ctx.input(1);
  const uint64_t id = kernels::random_kernel_id(ctx.op->name, static_cast<uint64_t>(alpha.dtype()) + 1);
  const kernels::PhiloxState start = kernels::SeedState::global().stateful_call(
      id, kernels::SeedPair{ctx.attr_int(0), ctx.attr_int(1)}, out.num_elements());
  return kernels::fill_gamma(start, alpha, per_param(out, alpha), out);
}

Status stateless_gamma_shape(InferContext& ctx) {
  return stateless_param_shape(ctx, 2, ctx.inputs[2].dtype, kGammaTypes);
}

Status stateless_gamma_kernel(KernelContext& ctx) {
  TensorImpl& out = ctx.output(0);
  return kernels::fill_gamma(stateless_start(ctx.input(1)), ctx.input(2), per_param(out, ctx.input(2)), out);
}

/// RandomPoissonV2 attrs: seed, seed2, dtype.
Status poisson_shape(InferContext& ctx) {
  if (!dtype_in(ctx.attr_dtype(2), kPoissonTypes))
    return invalid_argument(ctx.op->name, ": dtype must be one of ", dtype_set_names(kPoissonTypes), ", got ",
                            dtype_name(ctx.attr_dtype(2)));
  auto shape = ctx.shape_operand(0);
  if (!shape.ok()) return shape.status();
  return append_dims(ctx, *shape, ctx.inputs[1].shape, ctx.attr_dtype(2));
}

Status poisson_kernel(KernelContext& ctx) {
  TensorImpl& out = ctx.output(0);
  const TensorImpl& rate = ctx.input(1);
  const uint64_t id = kernels::random_kernel_id(
      ctx.op->name, static_cast<uint64_t>(rate.dtype()) + 1 + (static_cast<uint64_t>(out.dtype()) << 8));
  const kernels::PhiloxState start = kernels::SeedState::global().stateful_call(
      id, kernels::SeedPair{ctx.attr_int(0), ctx.attr_int(1)}, out.num_elements());
  return kernels::fill_poisson(start, rate, per_param(out, rate), out);
}

/// StatelessRandomPoisson: inputs shape, seed, lam; attr dtype.
Status stateless_poisson_shape(InferContext& ctx) {
  return stateless_param_shape(ctx, 2, ctx.attr_dtype(0), kPoissonTypes);
}

Status stateless_poisson_kernel(KernelContext& ctx) {
  TensorImpl& out = ctx.output(0);
  return kernels::fill_poisson(stateless_start(ctx.input(1)), ctx.input(2), per_param(out, ctx.input(2)),
                               out);
}

// ---- Binomial. Inputs shape, then (StatelessRandomBinomial) seed, then counts and probs of one shape
// (the Python layer broadcasts them) that `shape` must end with. StatefulRandomBinomial reads and
// advances a Generator's state variable (attr resource, input alg) as RngReadAndSkip does.

Status check_counts_probs(InferContext& ctx, int counts) {
  const Shape& c = ctx.inputs[counts].shape;
  const Shape& p = ctx.inputs[counts + 1].shape;
  if (c.rank_known() && p.rank_known() && c.fully_defined() && p.fully_defined() && c != p)
    return invalid_argument(ctx.op->name, ": counts ", c.to_string(), " and probs ", p.to_string(),
                            " must have one shape (broadcast them first)");
  return Status::OK();
}

Status stateless_binomial_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_counts_probs(ctx, 2));
  return stateless_param_shape(ctx, 2, ctx.attr_dtype(0), kPoissonTypes);
}

Status stateless_binomial_kernel(KernelContext& ctx) {
  TensorImpl& out = ctx.output(0);
  return kernels::fill_binomial(stateless_start(ctx.input(1)), ctx.input(2), ctx.input(3),
                                per_param(out, ctx.input(2)), out);
}

/// StatefulRandomBinomial: inputs alg, shape, counts, probs; attrs resource, dtype.
Status stateful_binomial_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_scalar(ctx, 0, "alg"));
  EMBER_RETURN_IF_ERROR(check_counts_probs(ctx, 2));
  const DType dtype = ctx.attr_dtype(1);
  if (!dtype_in(dtype, kPoissonTypes))
    return invalid_argument(ctx.op->name, ": dtype must be one of ", dtype_set_names(kPoissonTypes), ", got ",
                            dtype_name(dtype));
  auto shape = ctx.shape_operand(1);
  if (!shape.ok()) return shape.status();
  ctx.outputs.push_back(TensorSpec{dtype, *shape});
  return Status::OK();
}

Status stateful_binomial_kernel(KernelContext& ctx) {
  const char* op = ctx.op->name.c_str();
  EMBER_RETURN_IF_ERROR(check_alg(op, scalar_int(ctx.input(0))));
  TensorImpl& out = ctx.output(0);
  const TensorImpl& counts = ctx.input(2);
  if (counts.num_elements() == 0 ? out.num_elements() != 0 : out.num_elements() % counts.num_elements() != 0)
    return invalid_argument(op, ": shape ", out.shape().to_string(), " must end with the shape of counts, ",
                            counts.shape().to_string());
  auto variable = ResourceManager::global().find(ctx.attr_int(0), op);
  if (!variable.ok()) return variable.status();
  VariableResource& v = *variable.value();
  if (v.dtype() != DType::kInt64 || v.shape() != Shape({3}))
    return invalid_argument(op, ": the RNG state variable '", v.name(),
                            "' must be int64 of shape [3] (philox), got ", dtype_name(v.dtype()), " ",
                            v.shape().to_string());
  kernels::PhiloxState start;
  EMBER_RETURN_IF_ERROR(v.update([&](const TensorRef& current) -> StatusOr<TensorRef> {
    const int64_t* s = current->data<int64_t>();
    const auto c0 = static_cast<uint64_t>(s[0]), c1 = static_cast<uint64_t>(s[1]),
               k = static_cast<uint64_t>(s[2]);
    start = kernels::PhiloxState{{static_cast<uint32_t>(k), static_cast<uint32_t>(k >> 32)},
                                 {static_cast<uint32_t>(c0), static_cast<uint32_t>(c0 >> 32),
                                  static_cast<uint32_t>(c1), static_cast<uint32_t>(c1 >> 32)}};
    // TF reserves a fixed 200 outputs per batch per 4 samples here, not one per output.
    const int64_t batches = counts.num_elements(), per_batch = per_param(out, counts);
    const auto reserved = static_cast<uint64_t>(batches * 2 * 100 * (per_batch + 3) / 4);
    const kernels::PhiloxState next =
        kernels::philox_skip(start, reserved * kernels::kStatefulBlocksPerOutput);
    auto updated = TensorImpl::allocate(DType::kInt64, Shape({3}), current->device());
    if (!updated.ok()) return updated.status();
    int64_t* u = updated.value()->mutable_data<int64_t>();
    u[0] = static_cast<int64_t>(uint64_t{next.counter[0]} | (uint64_t{next.counter[1]} << 32));
    u[1] = static_cast<int64_t>(uint64_t{next.counter[2]} | (uint64_t{next.counter[3]} << 32));
    u[2] = s[2];
    return std::move(updated).value();
  }));
  return kernels::fill_binomial(start, counts, ctx.input(3), per_param(out, counts), out);
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
  OpBuilder("RngReadAndSkip")
      .doc(
          "Returns the int64 [3] Philox state [counter_lo, counter_hi, key] of an RNG state variable and "
          "advances its counter by delta * 256 blocks (what a draw of delta values reserves). "
          "RngReadAndSkip(alg=1, delta=3, resource=v.id) on [1, 0, 0] -> [1, 0, 0], leaving [769, 0, 0]")
      .input_fixed("alg", kIndexTypes)
      .input_fixed("delta", kIndexTypes)
      .output("value")
      .type_var(dtype_bit(DType::kInt64))
      .attr("resource", AttrType::kInt)
      .flags(kStateful | kReadsResource | kWritesResource | kNotDifferentiable)
      .dispatch_on_output()
      .shape(&read_and_skip_shape)
      .kernel(DType::kInt64, &read_and_skip_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  struct V2Decl {
    const char* name;
    KernelFn kernel;
    const char* what;
  };
  const V2Decl v2_ops[] = {
      {"StatelessRandomUniformV2", &v2_float_kernel<RandomDistribution::kUniform>, "uniform in [0, 1)"},
      {"StatelessRandomNormalV2", &v2_float_kernel<RandomDistribution::kNormal>, "standard normal"},
      {"StatelessTruncatedNormalV2", &v2_float_kernel<RandomDistribution::kTruncatedNormal>,
       "standard normal truncated to (-2, 2)"},
  };
  for (const V2Decl& d : v2_ops) {
    OpBuilder(d.name)
        .doc(std::string("Floats ") + d.what +
             ", a pure function of the Philox key [1], counter [2] and shape. " + d.name +
             "(shape=[3], key=[0], counter=[1, 0], alg=1) == Generator.from_seed(1)'s first draw")
        .input_shape_like("shape")
        .input_fixed("key", dtype_bit(DType::kInt64))
        .input_fixed("counter", dtype_bit(DType::kInt64))
        .input_fixed("alg", kIndexTypes)
        .output("output")
        .type_var(kFloatTypes)
        .attr("dtype", AttrType::kDType, DType::kFloat32)
        .flags(kNotDifferentiable)
        .dispatch_on_output()
        .shape(&v2_float_shape)
        .kernel(kFloatTypes, d.kernel)
        .batching(BatchingRule::kFallback)
        .done(r);
  }
  OpBuilder("StatelessRandomUniformIntV2")
      .doc(
          "Integers uniform in [minval, maxval), a pure function of the Philox key [1], counter [2] and "
          "shape "
          "(minval and maxval are attributes here, inputs in TF). "
          "StatelessRandomUniformIntV2(shape=[2], key=[0], counter=[1, 0], alg=1, minval=0, maxval=10)")
      .input_shape_like("shape")
      .input_fixed("key", dtype_bit(DType::kInt64))
      .input_fixed("counter", dtype_bit(DType::kInt64))
      .input_fixed("alg", kIndexTypes)
      .output("output")
      .type_var(kIndexTypes)
      .attr("minval", AttrType::kInt)
      .attr("maxval", AttrType::kInt)
      .attr("dtype", AttrType::kDType, DType::kInt32)
      .flags(kNotDifferentiable)
      .dispatch_on_output()
      .shape(&v2_int_shape)
      .kernel(kIndexTypes, &v2_int_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("StatelessRandomUniformFullIntV2")
      .doc(
          "Integers over the dtype's whole range (raw Philox bits), a pure function of the key [1], counter "
          "[2] "
          "and shape. StatelessRandomUniformFullIntV2(shape=[2], key=[0], counter=[1, 0], alg=1, "
          "dtype=int64)")
      .input_shape_like("shape")
      .input_fixed("key", dtype_bit(DType::kInt64))
      .input_fixed("counter", dtype_bit(DType::kInt64))
      .input_fixed("alg", kIndexTypes)
      .output("output")
      .type_var(kIndexTypes)
      .attr("dtype", AttrType::kDType, DType::kInt64)
      .flags(kNotDifferentiable)
      .dispatch_on_output()
      .shape(&v2_full_int_shape)
      .kernel(kIndexTypes, &v2_full_int_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("StatelessRandomUniformFullInt")
      .doc(
          "Integers over the dtype's whole range (raw Philox bits), a pure function of seed [s0, s1] and "
          "shape. "
          "StatelessRandomUniformFullInt(shape=[2], seed=[1, 2], dtype=int64)")
      .input_shape_like("shape")
      .input_fixed("seed", kIndexTypes)
      .output("output")
      .type_var(kIndexTypes)
      .attr("dtype", AttrType::kDType, DType::kInt64)
      .flags(kNotDifferentiable)
      .dispatch_on_output()
      .shape(&stateless_full_int_shape)
      .kernel(kIndexTypes, &stateless_full_int_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("Multinomial")
      .doc(
          "Class indices drawn from each row of logits [batch, classes] (unnormalized log-probabilities), "
          "num_samples per row, from the stateful stream of (seed, seed2). "
          "Multinomial(logits=[[0., 0.]], num_samples=3, seed=1, seed2=2) -> e.g. [[1, 0, 0]]")
      .input("logits")
      .input_fixed("num_samples", kIndexTypes)
      .output("output")
      .type_var(kFloatTypes)
      .attr("seed", AttrType::kInt, int64_t{0})
      .attr("seed2", AttrType::kInt, int64_t{0})
      .attr("output_dtype", AttrType::kDType, DType::kInt64)
      .flags(kStateful | kNotDifferentiable)
      .shape([](InferContext& ctx) { return multinomial_shape(ctx, 2); })
      .kernel(kFloatTypes, &multinomial_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("StatelessMultinomial")
      .doc(
          "Class indices drawn from each row of logits [batch, classes], num_samples per row, a pure "
          "function "
          "of seed [s0, s1]. StatelessMultinomial(logits=[[0., 0.]], num_samples=3, seed=[1, 2]) -> the same "
          "[1, 3] tensor every call")
      .input("logits")
      .input_fixed("num_samples", kIndexTypes)
      .input_fixed("seed", kIndexTypes)
      .output("output")
      .type_var(kFloatTypes)
      .attr("output_dtype", AttrType::kDType, DType::kInt64)
      .flags(kNotDifferentiable)
      .shape(&stateless_multinomial_shape)
      .kernel(kFloatTypes, &stateless_multinomial_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("RandomShuffle")
      .doc(
          "The value with its first dimension randomly permuted, from the stateful stream of (seed, seed2). "
          "RandomShuffle(value=[1, 2, 3], seed=1, seed2=2) -> e.g. [3, 1, 2]")
      .input("value")
      .output("output")
      .type_var(kAllTypes)
      .attr("seed", AttrType::kInt, int64_t{0})
      .attr("seed2", AttrType::kInt, int64_t{0})
      .flags(kStateful | kNotDifferentiable)
      .shape(&shuffle_shape)
      .kernel(kAllTypes, &shuffle_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("RandomGamma")
      .doc(
          "Gamma(alpha, 1) draws of shape `shape` + alpha's shape from the stateful stream of (seed, seed2). "
          "RandomGamma(shape=[2], alpha=[1., 3.], seed=1, seed2=2) -> a [2, 2] tensor")
      .input_shape_like("shape")
      .input("alpha")
      .output("output")
      .type_var(kGammaTypes)
      .attr("seed", AttrType::kInt, int64_t{0})
      .attr("seed2", AttrType::kInt, int64_t{0})
      .flags(kStateful | kNotDifferentiable)
      .dispatch_on_input(1)
      .shape(&gamma_shape)
      .kernel(kGammaTypes, &gamma_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("StatelessRandomGammaV2")
      .doc(
          "Gamma(alpha, 1) draws of shape `shape` (ending with alpha's shape), a pure function of seed [s0, "
          "s1]. "
          "StatelessRandomGammaV2(shape=[3, 2], seed=[1, 2], alpha=[1., 3.])")
      .input_shape_like("shape")
      .input_fixed("seed", kIndexTypes)
      .input("alpha")
      .output("output")
      .type_var(kGammaTypes)
      .flags(kNotDifferentiable)
      .dispatch_on_input(2)
      .shape(&stateless_gamma_shape)
      .kernel(kGammaTypes, &stateless_gamma_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("RandomPoissonV2")
      .doc(
          "Poisson(rate) draws of shape `shape` + rate's shape from the stateful stream of (seed, seed2). "
          "RandomPoissonV2(shape=[2], rate=[1., 30.], seed=1, seed2=2, dtype=int64) -> a [2, 2] tensor")
      .input_shape_like("shape")
      .input("rate")
      .output("output")
      .type_var(kPoissonTypes)
      .attr("seed", AttrType::kInt, int64_t{0})
      .attr("seed2", AttrType::kInt, int64_t{0})
      .attr("dtype", AttrType::kDType, DType::kInt64)
      .flags(kStateful | kNotDifferentiable)
      .dispatch_on_input(1)
      .shape(&poisson_shape)
      .kernel(kPoissonTypes, &poisson_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("StatelessRandomPoisson")
      .doc(
          "Poisson(lam) draws of shape `shape` (ending with lam's shape), a pure function of seed [s0, s1]. "
          "StatelessRandomPoisson(shape=[3], seed=[1, 2], lam=[4.], dtype=int32)")
      .input_shape_like("shape")
      .input_fixed("seed", kIndexTypes)
      .input("lam")
      .output("output")
      .type_var(kPoissonTypes)
      .attr("dtype", AttrType::kDType, DType::kInt32)
      .flags(kNotDifferentiable)
      .dispatch_on_input(2)
      .shape(&stateless_poisson_shape)
      .kernel(kPoissonTypes, &stateless_poisson_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("StatelessRandomBinomial")
      .doc(
          "Binomial(counts, probs) draws of shape `shape` (ending with the shape of counts and probs, which "
          "match), a pure function of seed [s0, s1]. "
          "StatelessRandomBinomial(shape=[3, 2], seed=[1, 2], counts=[10., 20.], probs=[.5, .8], "
          "dtype=int32)")
      .input_shape_like("shape")
      .input_fixed("seed", kIndexTypes)
      .input("counts")
      .input("probs")
      .output("output")
      .type_var(kGammaTypes)
      .attr("dtype", AttrType::kDType, DType::kInt64)
      .flags(kNotDifferentiable)
      .dispatch_on_input(2)
      .shape(&stateless_binomial_shape)
      .kernel(kGammaTypes, &stateless_binomial_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("StatefulRandomBinomial")
      .doc(
          "Binomial(counts, probs) draws of shape `shape` from a Generator's state variable, which it "
          "advances "
          "by 256 blocks per output. StatefulRandomBinomial(alg=1, shape=[2], counts=[10.], probs=[.5], "
          "resource=g.state.id, dtype=int32)")
      .input_fixed("alg", kIndexTypes)
      .input_shape_like("shape")
      .input("counts")
      .input("probs")
      .output("output")
      .type_var(kGammaTypes)
      .attr("resource", AttrType::kInt)
      .attr("dtype", AttrType::kDType, DType::kInt64)
      .flags(kStateful | kReadsResource | kWritesResource | kNotDifferentiable)
      .dispatch_on_input(2)
      .shape(&stateful_binomial_shape)
      .kernel(kGammaTypes, &stateful_binomial_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember
