#include "ember/core/parallel.h"

#include <omp.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>

#include "ember/core/device.h"
#include "ember/core/float_env.h"

namespace ember {
namespace {
std::atomic<int> g_threads{0};
std::atomic<int> g_inter_op_threads{0};
std::atomic<int64_t> g_regions{0};
// OpenMP's thread count as the process started (OMP_NUM_THREADS or one per core), read once: kernels that
// hand small work to oneDNN set OpenMP's count to 1 for it, which must not become everyone's default.
const int g_default_threads = omp_get_max_threads();

// Note [Cores others leave free]
// Parallel work pays only on cores nobody else wants: beside another busy process a woken worker waits
// for a core (up to a scheduler slice, milliseconds), and two processes that each start two threads on
// two cores make every region wait for a descheduled thread. So every kFreeCoresWindowNs the first thread
// to ask compares the machine's busy CPU time (/proc/stat) with this process's own (its threads, spinning
// workers included) over the window just ended: what others used is not free, and parallel work uses at
// most the cores left, rounded (2 cores, another process busy on one: 1 thread). Two ember processes
// side by side thus each settle on one thread and stay there (each sees the other's core busy), while a
// process alone keeps every core. Off Linux, or when /proc/stat is unreadable, every core counts as free;
// EMBER_ADAPTIVE_THREADS=0 turns the measurement off (a machine dedicated to one process).
//
// A process's first window has no past to compare with, yet its first parallel region is the costliest:
// it starts OpenMP's threads, and on a busy machine the caller waits at the region's end for a new thread
// that has not had a core yet (a SavedModel's cold load + first call: 29 ms median instead of 3 at load
// average 9 on 2 cores). So the first window counts the threads runnable right now instead
// (`procs_running` in /proc/stat, less the caller), where the process may run on every core; that number
// is the whole machine's, so a process pinned to some cores keeps them all until its first window ends.
constexpr int64_t kFreeCoresWindowNs = 100'000'000;  // /proc/stat counts in 10 ms ticks: 10+ per core

int64_t clock_ns(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// Busy CPU time (all but idle and iowait), in ns, of the cores this process may run on (its affinity
// mask: in a container pinned to 2 cores of a large host, the host's other cores are none of its
// business); -1 if unknown.
// `running_others`: the threads runnable on the machine now besides the caller where this process may
// run on every core, else -1.
int64_t machine_busy_ns(int* running_others) {
  *running_others = -1;
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return -1;
  FILE* f = std::fopen("/proc/stat", "r");
  if (f == nullptr) return -1;
  char line[512];
  unsigned long long busy = 0;
  int cores = 0;
  int running = -1;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::sscanf(line, "procs_running %d", &running) == 1) continue;
    if (std::strncmp(line, "cpu", 3) != 0 || line[3] < '0' || line[3] > '9') continue;  // the total, others
    int cpu = -1;
    unsigned long long v[8] = {};
    if (std::sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &v[0], &v[1], &v[2], &v[3],
                    &v[4], &v[5], &v[6], &v[7]) != 9)
      continue;
    if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &allowed)) continue;
    busy += v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    ++cores;
  }
  std::fclose(f);
  if (running >= 1 && CPU_COUNT(&allowed) == omp_get_num_procs()) *running_others = running - 1;
  const long hz = sysconf(_SC_CLK_TCK);
  if (cores == 0 || hz <= 0) return -1;
  return static_cast<int64_t>(busy * (1'000'000'000ull / static_cast<unsigned long long>(hz)));
}

struct FreeCores {
  std::atomic<int> free{0};  // 0: not measured yet, every core counts as free
  std::atomic<int64_t> next_ns{0};
  std::atomic<double> forced_others{-1};  // tests
  // EMBER_ADAPTIVE_THREADS=0: every core counts as free (a machine given to this process alone).
  const bool enabled = [] {
    const char* v = std::getenv("EMBER_ADAPTIVE_THREADS");
    return v == nullptr || std::string_view(v) != "0";
  }();
  std::mutex mu;
  int64_t wall_ns = 0, busy_ns = -1, self_ns = 0;

  int get() {
    const double forced = forced_others.load(std::memory_order_relaxed);
    if (forced >= 0) return from_others(forced);
    if (!enabled) return 0;
    const int64_t now = clock_ns(CLOCK_MONOTONIC);
    if (now >= next_ns.load(std::memory_order_relaxed) && mu.try_lock()) {
      sample(now);
      mu.unlock();
    }
    return free.load(std::memory_order_relaxed);
  }
  void sample(int64_t now) {
    next_ns.store(now + kFreeCoresWindowNs, std::memory_order_relaxed);
    int running_others = -1;
    const int64_t busy = machine_busy_ns(&running_others), self = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    // A window much longer than planned (the process was idle) says little about now: start afresh.
    if (busy >= 0 && busy_ns >= 0 && now - wall_ns < 4 * kFreeCoresWindowNs) {
      const double others = static_cast<double>((busy - busy_ns) - (self - self_ns)) / (now - wall_ns);
      free.store(from_others(others), std::memory_order_relaxed);
    } else if (wall_ns == 0 && running_others >= 0) {  // the process's first window
      free.store(from_others(running_others), std::memory_order_relaxed);
    }
    wall_ns = now, busy_ns = busy, self_ns = self;
  }
  static int from_others(double others) {
    const double cores = omp_get_num_procs();
    return static_cast<int>(
        std::clamp(std::lround(cores - std::max(0.0, others)), 1L, static_cast<long>(cores)));
  }
};

FreeCores& free_cores() {
  static FreeCores* f = new FreeCores();  // never destroyed: kernels may run during static destruction
  return *f;
}

// The threads parallel work may use now: the configured count, at most the cores others leave free.
int usable_threads() {
  int configured = intra_op_threads();
  // A logical device's share (Note [Thread shares] in core/device.h).
  if (const int share = internal::thread_share_of_current_device(); share > 0)
    configured = std::min(configured, share);
  if (configured <= 1) return configured;
  const int free = free_cores().get();
  return free > 0 ? std::min(configured, free) : configured;
}
}  // namespace

