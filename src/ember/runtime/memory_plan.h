// Arena memory planning (architecture.md §6): with static shapes, every intermediate a plan may place gets
// a fixed offset in one arena, so a steady-state call allocates nothing and the arena is no bigger than the
// peak of values live at once (plus fragmentation).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace ember {

/// A buffer that is live from instruction `first` through instruction `last` (both included: a value is
/// written by `first` and read by `last`, so it may not share bytes with anything live at either end).
struct ArenaRequest {
  int64_t bytes = 0;
  int32_t first = 0;
  int32_t last = 0;
};

struct ArenaPlan {
  std::vector<int64_t> offsets;  // per request, a multiple of the alignment
  int64_t arena_bytes = 0;
};

/// Greedy by size with best fit: the largest buffers are placed first, each into the smallest gap among the
/// buffers already placed whose lifetimes overlap its own.
ArenaPlan plan_arena(std::span<const ArenaRequest> requests, int64_t alignment = 64);

}  // namespace ember
