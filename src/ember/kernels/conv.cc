#include "ember/kernels/conv.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <type_traits>

#include "ember/core/half.h"
#include "ember/core/parallel.h"
#include "ember/kernels/arith_type.h"
#include "ember/kernels/float32_copies.h"
#include "ember/kernels/onednn_primitive.h"

namespace ember::kernels {

namespace {

// ---------------------------------------------------------------- ember's direct loops
//
// Element strides of the three tensors, spatial dims padded to three with size-1 dims, so one loop nest
// serves 1-3 spatial dims and both layouts.
struct Strides {
  int64_t x_n, x_c, x_s[3];
  int64_t y_n, y_c, y_s[3];
  int64_t w_k[3], w_i, w_o;
  int64_t in[3], k[3], out[3], st[3], dil[3], pad[3];
  int64_t in_per_group, out_per_group;
};

void activation_strides(const ConvGeometry& g, int64_t channels, const int64_t* spatial, int64_t* n,
                        int64_t* c, int64_t* s) {
  int64_t size = 1;
  for (int i = 0; i < 3; ++i) s[i] = 0;
  if (g.channels_last) {
    *c = 1, size = channels;
    for (int i = g.nd - 1; i >= 0; --i) s[i] = size, size *= spatial[i];
  } else {
    for (int i = g.nd - 1; i >= 0; --i) s[i] = size, size *= spatial[i];
    *c = size, size *= channels;
  }
  *n = size;
}

Strides strides_of(const ConvGeometry& g) {
  Strides s{};
  activation_strides(g, g.in_channels, g.in, &s.x_n, &s.x_c, s.x_s);
  activation_strides(g, g.out_channels, g.out, &s.y_n, &s.y_c, s.y_s);
  s.in_per_group = g.in_channels / g.groups;
  s.out_per_group = g.out_channels / g.groups;
  s.w_o = 1, s.w_i = g.out_channels;
  int64_t size = s.in_per_group * g.out_channels;
  for (int i = 2; i >= 0; --i) s.w_k[i] = 0;
  for (int i = g.nd - 1; i >= 0; --i) s.w_k[i] = size, size *= g.kernel[i];
  for (int i = 0; i < 3; ++i) {
    const bool used = i < g.nd;
    s.in[i] = used ? g.in[i] : 1, s.k[i] = used ? g.kernel[i] : 1, s.out[i] = used ? g.out[i] : 1;
    s.st[i] = used ? g.stride[i] : 1, s.dil[i] = used ? g.dilation[i] : 1,
    s.pad[i] = used ? g.pad_before[i] : 0;
  }
  return s;
}

// The input position that kernel tap k of output position p reads along one dim, or -1 outside the input.
inline int64_t tap(const Strides& s, int d, int64_t p, int64_t k) {
  const int64_t i = p * s.st[d] - s.pad[d] + k * s.dil[d];
  return i >= 0 && i < s.in[d] ? i : -1;
}

template <typename T>
void direct_forward(const ConvGeometry& g, const T* x, const T* w, T* y) {
  using Acc = Arith<T>;  // int32 (TensorFlow's Conv2D takes it) wraps
  const Strides s = strides_of(g);
  const int64_t rows = g.batch * g.out_channels * s.out[0];
  const int64_t cost = s.out[1] * s.out[2] * s.k[0] * s.k[1] * s.k[2] * s.in_per_group + 1;
  parallel_for(rows, cost, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t p0 = row % s.out[0], o = (row / s.out[0]) % g.out_channels,
                    n = row / (s.out[0] * g.out_channels);
      const int64_t c0 = (o / s.out_per_group) * s.in_per_group;
      const T* xn = x + n * s.x_n + c0 * s.x_c;
      for (int64_t p1 = 0; p1 < s.out[1]; ++p1) {
        for (int64_t p2 = 0; p2 < s.out[2]; ++p2) {
          Acc acc = 0;
          for (int64_t k0 = 0; k0 < s.k[0]; ++k0) {
            const int64_t i0 = tap(s, 0, p0, k0);
            if (i0 < 0) continue;
            for (int64_t k1 = 0; k1 < s.k[1]; ++k1) {
              const int64_t i1 = tap(s, 1, p1, k1);
              if (i1 < 0) continue;
              for (int64_t k2 = 0; k2 < s.k[2]; ++k2) {
                const int64_t i2 = tap(s, 2, p2, k2);
                if (i2 < 0) continue;
                const T* xp = xn + i0 * s.x_s[0] + i1 * s.x_s[1] + i2 * s.x_s[2];
                const T* wp = w + k0 * s.w_k[0] + k1 * s.w_k[1] + k2 * s.w_k[2] + o;
                for (int64_t ig = 0; ig < s.in_per_group; ++ig)
                  acc += Acc(xp[ig * s.x_c]) * Acc(wp[ig * s.w_i]);
              }
            }
          }
          y[n * s.y_n + o * s.y_c + p0 * s.y_s[0] + p1 * s.y_s[1] + p2 * s.y_s[2]] = T(acc);
        }
      }
    }
  });
}

