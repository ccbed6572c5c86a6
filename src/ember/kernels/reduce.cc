#include "ember/kernels/reduce.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "ember/core/parallel.h"

namespace ember::kernels {

namespace baseline {
void fill_reduce_tables(ReduceTables& t);
}
namespace avx2 {
void fill_reduce_tables(ReduceTables& t);
}
namespace avx512 {
void fill_reduce_tables(ReduceTables& t);
}
void fill_complex_reduce_tables(ReduceTables& t);  // kernels/complex_reduce.cc

namespace {

struct Selected {
  ReduceTables tables;
  const char* isa;
  Selected() {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
      avx512::fill_reduce_tables(tables);
      isa = "avx512";
    } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
      avx2::fill_reduce_tables(tables);
      isa = "avx2";
    } else {
      baseline::fill_reduce_tables(tables);
      isa = "baseline";
    }
    fill_complex_reduce_tables(tables);
  }
};
const Selected& selected() {
  static const Selected s;
  return s;
}

// Note [Reduction plan]
// Size-1 dims are dropped and neighbouring dims with the same role merged, leaving alternating groups
// of kept and reduced dims. The innermost group decides the loop:
//   row (innermost reduced): each output reduces `inner_red` contiguous elements; `inner_kept`
//     consecutive outputs are consecutive runs, `inner_kept_stride` apart;
//   col (innermost kept): `inner_kept` contiguous outputs combine `inner_red` rows `inner_red_stride`
//     apart.
// The remaining (outer) groups are walked by index: kept ones select a block of `inner_kept` outputs,
// reduced ones a "combo" whose elements are all added into the same accumulators.
struct Plan {
  bool row = false;
  int n_kept = 0, n_red = 0;
  int64_t kept_size[kMaxRank], kept_stride[kMaxRank];
  int64_t red_size[kMaxRank], red_stride[kMaxRank];
  int64_t blocks = 1, combos = 1;
  int64_t inner_kept = 1, inner_kept_stride = 0;
  int64_t inner_red = 1, inner_red_stride = 0;

  int64_t num_outputs() const { return blocks * inner_kept; }
  int64_t reduced_count() const { return combos * inner_red; }
  int64_t block_offset(int64_t b) const {
    int64_t off = 0;
    for (int d = n_kept - 1; d >= 0; --d) off += (b % kept_size[d]) * kept_stride[d], b /= kept_size[d];
    return off;
  }
  int64_t combo_offset(int64_t c) const {
    int64_t off = 0;
    for (int d = n_red - 1; d >= 0; --d) off += (c % red_size[d]) * red_stride[d], c /= red_size[d];
    return off;
  }
};

Plan make_plan(const Shape& shape, uint32_t axis_mask) {
  struct Group {
    int64_t size, stride;
    bool reduced;
  };
  Group groups[kMaxRank];
  int n = 0;
  auto strides = contiguous_strides(shape);
  for (int i = 0; i < shape.rank(); ++i) {
    int64_t d = shape.dim(i);
    if (d == 1) continue;
    bool reduced = (axis_mask >> i) & 1u;
    if (n > 0 && groups[n - 1].reduced == reduced) {
      // Dropped dims have size 1, so the previous group is always contiguous with this dim.
      groups[n - 1].size *= d;
      groups[n - 1].stride = strides[i];
    } else {
      groups[n++] = {d, strides[i], reduced};
    }
  }
  Plan p;
  if (n == 0) return p;  // a single element: a column reduction of one row of one output
  const Group& last = groups[n - 1];
  p.row = last.reduced;
  int outer = n - 1;
  if (p.row) {
    p.inner_red = last.size, p.inner_red_stride = 1;
    if (n >= 2) p.inner_kept = groups[n - 2].size, p.inner_kept_stride = groups[n - 2].stride, outer = n - 2;
  } else {
    p.inner_kept = last.size, p.inner_kept_stride = 1;
    if (n >= 2) p.inner_red = groups[n - 2].size, p.inner_red_stride = groups[n - 2].stride, outer = n - 2;
  }
  for (int i = 0; i < outer; ++i) {
    if (groups[i].reduced) {
      p.red_size[p.n_red] = groups[i].size, p.red_stride[p.n_red++] = groups[i].stride;
      p.combos *= groups[i].size;
    } else {
      p.kept_size[p.n_kept] = groups[i].size, p.kept_stride[p.n_kept++] = groups[i].stride;
      p.blocks *= groups[i].size;
    }
  }
  return p;
}

