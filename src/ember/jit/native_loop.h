// Native loops, the fast loops' second tier (Note [Native loops] in jit/loop_codegen.cc): a whole While
// whose step is element-wise ops on small fixed-shape values (runtime/fast_loop.h describes it as a
// LoopProgram) compiled into one native function: the loop variables in registers or small stack arrays,
// every op one of the bitcode library's element functions (or the interpreter's own loop for the ops a
// fused kernel calls it for), the condition tested each iteration. Compiled in the background on the
// JIT's thread and cached as fused kernels are (memory and disk, by fingerprint); the fast loop runs its
// first tier until the slot is filled.
//
// Layer: the JIT's (above kernels); the runtime builds the programs and runs the functions.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ember/core/dtype.h"
#include "ember/kernels/fused_elementwise.h"

namespace ember::jit {

/// A loop in SSA form over value ids: the loop variables (ids 0..num_vars-1), then the fixed values
/// (constants and captured tensors, read-only), then one value per op in program order. Every value is a
/// dense array of `elements` (1 to 64) of its dtype (no complex, no string); an op's operands have its
/// element count or one element (a scalar read for every element). One iteration runs the ops, tests the
/// condition value (a bool), and makes each `next[k]` the new value of loop variable k.
struct LoopProgram {
  struct Value {
    DType dtype = DType::kFloat32;
    int64_t elements = 1;
  };
  struct Op {
    kernels::FusedOpcode opcode = kernels::FusedOpcode::kUnary;
    int op = 0;   // a UnaryOp or a BinaryOp
    DType dtype;  // the operands' dtype (a predicate's result is bool)
    int32_t a = -1, b = -1;
  };
  int num_vars = 0;
  int num_fixed = 0;
  std::vector<Value> values;
  std::vector<Op> ops;
  std::vector<int32_t> next;
  int32_t condition = -1;

  int32_t first_op_value() const { return num_vars + num_fixed; }
  /// Whether the op's result is bool whatever its operands (a comparison, IsNan...).
  static bool is_predicate(const Op& op) {
    return op.opcode == kernels::FusedOpcode::kUnary ? kernels::kUnaryInfo[op.op].returns_bool
                                                     : kernels::kBinaryInfo[op.op].returns_bool;
  }
};

/// The text a loop's native code depends on (with the host, which the JIT adds): its cache key.
std::string loop_fingerprint(const LoopProgram& program, bool fma);

/// Runs iterations from the loop variables' arrays `vars` (read at the start, written at the end) with the
/// fixed values' arrays `fixed`: at most `max_iterations`, stopping after the iteration whose condition is
/// false (then *finished = 1, else 0), or before completing one whose integer FloorDiv or FloorMod has a
/// zero divisor or whose integer Pow a negative exponent (the kernels' errors). Returns the iterations
/// completed.
using NativeLoopFn = int64_t (*)(void* const* vars, const void* const* fixed, int64_t max_iterations,
                                 uint8_t* finished);

/// Where a native loop arrives (as a fused kernel arrives in a kernels::NativeFusedSlot).
using NativeLoopSlot = kernels::NativeSlot<NativeLoopFn>;

/// Asks the JIT for the loop's native code: returns at once (or once compiled, in the synchronous mode);
/// fills `slot` when the code is ready, never when the JIT is off or cannot make it.
void request_native_loop(const LoopProgram& program, std::shared_ptr<NativeLoopSlot> slot);

}  // namespace ember::jit
