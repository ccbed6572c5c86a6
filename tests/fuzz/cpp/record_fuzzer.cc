// libFuzzer target for the TFRecord reader (state/record_io.h) and what reads through it: an input is
// [compression byte][file bytes]; the bytes are written to a file and every record read (uncompressed,
// ZLIB or GZIP by the first byte's value mod 3), then parsed as a TensorBoard Event as event readers do.
// Every problem must be a Status (DataLoss for damage), never a crash, a hang or an allocation larger than
// the file: a corrupt length must not be trusted.
//
// Build: cmake -S . -B build/fuzz -DCMAKE_CXX_COMPILER=clang++ -DEMBER_BUILD_FUZZERS=ON
//        -DEMBER_BUILD_PYTHON=OFF -DEMBER_BUILD_EXAMPLES=OFF && ninja -C build/fuzz record_fuzzer
// Run:   build/fuzz/record_fuzzer -max_total_time=60 tests/fuzz/cpp/corpus/record
// The driver tests/fuzz/test_tfrecord_fuzz.py runs it under pytest.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "ember/event.pb.h"
#include "ember/state/record_io.h"

namespace {

using namespace ember;

const std::string& path() {
  static const std::string p = [] {
    const char* dir = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    return std::string(dir) + "/ember_record_fuzz_" + std::to_string(::getpid());
  }();
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  FILE* f = std::fopen(path().c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data + 1, 1, size - 1, f);
  std::fclose(f);
  record_io::RecordOptions options;
  options.compression = static_cast<record_io::Compression>(data[0] % 3);
  options.buffer_size = 1 + data[0] / 3 * 97;  // small buffers cross record boundaries
  auto reader = record_io::RecordReader::open(path(), options);
  if (!reader.ok()) return 0;
  std::string record;
  for (int i = 0; i < 100000; ++i) {
    Status s = (*reader)->read(&record);
    if (!s.ok()) {
      if (s.code() != Code::kOutOfRange && s.code() != Code::kDataLoss) __builtin_trap();
      break;
    }
    proto::Event event;
    (void)event.ParseFromString(record);
  }
  return 0;
}
