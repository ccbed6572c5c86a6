// LLVM IR for a native loop (jit/native_loop.h).
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <sstream>

#include "ember/jit/codegen.h"
#include "ember/jit/native_loop.h"

namespace ember::jit {
namespace {

// Note [Native loops]
// A fast loop (Note [Fast loops] in runtime/fast_loop.cc) still calls a function per node and iteration,
// through pointers to tensors in memory: about 16 ns an iteration for the bench's three-node step. Here the
// whole loop is one function: each loop variable is a stack array copied in once and out once, each fixed
// value (constant or captured) one copied in once, each op writes a stack array of its own, and LLVM, with
// every element function inlined, keeps scalars in registers across iterations (a one-element array is
// promoted to a register) and needs no call at all for the bench's step. The results are the first tier's
// bits: an op computes with the same element function of the bitcode library a native fused kernel uses,
// which computes as the interpreter's loop does (with contraction stopped at the functions' boundaries, Note
// [Contraction stops at ops] in codegen.cc), and the ops that a fused kernel hands to the interpreter's loop
// (transcendentals, float sin/cos) call that very loop on the operand's array here too. An iteration is what
// the first tier's is: every op in program order, the condition read, then the new loop variables copied over
// the old (through staging arrays where the step swaps variables), and the loop ends after the iteration
// whose condition is false or at the iteration budget. The ops that fail on some operands (integer FloorDiv
// and FloorMod by zero, an integer Pow to a negative power) first test the operand as the kernel does: where
// it fails, the loop returns before completing the iteration, with the variables as that iteration found
// them, and the caller hands that iteration to the normal path, which reports the error (as the first tier
// does).
class LoopBuilder {
 public:
  LoopBuilder(const LoopProgram& program, bool fma, llvm::Module& module)
      : program_(program), fma_(fma), module_(module), ctx_(module.getContext()), b_(ctx_) {}

  Status build(const std::string& symbol) {
    ptr_ = llvm::PointerType::get(ctx_, 0);
    i64_ = llvm::Type::getInt64Ty(ctx_);
    i8_ = llvm::Type::getInt8Ty(ctx_);
    auto* fn = llvm::Function::Create(llvm::FunctionType::get(i64_, {ptr_, ptr_, i64_, ptr_}, false),
                                      llvm::Function::ExternalLinkage, symbol, module_);
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    fn_ = fn;
    llvm::Value* vars = fn->getArg(0);
    llvm::Value* fixed = fn->getArg(1);
    llvm::Value* max_iterations = fn->getArg(2);
    llvm::Value* finished_out = fn->getArg(3);

    auto* entry = llvm::BasicBlock::Create(ctx_, "entry", fn);
    b_.SetInsertPoint(entry);
    const int num_values = static_cast<int>(program_.values.size());
    address_.resize(num_values);
    std::vector<llvm::Value*> var_ptrs(program_.num_vars), staged(program_.num_vars);
    bool swaps = false;
    for (int k = 0; k < program_.num_vars; ++k) {
      const int32_t next = program_.next[k];
      swaps = swaps || (next < program_.num_vars && next != k);
    }
    for (int v = 0; v < num_values; ++v) {
      const LoopProgram::Value& value = program_.values[v];
      llvm::Type* array = llvm::ArrayType::get(storage(value.dtype), value.elements);
      if (v < program_.num_vars) {
        var_ptrs[v] = b_.CreateLoad(ptr_, b_.CreateConstGEP1_64(ptr_, vars, v));
        address_[v] = b_.CreateAlloca(array);
        b_.CreateMemCpy(address_[v], llvm::MaybeAlign(), var_ptrs[v], llvm::MaybeAlign(), bytes(v));
        if (swaps) staged[v] = b_.CreateAlloca(array);
      } else if (v < program_.first_op_value()) {
        // Copied once too: a load inside the loop, which may not run, would stay there.
        llvm::Value* data = b_.CreateLoad(ptr_, b_.CreateConstGEP1_64(ptr_, fixed, v - program_.num_vars));
        address_[v] = b_.CreateAlloca(array);
        b_.CreateMemCpy(address_[v], llvm::MaybeAlign(), data, llvm::MaybeAlign(), bytes(v));
      } else {
        address_[v] = b_.CreateAlloca(array);
      }
    }

    auto* header = llvm::BasicBlock::Create(ctx_, "iteration", fn);
    auto* body = llvm::BasicBlock::Create(ctx_, "step", fn);
    auto* exit = llvm::BasicBlock::Create(ctx_, "exit", fn);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* done = b_.CreatePHI(i64_, 2, "done");
    done->addIncoming(b_.getInt64(0), entry);
    b_.CreateCondBr(b_.CreateICmpSLT(done, max_iterations), body, exit);

    b_.SetInsertPoint(body);
    handback_ = llvm::BasicBlock::Create(ctx_, "handback", fn);
    for (size_t i = 0; i < program_.ops.size(); ++i) EMBER_RETURN_IF_ERROR(emit_op(i));
    llvm::Value* condition =
        b_.CreateICmpNE(b_.CreateLoad(i8_, address_[program_.condition]), b_.getInt8(0), "condition");
    for (int pass = swaps ? 0 : 1; pass < 2; ++pass) {
      for (int k = 0; k < program_.num_vars; ++k) {
        if (program_.next[k] == k) continue;  // returned unchanged
        llvm::Value* from = pass == 0 || !swaps ? address_[program_.next[k]] : staged[k];
        llvm::Value* to = pass == 0 ? staged[k] : address_[k];
        b_.CreateMemCpy(to, llvm::MaybeAlign(), from, llvm::MaybeAlign(), bytes(k));
      }
    }
    llvm::Value* completed = b_.CreateAdd(done, b_.getInt64(1), "completed", true, true);
    llvm::BasicBlock* step_end = b_.GetInsertBlock();
    done->addIncoming(completed, step_end);
    b_.CreateCondBr(condition, header, exit);

    // An op that would fail: the iteration is not completed.
    b_.SetInsertPoint(handback_);
    b_.CreateBr(exit);

    b_.SetInsertPoint(exit);
    llvm::PHINode* iterations = b_.CreatePHI(i64_, 3, "iterations");
    iterations->addIncoming(done, header);
    iterations->addIncoming(completed, step_end);
    iterations->addIncoming(done, handback_);
    llvm::PHINode* finished = b_.CreatePHI(i8_, 3, "finished");
    finished->addIncoming(b_.getInt8(0), header);
    finished->addIncoming(b_.getInt8(1), step_end);
    finished->addIncoming(b_.getInt8(0), handback_);
    for (int k = 0; k < program_.num_vars; ++k)
      b_.CreateMemCpy(var_ptrs[k], llvm::MaybeAlign(), address_[k], llvm::MaybeAlign(), bytes(k));
    b_.CreateStore(finished, finished_out);
    b_.CreateRet(iterations);
    return Status::OK();
  }

