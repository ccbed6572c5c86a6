#include "ember/runtime/memory_plan.h"

#include <algorithm>
#include <numeric>

namespace ember {

ArenaPlan plan_arena(std::span<const ArenaRequest> requests, int64_t alignment) {
  const int32_t count = static_cast<int32_t>(requests.size());
  ArenaPlan plan;
  plan.offsets.assign(count, -1);
  // Every buffer takes a whole number of alignment units, at least one.
  std::vector<int64_t> size(count);
  for (int32_t r = 0; r < count; ++r)
    size[r] = (std::max<int64_t>(requests[r].bytes, 1) + alignment - 1) / alignment * alignment;

  std::vector<int32_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    if (requests[a].bytes != requests[b].bytes) return requests[a].bytes > requests[b].bytes;
    return requests[a].first < requests[b].first;
  });

  struct Range {
    int64_t begin, end;
  };
  std::vector<Range> busy;
  for (int32_t i = 0; i < count; ++i) {
    const int32_t r = order[i];
    const ArenaRequest& req = requests[r];
    busy.clear();
    for (int32_t j = 0; j < i; ++j) {  // the buffers already placed
      const int32_t p = order[j];
      const ArenaRequest& other = requests[p];
      if (other.first <= req.last && req.first <= other.last)
        busy.push_back({plan.offsets[p], plan.offsets[p] + size[p]});
    }
    std::sort(busy.begin(), busy.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
    // The smallest gap that fits; past the last busy range when none does.
    int64_t best = -1, best_gap = INT64_MAX, cursor = 0;
    for (const Range& range : busy) {
      const int64_t gap = range.begin - cursor;
      if (gap >= size[r] && gap < best_gap) {
        best = cursor;
        best_gap = gap;
      }
      cursor = std::max(cursor, range.end);
    }
    if (best < 0) best = cursor;
    plan.offsets[r] = best;
    plan.arena_bytes = std::max(plan.arena_bytes, best + size[r]);
  }
  return plan;
}

}  // namespace ember
