#include "ember/kernels/matmul.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <new>
#include <oneapi/dnnl/dnnl.hpp>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "ember/core/parallel.h"
#include "ember/kernels/arith_type.h"
#include "ember/kernels/elementwise.h"
#include "ember/kernels/matmul_tiles.h"
#include "ember/kernels/onednn_primitive.h"
#include "ember/kernels/small_gemm.h"

namespace ember::kernels {

namespace baseline {
void fill_small_gemm_tables(SmallGemmTables& t);
void fill_matmul_tile_tables(TileGemmTable& t);
}  // namespace baseline
namespace avx2 {
void fill_small_gemm_tables(SmallGemmTables& t);
void fill_matmul_tile_tables(TileGemmTable& t);
}  // namespace avx2
namespace avx512 {
void fill_small_gemm_tables(SmallGemmTables& t);
void fill_matmul_tile_tables(TileGemmTable& t);
}  // namespace avx512

namespace {

thread_local std::string g_last_impl;

// ---- The problem, with batch dims padded on the left to the output's rank.
struct Problem {
  int nd = 2;  // rank of the output (and of both padded operands)
  int64_t M = 0, N = 0, K = 0;
  int64_t batch = 1;                                               // output batch count
  int64_t a_dims[kMaxRank], b_dims[kMaxRank], out_dims[kMaxRank];  // padded, as stored (before transposes)
  bool ta = false, tb = false;
};

Problem describe(const TensorImpl& a, const TensorImpl& b, bool ta, bool tb, const TensorImpl& out) {
  Problem p;
  p.nd = out.rank();
  p.ta = ta, p.tb = tb;
  for (int i = 0; i < p.nd; ++i) {
    int ia = i - (p.nd - a.rank()), ib = i - (p.nd - b.rank());
    p.a_dims[i] = ia >= 0 ? a.shape().dim(ia) : 1;
    p.b_dims[i] = ib >= 0 ? b.shape().dim(ib) : 1;
    p.out_dims[i] = out.shape().dim(i);
  }
  int r = p.nd;
  p.M = ta ? p.a_dims[r - 1] : p.a_dims[r - 2];
  p.K = ta ? p.a_dims[r - 2] : p.a_dims[r - 1];
  p.N = tb ? p.b_dims[r - 2] : p.b_dims[r - 1];
  for (int i = 0; i < r - 2; ++i) p.batch *= p.out_dims[i];
  return p;
}

// For each output batch, the index of the a (or b) matrix it reads: broadcast dims contribute 0.
std::vector<int64_t> batch_map(const Problem& p, const int64_t* dims) {
  std::vector<int64_t> map(p.batch);
  for (int64_t ob = 0; ob < p.batch; ++ob) {
    int64_t rem = ob, idx = 0, stride = 1;
    for (int d = p.nd - 3; d >= 0; --d) {
      int64_t i = rem % p.out_dims[d];
      rem /= p.out_dims[d];
      idx += (dims[d] == 1 ? 0 : i) * stride;
      stride *= dims[d];
    }
    map[ob] = idx;
  }
  return map;
}

// ---------------------------------------------------------------- epilogues
//
// Note [MatMul epilogues]
// A fused product (_FusedMatMul: activation(op(A) op(B) + bias)) finishes each block of C while the block
// is still in cache, instead of writing the whole product and reading it back for one more pass:
// - ember's loops apply it to what each piece of work just computed: the small loops per 16 rows, the
//   register tiles per MR x NR tile, the blocked loops per work item (at most 64 rows by a group of
//   panels) once its last slice of K is summed;
// - oneDNN applies it as the primitive's bias argument and an eltwise post-op (dnnl_sgemm has none, so a
//   fused float32 product that would go there takes the primitive instead);
// - 16-bit floats converted around a float32 product (via_float) get it on the float32 result before the
//   rounding, one rounding instead of the unfused graph's three.
// The bias add and the Relu, Relu6, Elu, Tanh and Sigmoid of ember's own paths are the element-wise
// tables' loops (kernels/elementwise.h), the unfused ops' own code: the fused result differs from the
// unfused graph only where the product itself is summed in another order (a kernel path the unfused
// MatMul would not take) or where oneDNN computes the activation.

struct Epilogue {
  const void* bias = nullptr;  // null: a plain product
  FusedActivation activation = FusedActivation::kNone;
  double alpha = 0.2;
  DType dtype = DType::kFloat32;

  explicit operator bool() const { return bias != nullptr; }

  /// Finishes `rows` rows of `cols` columns of C starting at column j0 (row stride ldc, in elements).
  void apply(void* c, int64_t ldc, int64_t rows, int64_t j0, int64_t cols) const;
};

// LeakyRelu and the two Gelus, which the element-wise tables do not hold; 16-bit floats compute in float.
template <typename T>
void own_activation_row(T* x, int64_t n, FusedActivation activation, double alpha) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    for (int64_t i = 0; i < n; ++i) x[i] = activate(activation, x[i], alpha);
  } else {
    float buf[256];
    for (int64_t i = 0; i < n; i += 256) {
      const int64_t len = std::min<int64_t>(256, n - i);
      for (int64_t j = 0; j < len; ++j) buf[j] = static_cast<float>(x[i + j]);
      own_activation_row(buf, len, activation, alpha);
      for (int64_t j = 0; j < len; ++j) x[i + j] = T(buf[j]);
    }
  }
}

