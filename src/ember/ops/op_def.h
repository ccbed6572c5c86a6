// The op registry's one declaration per op (architecture.md §0.1): signature, dtype rules, attributes,
// shape function, kernels per dtype, flags, gradient slot and a one-line doc. Eager dispatch, tracing,
// the executor, autodiff and the bindings all read an OpDef; nothing else describes an op.
#pragma once

#include <climits>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "ember/core/dtype.h"
#include "ember/core/small_vector.h"
#include "ember/core/status.h"
#include "ember/core/tensor_impl.h"

namespace ember {

/// kDTypes and kShapes are TensorFlow's list(type) and list(shape) (ParseExampleV2's Tdense and
/// dense_shapes); a Shape in a list may have unknown dims or an unknown rank.
enum class AttrType : uint8_t { kInt, kFloat, kBool, kDType, kInts, kString, kTensor, kDTypes, kShapes };

/// An attribute value. Ops take their attributes by position, in the order the OpDef declares them. The
/// alternatives follow AttrType's order.
using AttrValue = std::variant<int64_t, double, bool, DType, std::vector<int64_t>, std::string, TensorRef,
                               std::vector<DType>, std::vector<Shape>>;

struct AttrDef {
  std::string name;
  AttrType type;
  bool has_default = false;
  AttrValue default_value;
};

/// Which dtypes an input accepts: either one of the op's type variables (all inputs naming the same
/// variable share one dtype, as TensorFlow's "T") or a fixed set.
struct TypeRule {
  int8_t type_var = -1;  // 0 = "T", 1 = "U", or -1 for a fixed set
  DTypeSet allowed = 0;  // used when type_var == -1
};

struct ArgDef {
  std::string name;
  TypeRule type;
  /// A shape-like operand (a shape, axes, a permutation, multiples, begin/end/strides, ...): an int32 or
  /// int64 tensor whose value the shape function reads. Eagerly the value is always there; while tracing
  /// it is there when constant, and otherwise tracing works out what it can of it (PartialValue).
  bool shape_like = false;
};

/// What is known of the value of an int tensor of rank 0 or 1 (TensorFlow's shape refiner does the same
/// from Shape, StridedSlice, Pack, ConcatV2 and arithmetic): the length when known, and each element or
/// kUnknown. A shape computed as tf.stack([tf.shape(x)[0] // 2, 2]) is [unknown, 2]. Also of a matrix
/// (Pad's paddings, tf.stack([[0, 0], [n, n]])): then `values` holds its elements row by row.
struct PartialValue {
  static constexpr int64_t kUnknown = INT64_MIN;
  bool length_known = false;  // for a matrix: its shape is known
  bool scalar = false;        // the tensor is rank 0 (then `values` has one element)
  std::vector<int64_t> values;
  int64_t columns = 0;  // > 0: the tensor is a [values.size() / columns, columns] matrix

  bool matrix() const { return columns > 0; }

