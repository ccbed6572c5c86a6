// Buffers: 64-byte aligned, reference counted, from size-class free lists. Small blocks are cached per
// thread (the eager hot path allocates one per op); large blocks go to a bounded global cache, because a
// fresh page-faulting 64 MiB output per op is several times slower than reusing one (architecture.md §9).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "ember/core/status.h"

namespace ember {

enum class DeviceType : uint8_t { kCPU = 0, kGPU = 1 };

struct Device {
  DeviceType type = DeviceType::kCPU;
  int index = 0;
  bool operator==(const Device&) const = default;
};

class Buffer {
 public:
  /// Allocates `nbytes` (may be 0). Fails with ResourceExhausted if the request is absurd or the system is
  /// out of memory.
  static StatusOr<Buffer*> allocate(size_t nbytes, Device device = {});

  /// A buffer over memory another library owns (a DLPack import): `release(context)` runs when the last
  /// reference goes. It is never written over in place, since the producer may still read it.
  static Buffer* wrap_external(void* data, size_t nbytes, void (*release)(void*), void* context,
                               Device device = {});
  bool external() const { return external_release_ != nullptr; }

  /// Constructs `count` empty std::strings at the start of the buffer (which must hold them); they are
  /// destroyed when the last reference goes (Note [String tensors] in core/tensor_impl.cc).
  void construct_strings(int64_t count);
  /// How many std::strings the buffer owns (0 for a buffer of plain bytes).
  int64_t num_strings() const { return num_strings_; }

  void* data() const { return data_; }
  size_t size() const { return nbytes_; }
  Device device() const { return device_; }

  void ref() { refcount_.fetch_add(1, std::memory_order_relaxed); }
  void unref() {
    if (refcount_.fetch_sub(1, std::memory_order_acq_rel) == 1) release();
  }
  int refcount() const { return refcount_.load(std::memory_order_relaxed); }

 private:
  Buffer() = default;
  void release();

  std::atomic<int32_t> refcount_{1};
  int32_t size_class_ = 0;
  Device device_;
  size_t nbytes_ = 0;
  int64_t num_strings_ = 0;
  void* data_ = nullptr;
  void (*external_release_)(void*) = nullptr;
  void* external_context_ = nullptr;
  friend struct AllocatorInternals;
};

/// Caps a single allocation (default and maximum 1 TiB): a larger request fails with ResourceExhausted.
/// Fuzzers lower it, so a valid graph that asks for gigabytes is a clear error rather than an out-of-memory
/// kill of the fuzzing process.
void set_max_allocation_bytes(size_t bytes);

/// Bytes currently held by the large-block cache (for tests and diagnostics).
size_t allocator_cached_bytes();
/// Returns every cached block to the system.
void allocator_trim();

}  // namespace ember
