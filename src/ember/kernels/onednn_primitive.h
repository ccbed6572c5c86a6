// What the convolution, pooling and matmul kernels share to run oneDNN primitives: the CPU engine, OpenMP's
// thread count for oneDNN's regions, a bounded cache of primitives keyed by their problem, and a call that
// feeds a primitive from ember's plain-layout tensors (reordering to the primitive's own layout where it
// chose another). Internal to kernels/.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

namespace ember::kernels::onednn {

dnnl::engine& engine();
/// Gives oneDNN's next OpenMP region the threads worth using for `macs` multiply-adds (or cycles) of work
/// (core/parallel.h: one below the grain or inside a parallel region); returns it.
int set_threads(int64_t macs);

/// A created primitive and the layout it wants for each of its arguments.
struct Primitive {
  dnnl::primitive primitive;
  std::vector<std::pair<int, dnnl::memory::desc>> arg_descs;  // DNNL_ARG_* -> layout the primitive reads
  dnnl::memory::desc scratchpad;
  std::string impl;
  const dnnl::memory::desc* desc_of(int arg) const;
};

using Key = std::vector<int64_t>;
/// The cached primitive for `key`, made by `make` on a miss (a null result is cached too: oneDNN has no
/// implementation, and the caller falls back).
std::shared_ptr<const Primitive> cached(const Key& key,
                                        const std::function<std::shared_ptr<const Primitive>()>& make);
size_t cache_size();
void set_cache_capacity(size_t capacity);
void cache_clear();

/// One argument as ember holds it: a plain-layout desc over `data`. Outputs are written back.
struct Arg {
  int arg;
  dnnl::memory::desc desc;
  void* data;
  bool output;
};
/// Runs `p` on `args`, reordering any argument whose layout differs from the primitive's. False (nothing
/// written) where oneDNN throws.
bool run(const Primitive& p, const std::vector<Arg>& args);

/// Row-major ("plain") strides of an activation [N, C, spatial...] stored channels-last or channels-first.
dnnl::memory::desc activation_desc(int64_t n, int64_t c, const int64_t* spatial, int nd, bool channels_last);

void set_last_impl(const std::string& impl);
const std::string& last_impl();

}  // namespace ember::kernels::onednn
