// A traced (or carved) graph function as the Python extension holds it: the function graph, its compiled
// plan and its name in the function library (so PartitionedCall nodes can call it).
#pragma once

#include <nanobind/nanobind.h>

#include <memory>
#include <string>
#include <vector>

#include "ember/runtime/executor.h"

namespace ember::python {

namespace nb = nanobind;

class PyGraphFunction {
 public:
  explicit PyGraphFunction(std::shared_ptr<const FunctionGraph> fn);
  ~PyGraphFunction();

  const FunctionGraph& fn() const { return *fn_; }
  const std::string& library_name() const { return library_name_; }
  const CompiledFunction& compiled() const { return compiled_; }

  /// Runs on concrete tensors (the caller holds the GIL; kernels that are long release nothing yet).
  Status run(std::span<TensorImpl* const> args, OutputList& results) const;
  nb::list call(nb::list args) const;
  std::shared_ptr<PyGraphFunction> prune(std::vector<std::string> inputs,
                                         std::vector<std::string> outputs) const;
  nb::dict node(int32_t i) const;

 private:
  std::shared_ptr<const FunctionGraph> fn_;
  CompiledFunction compiled_;
  std::string library_name_;
};

}  // namespace ember::python