// Runs a plan with an accumulator `A` providing:
//   size_t bytes(n);                                   scratch for n outputs
//   void init(char* acc, int64_t n);
//   void accumulate(const char* in, int64_t rows, int64_t stride, int64_t n, int64_t r_base,
//                   int64_t out_offset, char* acc, bool row);
//   void merge(char* acc, const char* other, int64_t n);
//   void finish(int64_t out_offset, const char* acc, int64_t n);
// Items are (block, chunk of inner_kept outputs) and run in parallel; with fewer items than threads and
// much work per item, each item's reduction is split into pieces whose partials merge in index order.
template <typename A>
void run_plan(const Plan& p, const char* in, size_t elem_size, const A& acc_ops, int64_t cost_per_element) {
  const int threads = intra_op_threads();
  const int64_t per_output = std::max<int64_t>(1, p.reduced_count());
  const int64_t total = p.num_outputs() * per_output;

  // Outputs per item: columns are chunked so the accumulators stay in L1; rows so an item has enough
  // work to amortise its bookkeeping. Either way aim for several items per thread.
  int64_t want_items = std::max<int64_t>(1, (threads * 4 + p.blocks - 1) / p.blocks);
  int64_t chunk = (p.inner_kept + want_items - 1) / want_items;
  if (p.row) {
    chunk = std::max<int64_t>(chunk, std::min<int64_t>(p.inner_kept, 4096 / per_output + 1));
  } else {
    const int64_t max_chunk = std::max<int64_t>(16, 16384 / acc_ops.bytes(1));  // 16 KiB of accumulators
    chunk = std::clamp<int64_t>((chunk + 15) / 16 * 16, 16, max_chunk);
  }
  chunk = std::min(chunk, p.inner_kept);
  const int64_t chunks = (p.inner_kept + chunk - 1) / chunk;
  const int64_t items = p.blocks * chunks;

  // Accumulates reduced elements [e0, e1) (of combos x inner_red) of one item into `acc`.
  auto accumulate = [&](int64_t item, int64_t e0, int64_t e1, char* acc) {
    int64_t b = item / chunks, k0 = (item % chunks) * chunk;
    int64_t len = std::min(chunk, p.inner_kept - k0);
    int64_t out_offset = b * p.inner_kept + k0;
    const char* base = in + (p.block_offset(b) + k0 * p.inner_kept_stride) * elem_size;
    for (int64_t e = e0; e < e1;) {
      int64_t c = e / p.inner_red, r0 = e % p.inner_red;
      int64_t r1 = std::min(p.inner_red, r0 + (e1 - e));
      const char* ptr = base + (p.combo_offset(c) + r0 * p.inner_red_stride) * elem_size;
      if (p.row) {
        acc_ops.accumulate(ptr, len, p.inner_kept_stride, r1 - r0, r0, out_offset, acc, true);
      } else {
        acc_ops.accumulate(ptr, r1 - r0, p.inner_red_stride, len, r0, out_offset, acc, false);
      }
      e += r1 - r0;
    }
  };
  auto item_extent = [&](int64_t item, int64_t* out_offset, int64_t* len) {
    int64_t b = item / chunks, k0 = (item % chunks) * chunk;
    *len = std::min(chunk, p.inner_kept - k0);
    *out_offset = b * p.inner_kept + k0;
  };

  if (items >= threads || total * cost_per_element < kParallelMinCycles || threads <= 1 ||
      p.reduced_count() < 2 * threads) {
    parallel_for(items, chunk * per_output * cost_per_element, [&](int64_t begin, int64_t end) {
      std::vector<char> scratch(acc_ops.bytes(chunk));
      for (int64_t item = begin; item < end; ++item) {
        int64_t out_offset, len;
        item_extent(item, &out_offset, &len);
        acc_ops.init(scratch.data(), len);
        accumulate(item, 0, p.reduced_count(), scratch.data());
        acc_ops.finish(out_offset, scratch.data(), len);
      }
    });
    return;
  }

  // Few items, much work each: split the reduction of each item over the threads.
  const int64_t pieces = threads;
  const int64_t e_total = p.reduced_count();
  size_t piece_bytes = (acc_ops.bytes(chunk) + 63) / 64 * 64;  // no false sharing between pieces
  std::vector<char> partials(piece_bytes * pieces);
  for (int64_t item = 0; item < items; ++item) {
    int64_t out_offset, len;
    item_extent(item, &out_offset, &len);
    parallel_for(pieces, e_total / pieces * len * cost_per_element, [&](int64_t begin, int64_t end) {
      for (int64_t piece = begin; piece < end; ++piece) {
        char* acc = partials.data() + piece * piece_bytes;
        acc_ops.init(acc, len);
        accumulate(item, e_total * piece / pieces, e_total * (piece + 1) / pieces, acc);
      }
    });
    for (int64_t piece = 1; piece < pieces; ++piece)
      acc_ops.merge(partials.data(), partials.data() + piece * piece_bytes, len);
    acc_ops.finish(out_offset, partials.data(), len);
  }
}