UnaryOp table_op(FusedActivation activation) {
  switch (activation) {
    case FusedActivation::kRelu:
      return UnaryOp::kRelu;
    case FusedActivation::kRelu6:
      return UnaryOp::kRelu6;
    case FusedActivation::kElu:
      return UnaryOp::kElu;
    case FusedActivation::kTanh:
      return UnaryOp::kTanh;
    case FusedActivation::kSigmoid:
      return UnaryOp::kSigmoid;
    default:
      return UnaryOp::kCount;  // not in the tables
  }
}

void Epilogue::apply(void* c, int64_t ldc, int64_t rows, int64_t j0, int64_t cols) const {
  const ElementwiseTables& tables = elementwise_tables();
  const int d = static_cast<int>(dtype);
  const BinaryLoop add = tables.binary[static_cast<int>(BinaryOp::kAdd)][d].vv;
  const UnaryOp op = table_op(activation);
  const UnaryLoop act = op == UnaryOp::kCount ? nullptr : tables.unary[static_cast<int>(op)][d];
  const size_t size = dtype_size(dtype);
  const char* b = static_cast<const char*>(bias) + j0 * size;
  for (int64_t r = 0; r < rows; ++r) {
    void* row = static_cast<char*>(c) + r * ldc * size;
    add(row, b, row, cols);
    if (activation == FusedActivation::kNone) continue;
    if (act != nullptr) {
      act(row, row, cols);
      continue;
    }
    switch (dtype) {
      case DType::kFloat32:
        own_activation_row(static_cast<float*>(row), cols, activation, alpha);
        break;
      case DType::kFloat64:
        own_activation_row(static_cast<double*>(row), cols, activation, alpha);
        break;
      case DType::kFloat16:
        own_activation_row(static_cast<float16*>(row), cols, activation, alpha);
        break;
      case DType::kBFloat16:
        own_activation_row(static_cast<bfloat16*>(row), cols, activation, alpha);
        break;
      default:
        EMBER_DCHECK(false);
    }
  }
}

// ---------------------------------------------------------------- ember's blocked loops
//
// Note [Blocked matmul]
// B is packed once per distinct batch into panels of NR columns ([panel][k][NR], zero padded), so the
// micro-kernel reads it contiguously; A is read in place through (row, k) strides, which also covers
// transpose_a. A work item is (output batch, block of kRowBlock rows, group of panels); within it K is
// split into kKBlock slices so that the A rows and the B panel slice stay in L1/L2, and each MR x NR
// tile of C is accumulated in registers. Integers compute in the unsigned type so overflow wraps (Arith,
// kernels/arith_type.h).

constexpr int kMR = 4;
template <typename T>
constexpr int kNR = 64 / sizeof(T);  // two 256-bit vectors per row of the tile
constexpr int64_t kKBlock = 256;
constexpr int64_t kRowBlock = 64;

template <typename T>
struct GemmPlan {
  using U = Arith<T>;
  const T* a;
  const U* packed_b;  // [b batches][panels][K][NR]
  T* c;
  int64_t M, N, K, panels;
  int64_t a_si, a_sk;  // strides of element (i, k) of an A matrix
  const int64_t* a_map;
  const int64_t* b_map;
  int64_t row_blocks, panel_groups, panels_per_group;
  Epilogue epilogue;  // floats only
};

