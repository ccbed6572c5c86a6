#include "ember/jit/codegen.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Transforms/IPO/GlobalDCE.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>

extern "C" {
extern const char ember_jit_bitcode_fma[], ember_jit_bitcode_fma_end[];
extern const char ember_jit_bitcode_baseline[], ember_jit_bitcode_baseline_end[];
}

namespace ember::jit {

const char* dtype_enum_name(DType d) {
  switch (d) {
    case DType::kFloat16:
      return "kFloat16";
    case DType::kBFloat16:
      return "kBFloat16";
    case DType::kFloat32:
      return "kFloat32";
    case DType::kFloat64:
      return "kFloat64";
    case DType::kInt8:
      return "kInt8";
    case DType::kInt16:
      return "kInt16";
    case DType::kInt32:
      return "kInt32";
    case DType::kInt64:
      return "kInt64";
    case DType::kUInt8:
      return "kUInt8";
    case DType::kBool:
      return "kBool";
    case DType::kComplex64:
      return "kComplex64";
    case DType::kComplex128:
      return "kComplex128";
    case DType::kString:
      return "kString";
  }
  return "?";
}

namespace {

using kernels::BinaryOp;
using kernels::FusedInstruction;
using kernels::FusedOpcode;
using kernels::UnaryOp;

// The enumerator names, which name the library's functions (jit/bitcode/element_functions.cc).
#define EMBER_JIT_NAME(Enum, ...) #Enum,
constexpr const char* kUnaryNames[] = {EMBER_UNARY_OPS(EMBER_JIT_NAME)};
constexpr const char* kBinaryNames[] = {EMBER_BINARY_OPS(EMBER_JIT_NAME)};
#undef EMBER_JIT_NAME

template <typename... Args>
Status internal_error(const Args&... args) {
  return make_error(Code::kInternal, args...);
}

std::string function_name(const FusedInstruction& instr, DType dtype) {
  return element_function_name(instr.opcode, instr.op, dtype, /*predicate=*/false);
}

// Float sin and cos in the FMA library choose their argument reduction per block of 64 elements, as the
// interpreter's array forms do (Note [Float sin/cos] in vmath.h).
bool is_blockwise(const FusedInstruction& instr, DType dtype, bool fma) {
  if (!fma || instr.opcode != FusedOpcode::kUnary) return false;
  const auto op = static_cast<UnaryOp>(instr.op);
  if (op != UnaryOp::kSin && op != UnaryOp::kCos) return false;
  return dtype == DType::kFloat32 || dtype == DType::kFloat16 || dtype == DType::kBFloat16;
}
constexpr int64_t kBlock = 64;       // the blockwise ops' block
constexpr int64_t kWideBlock = 512;  // a staged program's blocks (Note [Array functions])
constexpr int kMaxInterleave = 8;

// Transcendentals (cost 8 in elementwise_ops.h): each gets a loop of its own in a program with several, so
// that a loop's live values fit the vector registers (two vectorised transcendentals in one loop spill).
bool is_expensive(const FusedInstruction& instr) {
  const int64_t cost = instr.opcode == FusedOpcode::kUnary
                           ? kernels::unary_cost(static_cast<UnaryOp>(instr.op))
                           : kernels::binary_cost(static_cast<BinaryOp>(instr.op));
  return cost >= 8;
}

// Note [Kernel shape]
// The exported function unpacks the pointer arrays and calls a body whose pointer parameters are noalias
// (inputs are only read, and outputs never alias inputs or each other), so that once the body is inlined
// the vectorizer needs no run-time overlap checks. The body is one loop over the n elements; a value lives
// in a virtual register from its definition to its last use, and the loop is interleaved (Note
// [Interleaving]). Programs with a float sin/cos or several transcendentals run blocks of 512 elements in
// stages, a new stage at each of them: the stage calls the interpreter's loop for that op on the block
// (Note [Array functions]), then runs the cheap ops up to the next stage in one loop; values that cross
// stages wait in block-sized stack buffers (L1), reused once dead. A float sin/cos of a scalar input stays
// inline: its stage asks once per block whether the scalar is in the float reduction's range. One loop
// per transcendental is what the hand-fused C++ bound of bench/executor.py found fastest too.
class Builder {
 public:
  Builder(const KernelSource& source, llvm::Module& module, int vector_registers)
      : source_(source),
        registers_(vector_registers),
        program_(*source.program),
        module_(module),
        ctx_(module.getContext()),
        b_(ctx_),
        num_inputs_(program_.num_inputs()) {}

