#include "ember/core/allocator.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <new>
#include <string>
#include <vector>

namespace ember {

// Note [Buffer layout]
// A block holds the Buffer header in its first 64 bytes and the data right after, so one allocation
// serves both and the data stays 64-byte aligned. Blocks are rounded up to a size class: powers of two
// below 4 KiB, then four classes per power of two, which bounds waste at 25%.
struct AllocatorInternals {
  static constexpr size_t kHeader = 64;
  static_assert(sizeof(Buffer) <= kHeader);
  static constexpr int kSmallClasses = 7;               // 64 .. 4096 bytes of data
  static constexpr size_t kMaxBytes = size_t{1} << 40;  // a request above 1 TiB is a user error
  static constexpr int kNumClasses = 128;
  static constexpr size_t kThreadCacheMaxPerClass = 64;
  static constexpr size_t kThreadCacheMaxClassBytes = 64 * 1024;
  static constexpr size_t kGlobalCacheMaxBytes = size_t{512} << 20;

  static int size_class(size_t nbytes, size_t* class_bytes) {
    size_t n = nbytes < 64 ? 64 : nbytes;
    if (n <= 4096) {
      int c = 0;
      size_t b = 64;
      while (b < n) b <<= 1, ++c;
      *class_bytes = b;
      return c;
    }
    // Four classes per power of two above 4 KiB.
    int p = 63 - __builtin_clzll(n - 1);  // n - 1 < 2^(p+1)
    size_t base = size_t{1} << p;
    size_t quarter = base / 4;
    size_t q = (n - base + quarter - 1) / quarter;  // 1..4
    *class_bytes = base + q * quarter;
    return kSmallClasses + (p - 12) * 4 + static_cast<int>(q) - 1;
  }

  struct ThreadCache {
    std::vector<Buffer*> lists[kNumClasses];
    ~ThreadCache() {
      for (auto& list : lists)
        for (Buffer* b : list) std::free(b);
    }
  };
  static ThreadCache& thread_cache() {
    thread_local ThreadCache cache;
    return cache;
  }

  struct GlobalCache {
    std::mutex mu;
    std::vector<Buffer*> lists[kNumClasses];
    size_t bytes = 0;
  };
  static GlobalCache& global_cache() {
    static GlobalCache* cache = new GlobalCache;  // leaked: buffers may be freed during static destruction
    return *cache;
  }

  static Buffer* take(int cls, size_t class_bytes) {
    if (class_bytes <= kThreadCacheMaxClassBytes) {
      auto& list = thread_cache().lists[cls];
      if (!list.empty()) {
        Buffer* b = list.back();
        list.pop_back();
        return b;
      }
      return nullptr;
    }
    GlobalCache& g = global_cache();
    std::lock_guard<std::mutex> lock(g.mu);
    auto& list = g.lists[cls];
    if (list.empty()) return nullptr;
    Buffer* b = list.back();
    list.pop_back();
    g.bytes -= class_bytes;
    return b;
  }

  static void give_back(Buffer* b, size_t class_bytes) {
    int cls = b->size_class_;
    if (class_bytes <= kThreadCacheMaxClassBytes) {
      auto& list = thread_cache().lists[cls];
      if (list.size() < kThreadCacheMaxPerClass) {
        list.push_back(b);
        return;
      }
      std::free(b);
      return;
    }
    GlobalCache& g = global_cache();
    {
      std::lock_guard<std::mutex> lock(g.mu);
      if (g.bytes + class_bytes <= kGlobalCacheMaxBytes) {
        g.lists[cls].push_back(b);
        g.bytes += class_bytes;
        return;
      }
    }
    std::free(b);
  }
};

namespace {
std::atomic<size_t> g_max_allocation_bytes{AllocatorInternals::kMaxBytes};
}  // namespace

void set_max_allocation_bytes(size_t bytes) {
  g_max_allocation_bytes.store(std::min(bytes, AllocatorInternals::kMaxBytes), std::memory_order_relaxed);
}

StatusOr<Buffer*> Buffer::allocate(size_t nbytes, Device device) {
  using A = AllocatorInternals;
  const size_t limit = g_max_allocation_bytes.load(std::memory_order_relaxed);
  if (nbytes > limit)
    return make_error(Code::kResourceExhausted, "cannot allocate ", nbytes, " bytes: the request exceeds ",
                      limit, " bytes");
  size_t class_bytes;
  int cls = A::size_class(nbytes, &class_bytes);
  Buffer* b = A::take(cls, class_bytes);
  if (b == nullptr) {
    void* mem = std::aligned_alloc(64, A::kHeader + class_bytes);
    if (mem == nullptr)
      return make_error(Code::kResourceExhausted, "out of memory allocating ", nbytes, " bytes");
    b = new (mem) Buffer();
    b->size_class_ = cls;
    b->data_ = static_cast<char*>(mem) + A::kHeader;
  } else {
    b->refcount_.store(1, std::memory_order_relaxed);
  }
  b->device_ = device;
  b->nbytes_ = nbytes;
  b->num_strings_ = 0;
  return b;
}

void Buffer::construct_strings(int64_t count) {
  EMBER_DCHECK(num_strings_ == 0 && external_release_ == nullptr &&
               static_cast<size_t>(count) * sizeof(std::string) <= nbytes_);
  auto* s = static_cast<std::string*>(data_);
  for (int64_t i = 0; i < count; ++i) new (s + i) std::string();
  num_strings_ = count;
}

Buffer* Buffer::wrap_external(void* data, size_t nbytes, void (*release)(void*), void* context,
                              Device device) {
  auto* b = new Buffer();
  b->data_ = data;
  b->nbytes_ = nbytes;
  b->device_ = device;
  b->size_class_ = -1;
  b->external_release_ = release;
  b->external_context_ = context;
  return b;
}

void Buffer::release() {
  if (external_release_ != nullptr) {
    auto release = external_release_;
    void* context = external_context_;
    delete this;
    release(context);
    return;
  }
  if (num_strings_ > 0) {
    auto* s = static_cast<std::string*>(data_);
    for (int64_t i = 0; i < num_strings_; ++i) s[i].~basic_string();
    num_strings_ = 0;
  }
  size_t class_bytes;
  AllocatorInternals::size_class(nbytes_, &class_bytes);
  AllocatorInternals::give_back(this, class_bytes);
}

size_t allocator_cached_bytes() {
  auto& g = AllocatorInternals::global_cache();
  std::lock_guard<std::mutex> lock(g.mu);
  return g.bytes;
}

void allocator_trim() {
  auto& g = AllocatorInternals::global_cache();
  std::lock_guard<std::mutex> lock(g.mu);
  for (auto& list : g.lists) {
    for (Buffer* b : list) std::free(b);
    list.clear();
  }
  g.bytes = 0;
}

}  // namespace ember
