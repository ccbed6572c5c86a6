#include "ember/jit/jit.h"

#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Target/TargetMachine.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "ember/jit/codegen.h"
#include "ember/jit/disk_cache.h"
#include "ember/jit/native_loop.h"
#include "ember/kernels/elementwise.h"

namespace ember::jit {
namespace {

// Bumped whenever the generated code changes for the same program, so old cache files are not used.
constexpr int kCodegenVersion = 8;

Mode mode_from_environment() {
  const char* s = std::getenv("EMBER_JIT");
  if (s == nullptr) return Mode::kAsync;
  if (std::strcmp(s, "0") == 0 || std::strcmp(s, "off") == 0) return Mode::kOff;
  if (std::strcmp(s, "sync") == 0) return Mode::kSync;
  return Mode::kAsync;
}

// Makes the main thread's ExitGuard (Note [The compile thread]).
void guard_main_thread_exit();

// Native code of one kernel (a fused kernel or a native loop), loaded into the process's LLJIT; unloaded
// when the last binding using it dies.
struct LoadedKernel {
  void* address = nullptr;
  llvm::orc::JITDylib* dylib = nullptr;
  ~LoadedKernel();
};

// One program to compile, for every binding that asked for it while it waited (Note [Queued programs]):
// a fused program for fused kernels' slots, or a loop for native loops' slots.
struct Job {
  kernels::FusedProgram program;
  std::vector<bool> scalar;
  std::optional<LoopProgram> loop;
  std::string fingerprint;  // kernel_fingerprint or loop_fingerprint: equal programs share a job
  std::vector<std::weak_ptr<kernels::NativeFusedSlot>> slots;
  std::vector<std::weak_ptr<NativeLoopSlot>> loop_slots;
  size_t sweep_at = 16;  // slots that trigger the next sweep of expired slots
  bool done = false;

  // Takes the slots of `other`, a request for the same program.
  void add_slots(const Job& other) {
    if (slots.size() + loop_slots.size() >= sweep_at) {
      std::erase_if(slots, [](const auto& s) { return s.expired(); });
      std::erase_if(loop_slots, [](const auto& s) { return s.expired(); });
      sweep_at = std::max<size_t>(16, 2 * (slots.size() + loop_slots.size()));
    }
    slots.insert(slots.end(), other.slots.begin(), other.slots.end());
    loop_slots.insert(loop_slots.end(), other.loop_slots.begin(), other.loop_slots.end());
  }

  bool dead() const {
    auto expired = [](const auto& s) { return s.expired(); };
    return std::all_of(slots.begin(), slots.end(), expired) &&
           std::all_of(loop_slots.begin(), loop_slots.end(), expired);
  }
};

// Note [Queued programs]
// A function's plan asks for every fused group's kernel when it is built, and a graph with a loop unrolled
// (Keras' LSTM over 100 known steps) has hundreds of groups that are few distinct programs. Queued per
// binding, they overflowed the queue's bound, and the bindings turned away ran on the interpreter for the
// rest of the process (half of the Keras LSTM's fused runs). So the queue holds distinct programs: a
// request for a program already queued adds its binding's slot to that job, and the bound counts programs.
// A starved compile thread leaves one job queued while functions are made and dropped by the thousand, each
// adding a slot: the expired ones are swept whenever the list has doubled since the last sweep, so a job
// holds about twice its live bindings (an expired weak pointer still holds its slot's memory).

// Note [The compile thread]
// One thread compiles, at the lowest priority, so that compiling never takes a core from the program's
// own work; jobs for bindings that died meanwhile are skipped. LLVM state (the LLJIT, the target machine)
// is made by the first compile and used under one mutex (in the synchronous mode the caller compiles, at
// its own priority), except for unloading a kernel (ORC's sessions are thread-safe). The service is never
// destroyed. At exit the thread must stop before any of LLVM's static objects is destroyed, and LLVM makes
// function-local statics (regular expressions of its bitcode reader, ...) during compiles, after any exit
// handler ember could register before starting the thread: exit runs handlers and static destructors in
// the reverse order of their registration, so those statics went first while the thread still compiled
// ("LLVM ERROR: out of memory", or a segfault, in the compile thread), at the first compile or any later
// one. Registering the handler after building LLVM's statics would not do: which statics a compile makes
// depends on the program, and building them before the first request would make its caller wait.
// Instead the thread is stopped from a thread_local object of the main thread (ExitGuard): C++ destroys
// the exiting thread's thread_local objects before it starts destroying any static object
// ([basic.start.term]), and a program returning from main (or calling exit on the main thread) exits on
// the main thread. The guard is made while the program (or the Python module) is loaded, by a static
// initializer, which runs on the main thread: the first request may come from any thread (a C++ program
// whose functions are first traced on worker threads never made it otherwise, and died at exit while a
// starved compile still ran). install() and every request from the main thread make it too, for a library
// loaded from another thread; exit from another thread falls back to an exit handler (the old order), and
// Python also stops the thread from an atexit hook (shutdown()), before the interpreter finalizes. Stopping
// waits for the current job. A forked child does not inherit the thread and runs its fused programs on the
// interpreter.
class Service final : public kernels::NativeFusedCompiler {
  static constexpr size_t kMaxQueuedJobs = 256;