template <typename T>
void direct_backward_data(const ConvGeometry& g, const T* w, const T* dy, T* dx) {
  using Acc = Arith<T>;  // int32 (TensorFlow's Conv2D takes it) wraps
  const Strides s = strides_of(g);
  const int64_t out_size = s.out[0] * s.out[1] * s.out[2];
  const int64_t cost = out_size * s.k[0] * s.k[1] * s.k[2] * s.out_per_group + 1;
  // One (batch, input channel) plane per work item: no two items write the same element.
  parallel_for(g.batch * g.in_channels, cost, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t c = item % g.in_channels, n = item / g.in_channels;
      const int64_t ig = c % s.in_per_group, o0 = (c / s.in_per_group) * s.out_per_group;
      T* dxp = dx + n * s.x_n + c * s.x_c;
      for (int64_t i0 = 0; i0 < s.in[0]; ++i0)
        for (int64_t i1 = 0; i1 < s.in[1]; ++i1)
          for (int64_t i2 = 0; i2 < s.in[2]; ++i2) dxp[i0 * s.x_s[0] + i1 * s.x_s[1] + i2 * s.x_s[2]] = 0;
      for (int64_t p0 = 0; p0 < s.out[0]; ++p0)
        for (int64_t p1 = 0; p1 < s.out[1]; ++p1)
          for (int64_t p2 = 0; p2 < s.out[2]; ++p2) {
            const T* dyp = dy + n * s.y_n + p0 * s.y_s[0] + p1 * s.y_s[1] + p2 * s.y_s[2];
            for (int64_t k0 = 0; k0 < s.k[0]; ++k0) {
              const int64_t i0 = tap(s, 0, p0, k0);
              if (i0 < 0) continue;
              for (int64_t k1 = 0; k1 < s.k[1]; ++k1) {
                const int64_t i1 = tap(s, 1, p1, k1);
                if (i1 < 0) continue;
                for (int64_t k2 = 0; k2 < s.k[2]; ++k2) {
                  const int64_t i2 = tap(s, 2, p2, k2);
                  if (i2 < 0) continue;
                  const T* wp = w + k0 * s.w_k[0] + k1 * s.w_k[1] + k2 * s.w_k[2] + ig * s.w_i;
                  Acc acc = 0;
                  for (int64_t o = o0; o < o0 + s.out_per_group; ++o) acc += Acc(dyp[o * s.y_c]) * Acc(wp[o]);
                  T& out = dxp[i0 * s.x_s[0] + i1 * s.x_s[1] + i2 * s.x_s[2]];
                  out = T(Acc(out) + acc);
                }
              }
            }
          }
    }
  });
}