  bool fully_known() const;
  /// The value as a Shape: unknown elements (and -1, TensorFlow's "unknown" in a shape operand) become
  /// unknown dims; an unknown length is an unknown rank.
  Shape as_shape() const;
  static PartialValue unknown() { return {}; }
  static PartialValue of_length(int64_t n, bool scalar);
  /// A matrix of unknown elements; columns must be > 0.
  static PartialValue of_matrix(int64_t rows, int64_t columns);
  static PartialValue from_tensor(const TensorImpl& t);  // t must be int32 or int64 with rank <= 2
};

/// A dtype and a possibly partially known shape: what tracing knows about a value.
struct TensorSpec {
  DType dtype = DType::kFloat32;
  Shape shape;
};

enum OpFlags : uint32_t {
  kStateful = 1u << 0,            // has side effects or randomness: never folded, deduplicated or pruned
  kCommutative = 1u << 1,         // inputs may be swapped (CSE canonicalises)
  kElementwise = 1u << 2,         // output element i depends only on input elements i (fusion)
  kNotDifferentiable = 1u << 3,   // autodiff stops here (integer outputs, comparisons, ...)
  kKernelAllocates = 1u << 4,     // the kernel creates its outputs (views, data-dependent shapes)
  kVariadicInput = 1u << 5,       // one declared input repeats (OpDef::variadic_input: AddN, ConcatV2, Pack)
  kVariadicMayBeEmpty = 1u << 6,  // ... and may repeat zero times (PartitionedCall with no arguments)
  kReadsOnlyShape = 1u << 7,      // the kernel reads its inputs' dtype and shape, never their values
  kReadsResource = 1u << 8,       // reads the variable named by attribute 0 ("resource")
  kWritesResource = 1u << 9,      // writes the variable named by attribute 0 ("resource")
  kOverwritesInput0 = 1u << 10,   // output 0 may take input 0's dying buffer (InplaceUpdate; with
                                  // kKernelAllocates, the kernel gets it as reusable_input0)
  kPairedLists = 1u << 11,        // two declared inputs, both lists of the same length (DynamicStitch)
  kScheduleEarly = 1u << 12,      // the plan runs it as soon as its inputs are ready (passes/schedule.cc)
};

/// How pfor (python/ember/pfor.py) runs the op on a batch of examples stacked on a new leading dimension
/// (Note [Vectorising a backward graph] there). The registry test fails on kUndeclared.
enum class BatchingRule : uint8_t {
  kUndeclared,
  kElementwise,   // a map over elements: the op applied to the batched value as it is
  kBroadcasting,  // operands of lower rank get 1s after the batch dimension, then the op as it is
  kCustom,        // a rule in pfor.py keyed by the op's name
  kFallback,      // no rule: pfor says so and the jacobian runs its loop instead
};

struct OpDef;

/// An op's attributes by position, with typed accessors: the part that shape functions, kernels and
/// gradient rules read alike.
struct AttrReader {
  std::span<const AttrValue> attrs;

  int64_t attr_int(int i) const { return std::get<int64_t>(attrs[i]); }
  double attr_float(int i) const { return std::get<double>(attrs[i]); }
  bool attr_bool(int i) const { return std::get<bool>(attrs[i]); }
  DType attr_dtype(int i) const { return std::get<DType>(attrs[i]); }
  const std::vector<int64_t>& attr_ints(int i) const { return std::get<std::vector<int64_t>>(attrs[i]); }
  const std::string& attr_string(int i) const { return std::get<std::string>(attrs[i]); }
  const TensorRef& attr_tensor(int i) const { return std::get<TensorRef>(attrs[i]); }
  const std::vector<DType>& attr_dtypes(int i) const { return std::get<std::vector<DType>>(attrs[i]); }
  const std::vector<Shape>& attr_shapes(int i) const { return std::get<std::vector<Shape>>(attrs[i]); }
};

/// What a shape function sees: input specs, the value of inputs that are constant (always, eagerly;
/// when folded, while tracing), and the attributes. It fills `outputs`, one spec per output.
struct InferContext : AttrReader {
  const OpDef* op = nullptr;
  std::span<const TensorSpec> inputs;
  std::span<const TensorImpl* const> constants;  // same length as inputs; null where unknown
  /// What tracing worked out of shape-like operands that are not constant (empty, or one per input with
  /// null where nothing is known).
  std::span<const PartialValue* const> partial_values;
  SmallVector<TensorSpec, 2> outputs;

  const TensorImpl* constant(int i) const {
    return static_cast<size_t>(i) < constants.size() ? constants[i] : nullptr;
  }
  /// What is known of shape-like input `i`'s value: everything when it is a constant, the partial value
  /// tracing found, or only its length (from its static shape).
  PartialValue value_of(int i) const;
  /// The same for an int matrix operand (Pad's paddings); unknown() until its [rows, columns] is known.
  PartialValue matrix_value_of(int i) const;
  /// Shape-like input `i` as a shape (unknown dims where its elements are unknown); an error naming the
  /// op unless it is an int vector.
  StatusOr<Shape> shape_operand(int i) const;
};

/// What a kernel sees. Unless the op is kKernelAllocates, `outputs` arrive allocated with the shapes
/// the shape function inferred.
struct KernelContext : AttrReader {
  const OpDef* op = nullptr;
  std::span<TensorImpl* const> inputs;
  std::span<const TensorSpec> output_specs;
  std::span<TensorRef> outputs;

  /// What the op's `prepare` built for this node's static shapes (null when it has none or was not
  /// prepared: a kernel must then work from its inputs alone).
  const void* prepared = nullptr;