template <typename T>
[[gnu::always_inline]] inline void micro_tile(const GemmPlan<T>& g, const T* a, int64_t i, int64_t rows,
                                              int64_t k0, int64_t kc, const Arith<T>* bp, T* c, int64_t cols,
                                              bool accumulate) {
  using U = Arith<T>;
  constexpr int NR = kNR<T>;
  U acc[kMR][NR] = {};
  const T* arow[kMR];
  for (int r = 0; r < kMR; ++r) arow[r] = a + (i + std::min<int64_t>(r, rows - 1)) * g.a_si + k0 * g.a_sk;
  for (int64_t k = 0; k < kc; ++k) {
    const U* bk = bp + k * NR;
#pragma GCC unroll 4
    for (int r = 0; r < kMR; ++r) {
      const U av = static_cast<U>(arow[r][k * g.a_sk]);
#pragma GCC unroll 16
      for (int j = 0; j < NR; ++j) acc[r][j] += av * bk[j];
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    T* crow = c + (i + r) * g.N;
    for (int64_t j = 0; j < cols; ++j) {
      U v = accumulate ? static_cast<U>(static_cast<U>(crow[j]) + acc[r][j]) : acc[r][j];
      crow[j] = static_cast<T>(v);
    }
  }
}

template <typename T>
[[gnu::always_inline]] inline void gemm_items(const GemmPlan<T>& g, int64_t begin, int64_t end) {
  constexpr int NR = kNR<T>;
  for (int64_t item = begin; item < end; ++item) {
    int64_t group = item % g.panel_groups;
    int64_t rb = (item / g.panel_groups) % g.row_blocks;
    int64_t ob = item / (g.panel_groups * g.row_blocks);
    const T* a = g.a + g.a_map[ob] * g.M * g.K;
    const Arith<T>* b = g.packed_b + g.b_map[ob] * g.panels * g.K * NR;
    T* c = g.c + ob * g.M * g.N;
    int64_t i0 = rb * kRowBlock, i1 = std::min(g.M, i0 + kRowBlock);
    int64_t p0 = group * g.panels_per_group, p1 = std::min(g.panels, p0 + g.panels_per_group);
    for (int64_t k0 = 0; k0 < g.K; k0 += kKBlock) {
      int64_t kc = std::min(kKBlock, g.K - k0);
      for (int64_t p = p0; p < p1; ++p) {
        const Arith<T>* bp = b + p * g.K * NR + k0 * NR;
        int64_t cols = std::min<int64_t>(NR, g.N - p * NR);
        for (int64_t i = i0; i < i1; i += kMR)
          micro_tile(g, a, i, std::min<int64_t>(kMR, i1 - i), k0, kc, bp, c + p * NR, cols, k0 > 0);
      }
    }
    if (g.epilogue) {  // the item's block of C is summed and still in cache
      const int64_t j0 = p0 * NR, j1 = std::min(g.N, p1 * NR);
      g.epilogue.apply(c + i0 * g.N + j0, g.N, i1 - i0, j0, j1 - j0);
    }
  }
}

// One copy per ISA level, picked by the loader (GCC function multi-versioning): kernels/ is otherwise
// built for baseline x86-64, where these loops would run on 128-bit vectors.
#define EMBER_GEMM_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
EMBER_GEMM_CLONES void gemm_items_f32(const GemmPlan<float>& g, int64_t b, int64_t e) { gemm_items(g, b, e); }
EMBER_GEMM_CLONES void gemm_items_f64(const GemmPlan<double>& g, int64_t b, int64_t e) {
  gemm_items(g, b, e);
}
EMBER_GEMM_CLONES void gemm_items_i32(const GemmPlan<int32_t>& g, int64_t b, int64_t e) {
  gemm_items(g, b, e);
}
EMBER_GEMM_CLONES void gemm_items_i64(const GemmPlan<int64_t>& g, int64_t b, int64_t e) {
  gemm_items(g, b, e);
}
#undef EMBER_GEMM_CLONES

void run_gemm_items(const GemmPlan<float>& g, int64_t b, int64_t e) { gemm_items_f32(g, b, e); }
void run_gemm_items(const GemmPlan<double>& g, int64_t b, int64_t e) { gemm_items_f64(g, b, e); }
void run_gemm_items(const GemmPlan<int32_t>& g, int64_t b, int64_t e) { gemm_items_i32(g, b, e); }
void run_gemm_items(const GemmPlan<int64_t>& g, int64_t b, int64_t e) { gemm_items_i64(g, b, e); }

template <typename T>
void blocked_matmul(const Problem& p, const T* a, const T* b, T* c, const Epilogue& epilogue = {}) {
  using U = Arith<T>;
  constexpr int NR = kNR<T>;
  auto a_map = batch_map(p, p.a_dims);
  auto b_map = batch_map(p, p.b_dims);
  int64_t b_batches = 1;
  for (int d = 0; d < p.nd - 2; ++d) b_batches *= p.b_dims[d];

  GemmPlan<T> g;
  g.M = p.M, g.N = p.N, g.K = p.K;
  g.panels = (p.N + NR - 1) / NR;
  // Element (i, k) of A and (k, j) of B, as stored.
  g.a_si = p.ta ? 1 : p.K, g.a_sk = p.ta ? p.M : 1;
  const int64_t b_sk = p.tb ? 1 : p.N, b_sj = p.tb ? p.K : 1;

  std::vector<U> packed(static_cast<size_t>(b_batches * g.panels * p.K * NR));
  parallel_for(b_batches * g.panels, p.K * NR, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      int64_t bb = item / g.panels, panel = item % g.panels;
      const T* src = b + bb * p.K * p.N;
      U* dst = packed.data() + item * p.K * NR;
      int64_t j0 = panel * NR, cols = std::min<int64_t>(NR, p.N - j0);
      for (int64_t k = 0; k < p.K; ++k) {
        for (int64_t j = 0; j < cols; ++j) dst[k * NR + j] = static_cast<U>(src[k * b_sk + (j0 + j) * b_sj]);
        for (int64_t j = cols; j < NR; ++j) dst[k * NR + j] = U(0);
      }
    }
  });

  g.a = a, g.packed_b = packed.data(), g.c = c;
  g.epilogue = epilogue;
  g.a_map = a_map.data(), g.b_map = b_map.data();
  g.row_blocks = (p.M + kRowBlock - 1) / kRowBlock;
  // Split the columns too when batches x row blocks cannot keep every thread busy (matrix-vector).
  int64_t coarse = p.batch * g.row_blocks, want = 4 * intra_op_threads();
  g.panel_groups = coarse >= want ? 1 : std::min(g.panels, (want + coarse - 1) / coarse);
  g.panels_per_group = (g.panels + g.panel_groups - 1) / g.panel_groups;
  g.panel_groups = (g.panels + g.panels_per_group - 1) / g.panels_per_group;
  int64_t items = coarse * g.panel_groups;
  int64_t cost = std::min(kRowBlock, p.M) * g.panels_per_group * NR * p.K / 4;
  parallel_for(items, cost, [&](int64_t begin, int64_t end) { run_gemm_items(g, begin, end); });
  g_last_impl = "ember:blocked";
}