template <typename T>
void direct_backward_filter(const ConvGeometry& g, const T* x, const T* dy, T* dw) {
  const Strides s = strides_of(g);
  const int64_t taps = s.k[0] * s.k[1] * s.k[2];
  const int64_t cost = g.batch * s.out[0] * s.out[1] * s.out[2] + 1;
  // One filter element per work item.
  parallel_for(taps * s.in_per_group * g.out_channels, cost, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t o = item % g.out_channels, ig = (item / g.out_channels) % s.in_per_group;
      const int64_t t = item / (g.out_channels * s.in_per_group);
      const int64_t k2 = t % s.k[2], k1 = (t / s.k[2]) % s.k[1], k0 = t / (s.k[2] * s.k[1]);
      const int64_t c = (o / s.out_per_group) * s.in_per_group + ig;
      T acc = 0;
      for (int64_t n = 0; n < g.batch; ++n)
        for (int64_t p0 = 0; p0 < s.out[0]; ++p0) {
          const int64_t i0 = tap(s, 0, p0, k0);
          if (i0 < 0) continue;
          for (int64_t p1 = 0; p1 < s.out[1]; ++p1) {
            const int64_t i1 = tap(s, 1, p1, k1);
            if (i1 < 0) continue;
            for (int64_t p2 = 0; p2 < s.out[2]; ++p2) {
              const int64_t i2 = tap(s, 2, p2, k2);
              if (i2 < 0) continue;
              acc += x[n * s.x_n + c * s.x_c + i0 * s.x_s[0] + i1 * s.x_s[1] + i2 * s.x_s[2]] *
                     dy[n * s.y_n + o * s.y_c + p0 * s.y_s[0] + p1 * s.y_s[1] + p2 * s.y_s[2]];
            }
          }
        }
      dw[k0 * s.w_k[0] + k1 * s.w_k[1] + k2 * s.w_k[2] + ig * s.w_i + o] = acc;
    }
  });
}

// ---------------------------------------------------------------- oneDNN
//
// Note [oneDNN convolutions]
// ember's tensors keep TensorFlow's plain layouts, so the activations are described to oneDNN as they are
// (nhwc or nchw strides) and the filter as its HWIO strides ([G, O/G, I/G, k...] when grouped). The filter
// is declared with format `any`, so oneDNN picks its blocked layout and the call reorders into it (a small
// copy next to the convolution). If the plain activations leave oneDNN only its reference kernel, the
// primitive is made again with `any` activations too, and they are reordered around the call. A geometry
// that only has a reference kernel even then runs on ember's direct loops. One primitive per (kind,
// geometry, thread count), in the cache of kernels/onednn_primitive.h.

enum class Kind : int64_t { kForward = 1, kBackwardData, kBackwardFilter };

// Note [Fused convolutions]
// The optimizer's conv fusion (passes/fuse_conv.cc) turns Conv2D -> bias add [-> residual add] [->
// activation] into one _FusedConv2D node. On oneDNN it is one forward primitive: the bias is the primitive's
// bias argument, the residual a binary add post-op reading the other tensor in y's own layout, and the
// activation an eltwise post-op (relu, clip, elu, tanh, logistic, swish, gelu_erf, gelu_tanh), applied to
// each output block while it is still in registers, so the output is written once instead of three or four
// times. oneDNN's sum post-op would take the residual too, but it accumulates into y, which would first need
// a copy of the residual. The primitive is cached with the epilogue (activation, alpha, residual) in the
// key. The backward primitives never see a fusion (the pass runs after autodiff, on a forward whose
// pre-activation nothing else reads).
struct Fusion {
  FusedActivation activation = FusedActivation::kNone;
  float alpha = 0;
  bool residual = false;
};

void set_post_ops(const Fusion& f, const dnnl::memory::desc& y, dnnl::primitive_attr& attr) {
  dnnl::post_ops ops;
  if (f.residual) ops.append_binary(dnnl::algorithm::binary_add, y);
  append_post_op(f.activation, f.alpha, ops);
  attr.set_post_ops(ops);
}

// The residual's argument: the first post-op's second source.
constexpr int kResidualArg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1;

using dt = dnnl::memory::data_type;

dnnl::memory::desc filter_desc(const ConvGeometry& g) {
  const int64_t ig = g.in_channels / g.groups, og = g.out_channels / g.groups;
  dnnl::memory::dims dims, strides;
  if (g.groups == 1) {
    dims = {g.out_channels, g.in_channels};
    strides = {1, g.out_channels};
  } else {
    dims = {g.groups, og, ig};
    strides = {og, 1, g.out_channels};
  }
  const size_t lead = dims.size();
  for (int i = 0; i < g.nd; ++i) dims.push_back(g.kernel[i]), strides.push_back(0);
  int64_t size = ig * g.out_channels;
  for (int i = g.nd - 1; i >= 0; --i) strides[lead + i] = size, size *= g.kernel[i];
  return dnnl::memory::desc(dims, dt::f32, strides);
}