 public:
  Service()
      : mode_(mode_from_environment()),
        cache_(DiskCache::default_directory(), DiskCache::default_max_bytes()) {
    fma_ = std::strcmp(kernels::elementwise_isa(), "baseline") != 0;
  }

  Mode mode() const { return mode_.load(); }
  void set_mode(Mode m) { mode_.store(m); }
  const DiskCache& cache() const { return cache_; }

  void request(const kernels::FusedProgram& program, std::span<const bool> scalar,
               std::shared_ptr<kernels::NativeFusedSlot> slot) override {
    auto job = std::make_shared<Job>();
    job->program = program;
    job->scalar.assign(scalar.begin(), scalar.end());
    job->slots.push_back(std::move(slot));
    submit(std::move(job));
  }

  void request_loop(const LoopProgram& loop, std::shared_ptr<NativeLoopSlot> slot) {
    auto job = std::make_shared<Job>();
    job->loop = loop;
    job->loop_slots.push_back(std::move(slot));
    submit(std::move(job));
  }

  void submit(std::shared_ptr<Job> job) {
    const Mode m = mode_.load();
    if (m == Mode::kOff || stopping_.load()) return;
    guard_main_thread_exit();
    if (m == Mode::kSync) {
      // On the caller's thread, at its priority: tests wait for it, and the compile thread's lowest
      // priority would leave them waiting behind every other process of a busy machine.
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (worker_pid_ != 0 && worker_pid_ != ::getpid()) return;  // forked
        ++stats_.requested;
      }
      serve(*job);
      return;
    }
    job->fingerprint = job_fingerprint(*job);
    std::unique_lock<std::mutex> lock(mu_);
    if (!start_worker_locked()) return;
    for (const std::shared_ptr<Job>& queued : queue_) {
      if (queued->fingerprint != job->fingerprint) continue;
      ++stats_.requested;
      queued->add_slots(*job);
      return;
    }
    // A starved compile thread (lowest priority on a busy machine) must not let the queue grow with every
    // function made and dropped meanwhile: jobs of dead bindings go, and past a bound new programs stay on
    // the interpreter.
    std::erase_if(queue_, [](const std::shared_ptr<Job>& queued) { return queued->dead(); });
    if (queue_.size() >= kMaxQueuedJobs) return;
    ++stats_.requested;
    queue_.push_back(job);
    work_cv_.notify_one();
  }

  void wait_for_pending() {
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [&] { return (queue_.empty() && busy_ == 0) || stopping_.load(); });
  }

