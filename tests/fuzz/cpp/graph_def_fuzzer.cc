// libFuzzer target for the GraphDef reader (graph/graph_def.h and tensor_proto.h, on libprotobuf): the bytes
// are parsed, imported with two bound variables, and, when they import, the graph is compiled (every
// pass on) and run on small arguments. Crashes hide past parsing, in shape inference, the passes and the
// kernels, so the target goes as far as a graph from a file can go.
//
// Build: cmake -S . -B build/fuzz -DCMAKE_CXX_COMPILER=clang++ -DEMBER_BUILD_FUZZERS=ON
//        -DEMBER_BUILD_PYTHON=OFF -DEMBER_BUILD_EXAMPLES=OFF && ninja -C build/fuzz graph_def_fuzzer
// Run:   build/fuzz/graph_def_fuzzer -max_total_time=60 tests/fuzz/cpp/corpus/graph_def
// The driver tests/fuzz/test_graph_def_fuzz.py runs it under pytest.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "ember/core/allocator.h"
#include "ember/core/resource.h"
#include "ember/graph/graph_def.h"
#include "ember/ops/graph_ops.h"
#include "ember/runtime/executor.h"

namespace {

using namespace ember;

// Arguments larger than this are not built: the target looks for crashes, not for slow allocations.
constexpr int64_t kMaxArgElements = 1 << 12;
constexpr int32_t kMaxNodes = 256;

const VariableBindings& bindings() {
  // The seeds' resource Placeholders are named "v" (float32 [2]) and "w" (int32 scalar).
  static const VariableBindings* b = [] {
    auto* out = new VariableBindings;
    auto v = TensorImpl::allocate(DType::kFloat32, Shape({2}));
    std::memset((*v)->mutable_raw_data(), 0, (*v)->nbytes());
    auto w = TensorImpl::allocate(DType::kInt32, Shape({}));
    std::memset((*w)->mutable_raw_data(), 0, (*w)->nbytes());
    (*out)["v"] = ResourceManager::global().create_variable("v", *v);
    (*out)["w"] = ResourceManager::global().create_variable("w", *w);
    return out;
  }();
  return *b;
}

// A zero-filled argument for `spec`, unknown dimensions taken as 2; null when too large.
TensorRef make_arg(const TensorSpec& spec) {
  std::vector<int64_t> dims;
  if (spec.shape.rank_known()) {
    for (int i = 0; i < spec.shape.rank(); ++i) dims.push_back(spec.shape.dim(i) < 0 ? 2 : spec.shape.dim(i));
  }
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d > kMaxArgElements) return TensorRef();
    count *= d;
    if (count > kMaxArgElements) return TensorRef();
  }
  auto shape = Shape::from_dims(dims);
  if (!shape.ok()) return TensorRef();
  auto t = TensorImpl::allocate(spec.dtype, *shape);
  if (!t.ok()) return TensorRef();
  if ((*t)->nbytes() > 0) std::memset((*t)->mutable_raw_data(), 0, (*t)->nbytes());
  return std::move(t).value();
}

void run(std::unique_ptr<FunctionGraph> imported) {
  Graph& g = imported->graph;
  if (g.num_nodes() > kMaxNodes) return;
  std::vector<TensorRef> args;
  for (int32_t node : imported->args) {
    TensorRef arg = make_arg(g.node(node).outputs[0]);
    if (!arg) return;
    args.push_back(std::move(arg));
  }
  for (int32_t i = 0; i < g.num_nodes(); ++i) {
    const Node& n = g.node(i);
    for (int32_t k = 0; k < static_cast<int32_t>(n.outputs.size()); ++k)
      imported->results.push_back(ValueRef{i, k});
  }
  install_function_runtime();
  CompiledFunction compiled(std::shared_ptr<const FunctionGraph>(std::move(imported)));
  std::vector<TensorImpl*> impls;
  for (const TensorRef& a : args) impls.push_back(a.get());
  OutputList results;
  Status s = compiled.run({impls.data(), impls.size()}, results);
  if (!s.ok() && s.message().empty()) std::abort();  // every error must say what went wrong
}

}  // namespace

// A valid graph may ask for gigabytes (Pad by 2^28): ember must refuse that with ResourceExhausted, which
// the cap below makes reachable within libFuzzer's memory limit.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  set_max_allocation_bytes(size_t{256} << 20);
  set_max_loop_iterations(100000);  // a mutated loop condition may never turn false
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto imported = from_graph_def(bytes, bindings());
  if (!imported.ok()) {
    Code c = imported.status().code();
    if (imported.status().message().empty()) std::abort();
    if (c != Code::kDataLoss && c != Code::kInvalidArgument && c != Code::kNotFound &&
        c != Code::kResourceExhausted)
      std::abort();
    return 0;
  }
  (void)to_graph_def((*imported)->graph);  // a Status either way; never a crash
  run(std::move(imported).value());
  return 0;
}
