#include "ember/kernels/fused_elementwise.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <mutex>
#include <new>
#include <optional>

#include "ember/core/parallel.h"
#include "ember/core/small_vector.h"

namespace ember::kernels {
namespace {

constexpr int64_t kTileBytes = 4096;

// Rough cycles per element, for deciding how many threads a program is worth.
int64_t instruction_cost(const FusedInstruction& instr) {
  if (instr.opcode == FusedOpcode::kUnary) return unary_cost(static_cast<UnaryOp>(instr.op));
  return binary_cost(static_cast<BinaryOp>(instr.op));
}

// Where an operand of one step reads (or its result writes) for the tile at element offset `off`.
enum class Source : uint8_t {
  kInput,     // a full-shape input, read in place at `off`
  kScalar,    // a one-element input, fed to the loops' scalar variants
  kPattern,   // a broadcast input expanded once per call; read at off % period
  kRegister,  // tile-sized scratch of the running thread
  kOutput,    // an output tensor, written (and later read) in place at `off`
};

struct Operand {
  Source source = Source::kRegister;
  int32_t index = 0;
};

struct Step {
  enum class Kind : uint8_t { kGather, kUnary, kBinary };
  Kind kind = Kind::kUnary;
  UnaryLoop unary = nullptr;
  BinaryLoop binary = nullptr;
  Operand dst, a, b;
  int32_t gather_input = -1;
};

// How one input maps onto the flattened domain: after dropping the domain's size-1 dims and merging dims
// that stay contiguous, dims[] of the domain with the input's element stride along each (0 where the input
// broadcasts). The innermost stride is 0 or 1.
struct InputLayout {
  enum class Kind : uint8_t { kFull, kScalar, kPattern, kGathered };
  Kind kind = Kind::kFull;
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};
  int64_t period = 0;  // the input's values repeat every `period` domain elements
};

Status plan_input(const Shape& shape, const Shape& domain, int index, int64_t tile, InputLayout& layout) {
  auto does_not_broadcast = [&] {
    return invalid_argument("input #", index, " has shape ", shape.to_string(),
                            ", which does not broadcast to the domain ", domain.to_string());
  };
  const int rank = domain.rank(), offset = rank - shape.rank();
  if (offset < 0) return does_not_broadcast();
  int64_t strides[kMaxRank];
  int64_t stride = 1;
  for (int i = rank - 1; i >= 0; --i) {
    int64_t d = i >= offset ? shape.dim(i - offset) : 1;
    if (d != 1 && d != domain.dim(i)) return does_not_broadcast();
    strides[i] = d == 1 ? 0 : stride;
    stride *= d;
  }
  const int64_t n = domain.num_elements();
  const int64_t input_elements = shape.num_elements();
  if (input_elements == n) {
    layout.kind = InputLayout::Kind::kFull;
    return Status::OK();
  }
  if (input_elements == 1) {
    layout.kind = InputLayout::Kind::kScalar;
    layout.period = 1;
    return Status::OK();
  }
  for (int i = 0; i < rank; ++i) {
    int64_t d = domain.dim(i);
    if (d == 1) continue;
    if (layout.rank > 0 && layout.strides[layout.rank - 1] == strides[i] * d) {
      layout.dims[layout.rank - 1] *= d;
      layout.strides[layout.rank - 1] = strides[i];
      continue;
    }
    layout.dims[layout.rank] = d;
    layout.strides[layout.rank] = strides[i];
    ++layout.rank;
  }
  int leading_broadcast = 0;
  while (leading_broadcast < layout.rank && layout.strides[leading_broadcast] == 0) ++leading_broadcast;
  layout.period = 1;
  for (int i = leading_broadcast; i < layout.rank; ++i) layout.period *= layout.dims[i];
  // A pattern that repeats within a tile is expanded once per call and then read in place.
  layout.kind = layout.period <= tile ? InputLayout::Kind::kPattern : InputLayout::Kind::kGathered;
  return Status::OK();
}

void fill_elements(char* dst, const char* value, int64_t count, size_t element_size) {
  switch (element_size) {
    case 1:
      std::memset(dst, *value, count);
      return;
    case 2: {
      uint16_t v;
      std::memcpy(&v, value, 2);
      std::fill_n(reinterpret_cast<uint16_t*>(dst), count, v);
      return;
    }
    case 4: {
      uint32_t v;
      std::memcpy(&v, value, 4);
      std::fill_n(reinterpret_cast<uint32_t*>(dst), count, v);
      return;
    }
    case 8: {
      uint64_t v;
      std::memcpy(&v, value, 8);
      std::fill_n(reinterpret_cast<uint64_t*>(dst), count, v);
      return;
    }
    default:
      for (int64_t i = 0; i < count; ++i) std::memcpy(dst + i * element_size, value, element_size);
  }
}

// Copies domain elements [off, off + count) of a broadcast input into dst, one innermost run at a time
// (a memcpy where the input is contiguous, a fill where it broadcasts). The outermost index is not
// wrapped, so a pattern may be expanded past the first period when its leading dims broadcast.
void gather(const InputLayout& layout, const char* data, int64_t off, int64_t count, char* dst,
            size_t element_size) {
  if (layout.rank == 0) {  // a one-element input
    fill_elements(dst, data, count, element_size);
    return;
  }
  const int last = layout.rank - 1;
  int64_t index[kMaxRank];
  int64_t rest = off, source = 0;
  for (int d = last; d > 0; --d) {
    index[d] = rest % layout.dims[d];
    rest /= layout.dims[d];
  }
  index[0] = rest;
  for (int d = 0; d <= last; ++d) source += index[d] * layout.strides[d];
  while (count > 0) {
    int64_t run = std::min(count, layout.dims[last] - index[last]);
    if (layout.strides[last] == 0) {
      fill_elements(dst, data + source * element_size, run, element_size);
    } else {
      std::memcpy(dst, data + source * element_size, run * element_size);
    }
    dst += run * element_size;
    count -= run;
    index[last] += run;
    source += run * layout.strides[last];
    for (int d = last; d > 0 && index[d] == layout.dims[d]; --d) {
      index[d] = 0;
      source -= layout.dims[d] * layout.strides[d];
      ++index[d - 1];
      source += layout.strides[d - 1];
    }
  }
}

// 64-byte aligned scratch owned by one thread, grown on demand and kept for the thread's lifetime, so a
// steady state allocates nothing.
class ThreadScratch {
 public:
  ~ThreadScratch() { std::free(data_); }
  char* get(size_t bytes) {
    if (bytes <= size_) return data_;
    size_t rounded = (bytes + 63) / 64 * 64;
    char* fresh = static_cast<char*>(std::aligned_alloc(64, rounded));
    if (fresh == nullptr) return nullptr;
    std::free(data_);
    data_ = fresh;
    size_ = rounded;
    return data_;
  }

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
};

thread_local ThreadScratch t_registers;
thread_local ThreadScratch t_patterns;
thread_local ThreadScratch t_reduced;  // a reduced value that is no output (Note [Fused reductions])

// The result a run writes to a per-thread tile buffer instead of a tensor, or -1.
int reduced_buffer_index(const FusedProgram& program) {
  const auto& spec = program.reduction();
  return spec && spec->internal ? spec->result : -1;
}

// The register bytecode for one call: steps in program order with their operands resolved.
struct Plan {
  std::vector<Step> steps;
  int num_registers = 0;
  int64_t cost_per_element = 0;
};

Plan make_plan(const FusedProgram& program, std::span<InputLayout> layouts) {
  const int num_inputs = program.num_inputs();
  auto instructions = program.instructions();
  const int num_values = num_inputs + static_cast<int>(instructions.size());
  const auto& tables = elementwise_tables();
  const int dtype = static_cast<int>(program.dtype());

  std::vector<int32_t> result_slot(num_values, -1);
  for (int j = 0; j < program.num_results(); ++j) result_slot[program.results()[j]] = j;
  std::vector<int32_t> last_use(num_values, -1);
  for (size_t i = 0; i < instructions.size(); ++i) {
    last_use[instructions[i].a] = static_cast<int32_t>(i);
    if (instructions[i].opcode == FusedOpcode::kBinary) last_use[instructions[i].b] = static_cast<int32_t>(i);
  }

  // A scalar input that a loop cannot take as a scalar (a unary op's operand, or both operands of a
  // binary op) is read from its one-element pattern instead.
  auto is_scalar = [&](int32_t id) {
    return id < num_inputs && layouts[id].kind == InputLayout::Kind::kScalar;
  };
  std::vector<bool> scalar_as_pattern(num_inputs, false);
  for (const FusedInstruction& instr : instructions) {
    if (instr.opcode == FusedOpcode::kUnary && is_scalar(instr.a)) scalar_as_pattern[instr.a] = true;
    if (instr.opcode == FusedOpcode::kBinary && is_scalar(instr.a) && is_scalar(instr.b))
      scalar_as_pattern[instr.a] = true;
  }
  for (int k = 0; k < num_inputs; ++k)
    if (scalar_as_pattern[k]) layouts[k].kind = InputLayout::Kind::kPattern;

  Plan plan;
  std::vector<Operand> where(num_values);
  std::vector<bool> gathered(num_inputs, false);
  std::vector<int32_t> free_registers;
  auto allocate = [&] {
    if (free_registers.empty()) return plan.num_registers++;
    int32_t r = free_registers.back();
    free_registers.pop_back();
    return r;
  };
  for (int k = 0; k < num_inputs; ++k) {
    switch (layouts[k].kind) {
      case InputLayout::Kind::kFull:
        where[k] = {Source::kInput, k};
        break;
      case InputLayout::Kind::kScalar:
        where[k] = {Source::kScalar, k};
        break;
      case InputLayout::Kind::kPattern:
        where[k] = {Source::kPattern, k};
        break;
      case InputLayout::Kind::kGathered:
        break;  // gets a register at its first use
    }
  }
  auto operand = [&](int32_t id) {
    if (id < num_inputs && layouts[id].kind == InputLayout::Kind::kGathered && !gathered[id]) {
      gathered[id] = true;
      Step load;
      load.kind = Step::Kind::kGather;
      load.gather_input = id;
      load.dst = {Source::kRegister, allocate()};
      where[id] = load.dst;
      plan.steps.push_back(load);
    }
    return where[id];
  };
  auto release = [&](int32_t id, int32_t step) {
    if (last_use[id] == step && where[id].source == Source::kRegister)
      free_registers.push_back(where[id].index);
  };

  for (size_t i = 0; i < instructions.size(); ++i) {
    const FusedInstruction& instr = instructions[i];
    const int32_t id = num_inputs + static_cast<int32_t>(i);
    Step step;
    step.a = operand(instr.a);
    if (instr.opcode == FusedOpcode::kUnary) {
      step.kind = Step::Kind::kUnary;
      step.unary = tables.unary[instr.op][dtype];
    } else {
      step.kind = Step::Kind::kBinary;
      step.b = operand(instr.b);
      const BinaryLoops& loops = tables.binary[instr.op][dtype];
      step.binary = step.a.source == Source::kScalar   ? loops.sv
                    : step.b.source == Source::kScalar ? loops.vs
                                                       : loops.vv;
    }
    // Operands dying here free their registers first, so the result may overwrite one in place (the loops
    // read element k before writing element k).
    release(instr.a, static_cast<int32_t>(i));
    if (instr.opcode == FusedOpcode::kBinary && instr.b != instr.a) release(instr.b, static_cast<int32_t>(i));
    step.dst = result_slot[id] >= 0 ? Operand{Source::kOutput, result_slot[id]}
                                    : Operand{Source::kRegister, allocate()};
    where[id] = step.dst;
    plan.steps.push_back(step);
    if (last_use[id] < 0) release(id, -1);  // a dead value: its register is free again at once
    plan.cost_per_element += instruction_cost(instr);
  }
  return plan;
}

}  // namespace