  Stats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    Stats s = stats_;
    for (const std::shared_ptr<Job>& queued : queue_)
      s.queued_bindings += static_cast<int64_t>(queued->slots.size());
    return s;
  }

  void hold(bool on) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      held_ += on ? 1 : -1;
    }
    work_cv_.notify_all();
  }

  void unload(llvm::orc::JITDylib* dylib) {
    if (stopping_.load() || dylib == nullptr) return;  // the process is exiting: leave the code mapped
    llvm::consumeError(jit_->getExecutionSession().removeJITDylib(*dylib));
  }

 private:
  bool start_worker_locked() {
    if (worker_pid_ == ::getpid()) return true;
    if (worker_pid_ != 0) return false;  // forked: no thread here (Note [The compile thread])
    worker_pid_ = ::getpid();
    worker_ = std::thread([this] { run(); });
    std::atexit([] { stop_at_exit(); });  // for an exit from another thread than main's

    return true;
  }

 public:
  static void stop_at_exit();

 private:
  bool initialize_llvm(std::string& error) {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!builder) {
      error = llvm::toString(builder.takeError());
      return false;
    }
    builder->setCodeGenOptLevel(llvm::CodeGenOpt::Aggressive);
    auto target = builder->createTargetMachine();
    if (!target) {
      error = llvm::toString(target.takeError());
      return false;
    }
    target_ = std::move(*target);
    auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(*builder).create();
    if (!jit) {
      error = llvm::toString(jit.takeError());
      return false;
    }
    jit_ = std::move(*jit);
    auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
        jit_->getDataLayout().getGlobalPrefix());
    if (!process) {
      error = llvm::toString(process.takeError());
      return false;
    }
    jit_->getMainJITDylib().addGenerator(std::move(*process));
    // The interpreter's loops that kernels call (Note [Array functions] in codegen.cc), by name, so that a
    // cached object stays valid in another process.
    llvm::orc::SymbolMap loops;
    const kernels::ElementwiseTables& tables = kernels::elementwise_tables();
    for (int op = 0; op < static_cast<int>(kernels::UnaryOp::kCount); ++op) {
      for (int d = 0; d < kNumDTypes; ++d) {
        const auto unary = static_cast<kernels::UnaryOp>(op);
        if (!calls_interpreter_loop(unary, static_cast<DType>(d), fma_)) continue;
        loops[jit_->mangleAndIntern(interpreter_loop_symbol(unary, static_cast<DType>(d)))] =
            llvm::JITEvaluatedSymbol(llvm::pointerToJITTargetAddress(tables.unary[op][d]),
                                     llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable);
      }
    }
    if (auto defined = jit_->getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(loops)))) {
      error = llvm::toString(std::move(defined));
      return false;
    }
    std::span<const char> fma = library_bitcode(true), baseline = library_bitcode(false);
    host_ = "llvm=" LLVM_VERSION_STRING ";codegen=" + std::to_string(kCodegenVersion) +
            ";cpu=" + target_->getTargetCPU().str() + ";features=" + target_->getTargetFeatureString().str() +
            ";library=" + std::to_string(fnv1a(fma.data(), fma.size())) + "," +
            std::to_string(fnv1a(baseline.data(), baseline.size()));
    // The code generator's experiment switches change the code, so they are part of the key.
    for (const char* name : {"EMBER_JIT_INTERLEAVE", "EMBER_JIT_VECTOR_WIDTH", "EMBER_JIT_BLOCK"})
      if (const char* value = std::getenv(name); value != nullptr)
        host_ += std::string(";") + name + "=" + value;
    return true;
  }

  // LLVM's state is made by the first compile, on whichever thread, and used under compile_mu_.
  bool llvm_ready() {
    if (llvm_state_ == 0) {
      std::string error;
      llvm_state_ = initialize_llvm(error) ? 1 : -1;
      if (llvm_state_ < 0)
        std::fprintf(stderr, "ember: the JIT is off, LLVM could not start: %s\n", error.c_str());
    }
    return llvm_state_ > 0;
  }

  void run() {
    // Lowest priority for this thread only (Linux: nice is per thread).
    ::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), 19);
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      work_cv_.wait(lock, [&] { return (!queue_.empty() && held_ == 0) || stopping_.load(); });
      if (stopping_.load()) break;
      std::shared_ptr<Job> job = queue_.front();
      queue_.pop_front();
      ++busy_;
      lock.unlock();
      serve(*job);
      lock.lock();
      --busy_;
      job->done = true;
      done_cv_.notify_all();
    }
    for (auto& job : queue_) job->done = true;
    queue_.clear();
    done_cv_.notify_all();
  }

  std::string job_fingerprint(const Job& job) const {
    return job.loop ? loop_fingerprint(*job.loop, fma_)
                    : kernel_fingerprint(KernelSource{&job.program, job.scalar, fma_});
  }

  void serve(Job& job) {
    if (job.dead()) return;  // the bindings are gone
    std::lock_guard<std::mutex> compile_lock(compile_mu_);
    if (!llvm_ready()) return;
    const std::string fingerprint = host_ + ";" + job_fingerprint(job);
    std::shared_ptr<LoadedKernel> kernel;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = loaded_.find(fingerprint);
      if (it != loaded_.end()) kernel = it->second.lock();
      if (kernel != nullptr) ++stats_.memory_hits;
    }
    if (kernel == nullptr) kernel = load_or_compile(job, fingerprint);
    if (kernel == nullptr) return;
    // Every binding that asked while the job waited in the queue (their slots were added under the lock).
    std::vector<std::weak_ptr<kernels::NativeFusedSlot>> slots;
    std::vector<std::weak_ptr<NativeLoopSlot>> loop_slots;
    {
      std::lock_guard<std::mutex> lock(mu_);
      slots = job.slots;
      loop_slots = job.loop_slots;
    }
    for (const auto& weak : slots)
      if (auto slot = weak.lock())
        slot->publish(reinterpret_cast<kernels::NativeFusedFn>(kernel->address), kernel);
    for (const auto& weak : loop_slots)
      if (auto slot = weak.lock()) slot->publish(reinterpret_cast<NativeLoopFn>(kernel->address), kernel);
  }

  std::shared_ptr<LoadedKernel> load_or_compile(const Job& job, const std::string& fingerprint) {
    char symbol[48];
    const char* kind = job.loop ? "loop" : "fused";
    std::snprintf(symbol, sizeof symbol, "ember_%s_%016llx_%llu", kind,
                  static_cast<unsigned long long>(fnv1a(fingerprint.data(), fingerprint.size())),
                  static_cast<unsigned long long>(++symbols_));
    // The object's symbol is fixed when it is compiled; a cached object is renamed by loading it under
    // its own name (kept in the file's fingerprint, so different processes agree).
    std::string object;
    const std::string cached_symbol =
        std::string("ember_") + kind + "_" + std::to_string(fnv1a(fingerprint.data(), fingerprint.size()));
    DiskCache::Result found = cache_.load(fingerprint, object);
    bool from_disk = found == DiskCache::Result::kHit;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (found == DiskCache::Result::kRejected) ++stats_.disk_rejects;
    }
    if (!from_disk) {
      auto start = std::chrono::steady_clock::now();
      auto compiled =
          job.loop ? compile_loop(*job.loop, fma_, cached_symbol, *target_)
                   : compile_kernel(KernelSource{&job.program, job.scalar, fma_}, cached_symbol, *target_);
      double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::lock_guard<std::mutex> lock(mu_);
      if (!compiled.ok()) {
        ++stats_.failures;
        if (std::getenv("EMBER_JIT_VERBOSE") != nullptr)
          std::fprintf(stderr, "ember: JIT compile failed: %s\n", compiled.status().to_string().c_str());
        return nullptr;
      }
      ++stats_.compiled;
      stats_.compile_seconds += seconds;
      object = std::move(compiled).value();
    }
    if (!from_disk) cache_.store(fingerprint, object);
    // Each load gets a JITDylib of its own (removed with the kernel), so a kernel unloaded by one thread
    // while another loads the same object never meets its own symbol.
    auto dylib = jit_->createJITDylib(symbol);
    if (!dylib) {
      llvm::consumeError(dylib.takeError());
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.failures;
      return nullptr;
    }
    dylib->addToLinkOrder(jit_->getMainJITDylib());
    auto kernel = std::make_shared<LoadedKernel>();
    kernel->dylib = &*dylib;
    auto added = jit_->addObjectFile(*dylib, llvm::MemoryBuffer::getMemBufferCopy(object, symbol));
    auto address = added ? llvm::Expected<llvm::orc::ExecutorAddr>(std::move(added))  // an Error is true
                         : jit_->lookup(*dylib, cached_symbol);
    if (!address) {
      std::string message = llvm::toString(address.takeError());
      if (std::getenv("EMBER_JIT_VERBOSE") != nullptr)
        std::fprintf(stderr, "ember: JIT load failed: %s\n", message.c_str());
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.failures;
      return nullptr;
    }
    kernel->address = address->toPtr<void*>();
    std::lock_guard<std::mutex> lock(mu_);
    if (from_disk) ++stats_.disk_hits;
    if (loaded_.size() > 256)
      for (auto it = loaded_.begin(); it != loaded_.end();)
        it = it->second.expired() ? loaded_.erase(it) : ++it;
    loaded_[fingerprint] = kernel;
    return kernel;
  }

  std::atomic<Mode> mode_;
  DiskCache cache_;
  bool fma_ = true;
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  int busy_ = 0;
  int held_ = 0;  // live HoldCompiles
  pid_t worker_pid_ = 0;
  std::thread worker_;
  std::atomic<bool> stopping_{false};
  Stats stats_;
  std::unordered_map<std::string, std::weak_ptr<LoadedKernel>> loaded_;
  uint64_t symbols_ = 0;
  // Under compile_mu_ (Note [The compile thread]).
  std::mutex compile_mu_;
  int llvm_state_ = 0;  // 0 not yet made, 1 ready, -1 failed
  std::unique_ptr<llvm::TargetMachine> target_;
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::string host_;
};

