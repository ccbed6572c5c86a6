// Intra-op parallelism. ember has one thread pool, OpenMP's, shared with oneDNN (two pools on two cores
// lose several times over to spinning workers: architecture.md §9). Work below a grain runs inline.
#pragma once

#include <cstdint>
#include <type_traits>

namespace ember {

/// Number of threads kernels may use.
int intra_op_threads();
void set_intra_op_threads(int n);
/// Number of threads a graph function's independent nodes may run on (0 = one per core). The executor's
/// workers are OpenMP threads too, and kernels they run stay on their thread: the two never nest.
int inter_op_threads();
void set_inter_op_threads(int n);

/// Calls fn(begin, end) over [0, n) in contiguous chunks. `cost_per_item` is a rough count of cycles per
/// item; below ~64k cycles of total work the loop runs inline on the caller.
template <typename Fn>
void parallel_for(int64_t n, int64_t cost_per_item, Fn&& fn);

namespace internal {
using RangeFn = void (*)(void* ctx, int64_t begin, int64_t end);
void parallel_for_impl(int64_t n, int64_t cost_per_item, RangeFn fn, void* ctx);
}  // namespace internal

template <typename Fn>
void parallel_for(int64_t n, int64_t cost_per_item, Fn&& fn) {
  if (n <= 0) return;
  if (n * cost_per_item < 65536) {
    fn(int64_t{0}, n);
    return;
  }
  internal::parallel_for_impl(
      n, cost_per_item,
      [](void* ctx, int64_t b, int64_t e) { (*static_cast<std::remove_reference_t<Fn>*>(ctx))(b, e); },
      const_cast<void*>(static_cast<const void*>(&fn)));
}

}  // namespace ember