int64_t append_unary(std::vector<int64_t>& code, int num_inputs, UnaryOp op, int64_t a) {
  int64_t id = num_inputs + static_cast<int64_t>(code.size()) / kFusedInstructionWidth;
  code.insert(code.end(), {static_cast<int64_t>(FusedOpcode::kUnary), static_cast<int64_t>(op), a, -1});
  return id;
}

int64_t append_binary(std::vector<int64_t>& code, int num_inputs, BinaryOp op, int64_t a, int64_t b) {
  int64_t id = num_inputs + static_cast<int64_t>(code.size()) / kFusedInstructionWidth;
  code.insert(code.end(), {static_cast<int64_t>(FusedOpcode::kBinary), static_cast<int64_t>(op), a, b});
  return id;
}

// Complex ops are never fused: the fused interpreter and the JIT compute in real registers
// (docs/complex.md). A complex value runs op by op through its std::complex loops instead.
bool fusible_unary(UnaryOp op, DType dtype) {
  if (op >= UnaryOp::kCount || is_complex(dtype)) return false;
  if (returns_bool(op) && dtype != DType::kBool) return false;
  return elementwise_tables().unary[static_cast<int>(op)][static_cast<int>(dtype)] != nullptr;
}

bool fusible_binary(BinaryOp op, DType dtype) {
  if (op >= BinaryOp::kCount || is_complex(dtype)) return false;
  if (returns_bool(op) && dtype != DType::kBool) return false;
  if (is_integer(dtype) && (op == BinaryOp::kFloorDiv || op == BinaryOp::kFloorMod || op == BinaryOp::kPow))
    return false;
  return elementwise_tables().binary[static_cast<int>(op)][static_cast<int>(dtype)].vv != nullptr;
}