dnnl::memory::desc any_like(const dnnl::memory::desc& d) {
  return dnnl::memory::desc(d.dims(), dt::f32, dnnl::memory::format_tag::any);
}

struct Descs {
  dnnl::memory::desc x, w, y;
  dnnl::memory::dims strides, dilations, pad_l, pad_r;
};

Descs descs_of(const ConvGeometry& g) {
  Descs d;
  d.x = onednn::activation_desc(g.batch, g.in_channels, g.in, g.nd, g.channels_last);
  d.y = onednn::activation_desc(g.batch, g.out_channels, g.out, g.nd, g.channels_last);
  d.w = filter_desc(g);
  for (int i = 0; i < g.nd; ++i) {
    d.strides.push_back(g.stride[i]);
    d.dilations.push_back(g.dilation[i] - 1);  // oneDNN counts the gaps between taps
    d.pad_l.push_back(g.pad_before[i]);
    d.pad_r.push_back(g.pad_after[i]);
  }
  return d;
}

bool is_reference(const std::string& impl) { return impl.rfind("ref", 0) == 0; }

dnnl::memory::desc bias_desc(const ConvGeometry& g) {
  return dnnl::memory::desc({g.out_channels}, dt::f32, dnnl::memory::format_tag::a);
}

std::shared_ptr<const onednn::Primitive> make(const ConvGeometry& g, Kind kind, bool any_activations,
                                              const Fusion* fusion) {
  const Descs d = descs_of(g);
  const auto x = any_activations ? any_like(d.x) : d.x, y = any_activations ? any_like(d.y) : d.y;
  const auto w = any_like(d.w);
  dnnl::engine& eng = onednn::engine();
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const auto algo = dnnl::algorithm::convolution_direct;
  auto p = std::make_shared<onednn::Primitive>();
  if (fusion) {
    dnnl::primitive_attr fused_attr;
    fused_attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    set_post_ops(*fusion, d.y, fused_attr);
    dnnl::convolution_forward::primitive_desc fused(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, algo, x, w, bias_desc(g), y,
                                        d.strides, d.dilations, d.pad_l, d.pad_r),
        fused_attr, eng);
    p->primitive = dnnl::convolution_forward(fused);
    p->arg_descs = {{DNNL_ARG_SRC, fused.src_desc()},
                    {DNNL_ARG_WEIGHTS, fused.weights_desc()},
                    {DNNL_ARG_BIAS, fused.bias_desc()},
                    {DNNL_ARG_DST, fused.dst_desc()}};
    if (fusion->residual) p->arg_descs.push_back({kResidualArg, d.y});
    p->scratchpad = fused.scratchpad_desc();
    p->impl = fused.impl_info_str();
    return p;
  }
  dnnl::convolution_forward::primitive_desc fwd(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algo, x, w, y, d.strides,
                                      d.dilations, d.pad_l, d.pad_r),
      attr, eng);
  if (kind == Kind::kForward) {
    p->primitive = dnnl::convolution_forward(fwd);
    p->arg_descs = {{DNNL_ARG_SRC, fwd.src_desc()},
                    {DNNL_ARG_WEIGHTS, fwd.weights_desc()},
                    {DNNL_ARG_DST, fwd.dst_desc()}};
    p->scratchpad = fwd.scratchpad_desc();
    p->impl = fwd.impl_info_str();
  } else if (kind == Kind::kBackwardData) {
    dnnl::convolution_backward_data::primitive_desc bwd(
        dnnl::convolution_backward_data::desc(algo, x, w, y, d.strides, d.dilations, d.pad_l, d.pad_r), attr,
        eng, fwd);
    p->primitive = dnnl::convolution_backward_data(bwd);
    p->arg_descs = {{DNNL_ARG_DIFF_SRC, bwd.diff_src_desc()},
                    {DNNL_ARG_WEIGHTS, bwd.weights_desc()},
                    {DNNL_ARG_DIFF_DST, bwd.diff_dst_desc()}};
    p->scratchpad = bwd.scratchpad_desc();
    p->impl = bwd.impl_info_str();
  } else {
    dnnl::convolution_backward_weights::primitive_desc bwd(
        dnnl::convolution_backward_weights::desc(algo, x, w, y, d.strides, d.dilations, d.pad_l, d.pad_r),
        attr, eng, fwd);
    p->primitive = dnnl::convolution_backward_weights(bwd);
    p->arg_descs = {{DNNL_ARG_SRC, bwd.src_desc()},
                    {DNNL_ARG_DIFF_WEIGHTS, bwd.diff_weights_desc()},
                    {DNNL_ARG_DIFF_DST, bwd.diff_dst_desc()}};
    p->scratchpad = bwd.scratchpad_desc();
    p->impl = bwd.impl_info_str();
  }
  return p;
}