// A plain reduction: accumulate, then finalize into the output.
struct PlainAcc {
  const ReduceLoops* loops;
  char* out;
  size_t out_size;
  int64_t count;
  size_t bytes(int64_t n) const { return n * loops->acc_size; }
  void init(char* acc, int64_t n) const { loops->init(acc, n); }
  void accumulate(const char* in, int64_t rows, int64_t stride, int64_t n, int64_t, int64_t, char* acc,
                  bool row) const {
    (row ? loops->row : loops->col)(in, rows, stride, n, acc);
  }
  void merge(char* acc, const char* other, int64_t n) const { loops->merge(acc, other, n); }
  void finish(int64_t out_offset, const char* acc, int64_t n) const {
    loops->finalize(acc, n, count, out + out_offset * out_size);
  }
};

// LogSumExp's first pass: the maxima land in `shift` (the Max accumulator is the compute type).
struct MaxIntoShift : PlainAcc {
  char* shift;
  void finish(int64_t out_offset, const char* acc, int64_t n) const {
    std::memcpy(shift + out_offset * loops->acc_size, acc, n * loops->acc_size);
  }
};

// LogSumExp's second pass: sum of exp(x - shift), then log(sum) + shift.
struct ShiftedAcc {
  const ReduceLoops* loops;
  const char* shift;
  char* out;
  size_t out_size;
  size_t bytes(int64_t n) const { return n * loops->acc_size; }
  void init(char* acc, int64_t n) const { loops->init(acc, n); }
  void accumulate(const char* in, int64_t rows, int64_t stride, int64_t n, int64_t, int64_t out_offset,
                  char* acc, bool row) const {
    (row ? loops->row_shifted : loops->col_shifted)(in, rows, stride, n, shift + out_offset * loops->acc_size,
                                                    acc);
  }
  void merge(char* acc, const char* other, int64_t n) const { loops->merge(acc, other, n); }
  void finish(int64_t out_offset, const char* acc, int64_t n) const {
    size_t a = loops->acc_size;
    loops->finalize_shifted(acc, shift + out_offset * a, n, out + out_offset * out_size);
  }
};

// Arg-reductions: the scratch holds n best values followed by n int64 indices.
struct ArgAcc {
  const ArgLoops* loops;
  char* out;
  bool out_int64;
  size_t best_bytes(int64_t n) const { return (n * loops->best_size + 7) / 8 * 8; }
  size_t bytes(int64_t n) const { return best_bytes(n) + n * sizeof(int64_t); }
  int64_t* index(char* acc, int64_t n) const { return reinterpret_cast<int64_t*>(acc + best_bytes(n)); }
  void init(char* acc, int64_t n) const { loops->init(acc, index(acc, n), n); }
  void accumulate(const char* in, int64_t rows, int64_t stride, int64_t n, int64_t r_base, int64_t, char* acc,
                  bool row) const {
    // For rows, `rows` outputs each scan `n` elements; for columns, `n` outputs see `rows` rows.
    int64_t outputs = row ? rows : n;
    (row ? loops->row : loops->col)(in, rows, stride, n, r_base, acc, index(acc, outputs));
  }
  void merge(char* acc, const char* other, int64_t n) const {
    loops->merge(acc, index(acc, n), other, index(const_cast<char*>(other), n), n);
  }
  void finish(int64_t out_offset, const char* acc, int64_t n) const {
    const int64_t* idx = index(const_cast<char*>(acc), n);
    if (out_int64) {
      std::memcpy(out + out_offset * sizeof(int64_t), idx, n * sizeof(int64_t));
    } else {
      auto* o = reinterpret_cast<int32_t*>(out) + out_offset;
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<int32_t>(idx[i]);
    }
  }
};

