// See py_gil.h and its Note [Threads at interpreter exit].
#include "python/py_gil.h"

#include <pythread.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>

namespace ember::python {
namespace {

// The thread that runs Py_FinalizeEx: the main thread (threading.main_thread()), read at import.
std::atomic<unsigned long> main_thread_ident{0};

// The gate every GIL take of ember's goes through on a thread that does not hold it (see the Note).
struct Gate {
  std::mutex mu;
  std::condition_variable passed;
  bool closed = false;  // the interpreter is exiting: no thread but the main one takes the GIL
  int waiting = 0;      // threads between the gate and the GIL
};
Gate& gate() {
  static auto* g = new Gate;  // leaked: threads may pass it while the process exits
  return *g;
}

bool on_main_thread() {
  return PyThread_get_thread_ident() == main_thread_ident.load(std::memory_order_relaxed);
}

PyThreadState* current_thread_state() {
#if PY_VERSION_HEX >= 0x030D0000
  return PyThreadState_GetUnchecked();
#else
  return _PyThreadState_UncheckedGet();
#endif
}

bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

// Passes the gate towards the GIL, or says the interpreter is exiting (the caller must not take it).
bool enter_gate() {
  if (on_main_thread()) return true;
  std::lock_guard<std::mutex> lock(gate().mu);
  if (gate().closed || interpreter_finalizing()) return false;
  ++gate().waiting;
  return true;
}

void leave_gate() {
  if (on_main_thread()) return;
  std::lock_guard<std::mutex> lock(gate().mu);
  if (--gate().waiting == 0) gate().passed.notify_all();
}

// The atexit hook (registered at import, so it runs after the package's own, which stop tf.data's
// threads): closes the gate, then lets every thread already past it take the GIL before finalization
// begins, so that none is ended while ember waits for the GIL.
PyObject* close_gate(PyObject*, PyObject*) {
  Py_BEGIN_ALLOW_THREADS;
  {
    std::unique_lock<std::mutex> lock(gate().mu);
    gate().closed = true;
    gate().passed.wait(lock, [] { return gate().waiting == 0; });
  }
  Py_END_ALLOW_THREADS;
  Py_RETURN_NONE;
}
PyMethodDef close_gate_def = {"_close_gil_gate", close_gate, METH_NOARGS, nullptr};

}  // namespace

void init_gil_guards() {
  PyObject* threading = PyImport_ImportModule("threading");
  PyObject* main = threading != nullptr ? PyObject_CallMethod(threading, "main_thread", nullptr) : nullptr;
  PyObject* ident = main != nullptr ? PyObject_GetAttrString(main, "ident") : nullptr;
  unsigned long id = ident != nullptr ? PyLong_AsUnsignedLong(ident) : PyThread_get_thread_ident();
  if (PyErr_Occurred()) {
    PyErr_Clear();
    id = PyThread_get_thread_ident();
  }
  Py_XDECREF(ident);
  Py_XDECREF(main);
  Py_XDECREF(threading);
  main_thread_ident.store(id, std::memory_order_relaxed);

  PyObject* atexit = PyImport_ImportModule("atexit");
  PyObject* hook = PyCFunction_New(&close_gate_def, nullptr);
  PyObject* r =
      atexit != nullptr && hook != nullptr ? PyObject_CallMethod(atexit, "register", "O", hook) : nullptr;
  if (r == nullptr) PyErr_Clear();  // without the hook, interpreter_finalizing() still closes the gate
  Py_XDECREF(r);
  Py_XDECREF(hook);
  Py_XDECREF(atexit);
}

void hang_thread_at_exit() {
  for (;;) pause();
}

void restore_gil_or_hang(PyThreadState* saved) {
  if (!enter_gate()) hang_thread_at_exit();
  PyEval_RestoreThread(saved);
  leave_gate();
}

AcquireGil::AcquireGil() {
  const bool held = PyGILState_Check();
  if (!held && !enter_gate()) return;
  state_ = PyGILState_Ensure();
  tstate_ = current_thread_state();
  if (!held) leave_gate();
}

AcquireGil::~AcquireGil() {
  // A thread state that is no longer current: Python ended this thread inside code called under this
  // guard, and the forced unwind is running the destructor. Releasing it would abort.
  if (tstate_ == nullptr || current_thread_state() != tstate_) return;
  PyGILState_Release(state_);
}

}  // namespace ember::python
