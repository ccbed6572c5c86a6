// The chosen library's own all-reduce, called directly: the baseline that bench/allreduce.py holds ember's
// all-reduce against (same sizes, same rendezvous, same transport, same reduction).
//   allreduce_gloo RANK SIZE STORE_DIR [ITERS]
// Prints one line per size: "gloo <bytes> <median seconds>".
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

void sum_floats(void* out, const void* a, const void* b, size_t n) {
  auto* o = static_cast<float*>(out);
  const auto* x = static_cast<const float*>(a);
  const auto* y = static_cast<const float*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = x[i] + y[i];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s RANK SIZE STORE_DIR [ITERS]\n", argv[0]);
    return 2;
  }
  const int rank = std::atoi(argv[1]);
  const int size = std::atoi(argv[2]);
  const int iters = argc > 4 ? std::atoi(argv[4]) : 20;
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore file_store(argv[3]);
  gloo::rendezvous::PrefixStore store("bench", file_store);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
  context->setTimeout(std::chrono::seconds(60));
  context->connectFullMesh(store, device);

  for (size_t bytes : {size_t{1} << 20, size_t{64} << 20}) {
    std::vector<float> data(bytes / sizeof(float), 1.0f);
    std::vector<double> times;
    for (int i = 0; i < iters + 2; ++i) {
      gloo::AllreduceOptions opts(context);
      opts.setOutput(data.data(), data.size());
      opts.setReduceFunction(&sum_floats);
      opts.setTag(1);
      gloo::BarrierOptions barrier(context);  // as bench/allreduce.py's ember side: both ranks start together
      barrier.setTag(2);
      gloo::barrier(barrier);
      auto start = std::chrono::steady_clock::now();
      gloo::allreduce(opts);
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (i >= 2) times.push_back(s);  // the first two warm the connections and the page cache
    }
    std::sort(times.begin(), times.end());
    if (rank == 0) std::printf("gloo %zu %.6f\n", bytes, times[times.size() / 2]);
  }
  return 0;
}