int64_t FusedProgram::tile_elements(DType dtype) {
  return kTileBytes / static_cast<int64_t>(dtype_size(dtype));
}

StatusOr<FusedProgram> FusedProgram::decode(std::span<const int64_t> code, int num_inputs,
                                            std::span<const int64_t> results, DType dtype) {
  return decode_records(code, num_inputs, results, dtype, /*reducing=*/false);
}

StatusOr<FusedProgram> FusedProgram::decode_reducing(std::span<const int64_t> code, int num_inputs,
                                                     std::span<const int64_t> results, DType dtype,
                                                     ReduceOp op, int64_t value, int64_t reduced_dims) {
  auto program = decode_records(code, num_inputs, results, dtype, /*reducing=*/true);
  if (!program.ok()) return program;
  EMBER_RETURN_IF_ERROR(program->add_reduction(op, value, reduced_dims));
  return program;
}

StatusOr<FusedProgram> FusedProgram::decode_records(std::span<const int64_t> code, int num_inputs,
                                                    std::span<const int64_t> results, DType dtype,
                                                    bool reducing) {
  if (code.size() % kFusedInstructionWidth != 0)
    return invalid_argument("program has ", code.size(), " ints; expected records of ",
                            kFusedInstructionWidth, " (opcode, op, a, b)");
  if (num_inputs < 1) return invalid_argument("a program needs at least one input");
  FusedProgram program;
  program.num_inputs_ = num_inputs;
  program.dtype_ = dtype;
  const int64_t count = static_cast<int64_t>(code.size()) / kFusedInstructionWidth;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t* record = code.data() + i * kFusedInstructionWidth;
    const int64_t defined = num_inputs + i;  // ids below this are available to instruction i
    FusedInstruction instr;
    auto check_operand = [&](int64_t id) {
      return id >= 0 && id < defined
                 ? Status::OK()
                 : invalid_argument("instruction #", i, " reads value ", id,
                                    ", which is not defined before it (ids 0..", defined - 1, ")");
    };
    if (record[0] == static_cast<int64_t>(FusedOpcode::kUnary)) {
      instr.opcode = FusedOpcode::kUnary;
      if (record[1] < 0 || !fusible_unary(static_cast<UnaryOp>(record[1]), dtype))
        return invalid_argument("instruction #", i, ": unary op ", record[1], " cannot run in a ",
                                dtype_name(dtype), " program");
      if (record[3] != -1)
        return invalid_argument("instruction #", i, " is unary; its second operand must be -1, got ",
                                record[3]);
      EMBER_RETURN_IF_ERROR(check_operand(record[2]));
    } else if (record[0] == static_cast<int64_t>(FusedOpcode::kBinary)) {
      instr.opcode = FusedOpcode::kBinary;
      if (record[1] < 0 || !fusible_binary(static_cast<BinaryOp>(record[1]), dtype))
        return invalid_argument("instruction #", i, ": binary op ", record[1], " cannot run in a ",
                                dtype_name(dtype), " program");
      EMBER_RETURN_IF_ERROR(check_operand(record[2]));
      EMBER_RETURN_IF_ERROR(check_operand(record[3]));
    } else {
      return invalid_argument("instruction #", i, " has opcode ", record[0], "; expected ",
                              static_cast<int64_t>(FusedOpcode::kUnary), " (unary) or ",
                              static_cast<int64_t>(FusedOpcode::kBinary), " (binary)");
    }
    instr.op = static_cast<uint8_t>(record[1]);
    instr.a = static_cast<int32_t>(record[2]);
    instr.b = static_cast<int32_t>(record[3]);
    program.instructions_.push_back(instr);
  }
  if (results.empty() && !reducing) return invalid_argument("a program needs at least one result");
  std::vector<bool> seen(num_inputs + count, false);
  for (int64_t id : results) {
    if (id < num_inputs || id >= num_inputs + count)
      return invalid_argument("result ", id, " is not a value an instruction defines (ids ", num_inputs, "..",
                              num_inputs + count - 1, ")");
    if (seen[id]) return invalid_argument("result ", id, " is listed twice");
    seen[id] = true;
    program.results_.push_back(static_cast<int32_t>(id));
  }
  return program;
}

Status FusedProgram::add_reduction(ReduceOp op, int64_t value, int64_t reduced_dims) {
  if (reduction_) return invalid_argument("the program already ends in a reduction");
  if (op != ReduceOp::kSum && op != ReduceOp::kMean && op != ReduceOp::kProd && op != ReduceOp::kMax &&
      op != ReduceOp::kMin)
    return invalid_argument("reduction ", static_cast<int>(op), " cannot end a program; expected Sum (",
                            static_cast<int>(ReduceOp::kSum), "), Mean, Prod, Max or Min (",
                            static_cast<int>(ReduceOp::kMin), ")");
  if (reduce_tables().reduce[static_cast<int>(op)][static_cast<int>(dtype_)].row == nullptr)
    return invalid_argument("reduction ", static_cast<int>(op), " has no loop for ", dtype_name(dtype_));
  const int64_t count = static_cast<int64_t>(instructions_.size());
  if (value < num_inputs_ || value >= num_inputs_ + count)
    return invalid_argument("the reduced value ", value, " is not a value an instruction defines (ids ",
                            num_inputs_, "..", num_inputs_ + count - 1, ")");
  if (reduced_dims < 1 || reduced_dims > kMaxRank)
    return invalid_argument("a reduction over ", reduced_dims, " trailing dims; expected 1..", kMaxRank);
  FusedReductionSpec spec;
  spec.op = op;
  spec.reduced_dims = static_cast<int>(reduced_dims);
  auto it = std::find(results_.begin(), results_.end(), static_cast<int32_t>(value));
  spec.internal = it == results_.end();
  if (spec.internal) results_.push_back(static_cast<int32_t>(value));
  spec.result =
      spec.internal ? static_cast<int>(results_.size()) - 1 : static_cast<int>(it - results_.begin());
  reduction_ = spec;
  return Status::OK();
}

