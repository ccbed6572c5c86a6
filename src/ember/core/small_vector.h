// A vector with inline storage for the first N elements: the eager op path keeps its inputs, attributes
// and outputs here so that a tiny op does no heap allocation for bookkeeping.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <new>
#include <utility>

namespace ember {

template <typename T, size_t N>
class SmallVector {
 public:
  SmallVector() = default;
  SmallVector(std::initializer_list<T> init) {
    for (const T& v : init) push_back(v);
  }
  SmallVector(const SmallVector& o) {
    for (const T& v : o) push_back(v);
  }
  SmallVector(SmallVector&& o) noexcept {
    for (T& v : o) push_back(std::move(v));
    o.clear();
  }
  SmallVector& operator=(SmallVector o) noexcept {
    clear();
    for (T& v : o) push_back(std::move(v));
    return *this;
  }
  ~SmallVector() {
    clear();
    if (data_ != inline_ptr()) ::operator delete(data_);
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  T& back() { return data_[size_ - 1]; }

  template <typename... Args>
  T& emplace_back(Args&&... args) {
    if (size_ == capacity_) grow();
    T* p = new (data_ + size_) T(std::forward<Args>(args)...);
    ++size_;
    return *p;
  }
  void push_back(const T& v) { emplace_back(v); }
  void push_back(T&& v) { emplace_back(std::move(v)); }
  void resize(size_t n) {
    while (size_ > n) data_[--size_].~T();
    while (size_ < n) emplace_back();
  }
  void clear() { resize(0); }

 private:
  T* inline_ptr() { return reinterpret_cast<T*>(inline_); }
  void grow() {
    size_t cap = capacity_ * 2;
    T* fresh = static_cast<T*>(::operator new(cap * sizeof(T)));
    for (size_t i = 0; i < size_; ++i) {
      new (fresh + i) T(std::move(data_[i]));
      data_[i].~T();
    }
    if (data_ != inline_ptr()) ::operator delete(data_);
    data_ = fresh;
    capacity_ = cap;
  }

  alignas(T) unsigned char inline_[N * sizeof(T)];
  T* data_ = inline_ptr();
  size_t size_ = 0;
  size_t capacity_ = N;
};

}  // namespace ember