  Status build(const std::string& symbol) {
    auto instructions = program_.instructions();
    for (const FusedInstruction& instr : instructions) {
      llvm::Function* fn = module_.getFunction(function_name(instr, program_.dtype()));
      if (fn == nullptr || fn->isDeclaration())
        return internal_error("the JIT library has no ", function_name(instr, program_.dtype()));
      functions_.push_back(fn);
      if (is_blockwise(instr, program_.dtype(), source_.fma)) {
        const char* which = static_cast<UnaryOp>(instr.op) == UnaryOp::kSin ? "sin" : "cos";
        llvm::Function* near_fn = module_.getFunction(std::string("ember_jit_") + which + "_near_" +
                                                      dtype_enum_name(program_.dtype()));
        if (near_fn == nullptr) return internal_error("the JIT library has no near-range ", which);
        near_functions_[functions_.size() - 1] = near_fn;
      }
    }
    storage_ = functions_.front()->getReturnType();
    ptr_ = llvm::PointerType::get(ctx_, 0);
    i64_ = llvm::Type::getInt64Ty(ctx_);

    std::vector<llvm::Type*> params(num_inputs_ + program_.num_results(), ptr_);
    params.push_back(i64_);
    body_ = llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(ctx_), params, false),
                                   llvm::Function::InternalLinkage, symbol + ".body", module_);
    for (size_t i = 0; i + 1 < params.size(); ++i) body_->addParamAttr(i, llvm::Attribute::NoAlias);
    body_->addFnAttr(llvm::Attribute::AlwaysInline);
    body_->addFnAttr(llvm::Attribute::NoUnwind);
    build_body();

    auto* kernel = llvm::Function::Create(
        llvm::FunctionType::get(llvm::Type::getVoidTy(ctx_), {ptr_, ptr_, i64_}, false),
        llvm::Function::ExternalLinkage, symbol, module_);
    kernel->addFnAttr(llvm::Attribute::NoUnwind);
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", kernel));
    std::vector<llvm::Value*> args;
    for (int k = 0; k < num_inputs_; ++k)
      args.push_back(b_.CreateLoad(ptr_, b_.CreateConstGEP1_64(ptr_, kernel->getArg(0), k)));
    for (int j = 0; j < program_.num_results(); ++j)
      args.push_back(b_.CreateLoad(ptr_, b_.CreateConstGEP1_64(ptr_, kernel->getArg(1), j)));
    args.push_back(kernel->getArg(2));
    b_.CreateCall(body_, args);
    b_.CreateRetVoid();
    return Status::OK();
  }

 private:
  llvm::Value* input_ptr(int k) { return body_->getArg(k); }
  llvm::Value* output_ptr(int j) { return body_->getArg(num_inputs_ + j); }