// Multiply-adds of the convolution (each of its three kinds does as many), for the thread count.
int64_t conv_macs(const ConvGeometry& g) {
  int64_t macs = g.batch * g.out_channels * (g.in_channels / std::max<int64_t>(1, g.groups));
  for (int i = 0; i < g.nd; ++i) macs *= g.out[i] * g.kernel[i];
  return macs;
}

std::shared_ptr<const onednn::Primitive> primitive(const ConvGeometry& g, Kind kind, const Fusion* fusion) {
  const int threads = onednn::set_threads(conv_macs(g));
  int32_t alpha_bits = 0;
  if (fusion) std::memcpy(&alpha_bits, &fusion->alpha, sizeof alpha_bits);
  // A fused forward is its own kind: kForward plus 16 * (1 + activation) plus 1024 with a residual, with
  // alpha's bits.
  const int64_t kind_key = fusion ? static_cast<int64_t>(kind) +
                                        16 * (1 + static_cast<int64_t>(fusion->activation)) +
                                        (fusion->residual ? 1024 : 0)
                                  : static_cast<int64_t>(kind);
  onednn::Key key{kind_key, alpha_bits,    threads,        g.nd,    g.channels_last,
                  g.batch,  g.in_channels, g.out_channels, g.groups};
  for (int i = 0; i < g.nd; ++i)
    key.insert(key.end(),
               {g.in[i], g.kernel[i], g.out[i], g.stride[i], g.dilation[i], g.pad_before[i], g.pad_after[i]});
  return onednn::cached(key, [&]() -> std::shared_ptr<const onednn::Primitive> {
    try {
      auto p = make(g, kind, false, fusion);
      if (is_reference(p->impl)) p = make(g, kind, true, fusion);
      return is_reference(p->impl) ? nullptr : p;
    } catch (const dnnl::error&) {
      return nullptr;
    }
  });
}

bool empty(const ConvGeometry& g) {
  int64_t n = g.batch * g.in_channels * g.out_channels;
  for (int i = 0; i < g.nd; ++i) n *= g.in[i] * g.kernel[i] * g.out[i];
  return n == 0;
}

bool onednn_conv(const ConvGeometry& g, Kind kind, const void* a, const void* b, void* out,
                 const Fusion* fusion = nullptr, const void* bias = nullptr, const void* residual = nullptr) {
  if (empty(g)) return false;
  auto p = primitive(g, kind, fusion);
  if (!p) return false;
  const Descs d = descs_of(g);
  void* ca = const_cast<void*>(a);
  void* cb = const_cast<void*>(b);
  if (fusion) {
    std::vector<onednn::Arg> args = {{DNNL_ARG_SRC, d.x, ca, false},
                                     {DNNL_ARG_WEIGHTS, d.w, cb, false},
                                     {DNNL_ARG_BIAS, bias_desc(g), const_cast<void*>(bias), false},
                                     {DNNL_ARG_DST, d.y, out, true}};
    if (fusion->residual) args.push_back({kResidualArg, d.y, const_cast<void*>(residual), false});
    return onednn::run(*p, args);
  }
  switch (kind) {
    case Kind::kForward:
      return onednn::run(*p, {{DNNL_ARG_SRC, d.x, ca, false},
                              {DNNL_ARG_WEIGHTS, d.w, cb, false},
                              {DNNL_ARG_DST, d.y, out, true}});
    case Kind::kBackwardData:
      return onednn::run(*p, {{DNNL_ARG_WEIGHTS, d.w, ca, false},
                              {DNNL_ARG_DIFF_DST, d.y, cb, false},
                              {DNNL_ARG_DIFF_SRC, d.x, out, true}});
    case Kind::kBackwardFilter:
      return onednn::run(*p, {{DNNL_ARG_SRC, d.x, ca, false},
                              {DNNL_ARG_DIFF_DST, d.y, cb, false},
                              {DNNL_ARG_DIFF_WEIGHTS, d.w, out, true}});
  }
  return false;
}