// ---------------------------------------------------------------- oneDNN

struct Primitive {
  dnnl::matmul matmul;
  dnnl::memory::desc src, weights, dst, scratchpad;
  dnnl::memory::desc bias;  // a fused product's (Note [MatMul epilogues])
  std::string impl;
};

// Note [MatMul primitive cache]
// Creating a oneDNN primitive costs tens of microseconds (and a JIT compile the first time), so
// primitives are kept per key: dtype, thread count (oneDNN fixes its work split when it creates the
// primitive), transposes and the padded dims of both operands. The cache is a bounded LRU guarded by a
// mutex; entries are shared_ptrs so an eviction never frees a primitive another thread is running.
// A null entry records that oneDNN has no (non-reference) implementation, so the caller falls back.
using Key = std::vector<int64_t>;
struct KeyHash {
  size_t operator()(const Key& k) const {
    size_t h = 1469598103934665603ull;
    for (int64_t v : k) h = (h ^ static_cast<size_t>(v)) * 1099511628211ull;
    return h;
  }
};

class PrimitiveCache {
 public:
  std::shared_ptr<const Primitive> find(const Key& key, bool* found) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    *found = it != map_.end();
    if (!*found) return nullptr;
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->second;
  }
  std::shared_ptr<const Primitive> insert(const Key& key, std::shared_ptr<const Primitive> value) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    if (it != map_.end()) return it->second->second;  // another thread made it meanwhile
    lru_.emplace_front(key, std::move(value));
    map_.emplace(key, lru_.begin());
    std::shared_ptr<const Primitive> result = lru_.front().second;
    evict();
    return result;
  }
  size_t capacity() {
    std::lock_guard<std::mutex> lock(mu_);
    return capacity_;
  }
  void set_capacity(size_t capacity) {
    std::lock_guard<std::mutex> lock(mu_);
    capacity_ = capacity;
    evict();
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    return lru_.size();
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
  size_t capacity_ = 256;
  std::list<std::pair<Key, std::shared_ptr<const Primitive>>> lru_;
  std::unordered_map<Key, decltype(lru_)::iterator, KeyHash> map_;
};

PrimitiveCache& cache() {
  static PrimitiveCache* c = new PrimitiveCache();  // never destroyed: primitives may outlive statics
  return *c;
}

// Row-major strides of a stored matrix stack, then the last two swapped when it is used transposed.
dnnl::memory::desc operand_desc(const int64_t* dims, int nd, bool transposed, dnnl::memory::data_type dt) {
  dnnl::memory::dims logical(dims, dims + nd), strides(nd);
  int64_t s = 1;
  for (int i = nd - 1; i >= 0; --i) strides[i] = s, s *= dims[i];
  if (transposed) {
    std::swap(logical[nd - 1], logical[nd - 2]);
    std::swap(strides[nd - 1], strides[nd - 2]);
  }
  return dnnl::memory::desc(logical, dt, strides);
}

