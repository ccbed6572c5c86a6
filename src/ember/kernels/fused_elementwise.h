// Fused element-wise programs (architecture.md §6, "Fusion"): a chain or DAG of unary and binary
// element-wise ops runs as one kernel that streams over tiles of the output domain small enough to stay in
// L1, so no intermediate tensor is ever written to memory.
//
// A program is written in SSA form over value ids: ids 0..num_inputs-1 are the inputs (each broadcasts to
// the domain, NumPy style), and instruction i defines id num_inputs + i. It is stored as flat int64
// records of kFusedInstructionWidth ints, {opcode, op, a, b} (b = -1 for a unary op), which is what the
// FusedElementwise op keeps in its "program" attribute. For example, with inputs x (id 0) and y (id 1),
// sin(x * y) + x is
//     {kBinary, kMul, 0, 1,   kUnary, kSin, 2, -1,   kBinary, kAdd, 3, 0}   results {4}
//
// Running a program first turns it into register bytecode for the actual input shapes: values live in
// tile-sized scratch registers that are reused once dead, a result is computed straight into its output
// tensor, a full-shape input is read in place, a scalar input feeds the loops' scalar variants, and a
// broadcast input is either read from a pattern expanded once per call (when it repeats with a period of
// at most a tile, e.g. a bias row) or gathered per tile with stride-0 dimensions. The per-op inner loops
// are the ISA-selected ones of elementwise.h.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "ember/core/dtype.h"
#include "ember/core/shape.h"
#include "ember/core/small_vector.h"
#include "ember/core/status.h"
#include "ember/core/tensor_impl.h"
#include "ember/kernels/elementwise.h"
#include "ember/kernels/reduce.h"

namespace ember::kernels {

struct PreparedFusedProgram;

enum class FusedOpcode : int64_t { kUnary = 1, kBinary = 2 };
inline constexpr int kFusedInstructionWidth = 4;

struct FusedInstruction {
  FusedOpcode opcode = FusedOpcode::kUnary;
  uint8_t op = 0;  // a UnaryOp or a BinaryOp, by opcode
  int32_t a = -1;  // operand value ids
  int32_t b = -1;
};

/// Appends one instruction to a flat program; returns the value id it defines.
int64_t append_unary(std::vector<int64_t>& code, int num_inputs, UnaryOp op, int64_t a);
int64_t append_binary(std::vector<int64_t>& code, int num_inputs, BinaryOp op, int64_t a, int64_t b);

/// Whether `op` may appear in a program over `dtype`: its loop exists and keeps the dtype (comparisons
/// produce bool), and it cannot fail at run time (integer FloorDiv, FloorMod and Pow reject zero divisors
/// and negative exponents, which an intermediate value of a program could not report).
bool fusible_unary(UnaryOp op, DType dtype);
bool fusible_binary(BinaryOp op, DType dtype);

/// A decoded, validated program over one dtype. Inputs and outputs all have that dtype; the outputs have
/// the domain's shape and the inputs broadcast to it.
/// NumPy broadcasting of two fully defined shapes into `out` (which may be one of them); false when they
/// do not broadcast. No Status: it runs for every call of a dynamic node (the executor's element-wise
/// nodes use it too; it belongs beside broadcast_shapes in core/shape.h).
bool broadcast_into(const Shape& a, const Shape& b, Shape& out);

// Note [Native fused kernels]
// A program bound to shapes (static, or a dynamic node's shapes on first use) asks the installed
// NativeFusedCompiler (the jit/ layer, above this one) for native code and keeps running on the interpreter
// meanwhile. The compiler fills the binding's slot from its own thread when the code is ready; each call
// reads the slot once, so a call runs wholly on one or the other and the switch happens between calls. A
// native kernel computes n elements of every result from per-input pointers (contiguous, or the one
// element of a scalar input) with each element kept in registers through the whole program; the tiling,
// broadcasting (patterns, gathers) and threads stay the interpreter's (run_binding).

/// Native code for one bound program: n elements, from inputs[k] (n contiguous elements, or one element
/// where the binding's input k is a scalar) to outputs[j] (n contiguous elements).
using NativeFusedFn = void (*)(const void* const* inputs, void* const* outputs, int64_t n);

/// Where native code arrives (a fused kernel here, a native loop in jit/native_loop.h). `owner` keeps the
/// code alive as long as a binding may run it.
template <typename Fn>
class NativeSlot {
 public:
  Fn get() const { return fn_.load(std::memory_order_acquire); }
  void publish(Fn fn, std::shared_ptr<const void> owner) {
    std::lock_guard<std::mutex> lock(mu_);
    owner_ = std::move(owner);
    fn_.store(fn, std::memory_order_release);
  }