Status unsupported(const char* what, DType dtype) {
  return make_error(Code::kUnimplemented, what, ": no kernel for ", dtype_name(dtype));
}

// Note [16-bit convolutions]
// float16 and bfloat16 convolutions (and their backprops) widen both operands to float32, run the float32
// path (a oneDNN primitive, or the direct loops) and round each result element once to the 16-bit type, so
// the sums accumulate in float32 (TensorFlow's CPU results agree within the dtypes' precision:
// tests/python/test_nn_conv.py). oneDNN's own bf16/f16 primitives are not used: the primitive cache, the
// reorders and the fused post-ops are written for f32 activations, and a CPU without AVX-512 BF16/FP16 or
// AMX would get oneDNN's reference kernel for them. The cost is one pass over each operand and the result.
using ConvCall = Status (*)(const ConvGeometry&, const TensorImpl&, const TensorImpl&, TensorImpl&);

// The 16-bit dtypes through float32 copies; nullopt for the others (float32 and float64 have their own
// paths).
std::optional<Status> as_float32(ConvCall call, const ConvGeometry& g, const TensorImpl& a,
                                 const TensorImpl& b, TensorImpl& out) {
  if (!is_16bit_float(a.dtype())) return std::nullopt;
  auto wide_a = widen_to_float32(a);
  EMBER_RETURN_IF_ERROR(wide_a.status());
  auto wide_b = widen_to_float32(b);
  EMBER_RETURN_IF_ERROR(wide_b.status());
  auto wide_out = TensorImpl::allocate(DType::kFloat32, out.shape());
  EMBER_RETURN_IF_ERROR(wide_out.status());
  EMBER_RETURN_IF_ERROR(call(g, **wide_a, **wide_b, **wide_out));
  narrow_from_float32(**wide_out, out);
  onednn::set_last_impl("f32 via " + onednn::last_impl());
  return Status::OK();
}

}  // namespace

Status conv_forward(const ConvGeometry& g, const TensorImpl& x, const TensorImpl& w, TensorImpl& y) {
  if (y.num_elements() == 0) return Status::OK();  // also a depthwise convolution of 0 channels
  if (auto half = as_float32(&conv_forward, g, x, w, y)) return *half;
  switch (x.dtype()) {
    case DType::kFloat32:
      if (onednn_conv(g, Kind::kForward, x.raw_data(), w.raw_data(), y.mutable_raw_data()))
        return Status::OK();
      direct_forward(g, x.data<float>(), w.data<float>(), y.mutable_data<float>());
      break;
    case DType::kFloat64:
      direct_forward(g, x.data<double>(), w.data<double>(), y.mutable_data<double>());
      break;
    case DType::kInt32:
      direct_forward(g, x.data<int32_t>(), w.data<int32_t>(), y.mutable_data<int32_t>());
      break;
    default:
      return unsupported("convolution", x.dtype());
  }
  onednn::set_last_impl("ember:direct");
  return Status::OK();
}