 private:
  llvm::Type* storage(DType d) {
    switch (d) {
      case DType::kFloat32:
        return llvm::Type::getFloatTy(ctx_);
      case DType::kFloat64:
        return llvm::Type::getDoubleTy(ctx_);
      case DType::kFloat16:
      case DType::kBFloat16:
      case DType::kInt16:
        return llvm::Type::getInt16Ty(ctx_);
      case DType::kInt8:
      case DType::kUInt8:
      case DType::kBool:
        return i8_;
      case DType::kInt32:
        return llvm::Type::getInt32Ty(ctx_);
      default:
        return i64_;  // kInt64; the runtime builds no program over complex or string values
    }
  }

  // What the kernel tests of an op's second operand before it runs (kernels/elementwise.cc, run_binary):
  // 1, that no element is zero (integer FloorDiv, FloorMod); 2, that none is negative (signed integer Pow).
  static int operand_check(const LoopProgram::Op& op) {
    if (op.opcode != kernels::FusedOpcode::kBinary || !is_integer(op.dtype)) return 0;
    const auto binary = static_cast<kernels::BinaryOp>(op.op);
    if (binary == kernels::BinaryOp::kFloorDiv || binary == kernels::BinaryOp::kFloorMod) return 1;
    if (binary == kernels::BinaryOp::kPow && dtype_in(op.dtype, kSignedIntTypes)) return 2;
    return 0;
  }

  uint64_t bytes(int32_t v) const {
    return static_cast<uint64_t>(program_.values[v].elements * dtype_size(program_.values[v].dtype));
  }

  // Element j of value v (its only element when it is a scalar read for every element).
  llvm::Value* element(int32_t v, llvm::Value* j) {
    llvm::Type* type = storage(program_.values[v].dtype);
    llvm::Value* index = program_.values[v].elements == 1 ? b_.getInt64(0) : j;
    return b_.CreateLoad(type, b_.CreateInBoundsGEP(type, address_[v], index));
  }