  // A counted loop over [0, count) (count >= 1) whose body `emit` fills; the builder ends after it. The
  // vectorizer interleaves it `interleave` times (Note [Interleaving]).
  template <typename Fn>
  void emit_loop(llvm::Value* count, const char* name, int interleave, Fn&& emit) {
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    llvm::Function* fn = pre->getParent();
    auto* loop = llvm::BasicBlock::Create(ctx_, name, fn);
    auto* after = llvm::BasicBlock::Create(ctx_, std::string(name) + ".end", fn);
    b_.CreateBr(loop);
    b_.SetInsertPoint(loop);
    llvm::PHINode* j = b_.CreatePHI(i64_, 2);
    j->addIncoming(b_.getInt64(0), pre);
    emit(static_cast<llvm::Value*>(j));
    llvm::Value* next = b_.CreateAdd(j, b_.getInt64(1), "", /*HasNUW=*/true, /*HasNSW=*/true);
    j->addIncoming(next, b_.GetInsertBlock());
    llvm::BranchInst* back = b_.CreateCondBr(b_.CreateICmpSLT(next, count), loop, after);
    llvm::Metadata* hints[] = {
        nullptr,
        llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.vectorize.enable"),
                                 llvm::ConstantAsMetadata::get(b_.getTrue())}),
        llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.interleave.count"),
                                 llvm::ConstantAsMetadata::get(b_.getInt32(interleave))})};
    llvm::MDNode* id = llvm::MDNode::getDistinct(ctx_, hints);
    id->replaceOperandWith(0, id);  // a loop's id names itself
    back->setMetadata(llvm::LLVMContext::MD_loop, id);
    b_.SetInsertPoint(after);
  }

  // Note [Interleaving]
  // A fused chain is one long dependency chain per element: each op waits for the one before (3 to 4
  // cycles for a float multiply or add), so one vector of elements at a time leaves the execution units
  // idle, and a loop body of a hundred ops is too long for the out-of-order window to overlap the next
  // iteration with it (a 100-op chain ran 2.5x as long as a C++ loop of the same ops). The vectorizer's own
  // interleave choice is 1 for such large loops; we ask for several vectors per iteration, as many as the
  // registers hold: each interleaved copy keeps the stage's live values (and a transcendental's
  // temporaries) in registers of its own, and spilling costs more than the overlap gains.
  int interleave_count(size_t first, size_t last) const {
    if (const char* forced = std::getenv("EMBER_JIT_INTERLEAVE"); forced != nullptr)
      return std::clamp(std::atoi(forced), 1, 16);
    auto instructions = program_.instructions();
    // The most values live at once: inputs from their first read, results from their definition, each
    // until its last use in the stage; a transcendental's polynomial adds temporaries of its own.
    std::map<int32_t, size_t> last_use;
    for (size_t i = first; i < last; ++i) {
      last_use[instructions[i].a] = i;
      if (instructions[i].opcode == FusedOpcode::kBinary) last_use[instructions[i].b] = i;
    }
    std::map<int32_t, bool> seen;
    int live = 0, most = 1;
    for (size_t i = first; i < last; ++i) {
      const FusedInstruction& instr = instructions[i];
      for (int32_t id : {instr.a, instr.opcode == FusedOpcode::kBinary ? instr.b : instr.a}) {
        if (id < num_inputs_ && scalar_values_[id] != nullptr) continue;  // a constant, folded
        if (!seen[id] && id < num_inputs_) ++live;
        seen[id] = true;
      }
      most = std::max(most, live + 1 + (is_expensive(instr) ? 6 : 0));
      for (int32_t id : {instr.a, instr.opcode == FusedOpcode::kBinary ? instr.b : instr.a})
        if (last_use[id] == i && seen[id]) {
          seen[id] = false;
          --live;
        }
      const int32_t id = num_inputs_ + static_cast<int32_t>(i);
      if (last_use.count(id)) {
        seen[id] = true;
        ++live;
      }
    }
    int count = 1;
    while (count < kMaxInterleave && count * 2 * most <= registers_) count *= 2;
    return count;
  }

  // The instructions [first, last) for element base + j; `near` picks the first one's near-range variant.
  // With `called`, instruction `first` was computed into its block buffer by an array function
  // (Note [Array functions]): the loop reads it from there (and copies it to its output if it is one).
  void emit_stage(size_t first, size_t last, llvm::Value* base, llvm::Value* j, bool near,
                  bool called = false) {
    auto instructions = program_.instructions();
    std::map<int32_t, llvm::Value*> local;
    llvm::Value* index = base == nullptr ? j : b_.CreateAdd(base, j, "", true, true);
    auto value = [&](int32_t id) -> llvm::Value* {
      auto it = local.find(id);
      if (it != local.end()) return it->second;
      llvm::Value* v;
      if (id < num_inputs_) {
        v = scalar_values_[id] != nullptr
                ? scalar_values_[id]
                : b_.CreateLoad(storage_, b_.CreateInBoundsGEP(storage_, input_ptr(id), index));
      } else {
        v = b_.CreateLoad(storage_, b_.CreateInBoundsGEP(storage_, buffers_.at(id), j));
      }
      local[id] = v;
      return v;
    };
    if (called) {
      const int32_t id = num_inputs_ + static_cast<int32_t>(first);
      for (int r = 0; r < program_.num_results(); ++r)
        if (program_.results()[r] == id)
          b_.CreateStore(value(id), b_.CreateInBoundsGEP(storage_, output_ptr(r), index));
      ++first;
    }
    for (size_t i = first; i < last; ++i) {
      const FusedInstruction& instr = instructions[i];
      llvm::Function* fn = near && i == first ? near_functions_.at(i) : functions_[i];
      llvm::Value* result = instr.opcode == FusedOpcode::kUnary
                                ? b_.CreateCall(fn, {value(instr.a)})
                                : b_.CreateCall(fn, {value(instr.a), value(instr.b)});
      const int32_t id = num_inputs_ + static_cast<int32_t>(i);
      local[id] = result;
      auto buffer = buffers_.find(id);
      if (buffer != buffers_.end()) b_.CreateStore(result, b_.CreateInBoundsGEP(storage_, buffer->second, j));
      for (int r = 0; r < program_.num_results(); ++r)
        if (program_.results()[r] == id)
          b_.CreateStore(result, b_.CreateInBoundsGEP(storage_, output_ptr(r), index));
    }
  }

  // Note [Array functions]
  // In a staged program a transcendental (or float sin/cos) of an operand in memory runs as one call per
  // block of the interpreter's own loop for that op (kernels/isa/elementwise_isa.cc, GCC-compiled, reached
  // through the symbol interpreter_loop_symbol names), and the cheap ops around it run in fused loops.
  // Inlining a copy per instruction made 300 KB of code for bench/executor.py's 100-op chain (30
  // transcendentals, each vectorized with its remainder loops, spilling): every block ran through all of
  // it, far beyond the instruction cache, and LLVM's vectorized float sin was 1.6x the interpreter's. The
  // interpreter's loops are its results by definition, and float sin/cos pick their reduction per 64
  // elements from the pointer they are given, as in the interpreter: blocks start at multiples of 512 from
  // a tile's start (512 divides every dtype's 4 KiB tile), so the 64-element blocks are the interpreter's.
  bool called(size_t i) const {
    const FusedInstruction& instr = program_.instructions()[i];
    if (instr.opcode != FusedOpcode::kUnary) return false;
    if (instr.a < num_inputs_ && source_.scalar_inputs[instr.a]) return false;
    return calls_interpreter_loop(static_cast<UnaryOp>(instr.op), program_.dtype(), source_.fma);
  }

  llvm::Function* array_function(size_t i) {
    const FusedInstruction& instr = program_.instructions()[i];
    const std::string name = interpreter_loop_symbol(static_cast<UnaryOp>(instr.op), program_.dtype());
    if (llvm::Function* fn = module_.getFunction(name)) return fn;
    auto* fn = llvm::Function::Create(
        llvm::FunctionType::get(llvm::Type::getVoidTy(ctx_), {ptr_, ptr_, i64_}, false),
        llvm::Function::ExternalLinkage, name, module_);
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    return fn;
  }

  void build_body() {
    auto instructions = program_.instructions();
    llvm::Value* n = body_->getArg(num_inputs_ + program_.num_results());
    auto* entry = llvm::BasicBlock::Create(ctx_, "entry", body_);
    b_.SetInsertPoint(entry);
    scalar_values_.assign(num_inputs_, nullptr);
    for (int k = 0; k < num_inputs_; ++k)
      if (source_.scalar_inputs[k]) scalar_values_[k] = b_.CreateLoad(storage_, input_ptr(k));

    // Stages begin at blockwise instructions, and at every transcendental of a program with several
    // (Note [Kernel shape]).
    int expensive = 0;
    for (const FusedInstruction& instr : instructions) expensive += is_expensive(instr);
    auto starts_stage = [&](size_t i) {
      return is_blockwise(instructions[i], program_.dtype(), source_.fma) ||
             (expensive > 1 && is_expensive(instructions[i]));
    };
    std::vector<size_t> starts = {0};
    std::vector<int> stage_of(instructions.size(), 0);
    bool any_blockwise = false;
    for (size_t i = 0; i < instructions.size(); ++i) {
      any_blockwise = any_blockwise || is_blockwise(instructions[i], program_.dtype(), source_.fma);
      if (i > 0 && starts_stage(i)) starts.push_back(i);
      stage_of[i] = static_cast<int>(starts.size()) - 1;
    }
    (void)any_blockwise;
    block_ = kWideBlock;
    // Experiments: a power of two from 64 to 512, so that blocks divide every dtype's tile (4 KiB).
    if (const char* forced = std::getenv("EMBER_JIT_BLOCK"); forced != nullptr)
      for (block_ = kBlock; block_ * 2 <= std::min<int64_t>(std::atoll(forced), 512);) block_ *= 2;
    const bool staged = starts.size() > 1 || is_blockwise(instructions[0], program_.dtype(), source_.fma);
    auto* exit = llvm::BasicBlock::Create(ctx_, "exit", body_);
    if (!staged) {
      auto* work = llvm::BasicBlock::Create(ctx_, "work", body_);
      b_.CreateCondBr(b_.CreateICmpSGT(n, b_.getInt64(0)), work, exit);
      b_.SetInsertPoint(work);
      emit_loop(n, "loop", interleave_count(0, instructions.size()),
                [&](llvm::Value* i) { emit_stage(0, instructions.size(), nullptr, i, false); });
      b_.CreateBr(exit);
      b_.SetInsertPoint(exit);
      b_.CreateRetVoid();
      return;
    }
    // Values read in a later stage than theirs get a block buffer, and so do an array function's operand
    // and result. Buffers are reused once their value is dead (a 100-op chain's 50 buffers of 1 KiB were
    // more than L1 holds); a stage's new buffers are taken before its operands' are freed, so an array
    // function never writes the buffer it reads.
    std::map<int32_t, int> last_stage;  // buffered id -> the last stage reading it
    auto buffer_for = [&](int32_t id, int stage) {
      if (id < num_inputs_) return;
      int& last = last_stage.try_emplace(id, stage).first->second;
      last = std::max(last, stage);
    };
    for (size_t i = 0; i < instructions.size(); ++i) {
      auto uses = [&](int32_t id) {
        if (id >= num_inputs_ && stage_of[id - num_inputs_] != stage_of[i]) buffer_for(id, stage_of[i]);
      };
      uses(instructions[i].a);
      if (instructions[i].opcode == FusedOpcode::kBinary) uses(instructions[i].b);
      if (called(i)) {
        buffer_for(instructions[i].a, stage_of[i]);
        buffer_for(num_inputs_ + static_cast<int32_t>(i), stage_of[i]);
      }
    }
    auto* block_ty = llvm::ArrayType::get(storage_, block_);
    std::vector<llvm::Value*> free_buffers;
    for (int stage = 0; stage < static_cast<int>(starts.size()); ++stage) {
      for (auto& [id, last] : last_stage) {
        if (stage_of[id - num_inputs_] != stage) continue;
        if (free_buffers.empty()) {
          buffers_[id] = b_.CreateAlloca(block_ty);
        } else {
          buffers_[id] = free_buffers.back();
          free_buffers.pop_back();
        }
      }
      for (auto& [id, last] : last_stage)
        if (last == stage) free_buffers.push_back(buffers_.at(id));
    }
    auto* blocks = llvm::BasicBlock::Create(ctx_, "blocks", body_);
    b_.CreateCondBr(b_.CreateICmpSGT(n, b_.getInt64(0)), blocks, exit);
    b_.SetInsertPoint(blocks);
    llvm::PHINode* base = b_.CreatePHI(i64_, 2);
    base->addIncoming(b_.getInt64(0), entry);
    llvm::Value* rest = b_.CreateSub(n, base);
    llvm::Value* len =
        b_.CreateSelect(b_.CreateICmpSLT(rest, b_.getInt64(block_)), rest, b_.getInt64(block_));
    for (size_t s = 0; s < starts.size(); ++s) {
      const size_t first = starts[s], last = s + 1 < starts.size() ? starts[s + 1] : instructions.size();
      if (first == last) continue;
      if (called(first)) {
        const int32_t a = instructions[first].a, id = num_inputs_ + static_cast<int32_t>(first);
        llvm::Value* operands =
            a >= num_inputs_ ? buffers_.at(a) : b_.CreateInBoundsGEP(storage_, input_ptr(a), base);
        b_.CreateCall(array_function(first), {operands, buffers_.at(id), len});
        bool result = false;
        for (int32_t r : program_.results()) result = result || r == id;
        if (last > first + 1 || result)
          emit_loop(len, "stage", interleave_count(first + 1, last),
                    [&](llvm::Value* j) { emit_stage(first, last, base, j, false, /*called=*/true); });
        continue;
      }
      if (!is_blockwise(instructions[first], program_.dtype(), source_.fma)) {
        emit_loop(len, "stage", interleave_count(first, last),
                  [&](llvm::Value* j) { emit_stage(first, last, base, j, false); });
        continue;
      }
      // Ask whether the block's operands are all in the float reduction's range.
      const int32_t a = instructions[first].a;
      llvm::Value* operands;
      llvm::Value* count = len;
      if (a >= num_inputs_) {
        operands = buffers_.at(a);
      } else if (source_.scalar_inputs[a]) {
        operands = input_ptr(a);
        count = b_.getInt64(1);
      } else {
        operands = b_.CreateInBoundsGEP(storage_, input_ptr(a), base);
      }
      llvm::Function* check =
          module_.getFunction(std::string("ember_jit_near_") + dtype_enum_name(program_.dtype()));
      llvm::Value* near = b_.CreateICmpNE(b_.CreateCall(check, {operands, count}), b_.getInt8(0));
      auto* near_block = llvm::BasicBlock::Create(ctx_, "near", body_);
      auto* far_block = llvm::BasicBlock::Create(ctx_, "far", body_);
      auto* join = llvm::BasicBlock::Create(ctx_, "join", body_);
      b_.CreateCondBr(near, near_block, far_block);
      b_.SetInsertPoint(near_block);
      emit_loop(len, "stage.near", interleave_count(first, last),
                [&](llvm::Value* j) { emit_stage(first, last, base, j, true); });
      b_.CreateBr(join);
      b_.SetInsertPoint(far_block);
      emit_loop(len, "stage.far", interleave_count(first, last),
                [&](llvm::Value* j) { emit_stage(first, last, base, j, false); });
      b_.CreateBr(join);
      b_.SetInsertPoint(join);
    }
    llvm::Value* next = b_.CreateAdd(base, b_.getInt64(block_), "", true, true);
    base->addIncoming(next, b_.GetInsertBlock());
    b_.CreateCondBr(b_.CreateICmpSLT(next, n), blocks, exit);
    b_.SetInsertPoint(exit);
    b_.CreateRetVoid();
  }

  const KernelSource& source_;
  const int registers_;  // the target's vector registers
  const kernels::FusedProgram& program_;
  llvm::Module& module_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  const int num_inputs_;
  std::vector<llvm::Function*> functions_;
  std::map<size_t, llvm::Function*> near_functions_;
  std::map<int32_t, llvm::Value*> buffers_;
  std::vector<llvm::Value*> scalar_values_;
  llvm::Type* storage_ = nullptr;
  llvm::PointerType* ptr_ = nullptr;
  llvm::Type* i64_ = nullptr;
  llvm::Function* body_ = nullptr;
  int64_t block_ = kBlock;
};