// The eltwise post-op computing `activation` (Note [MatMul epilogues]).
std::shared_ptr<const Primitive> make_primitive(const Problem& p, dnnl::memory::data_type dt,
                                                const Epilogue& epilogue) {
  try {
    auto src = operand_desc(p.a_dims, p.nd, p.ta, dt);
    auto weights = operand_desc(p.b_dims, p.nd, p.tb, dt);
    dnnl::memory::dims out_dims(p.out_dims, p.out_dims + p.nd);
    dnnl::memory::dims out_strides(p.nd);
    int64_t s = 1;
    for (int i = p.nd - 1; i >= 0; --i) out_strides[i] = s, s *= p.out_dims[i];
    dnnl::memory::desc dst(out_dims, dt, out_strides);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // one scratchpad per calling thread
    dnnl::memory::desc bias;  // [1, ..., 1, N], broadcast over the rows and batches
    if (epilogue) {
      dnnl::memory::dims bias_dims(p.nd, 1);
      bias_dims[p.nd - 1] = p.N;
      dnnl::memory::dims bias_strides(p.nd, p.N);
      bias_strides[p.nd - 1] = 1;
      bias = dnnl::memory::desc(bias_dims, dt, bias_strides);
      dnnl::post_ops ops;
      append_post_op(epilogue.activation, static_cast<float>(epilogue.alpha), ops);
      attr.set_post_ops(ops);
    }
    dnnl::matmul::primitive_desc pd(
        epilogue ? dnnl::matmul::desc(src, weights, bias, dst) : dnnl::matmul::desc(src, weights, dst), attr,
        onednn::engine());
    std::string impl = pd.impl_info_str();
    if (impl.rfind("ref", 0) == 0) return nullptr;  // reference loops: ours (or the f32 path) are faster
    auto prim = std::make_shared<Primitive>();
    prim->matmul = dnnl::matmul(pd);
    prim->src = src, prim->weights = weights, prim->dst = dst, prim->bias = bias;
    prim->scratchpad = pd.scratchpad_desc();
    prim->impl = impl;
    return prim;
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

// Runs a oneDNN matmul primitive; false if oneDNN has no usable implementation (the caller falls back).
bool onednn_matmul(const Problem& p, dnnl::memory::data_type dt, const void* a, const void* b, void* c,
                   const Epilogue& epilogue = {}) {
  const int threads = onednn::set_threads(p.batch * p.M * p.N * p.K);

  Key key;
  key.reserve(6 + 2 * p.nd);
  key.insert(key.end(), {static_cast<int64_t>(dt), threads, p.ta, p.tb, p.nd});
  if (epilogue) {  // the activation and its slope's bits; a plain product's key has none of these
    float alpha = static_cast<float>(epilogue.alpha);
    int32_t alpha_bits;
    std::memcpy(&alpha_bits, &alpha, sizeof(alpha));
    key.insert(key.end(), {-1 - static_cast<int64_t>(epilogue.activation), alpha_bits});
  }
  key.insert(key.end(), p.a_dims, p.a_dims + p.nd);
  key.insert(key.end(), p.b_dims, p.b_dims + p.nd);
  bool found;
  std::shared_ptr<const Primitive> prim = cache().find(key, &found);
  if (!found) prim = cache().insert(key, make_primitive(p, dt, epilogue));
  if (!prim) return false;

  thread_local dnnl::stream stream(onednn::engine());
  thread_local std::unique_ptr<char, void (*)(void*)> scratch(nullptr, std::free);
  thread_local size_t scratch_bytes = 0;
  size_t need = prim->scratchpad.get_size();
  if (need > scratch_bytes) {
    size_t bytes = (need + 4095) / 4096 * 4096;
    scratch.reset(static_cast<char*>(std::aligned_alloc(4096, bytes)));
    if (!scratch) return false;
    scratch_bytes = bytes;
  }
  dnnl::engine& engine = onednn::engine();
  dnnl::memory src(prim->src, engine, const_cast<void*>(a));
  dnnl::memory weights(prim->weights, engine, const_cast<void*>(b));
  dnnl::memory dst(prim->dst, engine, c);
  dnnl::memory scratchpad(prim->scratchpad, engine, scratch.get());
  std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, src},
                                                {DNNL_ARG_WEIGHTS, weights},
                                                {DNNL_ARG_DST, dst},
                                                {DNNL_ARG_SCRATCHPAD, scratchpad}};
  if (epilogue) args[DNNL_ARG_BIAS] = dnnl::memory(prim->bias, engine, const_cast<void*>(epilogue.bias));
  prim->matmul.execute(stream, args);
  stream.wait();
  g_last_impl = prim->impl;
  return true;
}

// Below this many multiply-adds a primitive call (memory objects, dispatch) costs more than the work.
constexpr int64_t kTinyMatMul = 16 * 16 * 16;

bool tiny(const Problem& p) { return p.batch * p.M * p.N * p.K <= kTinyMatMul; }
constexpr int64_t kSmallSgemm = 1 << 16;  // multiply-adds: below this sgemm runs on the calling thread

// Note [sgemm for unbatched float32]
// A float32 product that is one matrix product — b has no batch, and a's batch dims fold into its rows
// (contiguous and not transposed) — goes to dnnl_sgemm, as TensorFlow's MatMul does. Measured on the
// 2-core Zen 5 this project targets (one thread): the matmul primitive (brgemm) reaches 0.88-0.95 of
// sgemm at 1024^3-2048^3 and 0.66 at 32x4096x1024, while it wins by ~10% only on tall, narrow products
// (4096x512x512). Batched and broadcast products keep the cached primitive.
bool sgemm_matmul(const Problem& p, const float* a, const float* b, float* c) {
  for (int d = 0; d < p.nd - 2; ++d)
    if (p.b_dims[d] != 1 || (p.ta && p.a_dims[d] != 1)) return false;
  const int64_t rows = p.batch * p.M;  // b has no batch, so the output batch is a's
  // A product below the grain (core/parallel.h) runs on this thread alone: waking the OpenMP team costs
  // more than it saves (a 200x3x10 sgemm took ~2 us with two threads, the cost that dominated L2HMC's tiny
  // layers), and beside another busy process a region waits for a descheduled worker.
  onednn::set_threads(rows * p.N * p.K);
  dnnl_status_t status = dnnl_sgemm(p.ta ? 'T' : 'N', p.tb ? 'T' : 'N', rows, p.N, p.K, 1.0f, a,
                                    p.ta ? p.M : p.K, b, p.tb ? p.K : p.N, 0.0f, c, p.N);
  if (status != dnnl_success) return false;
  g_last_impl = "dnnl_sgemm";
  return true;
}

