// LLVM IR for one bound fused program (Note [Kernel shape] in codegen.cc): the program's element
// functions, taken from the embedded bitcode library, called in program order inside one loop over the
// elements, then optimized at -O3 for the host CPU (the functions inline, the loop vectorizes) and
// compiled to an object file. Runs on the JIT's compile thread; each call has its own LLVMContext.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ember/core/status.h"
#include "ember/jit/native_loop.h"
#include "ember/kernels/fused_elementwise.h"

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
}  // namespace llvm

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

/// The enumerator name of `d` ("kFloat32"), as the library's function names spell it.
const char* dtype_enum_name(DType d);
/// The library's element function for an op over `dtype`: ember_jit_u_* / ember_jit_b_* keep the dtype,
/// the predicates ember_jit_pu_* / ember_jit_pb_* return a bool's byte (for the ops whose result is bool).
std::string element_function_name(kernels::FusedOpcode opcode, int op, DType dtype, bool predicate);

/// The embedded library (FMA or baseline) parsed into `ctx` for `target`, with contraction stopped at the
/// element functions' boundaries (Note [Contraction stops at ops]): the module a kernel is built in.
StatusOr<std::unique_ptr<llvm::Module>> load_library(llvm::LLVMContext& ctx, bool fma,
                                                     llvm::TargetMachine& target);
/// Verifies the module, optimizes it at -O3 for the host with everything but `symbol` inlined, and
/// compiles it to an object file's bytes.
StatusOr<std::string> optimize_and_emit(llvm::Module& module, llvm::TargetMachine& target,
                                        const std::string& symbol);

/// Builds, optimizes and compiles the kernel, exported as `symbol` with the NativeFusedFn signature;
/// returns the object file's bytes.
StatusOr<std::string> compile_kernel(const KernelSource& source, const std::string& symbol,
                                     llvm::TargetMachine& target);

/// Builds, optimizes and compiles a native loop (Note [Native loops] in loop_codegen.cc), exported as
/// `symbol` with the NativeLoopFn signature; returns the object file's bytes.
StatusOr<std::string> compile_loop(const LoopProgram& program, bool fma, const std::string& symbol,
                                   llvm::TargetMachine& target);

}  // namespace ember::jit