int FusedProgram::num_outputs() const {
  if (!reduction_) return num_results();
  return num_results() - (reduction_->internal ? 1 : 0) + 1;
}

bool broadcast_into(const Shape& a, const Shape& b, Shape& out) {
  if (a == b) {
    out = a;
    return true;
  }
  const int rank = std::max(a.rank(), b.rank());
  int64_t dims[kMaxRank];
  for (int i = 0; i < rank; ++i) {
    const int ia = i - (rank - a.rank()), ib = i - (rank - b.rank());
    const int64_t da = ia >= 0 ? a.dim(ia) : 1, db = ib >= 0 ? b.dim(ib) : 1;
    if (da != db && da != 1 && db != 1) return false;
    dims[i] = da == 1 ? db : da;
  }
  out = Shape(std::span<const int64_t>(dims, static_cast<size_t>(rank)));
  return true;
}

namespace {

std::atomic<NativeFusedCompiler*> g_native_compiler{nullptr};
std::atomic<int64_t> g_native_runs{0}, g_interpreted_runs{0};

// One run of a program's reduction (Note [Fused reductions] in the header): the work items, each a chunk
// of the domain, and the accumulators they fill. Rows of at most a tile go whole into an item, as many as
// fit (one accumulator each); longer rows are cut into tiles (one partial accumulator each, merged in row
// order by finish). The items depend on the shape alone.
class ReductionRun {
 public:
  static StatusOr<ReductionRun> make(const FusedProgram& program, const Shape& domain, TensorImpl& out) {
    const FusedReductionSpec& spec = *program.reduction();
    ReductionRun r;
    r.loops_ = &reduce_tables().reduce[static_cast<int>(spec.op)][static_cast<int>(program.dtype())];
    r.acc_bytes_ = r.loops_->acc_size;
    r.element_size_ = dtype_size(program.dtype());
    r.tile_ = FusedProgram::tile_elements(program.dtype());
    if (spec.reduced_dims > domain.rank())
      return invalid_argument("the reduction is over the last ", spec.reduced_dims,
                              " dims of a domain of rank ", domain.rank(), " (", domain.to_string(), ")");
    r.rows_ = 1;
    r.row_length_ = 1;
    for (int i = 0; i < domain.rank(); ++i)
      (i < domain.rank() - spec.reduced_dims ? r.rows_ : r.row_length_) *= domain.dim(i);
    if (out.shape().num_elements() != r.rows_)
      return invalid_argument("the reduction's output ", out.shape().to_string(), " has ",
                              out.shape().num_elements(), " elements; the domain ", domain.to_string(),
                              " reduced over its last ", spec.reduced_dims, " dims has ", r.rows_);
    r.out_ = static_cast<char*>(out.mutable_raw_data());
    int64_t accumulators;
    if (r.row_length_ <= r.tile_) {
      r.rows_per_item_ = r.tile_ / std::max<int64_t>(1, r.row_length_);
      r.items_ = r.row_length_ == 0 ? 0 : (r.rows_ + r.rows_per_item_ - 1) / r.rows_per_item_;
      accumulators = r.rows_;
    } else {
      r.chunks_per_row_ = (r.row_length_ + r.tile_ - 1) / r.tile_;
      r.items_ = r.rows_ * r.chunks_per_row_;
      accumulators = r.items_;
    }
    r.accumulators_.reset(new (std::nothrow) char[std::max<int64_t>(1, accumulators) * r.acc_bytes_]);
    if (r.accumulators_ == nullptr)
      return make_error(Code::kResourceExhausted, "cannot allocate ", accumulators,
                        " accumulators of a fused "
                        "reduction");
    r.loops_->init(r.accumulators_.get(), accumulators);
    return r;
  }

  int64_t items() const { return items_; }

  // Item `item` covers domain elements [off, off + count).
  void extent(int64_t item, int64_t& off, int64_t& count) const {
    if (rows_per_item_ > 0) {
      const int64_t first = item * rows_per_item_;
      off = first * row_length_;
      count = std::min(rows_per_item_, rows_ - first) * row_length_;
      return;
    }
    const int64_t row = item / chunks_per_row_, chunk = item % chunks_per_row_;
    off = row * row_length_ + chunk * tile_;
    count = std::min(tile_, row_length_ - chunk * tile_);
  }

  // Folds the reduced value of item `item` (`count` elements at `values`) into its accumulators.
  void accumulate(int64_t item, const char* values, int64_t count) const {
    if (rows_per_item_ > 0) {
      const int64_t rows = count / row_length_;
      loops_->row(values, rows, row_length_, row_length_,
                  accumulators_.get() + item * rows_per_item_ * acc_bytes_);
      return;
    }
    loops_->row(values, 1, count, count, accumulators_.get() + item * acc_bytes_);
  }

  // Merges a long row's partials in order and writes every row's result.
  void finish() const {
    char* acc = accumulators_.get();
    if (rows_per_item_ > 0) {
      loops_->finalize(acc, rows_, row_length_, out_);
      return;
    }
    for (int64_t row = 0; row < rows_; ++row) {
      char* first = acc + row * chunks_per_row_ * acc_bytes_;
      for (int64_t c = 1; c < chunks_per_row_; ++c) loops_->merge(first, first + c * acc_bytes_, 1);
      loops_->finalize(first, 1, row_length_, out_ + row * element_size_);
    }
  }