// Note [Contraction stops at ops]
// The library is compiled with -ffp-contract=fast, as GCC compiles the interpreter's loops, so a product
// and a sum inside one op's math fuse into an FMA as they do there. Between ops the interpreter stores
// each result to memory, so an op's last product never fuses with the next op's sum; once the functions
// are inlined into one loop, nothing would stop LLVM from fusing them (a 100-op chain drifted by hundreds
// of ulps). So a product returned by an element function and a sum of an element function's argument
// lose their `contract` flag: both flags are needed to fuse.
void stop_contraction_at_ops(llvm::Module& module) {
  for (llvm::Function& fn : module) {
    if (fn.isDeclaration() || !fn.getName().startswith("ember_jit_")) continue;
    for (llvm::BasicBlock& block : fn) {
      for (llvm::Instruction& inst : block) {
        if (!llvm::isa<llvm::FPMathOperator>(inst) || !inst.hasAllowContract()) continue;
        bool boundary = false;
        if (inst.getOpcode() == llvm::Instruction::FMul) {
          for (llvm::User* user : inst.users()) boundary = boundary || llvm::isa<llvm::ReturnInst>(user);
        } else if (inst.getOpcode() == llvm::Instruction::FAdd ||
                   inst.getOpcode() == llvm::Instruction::FSub) {
          for (llvm::Value* operand : inst.operands())
            boundary = boundary || llvm::isa<llvm::Argument>(operand);
        }
        if (boundary) inst.setHasAllowContract(false);
      }
    }
  }
}

