// ember.config.optimizer and ember.config.threading: the optimizer's pass switches (TensorFlow's
// tf.config.optimizer option names) and the executor's thread counts.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "ember/core/parallel.h"
#include "ember/ops/graph_ops.h"
#include "ember/ops/loop_fast_path.h"
#include "ember/passes/pass.h"
#include "ember/runtime/fast_loop.h"
#include "ember/runtime/parallel_loop.h"

namespace nb = nanobind;

namespace ember::python {
namespace {

struct BoolOption {
  const char* name;
  bool passes::OptimizerOptions::*field;
  bool inverted;  // TF's disable_model_pruning is "pruning off"
};

constexpr BoolOption kBoolOptions[] = {
    {"constant_folding", &passes::OptimizerOptions::constant_folding, false},
    {"arithmetic_optimization", &passes::OptimizerOptions::arithmetic_optimization, false},
    {"common_subgraph_elimination", &passes::OptimizerOptions::common_subgraph_elimination, false},
    {"function_optimization", &passes::OptimizerOptions::function_inlining, false},
    {"elementwise_fusion", &passes::OptimizerOptions::elementwise_fusion, false},
    {"sibling_matmul_merging", &passes::OptimizerOptions::sibling_matmul_merging, false},
    {"loop_optimization", &passes::OptimizerOptions::loop_optimization, false},
    {"remapping", &passes::OptimizerOptions::remapping, false},
    {"memory_optimization", &passes::OptimizerOptions::memory_optimization, false},
    {"disable_model_pruning", &passes::OptimizerOptions::pruning, true},
    {"disable_meta_optimizer", &passes::OptimizerOptions::disable_meta_optimizer, false},
};

// TF options ember accepts but has no pass for (their rewrites do not apply to ember's graphs).
constexpr const char* kAcceptedWithoutEffect[] = {"layout_optimizer",
                                                  "shape_optimization",
                                                  "dependency_optimization",
                                                  "debug_stripper",
                                                  "scoped_allocator_optimization",
                                                  "pin_to_host_optimization",
                                                  "implementation_selector",
                                                  "auto_mixed_precision",
                                                  "auto_parallel"};

nb::dict get_options() {
  passes::OptimizerOptions options = passes::optimizer_options();
  nb::dict d;
  for (const BoolOption& o : kBoolOptions) d[o.name] = (options.*o.field) != o.inverted;
  d["constant_folding_max_bytes"] = options.constant_folding_max_bytes;
  return d;
}

void set_options(nb::dict values) {
  passes::OptimizerOptions options = passes::optimizer_options();
  for (auto [key, value] : values) {
    if (!nb::isinstance<nb::str>(key))
      throw nb::type_error("set_experimental_options: option names must be strings");
    std::string name = nb::cast<std::string>(key);
    bool known = false;
    for (const BoolOption& o : kBoolOptions) {
      if (name != o.name) continue;
      // TF reads these options as booleans; an arbitrary object is not silently truthy.
      if (!PyBool_Check(value.ptr()) && !PyLong_Check(value.ptr()))
        throw nb::type_error(("set_experimental_options: option '" + name + "' must be a bool").c_str());
      options.*o.field = (PyObject_IsTrue(value.ptr()) == 1) != o.inverted;
      known = true;
    }
    if (name == "constant_folding_max_bytes") {
      int overflow = 0;
      long long n = PyLong_Check(value.ptr()) ? PyLong_AsLongLongAndOverflow(value.ptr(), &overflow) : -1;
      if (n == -1 && PyErr_Occurred()) throw nb::python_error();
      if (!PyLong_Check(value.ptr()) || overflow != 0 || n < 0)
        throw nb::value_error(
            "set_experimental_options: constant_folding_max_bytes must be an int in "
            "[0, 2**63)");
      options.constant_folding_max_bytes = n;
      known = true;
    }
    if (name == "min_graph_nodes") known = true;
    for (const char* accepted : kAcceptedWithoutEffect) known = known || name == accepted;
    if (!known) throw nb::value_error(("set_experimental_options: unknown option '" + name + "'").c_str());
  }
  passes::set_optimizer_options(options);
}

}  // namespace

void bind_config(nb::module_& m) {
  m.def("optimizer_get_options", &get_options);
  m.def("optimizer_set_options", &set_options);
  m.def("set_inter_op_threads", &set_inter_op_threads);
  // For fuzzers (tests/fuzz): a While that runs longer ends as ResourceExhausted (0: no cap).
  m.def("set_max_loop_iterations", [](int64_t n) { set_max_loop_iterations(n); });
  m.def("inter_op_threads", &inter_op_threads);
  // EMBER_FAST_LOOPS at run time: tests compare a loop's fast path with its normal one.
  m.def("set_fast_loops", &set_fast_loops_enabled);
  m.def("fast_loops", &fast_loops_enabled);
  m.def("fast_loop_iterations", &FastLoop::iterations_run);
  m.def("native_loop_iterations", &FastLoop::native_iterations_run);  // those run by native loops
  // Overlapped loop iterations (Note [Parallel iterations]): tests see that bodies were in flight together.
  m.def("parallel_loop_stats", [] {
    nb::dict stats;
    stats["iterations"] = ParallelLoop::iterations_run();
    stats["max_in_flight"] = ParallelLoop::max_in_flight();
    stats["max_running"] = ParallelLoop::max_running();
    return stats;
  });
  m.def("reset_parallel_loop_stats", &ParallelLoop::reset_counters);
}

}  // namespace ember::python