 private:
  const ReduceLoops* loops_ = nullptr;
  size_t acc_bytes_ = 0, element_size_ = 0;
  int64_t tile_ = 0, rows_ = 0, row_length_ = 0;
  int64_t rows_per_item_ = 0;   // > 0: whole rows per item
  int64_t chunks_per_row_ = 0;  // else: tiles per row
  int64_t items_ = 0;
  std::shared_ptr<char[]> accumulators_;
  char* out_ = nullptr;
};

// A program bound to one set of input shapes and one domain: the layouts and register bytecode.
struct Binding {
  Shape domain;
  std::vector<Shape> input_shapes;
  std::vector<InputLayout> layouts;
  Plan plan;
  std::vector<int64_t> pattern_offset;  // per input: byte offset of its expanded pattern, or -1
  int64_t pattern_bytes = 0;
  std::shared_ptr<NativeFusedSlot> native;  // null unless a compiler was asked (Note [Native fused kernels])
  bool counted = false;                     // runs of bindings kept by a prepared program are counted
};

StatusOr<std::shared_ptr<const Binding>> bind(const FusedProgram& program, std::span<const Shape> inputs,
                                              const Shape& domain, bool want_native = false) {
  if (static_cast<int>(inputs.size()) != program.num_inputs())
    return invalid_argument("the program takes ", program.num_inputs(), " inputs, got ", inputs.size());
  auto binding = std::make_shared<Binding>();
  binding->domain = domain;
  binding->input_shapes.assign(inputs.begin(), inputs.end());
  const int64_t tile = FusedProgram::tile_elements(program.dtype());
  binding->layouts.resize(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k)
    EMBER_RETURN_IF_ERROR(plan_input(inputs[k], domain, static_cast<int>(k), tile, binding->layouts[k]));
  binding->plan = make_plan(program, binding->layouts);
  // Expanded patterns: period + one tile of elements each, so every tile reads one contiguous window.
  const int64_t n = domain.num_elements();
  binding->pattern_offset.assign(inputs.size(), -1);
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (binding->layouts[k].kind != InputLayout::Kind::kPattern) continue;
    binding->pattern_offset[k] = binding->pattern_bytes;
    int64_t length = std::min(n, tile + binding->layouts[k].period);
    binding->pattern_bytes += (length * static_cast<int64_t>(dtype_size(program.dtype())) + 63) / 64 * 64;
  }
  NativeFusedCompiler* compiler = g_native_compiler.load(std::memory_order_acquire);
  binding->counted = want_native;
  if (want_native && compiler != nullptr && n > 0) {
    // make_plan may have turned scalars into patterns; the kernel reads what the binding hands it.
    std::unique_ptr<bool[]> scalar(new bool[inputs.size()]);
    for (size_t k = 0; k < inputs.size(); ++k)
      scalar[k] = binding->layouts[k].kind == InputLayout::Kind::kScalar;
    binding->native = std::make_shared<NativeFusedSlot>();
    compiler->request(program, {scalar.get(), inputs.size()}, binding->native);
  }
  return std::shared_ptr<const Binding>(std::move(binding));
}

// Runs a bound program through its native kernel: the interpreter's tiles and threads, with one call of
// the kernel per tile (per thread's share of the domain when no input needs a pattern or a gather).
Status run_native(NativeFusedFn kernel, const FusedProgram& program, const Binding& binding,
                  std::span<const char* const> input_data, std::span<char* const> output_data,
                  std::span<const char* const> pattern_data, const ReductionRun* reduction) {
  const int64_t tile = FusedProgram::tile_elements(program.dtype());
  const size_t element_size = dtype_size(program.dtype());
  const int64_t n = binding.domain.num_elements();
  const auto& layouts = binding.layouts;
  const int num_inputs = static_cast<int>(layouts.size());
  int num_gathered = 0;
  bool per_tile = false;
  for (const InputLayout& layout : layouts) {
    num_gathered += layout.kind == InputLayout::Kind::kGathered;
    per_tile =
        per_tile || layout.kind == InputLayout::Kind::kGathered || layout.kind == InputLayout::Kind::kPattern;
  }
  const int64_t num_tiles = (n + tile - 1) / tile;
  const size_t register_bytes = static_cast<size_t>(tile) * element_size;
  const int internal = reduced_buffer_index(program);
  std::atomic<bool> out_of_memory{false};
  parallel_for(reduction != nullptr ? reduction->items() : num_tiles,
               tile * std::max<int64_t>(1, binding.plan.cost_per_element), [&](int64_t first, int64_t last) {
                 SmallVector<const void*, 16> in;
                 in.resize(num_inputs);
                 SmallVector<void*, 4> out;
                 out.resize(output_data.size());
                 char* scratch = nullptr;
                 if (num_gathered > 0) {
                   scratch = t_registers.get(num_gathered * register_bytes);
                   if (scratch == nullptr) {
                     out_of_memory = true;
                     return;
                   }
                 }
                 char* reduced = nullptr;
                 if (internal >= 0 && (reduced = t_reduced.get(register_bytes)) == nullptr) {
                   out_of_memory = true;
                   return;
                 }
                 auto call = [&](int64_t off, int64_t count) {
                   int gathered = 0;
                   for (int k = 0; k < num_inputs; ++k) {
                     switch (layouts[k].kind) {
                       case InputLayout::Kind::kFull:
                         in[k] = input_data[k] + off * element_size;
                         break;
                       case InputLayout::Kind::kScalar:
                         in[k] = input_data[k];
                         break;
                       case InputLayout::Kind::kPattern:
                         in[k] = pattern_data[k] + (off % layouts[k].period) * element_size;
                         break;
                       case InputLayout::Kind::kGathered: {
                         char* dst = scratch + gathered++ * register_bytes;
                         gather(layouts[k], input_data[k], off, count, dst, element_size);
                         in[k] = dst;
                         break;
                       }
                     }
                   }
                   for (size_t j = 0; j < out.size(); ++j)
                     out[j] = static_cast<int>(j) == internal ? reduced : output_data[j] + off * element_size;
                   kernel(in.data(), out.data(), count);
                 };
                 if (reduction != nullptr) {
                   const int r = program.reduction()->result;
                   for (int64_t item = first; item < last; ++item) {
                     int64_t off, count;
                     reduction->extent(item, off, count);
                     call(off, count);
                     reduction->accumulate(
                         item, r == internal ? reduced : output_data[r] + off * element_size, count);
                   }
                   return;
                 }
                 if (!per_tile) {
                   const int64_t off = first * tile;
                   call(off, std::min(n, last * tile) - off);
                   return;
                 }
                 for (int64_t t = first; t < last; ++t) call(t * tile, std::min(tile, n - t * tile));
               });
  if (out_of_memory)
    return make_error(Code::kResourceExhausted, "cannot allocate the gather buffers of a fused program");
  return Status::OK();
}