void optimize(llvm::Module& module, llvm::TargetMachine& target, const std::string& symbol) {
  const std::string cpu = target.getTargetCPU().str();
  const std::string features = target.getTargetFeatureString().str();
  const bool avx512 = features.find("+avx512f") != std::string::npos;
  for (llvm::Function& fn : module) {
    if (fn.isDeclaration()) continue;
    if (fn.getName() != symbol) {
      fn.setLinkage(llvm::GlobalValue::InternalLinkage);
      fn.removeFnAttr(llvm::Attribute::NoInline);
      fn.removeFnAttr(llvm::Attribute::OptimizeNone);
      fn.addFnAttr(llvm::Attribute::AlwaysInline);
    }
    fn.removeFnAttr("tune-cpu");
    fn.addFnAttr("target-cpu", cpu);
    fn.addFnAttr("target-features", features);
    // The kernel runs with FTZ and DAZ set (core/float_env.h): LLVM folds constants as that hardware would.
    fn.addFnAttr("denormal-fp-math", "preserve-sign,preserve-sign");
    fn.addFnAttr("denormal-fp-math-f32", "preserve-sign,preserve-sign");
    // As the interpreter's AVX-512 copy (-mprefer-vector-width=512): whole zmm registers.
    if (const char* width = std::getenv("EMBER_JIT_VECTOR_WIDTH"); width != nullptr)
      fn.addFnAttr("prefer-vector-width", width);
    else if (avx512)
      fn.addFnAttr("prefer-vector-width", "512");
  }
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::PassBuilder passes(&target, tuning);
  passes.registerModuleAnalyses(mam);
  passes.registerCGSCCAnalyses(cgam);
  passes.registerFunctionAnalyses(fam);
  passes.registerLoopAnalyses(lam);
  passes.crossRegisterProxies(lam, fam, cgam, mam);
  // The library's functions the kernel does not call go first, so -O3 spends nothing on them.
  llvm::ModulePassManager cleanup;
  cleanup.addPass(llvm::GlobalDCEPass());
  cleanup.run(module, mam);
  llvm::ModulePassManager pipeline = passes.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  pipeline.run(module, mam);
}

}  // namespace

