#include "ember/kernels/onednn_primitive.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <list>
#include <mutex>
#include <new>
#include <unordered_map>
#include <utility>

#include "ember/core/parallel.h"

namespace ember::kernels::onednn {

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

int set_threads(int64_t macs) {
  const int threads = threads_for_matmul(macs);
  if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
  return threads;
}

const dnnl::memory::desc* Primitive::desc_of(int arg) const {
  for (const auto& [a, d] : arg_descs)
    if (a == arg) return &d;
  return nullptr;
}

namespace {

struct KeyHash {
  size_t operator()(const Key& k) const {
    size_t h = 1469598103934665603ull;
    for (int64_t v : k) h = (h ^ static_cast<size_t>(v)) * 1099511628211ull;
    return h;
  }
};

// Note [oneDNN primitive cache]: as the matmul's (Note [MatMul primitive cache] in matmul.cc), a bounded
// LRU of shared_ptrs under a mutex; an entry evicted while another thread runs it stays alive until that
// call ends. The key starts with the kind of primitive and includes the thread count, which oneDNN fixes
// when it creates a primitive.
class Cache {
 public:
  std::shared_ptr<const Primitive> get(const Key& key,
                                       const std::function<std::shared_ptr<const Primitive>()>& make) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = map_.find(key);
      if (it != map_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second);
        return it->second->second;
      }
    }
    std::shared_ptr<const Primitive> made = make();  // outside the lock: creation may JIT for milliseconds
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    if (it != map_.end()) return it->second->second;
    lru_.emplace_front(key, std::move(made));
    map_.emplace(key, lru_.begin());
    std::shared_ptr<const Primitive> result = lru_.front().second;
    evict();
    return result;
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    return lru_.size();
  }
  void set_capacity(size_t capacity) {
    std::lock_guard<std::mutex> lock(mu_);
    capacity_ = capacity;
    evict();
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    map_.clear();
    lru_.clear();
  }

 private:
  void evict() {
    while (lru_.size() > capacity_) {
      map_.erase(lru_.back().first);
      lru_.pop_back();
    }
  }
  std::mutex mu_;
  size_t capacity_ = 128;
  std::list<std::pair<Key, std::shared_ptr<const Primitive>>> lru_;
  std::unordered_map<Key, decltype(lru_)::iterator, KeyHash> map_;
};

Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: primitives may outlive other statics
  return *c;
}

thread_local std::string g_last_impl;

// Note [Reused oneDNN buffers]
// A call needs a scratchpad and, for an argument whose layout the primitive chose (a blocked filter), a
// buffer to reorder into. Allocating them per call cost a page fault per 4 KiB of a fresh buffer each time
// (several % of a ResNet step in the kernel); instead each thread keeps its buffers (slot 0 the scratchpad,
// slot i + 1 the i-th reordered argument) and grows them as needed. A call never re-enters run() on its
// thread, so a slot is never in use twice. Buffers above kKeepBytes are freed after the call.
constexpr size_t kKeepBytes = size_t{64} << 20;

// Move-only: the slots' vector reallocates as a call needs more of them, and a copied Buffer would free
// the memory its copy still points to (heap corruption found by the full test suite).
struct Buffer {
  void* data = nullptr;
  size_t size = 0;
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& other) noexcept
      : data(std::exchange(other.data, nullptr)), size(std::exchange(other.size, 0)) {}
  Buffer& operator=(Buffer&& other) noexcept {
    std::swap(data, other.data);
    std::swap(size, other.size);
    return *this;
  }
  ~Buffer() { std::free(data); }
};

class Buffers {
 public:
  void* get(size_t slot, size_t bytes) {
    if (slots_.size() <= slot) slots_.resize(slot + 1);
    Buffer& b = slots_[slot];
    bytes = std::max<size_t>(bytes, 64);  // aligned_alloc(64, 0) may return null
    if (b.size < bytes) {
      std::free(b.data);
      b.size = 0;
      b.data = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
      if (!b.data) throw std::bad_alloc();
      b.size = bytes;
    }
    return b.data;
  }
  void trim() {
    for (Buffer& b : slots_)
      if (b.size > kKeepBytes) std::free(b.data), b.data = nullptr, b.size = 0;
  }

 private:
  std::vector<Buffer> slots_;
};

}  // namespace

std::shared_ptr<const Primitive> cached(const Key& key,
                                        const std::function<std::shared_ptr<const Primitive>()>& make) {
  return cache().get(key, make);
}
size_t cache_size() { return cache().size(); }
void set_cache_capacity(size_t capacity) { cache().set_capacity(capacity); }
void cache_clear() { cache().clear(); }

bool run(const Primitive& p, const std::vector<Arg>& args) {
  thread_local Buffers buffers;
  try {
    dnnl::engine& eng = engine();
    thread_local dnnl::stream stream(engine());
    size_t slot = 1;
    std::unordered_map<int, dnnl::memory> exec;
    std::vector<std::pair<dnnl::memory, dnnl::memory>> write_back;  // (primitive's, user's)
    for (const Arg& a : args) {
      dnnl::memory user(a.desc, eng, a.data);
      const dnnl::memory::desc* want = p.desc_of(a.arg);
      if (!want || *want == a.desc) {
        exec.emplace(a.arg, user);
        continue;
      }
      dnnl::memory mine(*want, eng, buffers.get(slot++, want->get_size()));
      if (a.output) {
        write_back.emplace_back(mine, user);
      } else {
        dnnl::reorder(user, mine).execute(stream, user, mine);
      }
      exec.emplace(a.arg, mine);
    }
    dnnl::memory scratch(p.scratchpad, eng, buffers.get(0, p.scratchpad.get_size()));
    exec.emplace(DNNL_ARG_SCRATCHPAD, scratch);
    p.primitive.execute(stream, exec);
    for (auto& [mine, user] : write_back) dnnl::reorder(mine, user).execute(stream, mine, user);
    stream.wait();
    buffers.trim();
    g_last_impl = p.impl;
    return true;
  } catch (const dnnl::error&) {
    buffers.trim();
    return false;
  } catch (const std::bad_alloc&) {
    buffers.trim();
    return false;
  }
}

dnnl::memory::desc activation_desc(int64_t n, int64_t c, const int64_t* spatial, int nd, bool channels_last) {
  dnnl::memory::dims dims{n, c}, strides(2 + nd);
  for (int i = 0; i < nd; ++i) dims.push_back(spatial[i]);
  int64_t s = 1;
  if (channels_last) {
    strides[1] = s, s *= c;
    for (int i = nd - 1; i >= 0; --i) strides[2 + i] = s, s *= spatial[i];
  } else {
    for (int i = nd - 1; i >= 0; --i) strides[2 + i] = s, s *= spatial[i];
    strides[1] = s, s *= c;
  }
  strides[0] = s;
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

void set_last_impl(const std::string& impl) { g_last_impl = impl; }
const std::string& last_impl() { return g_last_impl; }

}  // namespace ember::kernels::onednn
