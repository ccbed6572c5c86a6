// libFuzzer target for the C++ SavedModel loader (state/saved_model.h): the bytes are a saved_model.pb
// (after one selector byte), loaded against a real variables checkpoint, and every signature that loads is
// called on small zero inputs. A saved_model.pb reaches the graph importer, the object graph, the checkpoint
// reader (by the keys the object graph names) and the executor, so the target goes as far as a file can.
//
// The checkpoints: EMBER_SAVED_MODEL_FUZZ_VARIABLES lists variables prefixes separated by ':' (the driver
// tests/fuzz/test_saved_model_fuzz.py writes TensorFlow SavedModels and passes theirs); the first byte of
// an input picks one (modulo their count), so each seed carries its own model's checkpoint.
//
// Build: cmake -S . -B build/fuzz -DCMAKE_CXX_COMPILER=clang++ -DEMBER_BUILD_FUZZERS=ON
//        -DEMBER_BUILD_PYTHON=OFF -DEMBER_BUILD_EXAMPLES=OFF && ninja -C build/fuzz saved_model_fuzzer
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "ember/core/allocator.h"
#include "ember/ops/graph_ops.h"
#include "ember/state/saved_model.h"

namespace {

using namespace ember;

constexpr int64_t kMaxArgElements = 1 << 12;

std::vector<std::string>& prefixes() {
  static std::vector<std::string> list;
  return list;
}

// A zero-filled input for `spec`, unknown dimensions (and an unknown rank) taken as 2; null when too large.
TensorRef zero_input(const SignatureTensor& spec) {
  std::vector<int64_t> dims;
  if (spec.unknown_rank) dims = {2};
  for (int64_t d : spec.shape) dims.push_back(d < 0 ? 2 : d);
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d > kMaxArgElements) return TensorRef();
    count *= d;
    if (count > kMaxArgElements) return TensorRef();
  }
  auto t = TensorImpl::allocate(spec.dtype, Shape(std::span<const int64_t>(dims)));
  if (!t.ok()) return TensorRef();
  if ((*t)->nbytes() > 0) std::memset((*t)->mutable_raw_data(), 0, (*t)->nbytes());
  return std::move(t).value();
}

void check(const Status& s) {
  if (!s.ok() && s.message().empty()) std::abort();  // every error must say what went wrong
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  set_max_allocation_bytes(size_t{256} << 20);
  set_max_loop_iterations(100000);  // a mutated loop condition may never turn false
  if (const char* list = std::getenv("EMBER_SAVED_MODEL_FUZZ_VARIABLES")) {
    std::string s = list;
    for (size_t start = 0; start <= s.size();) {
      size_t end = s.find(':', start);
      if (end == std::string::npos) end = s.size();
      if (end > start) prefixes().push_back(s.substr(start, end - start));
      start = end + 1;
    }
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string prefix = prefixes().empty() ? "" : prefixes()[data[0] % prefixes().size()];
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto model = LoadedSavedModel::load_from_bytes(bytes, prefix, {"serve"}, "fuzz");
  if (!model.ok()) {
    check(model.status());
    return 0;
  }
  for (const std::string& name : (*model)->signature_names()) {
    auto sig = (*model)->signature(name);
    if (!sig.ok()) std::abort();  // a listed signature is there
    std::map<std::string, TensorRef, std::less<>> inputs;
    bool built = true;
    for (const SignatureTensor& spec : (*sig)->inputs()) {
      TensorRef t = zero_input(spec);
      built = built && static_cast<bool>(t);
      inputs[spec.key] = std::move(t);
    }
    if (!built) continue;
    auto out = (*sig)->call(inputs);
    if (out.ok() && out->size() != (*sig)->outputs().size()) std::abort();
    if (!out.ok()) check(out.status());
  }
  return 0;
}