std::string element_function_name(FusedOpcode opcode, int op, DType dtype, bool predicate) {
  const bool unary = opcode == FusedOpcode::kUnary;
  return std::string(predicate ? (unary ? "ember_jit_pu_" : "ember_jit_pb_")
                               : (unary ? "ember_jit_u_" : "ember_jit_b_")) +
         (unary ? kUnaryNames[op] : kBinaryNames[op]) + "_" + dtype_enum_name(dtype);
}

bool calls_interpreter_loop(UnaryOp op, DType dtype, bool fma) {
  // Complex element-wise loops are in the tables too, but complex programs are never fused
  // (kernels::fusible_unary), so no kernel calls them and the JIT need not know their symbols.
  if (is_complex(dtype)) return false;
  if (kernels::elementwise_tables().unary[static_cast<int>(op)][static_cast<int>(dtype)] == nullptr)
    return false;
  FusedInstruction instr;
  instr.op = static_cast<uint8_t>(op);
  return is_expensive(instr) || is_blockwise(instr, dtype, fma);
}

std::string interpreter_loop_symbol(UnaryOp op, DType dtype) {
  return std::string("ember_interpreter_u_") + kUnaryNames[static_cast<int>(op)] + "_" +
         dtype_enum_name(dtype);
}

std::span<const char> library_bitcode(bool fma) {
  if (fma)
    return {ember_jit_bitcode_fma, static_cast<size_t>(ember_jit_bitcode_fma_end - ember_jit_bitcode_fma)};
  return {ember_jit_bitcode_baseline,
          static_cast<size_t>(ember_jit_bitcode_baseline_end - ember_jit_bitcode_baseline)};
}

