// LLVM IR for one bound fused program (Note [Kernel shape] in codegen.cc): the program's element
// functions, taken from the embedded bitcode library, called in program order inside one loop over the
// elements, then optimized at -O3 for the host CPU (the functions inline, the loop vectorizes) and
// compiled to an object file. Runs on the JIT's compile thread; each call has its own LLVMContext.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ember/core/status.h"
#include "ember/kernels/fused_elementwise.h"

namespace llvm {
class TargetMachine;
}

namespace ember::jit {

/// One embedded bitcode library: with FMA (for CPUs where the interpreter runs its AVX2 / AVX-512 copy) or
/// without (its baseline copy), so the kernels compute as the interpreter does on this CPU.
std::span<const char> library_bitcode(bool fma);

struct KernelSource {
  const kernels::FusedProgram* program = nullptr;
  std::vector<bool> scalar_inputs;
  bool fma = true;
};

/// Whether a kernel computes `op` of a block in memory by calling the interpreter's loop for it (Note
/// [Array functions] in codegen.cc), and the symbol it calls it by (jit.cc defines it).
bool calls_interpreter_loop(kernels::UnaryOp op, DType dtype, bool fma);
std::string interpreter_loop_symbol(kernels::UnaryOp op, DType dtype);

/// The fingerprint text of a kernel: everything its code depends on but the host (which the caller adds).
std::string kernel_fingerprint(const KernelSource& source);

/// Builds, optimizes and compiles the kernel, exported as `symbol` with the NativeFusedFn signature;
/// returns the object file's bytes.
StatusOr<std::string> compile_kernel(const KernelSource& source, const std::string& symbol,
                                     llvm::TargetMachine& target);

}  // namespace ember::jit