  /// Input 0 itself where the op is kKernelAllocates and kOverwritesInput0, input 0 dies here and nothing
  /// else holds its buffer: the kernel may build output 0 over that buffer (a list growing in place, Note
  /// [Lists growing in place] in ops/tensor_array.cc). Empty otherwise.
  TensorRef reusable_input0;

  const TensorImpl& input(int i) const { return *inputs[i]; }
  TensorImpl& output(int i) const { return *outputs[i]; }
  /// The values of shape-like input `i` (an int32 or int64 tensor of rank 0 or 1).
  std::vector<int64_t> int_values(int i) const;
  /// Shape-like input `i` as a shape; an error naming the op unless it is an int vector.
  StatusOr<Shape> shape_operand(int i) const;
};

/// What an op's `prepare` sees: a graph node's attributes and static input and output specs.
struct PrepareContext : AttrReader {
  const OpDef* op = nullptr;
  std::span<const TensorSpec> inputs;
  std::span<const TensorSpec> outputs;
  /// Inputs that are graph constants (their values are fixed for the plan's life); null elsewhere.
  std::span<const TensorImpl* const> constants;
  const TensorImpl* constant(int i) const {
    return static_cast<size_t>(i) < constants.size() ? constants[i] : nullptr;
  }
};

using ShapeFn = Status (*)(InferContext& ctx);
using KernelFn = Status (*)(KernelContext& ctx);
/// Work a kernel can do once per graph node rather than once per call (decoding a program, planning
/// loops for fixed shapes): the executor calls it when it compiles a plan whose shapes are static and
/// hands the result to every call as KernelContext::prepared.
using PrepareFn = StatusOr<std::shared_ptr<const void>> (*)(const PrepareContext& ctx);
struct GradContext;  // ops/gradient.h
/// The op's gradient rule (architecture.md §0.6): given the op's inputs, outputs and the gradients of its
/// outputs, it emits ember ops that compute the gradients of its inputs. The ops run eagerly or, while a
/// trace is active, become graph nodes, so one rule serves eager backprop, higher-order gradients and
/// graph functions. Failures throw StatusError. An op without a rule is kNotDifferentiable, reads a
/// variable (the tape treats the read as a source) or is a function call (the autodiff layer builds the
/// callee's gradient function).
using GradFn = void (*)(GradContext& ctx);

struct OpDef {
  std::string name;  // TensorFlow's op type name: "AddV2" is spelled "Add", "MatMul", "Sum", ...
  std::string doc;   // one line, with an example
  std::vector<ArgDef> inputs;
  std::vector<std::string> outputs;  // names; variadic-output ops (Split, Unpack) declare one
  std::vector<AttrDef> attrs;
  DTypeSet type_vars[2] = {0, 0};
  uint32_t flags = 0;
  ShapeFn shape_fn = nullptr;
  KernelFn kernels[kNumDTypes] = {};
  /// Which input's dtype selects the kernel; -1 selects by the dtype of output 0 (Cast, Fill, random).
  int dispatch_input = 0;
  GradFn grad = nullptr;
  PrepareFn prepare = nullptr;
  /// The element-wise tile function (architecture.md §0.1): the kernels::UnaryOp or kernels::BinaryOp whose
  /// inner loop computes this op, so element-wise fusion can run it over a tile; -1 where none applies.
  int16_t tile_unary = -1;
  int16_t tile_binary = -1;
  BatchingRule batching = BatchingRule::kUndeclared;
  /// The snake_case name (TensorFlow's) of the C++ façade function and the Python wrapper generated for the
  /// op, which only call it; empty where the wrapper is written by hand because it does more.
  std::string api_name;
  int index = -1;  // position in the registry
  /// For a kVariadicInput op, the declared input that repeats: the last one (AddN, Pack) or one followed by
  /// fixed inputs (ConcatV2's `values` before its `axis`, as in TensorFlow); with kPairedLists, the first
  /// of its two lists. Note [Variadic inputs].
  int variadic_input = -1;

  bool has_flag(OpFlags f) const { return (flags & f) != 0; }
  int attr_index(std::string_view attr_name) const;
  /// The declared input that actual input `k` of `n` instantiates.
  size_t declared_index(size_t k, size_t n) const;
  const ArgDef& arg_of(size_t k, size_t n) const { return inputs[declared_index(k, n)]; }
  /// How many of `n` actual inputs the variadic list holds (0 for an op without one).
  size_t num_variadic(size_t n) const;
};

}  // namespace ember