std::string kernel_fingerprint(const KernelSource& source) {
  const kernels::FusedProgram& program = *source.program;
  std::ostringstream text;
  text << "dtype=" << dtype_enum_name(program.dtype()) << ";inputs=" << program.num_inputs() << ";scalar=";
  for (bool s : source.scalar_inputs) text << (s ? '1' : '0');
  text << ";fma=" << source.fma << ";code=";
  for (const FusedInstruction& instr : program.instructions())
    text << static_cast<int>(instr.opcode) << ',' << static_cast<int>(instr.op) << ',' << instr.a << ','
         << instr.b << ';';
  text << "results=";
  for (int32_t r : program.results()) text << r << ',';
  return text.str();
}

StatusOr<std::unique_ptr<llvm::Module>> load_library(llvm::LLVMContext& ctx, bool fma,
                                                     llvm::TargetMachine& target) {
  ctx.setOpaquePointers(true);
  std::span<const char> bitcode = library_bitcode(fma);
  auto buffer = llvm::MemoryBuffer::getMemBuffer(llvm::StringRef(bitcode.data(), bitcode.size()),
                                                 "ember_jit_library", /*RequiresNullTerminator=*/false);
  auto parsed = llvm::parseBitcodeFile(buffer->getMemBufferRef(), ctx);
  if (!parsed) return internal_error("cannot read the JIT library: ", llvm::toString(parsed.takeError()));
  std::unique_ptr<llvm::Module> module = std::move(*parsed);
  module->setDataLayout(target.createDataLayout());
  module->setTargetTriple(target.getTargetTriple().str());
  stop_contraction_at_ops(*module);
  return module;
}