Service& service() {
  static Service* s = new Service();  // never destroyed (Note [The compile thread])
  return *s;
}

void Service::stop_at_exit() {
  Service& s = service();
  {
    std::lock_guard<std::mutex> lock(s.mu_);
    s.stopping_.store(true);
  }
  s.work_cv_.notify_all();
  s.done_cv_.notify_all();
  // Not from the thread itself: LLVM's fatal errors exit from it.
  if (s.worker_.joinable() && s.worker_pid_ == ::getpid() && s.worker_.get_id() != std::this_thread::get_id())
    s.worker_.join();
}

// Stops the compile thread when its thread exits, before any static object is destroyed (Note [The compile
// thread]).
struct ExitGuard {
  ~ExitGuard() { Service::stop_at_exit(); }
};

void guard_main_thread_exit() {
  if (::syscall(SYS_gettid) != ::getpid()) return;  // only the main thread's tid is the process id
  thread_local ExitGuard guard;
  (void)guard;
}

// Static initialization runs on the main thread (Note [The compile thread]).
[[maybe_unused]] const bool main_thread_guarded = (guard_main_thread_exit(), true);

LoadedKernel::~LoadedKernel() { service().unload(dylib); }

}  // namespace

void install() {
  guard_main_thread_exit();
  static bool once = [] {
    kernels::set_native_fused_compiler(&service());
    return true;
  }();
  (void)once;
}

bool available() { return true; }
Mode mode() { return service().mode(); }
void set_mode(Mode m) { service().set_mode(m); }
void wait_for_pending() { service().wait_for_pending(); }
void request_native_loop(const LoopProgram& program, std::shared_ptr<NativeLoopSlot> slot) {
  service().request_loop(program, std::move(slot));
}
void shutdown() { Service::stop_at_exit(); }

Stats stats() {
  Stats s = service().stats();
  auto counts = kernels::fused_run_counts();
  s.native_runs = counts.native;
  s.interpreted_runs = counts.interpreted;
  return s;
}

HoldCompiles::HoldCompiles() { service().hold(true); }
HoldCompiles::~HoldCompiles() { service().hold(false); }

std::string cache_directory() { return service().cache().directory(); }

}  // namespace ember::jit
