// The extension's GIL guards: nanobind's gil_scoped_acquire / gil_scoped_release, made safe for threads
// that run while the interpreter exits (Note [Threads at interpreter exit]).
#pragma once

#include <Python.h>

namespace ember::python {

// Note [Threads at interpreter exit]
// Once Py_FinalizeEx has begun, Python 3.11 ends any other thread that takes the GIL with pthread_exit,
// which unwinds the thread's C++ frames with abi::__forced_unwind. On ember's paths that aborted the
// process: a guard's destructor released a thread state that was no longer current (PyGILState_Release
// fails), PyEval_RestoreThread threw out of a noexcept destructor (std::terminate), and a catch (...) that
// swallows the unwind (nanobind's dispatch, an op boundary, an OpenMP region) makes glibc abort. So:
//  - every GIL take of ember's on a thread that does not hold it passes a gate. An atexit hook, run before
//    finalization begins and after the package's own hooks have stopped tf.data's threads, closes the
//    gate and waits (without the GIL) until the threads already past it hold the GIL. Behind a closed
//    gate an AcquireGil is refused (callers return kCancelled, or leak what they would have released)
//    and a ReleaseGil parks the thread for good, as Python 3.14 itself does: no take of ember's can end
//    a thread;
//  - Python may still end a thread inside Python code that ember called (the interpreter drops and
//    retakes the GIL by itself). The callers into Python catch that forced unwind and park the thread
//    there (hang_thread_at_exit), and AcquireGil's destructor leaves the thread state alone; op
//    boundaries rethrow it rather than swallow it (ops/execute.cc, runtime/fast_loop.cc).
// TensorFlow's kernels take the GIL with plain PyGILState_Ensure/Release calls and so have none of this.

/// Notes the main thread and registers the atexit hook that closes the gate (the module's import calls
/// it, under the GIL).
void init_gil_guards();

/// Blocks this thread forever (a thread Python would end at exit; the process is about to end).
[[noreturn]] void hang_thread_at_exit();

/// Retakes the GIL released by PyEval_SaveThread, or parks the thread when the interpreter exits.
void restore_gil_or_hang(PyThreadState* saved);

/// Takes the GIL (nested use is fine). Refused (is_valid() false) on a thread that does not hold it
/// while the interpreter exits; the caller must then skip its Python work.
class AcquireGil {
 public:
  AcquireGil();
  ~AcquireGil();
  AcquireGil(const AcquireGil&) = delete;
  AcquireGil& operator=(const AcquireGil&) = delete;
  bool is_valid() const { return tstate_ != nullptr; }

 private:
  PyGILState_STATE state_{};
  PyThreadState* tstate_ = nullptr;
};

/// Releases the GIL for a scope; retakes it at the end (or parks the thread when the interpreter exits).
/// ReleaseGil(ReleaseGil::kIfHeld) does nothing on a thread that does not hold it.
class ReleaseGil {
 public:
  struct IfHeld {};
  static constexpr IfHeld kIfHeld{};
  ReleaseGil() : saved_(PyEval_SaveThread()) {}
  explicit ReleaseGil(IfHeld)
      : saved_(Py_IsInitialized() && PyGILState_Check() ? PyEval_SaveThread() : nullptr) {}
  ~ReleaseGil() {
    if (saved_ != nullptr) restore_gil_or_hang(saved_);
  }
  ReleaseGil(const ReleaseGil&) = delete;
  ReleaseGil& operator=(const ReleaseGil&) = delete;

 private:
  PyThreadState* saved_;
};

}  // namespace ember::python