// Runs a bound program; the inputs have the binding's shapes and every output its domain.
Status run_binding(const FusedProgram& program, const Binding& binding,
                   std::span<const TensorImpl* const> inputs, std::span<TensorImpl* const> outputs) {
  const DType dtype = program.dtype();
  SmallVector<const char*, 8> input_data;
  for (const TensorImpl* in : inputs) input_data.push_back(static_cast<const char*>(in->raw_data()));
  const int64_t tile = FusedProgram::tile_elements(dtype);
  const size_t element_size = dtype_size(dtype);
  const int64_t n = binding.domain.num_elements();
  std::optional<ReductionRun> reduction;
  if (program.reduction()) {
    auto made = ReductionRun::make(program, binding.domain, *outputs.back());
    if (!made.ok()) return made.status();
    reduction = std::move(made).value();
  }
  if (n == 0) {
    if (reduction) reduction->finish();  // the empty reduction's identity (Mean: NaN) per row
    return Status::OK();
  }
  const Plan& plan = binding.plan;
  const auto& layouts = binding.layouts;

  SmallVector<const char*, 8> pattern_data;
  for (size_t k = 0; k < inputs.size(); ++k) pattern_data.push_back(nullptr);
  if (binding.pattern_bytes > 0) {
    char* patterns = t_patterns.get(binding.pattern_bytes);
    if (patterns == nullptr)
      return make_error(Code::kResourceExhausted, "cannot allocate ", binding.pattern_bytes,
                        " bytes of patterns");
    for (size_t k = 0; k < layouts.size(); ++k) {
      int64_t offset = binding.pattern_offset[k];
      if (offset < 0) continue;
      gather(layouts[k], input_data[k], 0, std::min(n, tile + layouts[k].period), patterns + offset,
             element_size);
      pattern_data[k] = patterns + offset;
    }
  }

  // Per result: its tensor's data, or null for an internal reduced value (a per-thread buffer).
  const int internal = reduced_buffer_index(program);
  SmallVector<char*, 4> output_data;
  for (int j = 0; j < program.num_results(); ++j)
    output_data.push_back(j == internal ? nullptr : static_cast<char*>(outputs[j]->mutable_raw_data()));
  const ReductionRun* reducing = reduction ? &*reduction : nullptr;
  if (NativeFusedFn kernel = binding.native != nullptr ? binding.native->get() : nullptr) {
    g_native_runs.fetch_add(1, std::memory_order_relaxed);
    EMBER_RETURN_IF_ERROR(run_native(kernel, program, binding, {input_data.data(), input_data.size()},
                                     {output_data.data(), output_data.size()},
                                     {pattern_data.data(), pattern_data.size()}, reducing));
    if (reducing != nullptr) reducing->finish();
    return Status::OK();
  }
  if (binding.counted) g_interpreted_runs.fetch_add(1, std::memory_order_relaxed);
  const int64_t num_tiles = (n + tile - 1) / tile;
  const size_t register_bytes = static_cast<size_t>(tile) * element_size;
  std::atomic<bool> out_of_memory{false};
  parallel_for(reducing != nullptr ? reducing->items() : num_tiles,
               tile * std::max<int64_t>(1, plan.cost_per_element), [&](int64_t first, int64_t last) {
                 char* registers = t_registers.get(std::max<size_t>(1, plan.num_registers * register_bytes));
                 char* reduced = internal >= 0 ? t_reduced.get(register_bytes) : nullptr;
                 if (registers == nullptr || (internal >= 0 && reduced == nullptr)) {
                   out_of_memory = true;
                   return;
                 }
                 auto pointer = [&](const Operand& o, int64_t off) -> char* {
                   switch (o.source) {
                     case Source::kInput:
                       return const_cast<char*>(input_data[o.index]) + off * element_size;
                     case Source::kScalar:
                       return const_cast<char*>(input_data[o.index]);
                     case Source::kPattern:
                       return const_cast<char*>(pattern_data[o.index]) +
                              (off % layouts[o.index].period) * element_size;
                     case Source::kRegister:
                       return registers + o.index * register_bytes;
                     case Source::kOutput:
                       return o.index == internal ? reduced : output_data[o.index] + off * element_size;
                   }
                   return nullptr;
                 };
                 for (int64_t t = first; t < last; ++t) {
                   int64_t off = t * tile, count = std::min(tile, n - off);
                   if (reducing != nullptr) reducing->extent(t, off, count);
                   for (const Step& step : plan.steps) {
                     char* dst = pointer(step.dst, off);
                     switch (step.kind) {
                       case Step::Kind::kGather:
                         gather(layouts[step.gather_input], input_data[step.gather_input], off, count, dst,
                                element_size);
                         break;
                       case Step::Kind::kUnary:
                         step.unary(pointer(step.a, off), dst, count);
                         break;
                       case Step::Kind::kBinary:
                         step.binary(pointer(step.a, off), pointer(step.b, off), dst, count);
                         break;
                     }
                   }
                   if (reducing != nullptr) {
                     const int r = program.reduction()->result;
                     reducing->accumulate(t, r == internal ? reduced : output_data[r] + off * element_size,
                                          count);
                   }
                 }
               });
  if (out_of_memory)
    return make_error(Code::kResourceExhausted, "cannot allocate the registers of a fused program");
  if (reducing != nullptr) reducing->finish();
  return Status::OK();
}

// Per value of a program, the inputs it reads (directly or through earlier instructions), sorted.
std::vector<std::vector<int32_t>> inputs_read(const FusedProgram& program) {
  const int num_inputs = program.num_inputs();
  auto instructions = program.instructions();
  std::vector<std::vector<int32_t>> reads(num_inputs + instructions.size());
  for (int k = 0; k < num_inputs; ++k) reads[k] = {k};
  for (size_t i = 0; i < instructions.size(); ++i) {
    std::vector<int32_t>& mine = reads[num_inputs + i];
    mine = reads[instructions[i].a];
    if (instructions[i].opcode == FusedOpcode::kBinary) {
      const std::vector<int32_t>& other = reads[instructions[i].b];
      std::vector<int32_t> merged;
      std::set_union(mine.begin(), mine.end(), other.begin(), other.end(), std::back_inserter(merged));
      mine = std::move(merged);
    }
  }
  return reads;
}

// The program restricted to what `results` need, its inputs renumbered; `used_inputs` receives the
// original index of each input it keeps.
StatusOr<FusedProgram> subprogram(const FusedProgram& program, std::span<const int32_t> results,
                                  std::vector<int32_t>& used_inputs) {
  const int num_inputs = program.num_inputs();
  auto instructions = program.instructions();
  std::vector<bool> needed(num_inputs + instructions.size(), false);
  for (int32_t r : results) needed[r] = true;
  for (int64_t i = static_cast<int64_t>(instructions.size()) - 1; i >= 0; --i) {
    if (!needed[num_inputs + i]) continue;
    needed[instructions[i].a] = true;
    if (instructions[i].opcode == FusedOpcode::kBinary) needed[instructions[i].b] = true;
  }
  std::vector<int64_t> renamed(needed.size(), -1);
  used_inputs.clear();
  for (int k = 0; k < num_inputs; ++k) {
    if (!needed[k]) continue;
    renamed[k] = static_cast<int64_t>(used_inputs.size());
    used_inputs.push_back(k);
  }
  const int kept = static_cast<int>(used_inputs.size());
  std::vector<int64_t> code;
  for (size_t i = 0; i < instructions.size(); ++i) {
    if (!needed[num_inputs + i]) continue;
    const FusedInstruction& instr = instructions[i];
    renamed[num_inputs + i] =
        instr.opcode == FusedOpcode::kUnary
            ? append_unary(code, kept, static_cast<UnaryOp>(instr.op), renamed[instr.a])
            : append_binary(code, kept, static_cast<BinaryOp>(instr.op), renamed[instr.a], renamed[instr.b]);
  }
  std::vector<int64_t> sub_results;
  for (int32_t r : results) sub_results.push_back(renamed[r]);
  return FusedProgram::decode(code, kept, sub_results, program.dtype());
}