  Status emit_op(size_t i) {
    const LoopProgram::Op& op = program_.ops[i];
    const int32_t result = program_.first_op_value() + static_cast<int32_t>(i);
    const int64_t n = program_.values[result].elements;
    const bool predicate = LoopProgram::is_predicate(op);
    if (op.opcode == kernels::FusedOpcode::kUnary && !predicate &&
        calls_interpreter_loop(static_cast<kernels::UnaryOp>(op.op), op.dtype, fma_)) {
      const std::string name = interpreter_loop_symbol(static_cast<kernels::UnaryOp>(op.op), op.dtype);
      llvm::Function* loop = module_.getFunction(name);
      if (loop == nullptr) {
        loop = llvm::Function::Create(
            llvm::FunctionType::get(llvm::Type::getVoidTy(ctx_), {ptr_, ptr_, i64_}, false),
            llvm::Function::ExternalLinkage, name, module_);
        loop->addFnAttr(llvm::Attribute::NoUnwind);
      }
      // A scalar operand of a fused program's domain: computed once, then copied to every element.
      const int64_t operand_elements = program_.values[op.a].elements;
      b_.CreateCall(loop, {address_[op.a], address_[result], b_.getInt64(operand_elements)});
      llvm::Type* type = storage(op.dtype);
      if (operand_elements != n) {
        llvm::Value* first = b_.CreateLoad(type, address_[result]);
        for (int64_t j = 1; j < n; ++j)
          b_.CreateStore(first, b_.CreateConstInBoundsGEP1_64(type, address_[result], j));
      }
      return Status::OK();
    }
    if (const int check = operand_check(op); check != 0) {
      // Any element of the second operand zero (check 1) or negative (check 2): hand the iteration back.
      llvm::Type* type = storage(op.dtype);
      llvm::Value* fails = b_.getFalse();
      for (int64_t j = 0; j < program_.values[op.b].elements; ++j) {
        llvm::Value* x = b_.CreateLoad(type, b_.CreateConstInBoundsGEP1_64(type, address_[op.b], j));
        llvm::Value* zero = llvm::ConstantInt::get(type, 0);
        fails = b_.CreateOr(fails, check == 1 ? b_.CreateICmpEQ(x, zero) : b_.CreateICmpSLT(x, zero));
      }
      auto* go_on = llvm::BasicBlock::Create(ctx_, "checked", fn_);
      b_.CreateCondBr(fails, handback_, go_on);
      b_.SetInsertPoint(go_on);
    }
    const std::string name = element_function_name(op.opcode, op.op, op.dtype, predicate);
    llvm::Function* fn = module_.getFunction(name);
    if (fn == nullptr || fn->isDeclaration())
      return make_error(Code::kInternal, "the JIT library has no ", name);
    llvm::Type* type = storage(program_.values[result].dtype);
    auto emit_element = [&](llvm::Value* j) {
      llvm::Value* value = op.opcode == kernels::FusedOpcode::kUnary
                               ? b_.CreateCall(fn, {element(op.a, j)})
                               : b_.CreateCall(fn, {element(op.a, j), element(op.b, j)});
      b_.CreateStore(value, b_.CreateInBoundsGEP(type, address_[result], j));
    };
    if (n == 1) {
      emit_element(b_.getInt64(0));
      return Status::OK();
    }
    // A counted loop over the elements (n >= 2), which LLVM unrolls or vectorizes.
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* loop = llvm::BasicBlock::Create(ctx_, "elements", fn_);
    auto* after = llvm::BasicBlock::Create(ctx_, "elements.end", fn_);
    b_.CreateBr(loop);
    b_.SetInsertPoint(loop);
    llvm::PHINode* j = b_.CreatePHI(i64_, 2);
    j->addIncoming(b_.getInt64(0), pre);
    emit_element(j);
    llvm::Value* next = b_.CreateAdd(j, b_.getInt64(1), "", true, true);
    j->addIncoming(next, b_.GetInsertBlock());
    b_.CreateCondBr(b_.CreateICmpSLT(next, b_.getInt64(n)), loop, after);
    b_.SetInsertPoint(after);
    return Status::OK();
  }

  const LoopProgram& program_;
  const bool fma_;
  llvm::Module& module_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  llvm::Function* fn_ = nullptr;
  llvm::BasicBlock* handback_ = nullptr;
  llvm::PointerType* ptr_ = nullptr;
  llvm::Type* i64_ = nullptr;
  llvm::Type* i8_ = nullptr;
  std::vector<llvm::Value*> address_;  // per value: its array (a stack array, or a fixed value's memory)
};

}  // namespace

std::string loop_fingerprint(const LoopProgram& program, bool fma) {
  std::ostringstream text;
  text << "loop;fma=" << fma << ";vars=" << program.num_vars << ";fixed=" << program.num_fixed << ";values=";
  for (const LoopProgram::Value& value : program.values)
    text << dtype_enum_name(value.dtype) << 'x' << value.elements << ',';
  text << ";ops=";
  for (const LoopProgram::Op& op : program.ops)
    text << static_cast<int>(op.opcode) << ',' << op.op << ',' << dtype_enum_name(op.dtype) << ',' << op.a
         << ',' << op.b << ';';
  text << "next=";
  for (int32_t v : program.next) text << v << ',';
  text << ";condition=" << program.condition;
  return text.str();
}

StatusOr<std::string> compile_loop(const LoopProgram& program, bool fma, const std::string& symbol,
                                   llvm::TargetMachine& target) {
  llvm::LLVMContext ctx;
  auto module = load_library(ctx, fma, target);
  EMBER_RETURN_IF_ERROR(module.status());
  LoopBuilder builder(program, fma, **module);
  EMBER_RETURN_IF_ERROR(builder.build(symbol));
  return optimize_and_emit(**module, target, symbol);
}

}  // namespace ember::jit
