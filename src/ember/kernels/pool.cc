#include "ember/kernels/pool.h"

#include <algorithm>
#include <cstring>

#include "ember/core/parallel.h"
#include "ember/kernels/onednn_primitive.h"

namespace ember::kernels {

namespace {

// Element strides of x and y per (batch, channel) plane and spatial dim, spatial dims padded to three.
struct Plan {
  int64_t x_n, x_c, x_s[3], y_n, y_c, y_s[3];
  int64_t in[3], win[3], out[3], st[3], pad[3];
  int64_t planes() const { return batch * channels; }
  int64_t batch, channels;
};

void strides(const PoolGeometry& g, const int64_t* spatial, int64_t* n, int64_t* c, int64_t* s) {
  int64_t size = 1;
  for (int i = 0; i < 3; ++i) s[i] = 0;
  if (g.channels_last) {
    *c = 1, size = g.channels;
    for (int i = g.nd - 1; i >= 0; --i) s[i] = size, size *= spatial[i];
  } else {
    for (int i = g.nd - 1; i >= 0; --i) s[i] = size, size *= spatial[i];
    *c = size, size *= g.channels;
  }
  *n = size;
}

Plan plan_of(const PoolGeometry& g) {
  Plan p{};
  strides(g, g.in, &p.x_n, &p.x_c, p.x_s);
  strides(g, g.out, &p.y_n, &p.y_c, p.y_s);
  for (int i = 0; i < 3; ++i) {
    const bool used = i < g.nd;
    p.in[i] = used ? g.in[i] : 1, p.win[i] = used ? g.window[i] : 1, p.out[i] = used ? g.out[i] : 1;
    p.st[i] = used ? g.stride[i] : 1, p.pad[i] = used ? g.pad_before[i] : 0;
  }
  p.batch = g.batch, p.channels = g.channels;
  return p;
}

// Calls fn(y offset, window) for every output element of plane (n, c), where window(visit) calls
// visit(x offset) for each window element inside the input, in row-major window order.
template <typename Fn>
void for_each_window(const Plan& p, int64_t plane, Fn&& fn) {
  const int64_t n = plane / p.channels, c = plane % p.channels;
  const int64_t x0 = n * p.x_n + c * p.x_c, y0 = n * p.y_n + c * p.y_c;
  for (int64_t o0 = 0; o0 < p.out[0]; ++o0)
    for (int64_t o1 = 0; o1 < p.out[1]; ++o1)
      for (int64_t o2 = 0; o2 < p.out[2]; ++o2) {
        const int64_t b0 = o0 * p.st[0] - p.pad[0], b1 = o1 * p.st[1] - p.pad[1],
                      b2 = o2 * p.st[2] - p.pad[2];
        auto window = [&](auto&& visit) {
          for (int64_t i0 = std::max<int64_t>(b0, 0); i0 < std::min(b0 + p.win[0], p.in[0]); ++i0)
            for (int64_t i1 = std::max<int64_t>(b1, 0); i1 < std::min(b1 + p.win[1], p.in[1]); ++i1)
              for (int64_t i2 = std::max<int64_t>(b2, 0); i2 < std::min(b2 + p.win[2], p.in[2]); ++i2)
                visit(x0 + i0 * p.x_s[0] + i1 * p.x_s[1] + i2 * p.x_s[2]);
        };
        fn(y0 + o0 * p.y_s[0] + o1 * p.y_s[1] + o2 * p.y_s[2], window);
      }
}

int64_t plane_cost(const Plan& p) {
  return p.out[0] * p.out[1] * p.out[2] * p.win[0] * p.win[1] * p.win[2] + 1;
}

// The offset of the window's first maximum, or -1 for a window with no element inside the input.
template <typename T, typename Window>
int64_t argmax(const T* x, Window& window) {
  int64_t best = -1;
  window([&](int64_t i) {
    if (best < 0 || x[i] > x[best] || (x[i] != x[i] && x[best] == x[best])) best = i;  // NaN wins, as max
  });
  return best;
}

template <typename T>
void direct_max(const Plan& p, const T* x, T* y) {
  parallel_for(p.planes(), plane_cost(p), [&](int64_t b, int64_t e) {
    for (int64_t plane = b; plane < e; ++plane)
      for_each_window(p, plane, [&](int64_t yi, auto& window) {
        const int64_t best = argmax(x, window);
        y[yi] = best < 0 ? T(0) : x[best];
      });
  });
}

template <typename T>
void direct_avg(const Plan& p, const T* x, T* y) {
  parallel_for(p.planes(), plane_cost(p), [&](int64_t b, int64_t e) {
    for (int64_t plane = b; plane < e; ++plane)
      for_each_window(p, plane, [&](int64_t yi, auto& window) {
        T sum = 0;
        int64_t count = 0;
        window([&](int64_t i) { sum += x[i], ++count; });
        y[yi] = count ? sum / static_cast<T>(count) : T(0);
      });
  });
}

template <typename T>
void zero_plane(const Plan& p, int64_t plane, T* dx) {
  const int64_t n = plane / p.channels, c = plane % p.channels;
  T* base = dx + n * p.x_n + c * p.x_c;
  for (int64_t i0 = 0; i0 < p.in[0]; ++i0)
    for (int64_t i1 = 0; i1 < p.in[1]; ++i1)
      for (int64_t i2 = 0; i2 < p.in[2]; ++i2) base[i0 * p.x_s[0] + i1 * p.x_s[1] + i2 * p.x_s[2]] = 0;
}

template <typename T>
void direct_max_grad(const Plan& p, const T* x, const T* dy, T* dx) {
  parallel_for(p.planes(), plane_cost(p), [&](int64_t b, int64_t e) {
    for (int64_t plane = b; plane < e; ++plane) {
      zero_plane(p, plane, dx);
      for_each_window(p, plane, [&](int64_t yi, auto& window) {
        const int64_t best = argmax(x, window);
        if (best >= 0) dx[best] += dy[yi];
      });
    }
  });
}

// Note [Channels-last max pooling gradient]
// direct_max_grad walks one (batch, channel) plane at a time; with channels last that reads x, dy and dx at
// a stride of `channels` elements, one cache line per element, and the step of a small CNN spent most of its
// time there. Channels last, each image's windows are walked for up to 64 channels together: their running
// maxima and their offsets sit in buffers on the stack and each window element is a contiguous row of
// channels. Per channel the order of the comparisons, the first maximum kept and the NaN rule are
// direct_max_grad's, so the gradient lands on the same elements.
template <typename T>
void direct_max_grad_channels_last(const Plan& p, const T* x, const T* dy, T* dx) {
  constexpr int64_t kChunk = 64;  // channels per pass: the running maxima live on the stack, no allocation
  const int64_t channels = p.channels;
  const int64_t cost = (plane_cost(p) + p.in[0] * p.in[1] * p.in[2]) * channels;
  parallel_for(p.batch, cost, [&](int64_t begin, int64_t end) {
    int64_t best[kChunk];
    T best_value[kChunk];
    for (int64_t n = begin; n < end; ++n) {
      const T* xn = x + n * p.x_n;
      const T* dyn = dy + n * p.y_n;
      T* dxn = dx + n * p.x_n;
      std::fill(dxn, dxn + p.x_n, T(0));
      for (int64_t c0 = 0; c0 < channels; c0 += kChunk) {
        const int64_t width = std::min(kChunk, channels - c0);
        for (int64_t o0 = 0; o0 < p.out[0]; ++o0)
          for (int64_t o1 = 0; o1 < p.out[1]; ++o1)
            for (int64_t o2 = 0; o2 < p.out[2]; ++o2) {
              const int64_t b0 = o0 * p.st[0] - p.pad[0], b1 = o1 * p.st[1] - p.pad[1],
                            b2 = o2 * p.st[2] - p.pad[2];
              bool first = true;
              for (int64_t i0 = std::max<int64_t>(b0, 0); i0 < std::min(b0 + p.win[0], p.in[0]); ++i0)
                for (int64_t i1 = std::max<int64_t>(b1, 0); i1 < std::min(b1 + p.win[1], p.in[1]); ++i1)
                  for (int64_t i2 = std::max<int64_t>(b2, 0); i2 < std::min(b2 + p.win[2], p.in[2]); ++i2) {
                    const int64_t row = i0 * p.x_s[0] + i1 * p.x_s[1] + i2 * p.x_s[2] + c0;
                    const T* v = xn + row;
                    if (first) {
                      for (int64_t c = 0; c < width; ++c) best[c] = row + c, best_value[c] = v[c];
                      first = false;
                      continue;
                    }
                    for (int64_t c = 0; c < width; ++c) {
                      const T b = best_value[c];
                      if (v[c] > b || (v[c] != v[c] && b == b)) best[c] = row + c, best_value[c] = v[c];
                    }
                  }
              if (first) continue;  // a window with no element inside the input
              const T* dyo = dyn + o0 * p.y_s[0] + o1 * p.y_s[1] + o2 * p.y_s[2] + c0;
              for (int64_t c = 0; c < width; ++c) dxn[best[c]] += dyo[c];
            }
      }
    }
  });
}

template <typename T>
void direct_avg_grad(const Plan& p, const T* dy, T* dx) {
  parallel_for(p.planes(), plane_cost(p), [&](int64_t b, int64_t e) {
    for (int64_t plane = b; plane < e; ++plane) {
      zero_plane(p, plane, dx);
      for_each_window(p, plane, [&](int64_t yi, auto& window) {
        int64_t count = 0;
        window([&](int64_t) { ++count; });
        if (!count) return;
        const T share = dy[yi] / static_cast<T>(count);
        window([&](int64_t i) { dx[i] += share; });
      });
    }
  });
}

template <typename T>
void direct_max_grad_grad(const Plan& p, const T* x, const T* gx, T* out) {
  parallel_for(p.planes(), plane_cost(p), [&](int64_t b, int64_t e) {
    for (int64_t plane = b; plane < e; ++plane)
      for_each_window(p, plane, [&](int64_t yi, auto& window) {
        const int64_t best = argmax(x, window);
        out[yi] = best < 0 ? T(0) : gx[best];
      });
  });
}

// float32 forward pooling on a oneDNN primitive (plain layouts, as the convolutions': Note [oneDNN
// convolutions] in conv.cc). False where oneDNN has only a reference kernel or throws.
bool onednn_pool(const PoolGeometry& g, bool max, const float* x, float* y) {
  int64_t elements = g.batch * g.channels;
  for (int i = 0; i < g.nd; ++i) elements *= g.in[i] * g.out[i];
  if (elements == 0) return false;
  int64_t work = g.batch * g.channels;
  for (int i = 0; i < g.nd; ++i) work *= g.out[i] * g.window[i];
  const int threads = onednn::set_threads(work);
  onednn::Key key{100 + max, threads, g.nd, g.channels_last, g.batch, g.channels};
  for (int i = 0; i < g.nd; ++i)
    key.insert(key.end(), {g.in[i], g.window[i], g.out[i], g.stride[i], g.pad_before[i], g.pad_after[i]});
  const auto xd = onednn::activation_desc(g.batch, g.channels, g.in, g.nd, g.channels_last);
  const auto yd = onednn::activation_desc(g.batch, g.channels, g.out, g.nd, g.channels_last);
  auto p = onednn::cached(key, [&]() -> std::shared_ptr<const onednn::Primitive> {
    try {
      dnnl::memory::dims strides, kernel, pl, pr;
      for (int i = 0; i < g.nd; ++i) {
        strides.push_back(g.stride[i]), kernel.push_back(g.window[i]);
        pl.push_back(g.pad_before[i]), pr.push_back(g.pad_after[i]);
      }
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      dnnl::pooling_forward::primitive_desc pd(
          dnnl::pooling_forward::desc(
              dnnl::prop_kind::forward_inference,
              max ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_exclude_padding, xd, yd,
              strides, kernel, pl, pr),
          attr, onednn::engine());
      auto prim = std::make_shared<onednn::Primitive>();
      prim->impl = pd.impl_info_str();
      if (prim->impl.rfind("ref", 0) == 0) return nullptr;
      prim->primitive = dnnl::pooling_forward(pd);
      prim->arg_descs = {{DNNL_ARG_SRC, pd.src_desc()}, {DNNL_ARG_DST, pd.dst_desc()}};
      prim->scratchpad = pd.scratchpad_desc();
      return prim;
    } catch (const dnnl::error&) {
      return nullptr;
    }
  });
  if (!p) return false;
  return onednn::run(*p, {{DNNL_ARG_SRC, xd, const_cast<float*>(x), false}, {DNNL_ARG_DST, yd, y, true}});
}

Status no_kernel(const char* what, DType d) {
  return make_error(Code::kUnimplemented, what, ": no kernel for ", dtype_name(d));
}

// Note [Empty pools]
// With nothing to compute the loops must not run at all: a batch of 2^40 examples of zero width would
// otherwise walk 2^40 empty rows (found by the op fuzzer, a MaxPool of [2^40, 1, 0, 1] that hung). A
// gradient with no incoming windows is zero.
bool empty_gradient(const TensorImpl& dy, TensorImpl& dx) {
  if (dx.num_elements() == 0) return true;
  if (dy.num_elements() != 0) return false;
  std::memset(dx.mutable_raw_data(), 0, dx.nbytes());
  return true;
}

}  // namespace

Status max_pool(const PoolGeometry& g, const TensorImpl& x, TensorImpl& y) {
  if (y.num_elements() == 0) return Status::OK();  // Note [Empty pools]
  const Plan p = plan_of(g);
  if (x.dtype() == DType::kFloat32) {
    if (onednn_pool(g, true, x.data<float>(), y.mutable_data<float>())) return Status::OK();
    direct_max(p, x.data<float>(), y.mutable_data<float>());
  } else if (x.dtype() == DType::kFloat64) {
    direct_max(p, x.data<double>(), y.mutable_data<double>());
  } else {
    return no_kernel("max pooling", x.dtype());
  }
  onednn::set_last_impl("ember:direct");
  return Status::OK();
}

Status avg_pool(const PoolGeometry& g, const TensorImpl& x, TensorImpl& y) {
  if (y.num_elements() == 0) return Status::OK();  // Note [Empty pools]
  const Plan p = plan_of(g);
  if (x.dtype() == DType::kFloat32) {
    if (onednn_pool(g, false, x.data<float>(), y.mutable_data<float>())) return Status::OK();
    direct_avg(p, x.data<float>(), y.mutable_data<float>());
  } else if (x.dtype() == DType::kFloat64) {
    direct_avg(p, x.data<double>(), y.mutable_data<double>());
  } else {
    return no_kernel("average pooling", x.dtype());
  }
  onednn::set_last_impl("ember:direct");
  return Status::OK();
}

Status max_pool_grad(const PoolGeometry& g, const TensorImpl& x, const TensorImpl& dy, TensorImpl& dx) {
  if (empty_gradient(dy, dx)) return Status::OK();
  const Plan p = plan_of(g);
  if (g.channels_last && x.dtype() == DType::kFloat32) {  // Note [Channels-last max pooling gradient]
    direct_max_grad_channels_last(p, x.data<float>(), dy.data<float>(), dx.mutable_data<float>());
  } else if (g.channels_last && x.dtype() == DType::kFloat64) {
    direct_max_grad_channels_last(p, x.data<double>(), dy.data<double>(), dx.mutable_data<double>());
  } else if (x.dtype() == DType::kFloat32) {
    direct_max_grad(p, x.data<float>(), dy.data<float>(), dx.mutable_data<float>());
  } else if (x.dtype() == DType::kFloat64) {
    direct_max_grad(p, x.data<double>(), dy.data<double>(), dx.mutable_data<double>());
  } else {
    return no_kernel("max pooling gradient", x.dtype());
  }
  return Status::OK();
}

Status avg_pool_grad(const PoolGeometry& g, const TensorImpl& dy, TensorImpl& dx) {
  if (empty_gradient(dy, dx)) return Status::OK();
  const Plan p = plan_of(g);
  if (dy.dtype() == DType::kFloat32) {
    direct_avg_grad(p, dy.data<float>(), dx.mutable_data<float>());
  } else if (dy.dtype() == DType::kFloat64) {
    direct_avg_grad(p, dy.data<double>(), dx.mutable_data<double>());
  } else {
    return no_kernel("average pooling gradient", dy.dtype());
  }
  return Status::OK();
}

Status max_pool_grad_grad(const PoolGeometry& g, const TensorImpl& x, const TensorImpl& gx, TensorImpl& out) {
  if (out.num_elements() == 0) return Status::OK();  // Note [Empty pools]
  const Plan p = plan_of(g);
  if (x.dtype() == DType::kFloat32) {
    direct_max_grad_grad(p, x.data<float>(), gx.data<float>(), out.mutable_data<float>());
  } else if (x.dtype() == DType::kFloat64) {
    direct_max_grad_grad(p, x.data<double>(), gx.data<double>(), out.mutable_data<double>());
  } else {
    return no_kernel("max pooling gradient of gradient", x.dtype());
  }
  return Status::OK();
}

}  // namespace ember::kernels