Status check_dtypes(const FusedProgram& program, std::span<const TensorImpl* const> inputs,
                    std::span<TensorImpl* const> outputs) {
  if (static_cast<int>(inputs.size()) != program.num_inputs())
    return invalid_argument("the program takes ", program.num_inputs(), " inputs, got ", inputs.size());
  if (static_cast<int>(outputs.size()) != program.num_outputs())
    return invalid_argument("the program has ", program.num_outputs(), " outputs, got ", outputs.size());
  for (size_t k = 0; k < inputs.size(); ++k)
    if (inputs[k]->dtype() != program.dtype())
      return invalid_argument("input #", k, " has dtype ", dtype_name(inputs[k]->dtype()),
                              "; the program runs on ", dtype_name(program.dtype()));
  for (size_t j = 0; j < outputs.size(); ++j)
    if (outputs[j]->dtype() != program.dtype())
      return invalid_argument("output #", j, " has dtype ", dtype_name(outputs[j]->dtype()),
                              "; the program runs on ", dtype_name(program.dtype()));
  return Status::OK();
}

bool broadcasts_to(const Shape& shape, const Shape& domain) {
  const int offset = domain.rank() - shape.rank();
  if (offset < 0) return false;
  for (int i = 0; i < shape.rank(); ++i)
    if (shape.dim(i) != 1 && shape.dim(i) != domain.dim(offset + i)) return false;
  return true;
}

// Note [Fusion over unknown dimensions]
// A group fused while some dims were unknown computes every member over one domain, the broadcast of all
// the group's inputs. A member's own value is the broadcast of only the inputs it reads, and element-wise
// math commutes with broadcasting, so computing it over the larger domain gives the same values, merely
// repeated. Only a member whose value leaves the group must have its own shape: when its inputs broadcast
// to less than the domain (x[?] read alone while y[?] joins later, and x turns out to have one element),
// its output is smaller than the domain. Outputs are therefore grouped by shape, and each group of a
// shape other than the common one runs the part of the program its results need. The common case, every
// output over the whole domain, runs one pass.
Status run_by_output_shape(
    const FusedProgram& program, std::span<const TensorImpl* const> inputs,
    std::span<TensorImpl* const> outputs,
    const std::function<StatusOr<std::shared_ptr<const Binding>>(std::span<const Shape>, const Shape&)>&
        binding_for) {
  SmallVector<Shape, 4> shapes;
  for (const TensorImpl* in : inputs) shapes.push_back(in->shape());
  const Shape& first = outputs[0]->shape();
  bool same = true;
  for (TensorImpl* out : outputs) same = same && out->shape() == first;
  // An input that does not broadcast to the common shape can only feed values no output needs.
  for (const Shape& s : shapes) same = same && broadcasts_to(s, first);
  if (same) {
    auto binding = binding_for({shapes.data(), shapes.size()}, first);
    if (!binding.ok()) return binding.status();
    return run_binding(program, **binding, inputs, outputs);
  }
  std::vector<bool> done(outputs.size(), false);
  for (size_t j = 0; j < outputs.size(); ++j) {
    if (done[j]) continue;
    const Shape& shape = outputs[j]->shape();
    std::vector<int32_t> results;
    SmallVector<TensorImpl*, 4> group;
    for (size_t k = j; k < outputs.size(); ++k) {
      if (done[k] || outputs[k]->shape() != shape) continue;
      done[k] = true;
      results.push_back(program.results()[k]);
      group.push_back(outputs[k]);
    }
    std::vector<int32_t> used;
    auto sub = subprogram(program, results, used);
    if (!sub.ok()) return sub.status();
    SmallVector<const TensorImpl*, 4> sub_inputs;
    SmallVector<Shape, 4> sub_shapes;
    for (int32_t k : used) {
      sub_inputs.push_back(inputs[k]);
      sub_shapes.push_back(inputs[k]->shape());
    }
    auto binding = bind(*sub, {sub_shapes.data(), sub_shapes.size()}, shape);
    if (!binding.ok()) return binding.status();
    EMBER_RETURN_IF_ERROR(
        run_binding(*sub, **binding, {sub_inputs.data(), sub_inputs.size()}, {group.data(), group.size()}));
  }
  return Status::OK();
}

constexpr int kBindingCacheSize = 8;

}  // namespace

// Static shapes: one binding made when the plan is compiled. Unknown dims: bindings made on first use of
// each set of input shapes, the last few kept (a function called with a handful of batch sizes binds
// each once).
struct PreparedFusedProgram {
  FusedProgram program;
  std::shared_ptr<const Binding> fixed;
  Shape domain;                                     // as traced; unknown dims resolved per call
  std::vector<std::vector<int32_t>> result_inputs;  // per result: the inputs it reads
  mutable std::mutex mu;
  mutable std::shared_ptr<const Binding> recent[kBindingCacheSize];
  mutable int next_victim = 0;

  StatusOr<std::shared_ptr<const Binding>> binding_for(std::span<const Shape> inputs,
                                                       const Shape& domain) const {
    {
      std::lock_guard<std::mutex> lock(mu);
      for (const auto& b : recent) {
        if (b == nullptr || b->domain != domain) continue;
        bool match = true;
        for (size_t k = 0; k < inputs.size() && match; ++k) match = b->input_shapes[k] == inputs[k];
        if (match) return b;
      }
    }
    auto made = bind(program, inputs, domain, /*want_native=*/true);
    if (!made.ok()) return made.status();
    std::lock_guard<std::mutex> lock(mu);
    recent[next_victim] = *made;
    next_victim = (next_victim + 1) % kBindingCacheSize;
    return made;
  }
};

