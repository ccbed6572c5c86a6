// Serving a SavedModel from C++ with no Python in the process: load a directory that TensorFlow's (or
// ember's) tf.saved_model.save wrote, run one of its signatures, print the predictions.
//
//   example_serve_saved_model MODEL_DIR [--signature NAME] [--input KEY=FILE.npy]... [--batch N]
//
// Inputs not given as .npy files (float32/float64/int32/int64, little-endian, C order) are generated: a
// signature's unknown dimensions become --batch (default 2) and element i of a float input is
// sin(i + 1), of an integer input i % 7. Each output is printed as a line "output KEY DTYPE [SHAPE]" and
// a line of its values (%.9g), after "load_ms" and "first_call_ms" lines and a "python_in_process" line
// (whether any libpython is mapped into this process, from /proc/self/maps: it never should be). With no
// arguments it prints this usage and exits 0 (ctest runs every example without arguments).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ember/ember.h"

namespace {

using ember::DType;
using ember::Tensor;

[[noreturn]] void fail(const std::string& message) {
  std::cerr << "serve_saved_model: " << message << "\n";
  std::exit(1);
}

// A .npy file (format 1.0-3.0): magic, version, header length, a Python dict header, the data.
Tensor read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open '" + path + "'");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) fail("'" + path + "' is not a .npy file");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len, offset;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
    offset = 10;
  } else {
    if (bytes.size() < 12) fail("'" + path + "' is truncated");
    header_len = 0;
    for (int i = 3; i >= 0; --i) header_len = header_len << 8 | static_cast<unsigned char>(bytes[8 + i]);
    offset = 12;
  }
  if (offset + header_len > bytes.size()) fail("'" + path + "' is truncated");
  const std::string header = bytes.substr(offset, header_len);
  auto field = [&](const std::string& key) {
    size_t at = header.find("'" + key + "'");
    if (at == std::string::npos) fail("'" + path + "': no " + key + " in the header");
    return header.substr(header.find(':', at) + 1);
  };
  const std::string descr = field("descr");
  if (field("fortran_order").find("False") > 2) fail("'" + path + "' is in Fortran order");
  const std::string shape_text = field("shape");
  std::vector<int64_t> dims;
  std::stringstream ss(
      shape_text.substr(shape_text.find('(') + 1, shape_text.find(')') - shape_text.find('(') - 1));
  for (std::string item; std::getline(ss, item, ',');)
    if (item.find_first_of("0123456789") != std::string::npos) dims.push_back(std::stoll(item));
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  const char* data = bytes.data() + offset + header_len;
  const size_t available = bytes.size() - offset - header_len;
  auto take = [&]<typename T>(T) {
    if (available < count * sizeof(T)) fail("'" + path + "' is truncated");
    std::vector<T> values(count);
    std::memcpy(values.data(), data, count * sizeof(T));
    return Tensor::from_vector<T>(values, ember::Shape(std::span<const int64_t>(dims)));
  };
  if (descr.find("<f4") != std::string::npos) return take(float{});
  if (descr.find("<f8") != std::string::npos) return take(double{});
  if (descr.find("<i4") != std::string::npos) return take(int32_t{});
  if (descr.find("<i8") != std::string::npos) return take(int64_t{});
  fail("'" + path + "' holds " + descr + "; this example reads <f4, <f8, <i4 and <i8");
}

Tensor generated(const ember::SignatureTensor& spec, int64_t batch) {
  std::vector<int64_t> dims;
  for (int64_t d : spec.shape) dims.push_back(d < 0 ? batch : d);
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  const ember::Shape shape{std::span<const int64_t>(dims)};
  auto fill = [&]<typename T>(T) {
    std::vector<T> values(count);
    for (int64_t i = 0; i < count; ++i)
      values[i] = std::is_floating_point_v<T> ? static_cast<T>(std::sin(static_cast<double>(i + 1)))
                                              : static_cast<T>(i % 7);
    return Tensor::from_vector<T>(values, shape);
  };
  switch (spec.dtype) {
    case DType::kFloat32:
      return fill(float{});
    case DType::kFloat64:
      return fill(double{});
    case DType::kInt32:
      return fill(int32_t{});
    case DType::kInt64:
      return fill(int64_t{});
    default:
      fail("input '" + spec.key + "' is " + std::string(ember::dtype_name(spec.dtype)) +
           "; give it as --input");
  }
}

// "yes" when a libpython is mapped into the process, "unknown" without /proc.
const char* python_in_process() {
  std::ifstream maps("/proc/self/maps");
  if (!maps) return "unknown";
  for (std::string line; std::getline(maps, line);)
    if (line.find("libpython") != std::string::npos) return "yes";
  return "no";
}

void print_tensor(const std::string& key, const Tensor& t) {
  std::printf("output %s %s [", key.c_str(), std::string(ember::dtype_name(t.dtype())).c_str());
  for (int i = 0; i < t.rank(); ++i)
    std::printf("%s%lld", i ? "," : "", static_cast<long long>(t.shape().dim(i)));
  std::printf("]\n");
  const std::vector<double> values = t.to_vector<double>();
  for (size_t i = 0; i < values.size(); ++i) std::printf("%s%.9g", i ? " " : "", values[i]);
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::printf("usage: %s MODEL_DIR [--signature NAME] [--input KEY=FILE.npy]... [--batch N]\n", argv[0]);
    return 0;
  }
  std::string dir = argv[1], signature_name = "serving_default";
  std::map<std::string, std::string> files;
  int64_t batch = 2;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) fail("'" + arg + "' needs a value");
    const std::string value = argv[++i];
    if (arg == "--signature") {
      signature_name = value;
    } else if (arg == "--batch") {
      batch = std::stoll(value);
    } else if (arg == "--input" && value.find('=') != std::string::npos) {
      files[value.substr(0, value.find('='))] = value.substr(value.find('=') + 1);
    } else {
      fail("unknown argument '" + arg + "'");
    }
  }
  try {
    using Clock = std::chrono::steady_clock;
    auto start = Clock::now();
    ember::SavedModel model = ember::load_saved_model(dir);
    ember::SavedModel::Signature signature = model.signature(signature_name);
    auto loaded = Clock::now();
    std::map<std::string, Tensor> inputs;
    for (const ember::SignatureTensor& spec : signature.inputs())
      inputs.emplace(spec.key, files.count(spec.key) ? read_npy(files[spec.key]) : generated(spec, batch));
    for (const auto& [key, path] : files)
      if (!inputs.count(key)) inputs.emplace(key, read_npy(path));  // the signature reports it
    auto called = Clock::now();
    std::map<std::string, Tensor> outputs = signature(inputs);
    auto done = Clock::now();
    auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
    std::printf("load_ms %.3f\nfirst_call_ms %.3f\n", ms(loaded - start), ms(done - called));
    std::printf("python_in_process %s\n", python_in_process());
    for (const auto& [key, t] : outputs) print_tensor(key, t);
  } catch (const ember::StatusError& e) {
    fail(e.what());
  }
  ember::config::shutdown();  // stop the background compiler before exit
  return 0;
}