StatusOr<std::string> compile_kernel(const KernelSource& source, const std::string& symbol,
                                     llvm::TargetMachine& target) {
  llvm::LLVMContext ctx;
  auto module = load_library(ctx, source.fma, target);
  EMBER_RETURN_IF_ERROR(module.status());
  const bool avx512 = target.getTargetFeatureString().find("+avx512f") != llvm::StringRef::npos;
  Builder builder(source, **module, avx512 ? 32 : 16);
  EMBER_RETURN_IF_ERROR(builder.build(symbol));
  return optimize_and_emit(**module, target, symbol);
}

StatusOr<std::string> optimize_and_emit(llvm::Module& module, llvm::TargetMachine& target,
                                        const std::string& symbol) {
  std::string errors;
  llvm::raw_string_ostream error_stream(errors);
  if (llvm::verifyModule(module, &error_stream)) return internal_error("invalid kernel IR: ", errors);
  optimize(module, target, symbol);
  if (const char* dump = std::getenv("EMBER_JIT_DUMP_DIR"); dump != nullptr) {  // for reading the code
    std::error_code ec;
    llvm::raw_fd_ostream file(std::string(dump) + "/" + symbol + ".ll", ec);
    if (!ec) module.print(file, nullptr);
  }
  llvm::SmallVector<char, 0> object;
  llvm::raw_svector_ostream out(object);
  llvm::legacy::PassManager codegen;
  if (target.addPassesToEmitFile(codegen, out, nullptr, llvm::CGFT_ObjectFile))
    return internal_error("the target cannot emit object files");
  codegen.run(module);
  return std::string(object.begin(), object.end());
}

}  // namespace ember::jit