StatusOr<std::shared_ptr<const PreparedFusedProgram>> FusedProgram::prepare(std::span<const Shape> inputs,
                                                                            const Shape& domain) const {
  if (static_cast<int>(inputs.size()) != num_inputs_)
    return invalid_argument("the program takes ", num_inputs_, " inputs, got ", inputs.size());
  if (!domain.rank_known())
    return invalid_argument("the domain of a fused program needs a known rank, got ", domain.to_string());
  auto prepared = std::make_shared<PreparedFusedProgram>();
  prepared->program = *this;
  prepared->domain = domain;
  bool fully_defined = domain.fully_defined();
  for (const Shape& s : inputs) fully_defined = fully_defined && s.fully_defined();
  if (reduction_ && !fully_defined)
    return make_error(Code::kUnimplemented,
                      "a fused program ending in a reduction needs static shapes, got "
                      "the domain ",
                      domain.to_string());
  if (fully_defined) {
    auto binding = bind(*this, inputs, domain, /*want_native=*/true);
    if (!binding.ok()) return binding.status();
    prepared->fixed = std::move(binding).value();
  } else {
    auto reads = inputs_read(*this);
    for (int32_t r : results_) prepared->result_inputs.push_back(reads[r]);
  }
  return std::shared_ptr<const PreparedFusedProgram>(std::move(prepared));
}

bool FusedProgram::is_dynamic(const PreparedFusedProgram& prepared) { return prepared.fixed == nullptr; }

Status FusedProgram::result_shapes(const PreparedFusedProgram& prepared,
                                   std::span<const TensorImpl* const> inputs, SmallVector<Shape, 2>& out) {
  const FusedProgram& program = prepared.program;
  if (static_cast<int>(inputs.size()) != program.num_inputs_)
    return invalid_argument("the program takes ", program.num_inputs_, " inputs, got ", inputs.size());
  out.clear();
  if (prepared.fixed != nullptr) {
    for (int j = 0; j < program.num_results(); ++j) out.push_back(prepared.fixed->domain);
    return Status::OK();
  }
  // The whole domain must exist even where no result needs all of it, as the unfused ops would fail.
  Shape all;
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (!broadcast_into(all, inputs[k]->shape(), all))
      return invalid_argument("input #", k, " has shape ", inputs[k]->shape().to_string(),
                              ", which does not broadcast with the other inputs (to ", all.to_string(), ")");
  }
  for (const std::vector<int32_t>& reads : prepared.result_inputs) {
    Shape shape;
    if (reads.size() == inputs.size()) {
      shape = all;
    } else {
      for (int32_t k : reads) broadcast_into(shape, inputs[k]->shape(), shape);  // cannot fail: `all` did not
    }
    bool fits = shape.rank() == prepared.domain.rank();
    for (int i = 0; fits && i < shape.rank(); ++i)
      fits = prepared.domain.dim(i) < 0 || prepared.domain.dim(i) == shape.dim(i);
    if (!fits)
      return invalid_argument("the inputs broadcast to ", shape.to_string(),
                              ", but the program was built for ", prepared.domain.to_string());
    out.push_back(shape);
  }
  return Status::OK();
}

void set_native_fused_compiler(NativeFusedCompiler* compiler) {
  g_native_compiler.store(compiler, std::memory_order_release);
}

FusedRunCounts fused_run_counts() {
  return {g_native_runs.load(std::memory_order_relaxed), g_interpreted_runs.load(std::memory_order_relaxed)};
}

Status FusedProgram::run(std::span<const TensorImpl* const> inputs,
                         std::span<TensorImpl* const> outputs) const {
  EMBER_RETURN_IF_ERROR(check_dtypes(*this, inputs, outputs));
  if (reduction_) {  // over the inputs' broadcast, which every other output has
    Shape domain;
    for (size_t k = 0; k < inputs.size(); ++k)
      if (!broadcast_into(domain, inputs[k]->shape(), domain))
        return invalid_argument("input #", k, " has shape ", inputs[k]->shape().to_string(),
                                ", which does not broadcast with the other inputs (to ", domain.to_string(),
                                ")");
    for (int j = 0; j + 1 < num_outputs(); ++j)
      if (outputs[j]->shape() != domain)
        return invalid_argument("output #", j, " is ", outputs[j]->shape().to_string(), "; expected ",
                                domain.to_string());
    SmallVector<Shape, 4> shapes;
    for (const TensorImpl* in : inputs) shapes.push_back(in->shape());
    auto binding = bind(*this, {shapes.data(), shapes.size()}, domain);
    if (!binding.ok()) return binding.status();
    return run_binding(*this, **binding, inputs, outputs);
  }
  return run_by_output_shape(
      *this, inputs, outputs,
      [this](std::span<const Shape> shapes, const Shape& domain) { return bind(*this, shapes, domain); });
}

Status FusedProgram::run_prepared(const PreparedFusedProgram& prepared,
                                  std::span<const TensorImpl* const> inputs,
                                  std::span<TensorImpl* const> outputs) {
  const FusedProgram& program = prepared.program;
  EMBER_RETURN_IF_ERROR(check_dtypes(program, inputs, outputs));
  if (prepared.fixed == nullptr)
    return run_by_output_shape(program, inputs, outputs,
                               [&prepared](std::span<const Shape> shapes, const Shape& domain) {
                                 return prepared.binding_for(shapes, domain);
                               });
  const Binding& binding = *prepared.fixed;
  // The reduction's output is checked by its run (ReductionRun::make).
  const size_t domain_outputs = outputs.size() - (program.reduction() ? 1 : 0);
  for (size_t j = 0; j < domain_outputs; ++j) {
    if (outputs[j]->shape() != binding.domain)
      return invalid_argument("output #", j, " is ", dtype_name(outputs[j]->dtype()),
                              outputs[j]->shape().to_string(), "; expected ", dtype_name(program.dtype()),
                              binding.domain.to_string());
  }
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k]->shape() != binding.input_shapes[k])
      return invalid_argument("input #", k, " has shape ", inputs[k]->shape().to_string(),
                              "; the program was prepared for ", binding.input_shapes[k].to_string());
  }
  return run_binding(program, binding, inputs, outputs);
}

NativeFusedFn FusedProgram::native_whole_kernel(const PreparedFusedProgram& prepared) {
  const Binding* binding = prepared.fixed.get();
  if (binding == nullptr || binding->native == nullptr || prepared.program.reduction()) return nullptr;
  const int64_t n = binding->domain.num_elements();
  if (n == 0 || n > tile_elements(prepared.program.dtype())) return nullptr;
  for (const InputLayout& layout : binding->layouts)
    if (layout.kind != InputLayout::Kind::kFull && layout.kind != InputLayout::Kind::kScalar) return nullptr;
  return binding->native->get();
}

}  // namespace ember::kernels