 private:
  std::atomic<Fn> fn_{nullptr};
  std::mutex mu_;
  std::shared_ptr<const void> owner_;
};
using NativeFusedSlot = NativeSlot<NativeFusedFn>;

class FusedProgram;

// Note [Fused reductions]
// A program may end in a reduction of one of its values over the domain's last `reduced_dims` dims (every
// dim: one number; the last: one per row), as the fusion pass makes of reduce_sum(x * y + z) or of the
// sum in a softmax. The reduced value never goes to memory: the program writes it, chunk by chunk, to a
// per-thread buffer of one tile (or to its own output when it is also a result), and the reduction loop of
// kernels/reduce.h (the ISA-selected row loop, vectorised over fixed lanes) folds the chunk into an
// accumulator while it is in L1. The chunks are fixed by the shape alone: a row shorter than a tile goes
// whole into a chunk with the rows after it (each row reduced alone), a longer row is cut into tiles whose
// partial accumulators are merged in row order after the parallel loop. So the result depends on the
// shape only, never on the thread count, and the interpreter and the native kernel, which run the same
// chunks and hand the same values to the same reduction loop, agree bit for bit. The accumulation itself
// is the reduction loop's, not code the JIT emits: the reduction is memory-bound, and one shared loop is
// what makes the two tiers give the same bits.
struct FusedReductionSpec {
  ReduceOp op = ReduceOp::kSum;
  int result = -1;        // index into results() of the reduced value
  int reduced_dims = 0;   // the domain's trailing dims reduced
  bool internal = false;  // the value is no output of its own (the last entry of results())
};

/// Compiles bound programs to native code (implemented by jit/; none is installed without it).
class NativeFusedCompiler {
 public:
  virtual ~NativeFusedCompiler() = default;
  /// Asked once per binding. `scalar_inputs[k]` says that input k arrives as a pointer to one element.
  /// Returns at once (or, in the compiler's synchronous mode, once the slot is filled); fills `slot` when
  /// the code is ready, never if it cannot make it (the interpreter keeps running).
  virtual void request(const FusedProgram& program, std::span<const bool> scalar_inputs,
                       std::shared_ptr<NativeFusedSlot> slot) = 0;
};
/// Installs the compiler (nullptr: none). Bindings made afterwards ask it.
void set_native_fused_compiler(NativeFusedCompiler* compiler);

/// How many fused runs (of prepared programs) went native and how many ran on the interpreter.
struct FusedRunCounts {
  int64_t native = 0;
  int64_t interpreted = 0;
};
FusedRunCounts fused_run_counts();

class FusedProgram {
 public:
  /// Checks every record, operand (defined before use) and result id; fails naming the bad instruction.
  static StatusOr<FusedProgram> decode(std::span<const int64_t> code, int num_inputs,
                                       std::span<const int64_t> results, DType dtype);
  /// As decode, then add_reduction(op, value, reduced_dims); `results` may be empty (the reduction is the
  /// program's only output).
  static StatusOr<FusedProgram> decode_reducing(std::span<const int64_t> code, int num_inputs,
                                                std::span<const int64_t> results, DType dtype, ReduceOp op,
                                                int64_t value, int64_t reduced_dims);