int64_t element_cost(ReduceOp op, DType d) {
  if (op == ReduceOp::kLogSumExp) return 16;
  return (d == DType::kFloat16) ? 4 : 1;
}

}  // namespace

const ReduceTables& reduce_tables() { return selected().tables; }
const char* reduce_isa() { return selected().isa; }

Status reduce(ReduceOp op, const TensorImpl& in, uint32_t axis_mask, TensorImpl& out) {
  const ReduceLoops& loops = reduce_tables().reduce[static_cast<int>(op)][static_cast<int>(in.dtype())];
  if (loops.init == nullptr)
    return make_error(Code::kUnimplemented, "no kernel for dtype ", dtype_name(in.dtype()));
  const int64_t n_out = out.num_elements();
  if (n_out == 0) return Status::OK();
  const char* src = static_cast<const char*>(in.raw_data());
  char* dst = static_cast<char*>(out.mutable_raw_data());
  const size_t elem = dtype_size(in.dtype());
  // An empty input with a non-empty output reduces empty axes: every output is the empty reduction.
  Plan plan = in.num_elements() == 0 ? Plan{} : make_plan(in.shape(), axis_mask);
  if (in.num_elements() == 0) plan.inner_kept = n_out, plan.inner_red = 0;
  const int64_t count = plan.reduced_count();
  const int64_t cost = element_cost(op, in.dtype());
  if (count == 1 && op != ReduceOp::kLogSumExp) {
    // Every reduced axis has size 1: the output is the input, copied as TensorFlow copies it (a sum of
    // one subnormal keeps it, where adding it to zero under FTZ/DAZ would flush it: docs/subnormals.md).
    std::memcpy(dst, src, static_cast<size_t>(n_out) * elem);
    return Status::OK();
  }

  if (op != ReduceOp::kLogSumExp) {
    run_plan(plan, src, elem, PlainAcc{&loops, dst, elem, count}, cost);
    return Status::OK();
  }
  // log(sum(exp(x - m))) + m with m the max (0 where not finite), in two passes.
  const ReduceLoops& max_loops =
      reduce_tables().reduce[static_cast<int>(ReduceOp::kMax)][static_cast<int>(in.dtype())];
  // The shift buffer can be larger than the output (float accumulators for 16-bit floats): its failure to
  // allocate is the op's ResourceExhausted error, not an exception.
  const size_t shift_bytes = static_cast<size_t>(n_out) * loops.acc_size;
  std::unique_ptr<char[]> shift(new (std::nothrow) char[shift_bytes]);
  if (shift == nullptr)
    return make_error(Code::kResourceExhausted, "out of memory allocating ", shift_bytes,
                      " bytes of accumulators for ", n_out, " outputs");
  MaxIntoShift first;
  first.loops = &max_loops, first.out = nullptr, first.out_size = 0, first.count = count,
  first.shift = shift.get();
  run_plan(plan, src, elem, first, 1);
  loops.prepare_shift(shift.get(), n_out);
  run_plan(plan, src, elem, ShiftedAcc{&loops, shift.get(), dst, elem}, cost);
  return Status::OK();
}

Status arg_reduce(bool is_max, const TensorImpl& in, int axis, TensorImpl& out) {
  const ArgLoops& loops = reduce_tables().arg[is_max ? 1 : 0][static_cast<int>(in.dtype())];
  if (loops.init == nullptr)
    return make_error(Code::kUnimplemented, "no kernel for dtype ", dtype_name(in.dtype()));
  if (out.dtype() != DType::kInt32 && out.dtype() != DType::kInt64)
    return invalid_argument("output_type must be int32 or int64, got ", dtype_name(out.dtype()));
  if (axis < 0 || axis >= in.rank())
    return invalid_argument("axis ", axis, " is out of range for rank ", in.rank());
  if (in.shape().dim(axis) == 0)
    return invalid_argument("reduction axis ", axis, " is empty in shape ", in.shape().to_string());
  if (out.num_elements() == 0) return Status::OK();
  Plan plan = make_plan(in.shape(), 1u << axis);
  ArgAcc acc{&loops, static_cast<char*>(out.mutable_raw_data()), out.dtype() == DType::kInt64};
  run_plan(plan, static_cast<const char*>(in.raw_data()), dtype_size(in.dtype()), acc, 1);
  return Status::OK();
}

}  // namespace ember::kernels