// ---------------------------------------------------------------- small products
//
// Note [Small GEMM]
// Products with few output columns (N <= 32 float32, 16 float64) and a short inner dim run on the loops
// of kernels/isa/small_gemm_isa.cc: each output row is one or two vectors accumulated from broadcasts of
// A times B's rows, with nothing to set up but a padded copy of B. Library calls cost more than such
// products. Measured on the 2-core Zen 4 (one thread, AVX-512, best of many runs), ember vs dnnl_sgemm:
// [200,3]x[3,10] 270 vs 350 ns, [200,10]x[10,2] 480 vs 610, [200,2]x[2,2] 240 vs 290, [200,10]x[10,10]
// 480 vs 530, transpose_a [200,3]^T x [200,10] 250 vs 400; [200,64]x[64,16] and [200,256]x[256,8] still
// ~5% ahead, [1000,32]x[32,16] 4% and [4000,16]x[16,16] 15% behind. So float32 comes here while the
// product is small enough for sgemm to run on one thread (kSmallSgemm multiply-adds per matrix); a
// batched product comes here per matrix (5 x [200,10]x[10,10]: 2.5 us vs 10 us on the primitive).
// float64 always does (its alternative, the blocked loops, is 2-5x slower). K is limited for the packed
// copy of B (kSmallGemmMaxK); transpose_a's long K is a sum over rows of A and may be longer.

constexpr int64_t kSmallGemmMaxK = 256;
constexpr int64_t kSmallGemmMaxRowsAnySize = 64;
constexpr int64_t kSmallGemmMaxKTransposedA = 4096;

enum class Isa { kBaseline, kAvx2, kAvx512 };

Isa host_isa() {
  static const Isa isa = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
      return Isa::kAvx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::kAvx2;
    return Isa::kBaseline;
  }();
  return isa;
}

const SmallGemmTables& small_gemm_tables() {
  static const SmallGemmTables tables = [] {
    SmallGemmTables t;
    switch (host_isa()) {
      case Isa::kAvx512:
        avx512::fill_small_gemm_tables(t);
        break;
      case Isa::kAvx2:
        avx2::fill_small_gemm_tables(t);
        break;
      case Isa::kBaseline:
        baseline::fill_small_gemm_tables(t);
        break;
    }
    return t;
  }();
  return tables;
}

auto small_gemm_fn(float*) { return small_gemm_tables().f32; }
auto small_gemm_fn(double*) { return small_gemm_tables().f64; }

template <typename T>
bool small_matmul(const Problem& p, const T* a, const T* b, T* c, const Epilogue& epilogue = {}) {
  if (p.K > (p.ta ? kSmallGemmMaxKTransposedA : kSmallGemmMaxK)) return false;
  // float32: only where sgemm too would run on one thread; past that its packed panels win (by ~15% at
  // [4000,16]x[16,16]) and it splits the rows over threads. float64's alternative is the blocked loops.
  bool b_batched = false;
  for (int d = 0; d < p.nd - 2; ++d) b_batched |= p.b_dims[d] != 1;
  const bool fold = !b_batched && !p.ta;  // b has no batch: a's batch dims fold into its rows
  const int64_t rows = fold ? p.batch * p.M : p.M;
  // A short product (a served batch) stays here whatever its size: [32,256]x[256,10] took 2.6 us against
  // sgemm's 3.7 (and it keeps sgemm's first-call code generation away from a served MLP).
  if (std::is_same_v<T, float> && rows * p.N * p.K > kSmallSgemm && rows > kSmallGemmMaxRowsAnySize)
    return false;
  auto fn = small_gemm_fn(static_cast<T*>(nullptr));
  SmallGemm<T> g;
  g.N = p.N, g.K = p.K, g.tb = p.tb;
  g.a_si = p.ta ? 1 : p.K, g.a_sk = p.ta ? p.M : 1;
  if (!fn(g, 0, 0)) return false;  // outside this ISA's loops: N too wide, or a transposed B too long
  // Cycles per output row, roughly: one FMA per k and vector of the row.
  const int64_t row_cost = p.K * ((p.N + 15) / 16) + 8;
  // Rows [begin, end) of one matrix; a fused product finishes each 16 rows while they are in L1.
  auto rows_of = [&](const SmallGemm<T>& m, int64_t begin, int64_t end) {
    if (!epilogue) return (void)fn(m, begin, end);
    constexpr int64_t kEpilogueRows = 16;
    for (int64_t r = begin; r < end; r += kEpilogueRows) {
      const int64_t r1 = std::min(end, r + kEpilogueRows);
      fn(m, r, r1);
      epilogue.apply(m.c + r * p.N, p.N, r1 - r, 0, p.N);
    }
  };
  if (fold) {
    g.a = a, g.b = b, g.c = c, g.M = rows;
    parallel_for(g.M, row_cost, [&](int64_t begin, int64_t end) { rows_of(g, begin, end); });
  } else {
    auto a_map = batch_map(p, p.a_dims);
    auto b_map = batch_map(p, p.b_dims);
    g.M = p.M;
    parallel_for(p.batch, p.M * row_cost, [&](int64_t begin, int64_t end) {
      SmallGemm<T> gb = g;
      for (int64_t ob = begin; ob < end; ++ob) {
        gb.a = a + a_map[ob] * p.M * p.K, gb.b = b + b_map[ob] * p.K * p.N, gb.c = c + ob * p.M * p.N;
        rows_of(gb, 0, p.M);
      }
    });
  }
  g_last_impl = "ember:small_gemm";
  return true;
}