namespace {

// The bias, residual and activation of a fused convolution over y in place (the path without oneDNN).
template <typename T>
void finish_fused(const ConvGeometry& g, const ConvEpilogue& e, T* y, int64_t size) {
  int64_t spatial = 1;
  for (int i = 0; i < g.nd; ++i) spatial *= g.out[i];
  const int64_t C = g.out_channels;
  const T* bias = e.bias->data<T>();
  const T* residual = e.residual != nullptr ? e.residual->data<T>() : nullptr;
  parallel_for(size, 4, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t c = g.channels_last ? i % C : (i / spatial) % C;
      T v = y[i] + bias[c];
      if (residual != nullptr) v += residual[i];
      y[i] = activate(e.activation, v, e.alpha);
    }
  });
}

}  // namespace

Status conv_forward_fused(const ConvGeometry& g, const TensorImpl& x, const TensorImpl& w,
                          const ConvEpilogue& epilogue, TensorImpl& y) {
  if (y.num_elements() == 0) return Status::OK();
  if (x.dtype() == DType::kFloat32) {
    const Fusion fusion{epilogue.activation, static_cast<float>(epilogue.alpha),
                        epilogue.residual != nullptr};
    if (onednn_conv(g, Kind::kForward, x.raw_data(), w.raw_data(), y.mutable_raw_data(), &fusion,
                    epilogue.bias->raw_data(),
                    epilogue.residual != nullptr ? epilogue.residual->raw_data() : nullptr))
      return Status::OK();
  }
  EMBER_RETURN_IF_ERROR(conv_forward(g, x, w, y));
  switch (x.dtype()) {
    case DType::kFloat32:
      finish_fused(g, epilogue, y.mutable_data<float>(), y.num_elements());
      break;
    case DType::kFloat64:
      finish_fused(g, epilogue, y.mutable_data<double>(), y.num_elements());
      break;
    default:
      return unsupported("fused convolution", x.dtype());
  }
  return Status::OK();
}

Status conv_backward_data(const ConvGeometry& g, const TensorImpl& w, const TensorImpl& dy, TensorImpl& dx) {
  if (dx.num_elements() == 0) return Status::OK();  // also a depthwise convolution of 0 channels
  if (auto half = as_float32(&conv_backward_data, g, w, dy, dx)) return *half;
  switch (w.dtype()) {
    case DType::kFloat32:
      if (onednn_conv(g, Kind::kBackwardData, w.raw_data(), dy.raw_data(), dx.mutable_raw_data()))
        return Status::OK();
      direct_backward_data(g, w.data<float>(), dy.data<float>(), dx.mutable_data<float>());
      break;
    case DType::kFloat64:
      direct_backward_data(g, w.data<double>(), dy.data<double>(), dx.mutable_data<double>());
      break;
    case DType::kInt32:
      direct_backward_data(g, w.data<int32_t>(), dy.data<int32_t>(), dx.mutable_data<int32_t>());
      break;
    default:
      return unsupported("convolution backprop input", w.dtype());
  }
  onednn::set_last_impl("ember:direct");
  return Status::OK();
}

Status conv_backward_filter(const ConvGeometry& g, const TensorImpl& x, const TensorImpl& dy,
                            TensorImpl& dw) {
  if (dw.num_elements() == 0) return Status::OK();  // also a depthwise convolution of 0 channels
  if (auto half = as_float32(&conv_backward_filter, g, x, dy, dw)) return *half;
  switch (x.dtype()) {
    case DType::kFloat32:
      if (onednn_conv(g, Kind::kBackwardFilter, x.raw_data(), dy.raw_data(), dw.mutable_raw_data()))
        return Status::OK();
      direct_backward_filter(g, x.data<float>(), dy.data<float>(), dw.mutable_data<float>());
      break;
    case DType::kFloat64:
      direct_backward_filter(g, x.data<double>(), dy.data<double>(), dw.mutable_data<double>());
      break;
    default:
      return unsupported("convolution backprop filter", x.dtype());
  }
  onednn::set_last_impl("ember:direct");
  return Status::OK();
}

size_t conv_cache_size() { return onednn::cache_size(); }
void set_conv_cache_capacity(size_t capacity) { onednn::set_cache_capacity(capacity); }
void conv_cache_clear() { onednn::cache_clear(); }
std::string conv_last_impl() { return onednn::last_impl(); }

}  // namespace ember::kernels