  int num_inputs() const { return num_inputs_; }
  int num_results() const { return static_cast<int>(results_.size()); }
  DType dtype() const { return dtype_; }
  std::span<const FusedInstruction> instructions() const { return instructions_; }
  std::span<const int32_t> results() const { return results_; }

  /// Ends the program with a reduction (Note [Fused reductions]) of value `value`, an instruction's result,
  /// over the domain's last `reduced_dims` (>= 1) dims. A value that is not a result becomes an internal
  /// one, appended to results(). `op` is Sum, Mean, Prod, Max or Min, with a loop for the dtype.
  Status add_reduction(ReduceOp op, int64_t value, int64_t reduced_dims);
  const std::optional<FusedReductionSpec>& reduction() const { return reduction_; }
  /// The tensors a run writes: one per result that is not internal, then the reduction's output (its
  /// elements are the domain's leading dims; only their count matters).
  int num_outputs() const;

  /// Runs over the domain given by the outputs' shape; each input must broadcast to it. Outputs of
  /// different shapes are allowed: each shape runs the part of the program its results need (Note [Fusion
  /// over unknown dimensions]). Outputs must not alias inputs: a tile of an output is written before
  /// later instructions read the same tile of the inputs. With a reduction the domain is the inputs'
  /// broadcast, and every other output has that shape.
  Status run(std::span<const TensorImpl* const> inputs, std::span<TensorImpl* const> outputs) const;

  /// Binds the program to input shapes and a domain (the executor prepares a node when it compiles a
  /// plan). With static shapes the layouts and the register bytecode are built here, so a call only binds
  /// pointers; with unknown dims (the domain's rank must be known) they are built on a call's first use
  /// of its shapes and the last few kept. A program with a reduction needs static shapes.
  StatusOr<std::shared_ptr<const PreparedFusedProgram>> prepare(std::span<const Shape> inputs,
                                                                const Shape& domain) const;
  /// Whether `prepared` was made for unknown dims (its results' shapes come from result_shapes).
  static bool is_dynamic(const PreparedFusedProgram& prepared);
  /// The shape of each result for these inputs: the broadcast of the inputs it reads. Fails when the
  /// inputs do not broadcast together or disagree with the domain the program was prepared for.
  static Status result_shapes(const PreparedFusedProgram& prepared, std::span<const TensorImpl* const> inputs,
                              SmallVector<Shape, 2>& out);
  /// Runs a prepared program. Static: the tensors must have the shapes it was prepared for. Dynamic: each
  /// output has the shape result_shapes gives.
  static Status run_prepared(const PreparedFusedProgram& prepared, std::span<const TensorImpl* const> inputs,
                             std::span<TensorImpl* const> outputs);
  /// The native kernel of `prepared` where one call kernel(inputs, outputs, n), with the tensors' own data
  /// pointers, is exactly what run_prepared does: static shapes, no reduction, a domain of at most one
  /// tile, and every input either of the domain's shape or a single element. Null otherwise, and until the
  /// kernel is compiled. For a caller that runs the program many times over the same small tensors (a fast
  /// loop, runtime/fast_loop.cc); such calls are not in fused_run_counts.
  static NativeFusedFn native_whole_kernel(const PreparedFusedProgram& prepared);
  /// Elements per tile for `dtype`: 4 KiB, so a handful of live registers stay in L1.
  static int64_t tile_elements(DType dtype);

 private:
  static StatusOr<FusedProgram> decode_records(std::span<const int64_t> code, int num_inputs,
                                               std::span<const int64_t> results, DType dtype, bool reducing);

  int num_inputs_ = 0;
  DType dtype_ = DType::kFloat32;
  std::vector<FusedInstruction> instructions_;
  std::vector<int32_t> results_;
  std::optional<FusedReductionSpec> reduction_;
};

}  // namespace ember::kernels
