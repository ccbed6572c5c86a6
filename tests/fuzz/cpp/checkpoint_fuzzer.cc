// libFuzzer target for the checkpoint readers (state/tensor_bundle.h and the TrackableObjectGraph): an
// input is a checkpoint in one buffer, [uint32 index size][index bytes][data shard bytes]; it is written
// to two files, opened, every tensor read (numeric and string), and the object graph, when present,
// parsed and walked as a restore walks it. Every problem must be a Status, never a crash, a hang or an
// allocation larger than the files.
//
// Build: cmake -S . -B build/fuzz -DCMAKE_CXX_COMPILER=clang++ -DEMBER_BUILD_FUZZERS=ON
//        -DEMBER_BUILD_PYTHON=OFF -DEMBER_BUILD_EXAMPLES=OFF && ninja -C build/fuzz checkpoint_fuzzer
// Run:   build/fuzz/checkpoint_fuzzer -max_total_time=60 tests/fuzz/cpp/corpus/checkpoint
// The driver tests/fuzz/test_checkpoint_fuzz.py runs it under pytest.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ember/state/object_graph.h"
#include "ember/state/tensor_bundle.h"

namespace {

using namespace ember;

const std::string& prefix() {
  static const std::string p = [] {
    const char* dir = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    return std::string(dir) + "/ember_checkpoint_fuzz_" + std::to_string(::getpid());
  }();
  return p;
}

bool write_file(const std::string& path, const uint8_t* data, size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  bool ok = std::fwrite(data, 1, size, f) == size;
  return std::fclose(f) == 0 && ok;
}

// Walks the object graph from node 0 by child references, as a restore matches it, each node once.
void walk(const proto::TrackableObjectGraph& graph, const BundleReader& reader) {
  const int n = graph.nodes_size();
  if (n == 0) return;
  std::vector<bool> seen(static_cast<size_t>(n));
  std::vector<int> queue{0};
  seen[0] = true;
  while (!queue.empty()) {
    int id = queue.back();
    queue.pop_back();
    const auto& node = graph.nodes(id);
    for (const auto& attribute : node.attributes())
      if (reader.contains(attribute.checkpoint_key())) (void)reader.read(attribute.checkpoint_key());
    for (const auto& child : node.children()) {
      if (child.node_id() < 0 || child.node_id() >= n || seen[child.node_id()]) continue;
      seen[child.node_id()] = true;
      queue.push_back(child.node_id());
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  uint32_t index_size;
  std::memcpy(&index_size, data, 4);
  data += 4;
  size -= 4;
  if (index_size > size) index_size = static_cast<uint32_t>(size);
  if (!write_file(bundle_index_path(prefix()), data, index_size) ||
      !write_file(bundle_data_path(prefix(), 0, 1), data + index_size, size - index_size))
    return 0;
  auto reader = BundleReader::open(prefix());
  if (!reader.ok()) return 0;
  for (const std::string& key : reader->keys()) {
    auto dtype = reader->tf_dtype(key);
    if (dtype.ok() && *dtype == 7)
      (void)reader->read_strings(key);
    else
      (void)reader->read(key);
    (void)reader->dims(key);
  }
  auto graph = read_object_graph(*reader);
  if (graph.ok()) {
    (void)variable_keys(*graph);
    walk(*graph, *reader);
  }
  return 0;
}