// ---------------------------------------------------------------- register tiles
//
// Note [Register tiles]
// An unbatched float32 product of mid size, neither operand transposed, runs on ember's own register
// tiles (kernels/matmul_tiles.h) rather than dnnl_sgemm: sgemm generates its kernels at the first call of
// a process (30-60 ms, all of a served MLP's first call in bench/saved_model.py), the tiles are compiled
// ahead of time. Each element of C is one sum over k in order, computed by one tile, so the result
// depends on the shape only, never on the thread count or on what ran before.
// Taken: at least kTilesMinRows rows, more than kTilesMinColumns columns, K <= kTilesMaxK and at most
// kTilesMaxMacs multiply-adds, where the tiles were not slower than a warm sgemm. Measured on the 2-core
// Zen 4 (AVX-512, one thread, CPU time of the thread, best of 300, while the machine was busy: tiles vs
// sgemm, us): [32,64]x[64,256] 9.3 vs 10.0, [32,256]x[256,256] 36.0 vs 37.2, [32,192]x[192,512] (an LSTM's
// gates) 54.3 vs 54.7, [32,512]x[512,192] 53.8 vs 54.4, [128,784]x[784,256] 438 vs 452, [256,256]x
// [256,256] 289 vs 295, [8,256]x[256,256] 9.1 vs 9.7, about 115 GFLOP/s each. Left to sgemm: one row
// ([1,256]x[256,256] 4.4 vs 2.9), a transposed B (packed, 1.14-1.28x sgemm's time), [512,512]x[512,512]
// (1.03x), and 32 columns or fewer (16-lane tiles half empty: [32,256]x[256,10] 3.9 vs 3.7; the small loops
// take the short ones, 2.6).

constexpr int64_t kTilesMinRows = 8;
constexpr int64_t kTilesMinColumns = 32;  // narrower: the small loops, or sgemm
constexpr int64_t kTilesMaxK = 2048;
constexpr int64_t kTilesMaxMacs = int64_t{1} << 25;

const TileGemmTable& tile_table() {
  static const TileGemmTable table = [] {
    TileGemmTable t;
    switch (host_isa()) {
      case Isa::kAvx512:
        avx512::fill_matmul_tile_tables(t);
        break;
      case Isa::kAvx2:
        avx2::fill_matmul_tile_tables(t);
        break;
      case Isa::kBaseline:
        baseline::fill_matmul_tile_tables(t);
        break;
    }
    return t;
  }();
  return table;
}

bool tile_matmul(const Problem& p, const float* a, const float* b, float* c, const Epilogue& epilogue) {
  if (p.ta || p.tb) return false;
  for (int d = 0; d < p.nd - 2; ++d)
    if (p.b_dims[d] != 1) return false;
  const int64_t M = p.batch * p.M, N = p.N, K = p.K;  // b has no batch: a's batch dims fold into rows
  if (M < kTilesMinRows || N <= kTilesMinColumns || K > kTilesMaxK || M * N * K > kTilesMaxMacs) return false;
  const TileGemmTable& t = tile_table();
  const int64_t MR = t.tile_rows, NR = t.panel_width;
  const int64_t row_tiles = (M + MR - 1) / MR, panels = (N + NR - 1) / NR, in_place = N / NR;
  // The last, partial panel of B, zero padded to NR columns.
  std::unique_ptr<float[]> b_rest;
  if (in_place < panels) {
    b_rest.reset(new (std::nothrow) float[K * NR]);
    if (!b_rest) return false;  // sgemm may still find the memory it needs
    const int64_t j0 = in_place * NR, cols = N - j0;
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t j = 0; j < cols; ++j) b_rest[k * NR + j] = b[k * N + j0 + j];
      for (int64_t j = cols; j < NR; ++j) b_rest[k * NR + j] = 0.0f;
    }
  }
  TileGemm g;
  g.a = a, g.b = b, g.ldb = N, g.in_place_panels = in_place, g.b_rest = b_rest.get();
  g.c = c, g.M = M, g.N = N, g.K = K;
  parallel_for(row_tiles * panels, MR * NR * K / 4, [&](int64_t begin, int64_t end) {
    if (!epilogue) return t.f32(g, begin, end);
    for (int64_t tile = begin; tile < end; ++tile) {  // each tile finished while it is in L1
      t.f32(g, tile, tile + 1);
      const int64_t i0 = tile % row_tiles * MR, j0 = tile / row_tiles * NR;
      epilogue.apply(c + i0 * N + j0, N, std::min(MR, M - i0), j0, std::min(NR, N - j0));
    }
  });
  g_last_impl = "ember:tiles";
  return true;
}

void float_matmul(const Problem& p, const float* a, const float* b, float* c, const Epilogue& epilogue = {}) {
  if (small_matmul(p, a, b, c, epilogue)) return;
  if (tiny(p)) return blocked_matmul(p, a, b, c, epilogue);
  if (tile_matmul(p, a, b, c, epilogue)) return;
  if (!epilogue && sgemm_matmul(p, a, b, c)) return;  // sgemm has no epilogue: the primitive has
  if (!onednn_matmul(p, dnnl::memory::data_type::f32, a, b, c, epilogue))
    blocked_matmul(p, a, b, c, epilogue);
}