int cores_free_for_parallel_work() {
  const int free = free_cores().get();
  return free > 0 ? free : omp_get_num_procs();
}

namespace internal {
void force_other_processes_load(double cores) {
  free_cores().forced_others.store(cores, std::memory_order_relaxed);
}
}  // namespace internal

int inter_op_threads() {
  int n = g_inter_op_threads.load(std::memory_order_relaxed);
  if (n <= 0) n = omp_get_num_procs();
  const int share = internal::thread_share_of_current_device();
  return share > 0 ? std::min(n, share) : n;
}

void set_inter_op_threads(int n) { g_inter_op_threads.store(n, std::memory_order_relaxed); }

int intra_op_threads() {
  int n = g_threads.load(std::memory_order_relaxed);
  return n > 0 ? n : g_default_threads;
}

void set_intra_op_threads(int n) {
  g_threads.store(n, std::memory_order_relaxed);
  if (n > 0) omp_set_num_threads(n);
}

int threads_for_cycles(int64_t cycles) {
  if (cycles < kParallelMinCycles || omp_in_parallel()) return 1;
  return static_cast<int>(std::clamp<int64_t>(cycles / kParallelCyclesPerThread, 1, usable_threads()));
}

int threads_for_matmul(int64_t macs) {
  if (macs < kParallelMinMatMulMacs || omp_in_parallel()) return 1;
  const int threads = usable_threads();
  if (threads > 1) {
    flush_denormals_on_pool(threads);  // oneDNN's region, started next, has no hook of ember's inside
    g_regions.fetch_add(1, std::memory_order_relaxed);
  }
  return threads;
}

int64_t parallel_regions_started() { return g_regions.load(std::memory_order_relaxed); }

namespace internal {
// Note [Claimed pieces]
// With a fixed split, a region ends when its slowest thread has done its share, and beside another busy
// process that thread may not get a core for a scheduler slice (milliseconds). So the range is cut into a
// few pieces per thread (each at least half of kParallelCyclesPerThread) that threads take in turn: a
// descheduled worker delays the region only by the time it takes to show up and find nothing left, the
// caller having done its share meanwhile. Pieces stay contiguous ranges, which every caller expects.
void parallel_for_impl(int64_t n, int64_t cost_per_item, RangeFn fn, void* ctx) {
  int threads = static_cast<int>(std::min<int64_t>(threads_for_cycles(total_cycles(n, cost_per_item)), n));
  if (threads <= 1) {
    fn(ctx, 0, n);
    return;
  }
  g_regions.fetch_add(1, std::memory_order_relaxed);
  const int64_t per_piece = kParallelCyclesPerThread / 2;
  const int64_t pieces = std::clamp<int64_t>(total_cycles(n, cost_per_item) / per_piece, threads,
                                             std::min<int64_t>(n, 4 * int64_t{threads}));
  const int64_t chunk = (n + pieces - 1) / pieces;
  std::atomic<int64_t> next{0};
  const uint32_t caller_flags = denormal_flags();
#pragma omp parallel num_threads(threads)
  {
    RegionDenormalFlags denormals(caller_flags, omp_get_thread_num() != 0);
    for (int64_t p = next.fetch_add(1, std::memory_order_relaxed); p * chunk < n;
         p = next.fetch_add(1, std::memory_order_relaxed))
      fn(ctx, p * chunk, std::min(n, (p + 1) * chunk));
  }
}
}  // namespace internal

}  // namespace ember