// 16-bit floats without a fast oneDNN kernel: convert to float32, multiply, round back.
template <typename H>
Status via_float(const Problem& p, const TensorImpl& a, const TensorImpl& b, TensorImpl& out,
                 const MatMulEpilogue* fused = nullptr) {
  auto fa = TensorImpl::allocate(DType::kFloat32, a.shape());
  auto fb = TensorImpl::allocate(DType::kFloat32, b.shape());
  auto fc = TensorImpl::allocate(DType::kFloat32, out.shape());
  if (!fa.ok()) return fa.status();
  if (!fb.ok()) return fb.status();
  if (!fc.ok()) return fc.status();
  auto widen = [](const TensorImpl& src, TensorImpl& dst) {
    const H* s = src.data<H>();
    float* d = dst.mutable_data<float>();
    parallel_for(src.num_elements(), 2, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) d[i] = static_cast<float>(s[i]);
    });
  };
  widen(a, **fa);
  widen(b, **fb);
  Epilogue epilogue;
  TensorRef float_bias;
  if (fused != nullptr) {
    auto fbias = TensorImpl::allocate(DType::kFloat32, fused->bias->shape());
    if (!fbias.ok()) return fbias.status();
    widen(*fused->bias, **fbias);
    float_bias = std::move(*fbias);
    epilogue =
        Epilogue{float_bias->data<float>(), fused->activation, fused->leakyrelu_alpha, DType::kFloat32};
  }
  float_matmul(p, (*fa)->data<float>(), (*fb)->data<float>(), (*fc)->mutable_data<float>(), epilogue);
  const float* s = (*fc)->data<float>();
  H* d = out.mutable_data<H>();
  parallel_for(out.num_elements(), 2, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) d[i] = H(s[i]);
  });
  g_last_impl = "f32 via " + g_last_impl;
  return Status::OK();
}

}  // namespace

namespace {

// A plain product (fused == nullptr) or a fused one (Note [MatMul epilogues]).
Status run_matmul(const TensorImpl& a, const TensorImpl& b, bool transpose_a, bool transpose_b,
                  const MatMulEpilogue* fused, TensorImpl& out) {
  if (a.rank() < 2 || b.rank() < 2 || out.rank() != std::max(a.rank(), b.rank()))
    return invalid_argument("matmul kernel: bad ranks ", a.shape().to_string(), ", ", b.shape().to_string(),
                            " -> ", out.shape().to_string());
  Problem p = describe(a, b, transpose_a, transpose_b, out);
  if (out.num_elements() == 0) return Status::OK();
  Epilogue epilogue;
  if (fused != nullptr)
    epilogue = Epilogue{fused->bias->raw_data(), fused->activation, fused->leakyrelu_alpha, out.dtype()};
  if (p.K == 0) {
    std::memset(out.mutable_raw_data(), 0, out.nbytes());  // an empty sum is zero
    if (epilogue) epilogue.apply(out.mutable_raw_data(), p.N, out.num_elements() / p.N, 0, p.N);
    return Status::OK();
  }
  switch (out.dtype()) {
    case DType::kFloat32:
      float_matmul(p, a.data<float>(), b.data<float>(), out.mutable_data<float>(), epilogue);
      return Status::OK();
    case DType::kBFloat16:
      if (!tiny(p) && onednn_matmul(p, dnnl::memory::data_type::bf16, a.raw_data(), b.raw_data(),
                                    out.mutable_raw_data(), epilogue))
        return Status::OK();
      return via_float<bfloat16>(p, a, b, out, fused);
    case DType::kFloat16:
      return via_float<float16>(p, a, b, out, fused);
    case DType::kFloat64:
      if (small_matmul(p, a.data<double>(), b.data<double>(), out.mutable_data<double>(), epilogue))
        return Status::OK();
      blocked_matmul(p, a.data<double>(), b.data<double>(), out.mutable_data<double>(), epilogue);
      return Status::OK();
    case DType::kInt32:
      if (epilogue) break;
      blocked_matmul(p, a.data<int32_t>(), b.data<int32_t>(), out.mutable_data<int32_t>());
      return Status::OK();
    case DType::kInt64:
      if (epilogue) break;
      blocked_matmul(p, a.data<int64_t>(), b.data<int64_t>(), out.mutable_data<int64_t>());
      return Status::OK();
    default:
      break;
  }
  return make_error(Code::kUnimplemented,
                    fused ? "no fused matmul kernel for dtype " : "no matmul kernel for dtype ",
                    dtype_name(out.dtype()));
}

}  // namespace

Status matmul(const TensorImpl& a, const TensorImpl& b, bool transpose_a, bool transpose_b, TensorImpl& out) {
  return run_matmul(a, b, transpose_a, transpose_b, nullptr, out);
}

Status matmul(const TensorImpl& a, const TensorImpl& b, bool transpose_a, bool transpose_b,
              const MatMulEpilogue& epilogue, TensorImpl& out) {
  EMBER_DCHECK(epilogue.bias != nullptr && epilogue.bias->dtype() == out.dtype());
  return run_matmul(a, b, transpose_a, transpose_b, &epilogue, out);
}

size_t matmul_cache_size() { return cache().size(); }
size_t matmul_cache_capacity() { return cache().capacity(); }
void set_matmul_cache_capacity(size_t capacity) { cache().set_capacity(capacity); }
void matmul_cache_clear() { cache().clear(); }
std::string matmul_last_impl() { return g_last_impl; }

}  // namespace ember::kernels
