// Bindings for GraphDef export and import (ember/graph/graph_def.h): a GraphFunction's graph as the bytes
// of a serialized tensorflow.GraphDef, and a GraphFunction over the graph such bytes describe. The
// message objects (GraphDef, NodeDef, ...) live in Python, in ember/framework/graph_def.py.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>

#include <memory>
#include <string>

#include "ember/graph/graph_def.h"
#include "python/py_function.h"
#include "python/py_status.h"
#include "python/py_tensor.h"

namespace nb = nanobind;

namespace ember::python {

void bind_graph_def(nb::module_& m) {
  m.def(
      "graph_def_from_function",
      [](const PyGraphFunction& f) {
        std::string bytes = to_graph_def(f.fn().graph);
        return nb::bytes(bytes.data(), bytes.size());
      },
      "The function's graph as a serialized tensorflow.GraphDef.");
  m.def(
      "function_from_graph_def",
      [](nb::bytes data, const std::string& name, const std::map<std::string, int64_t>& variables) {
        // The ids come from the caller's ember.Variable objects, never from the bytes.
        VariableBindings bindings;
        for (const auto& [node, id] : variables) {
          auto variable = ResourceManager::global().find(id, "import_graph_def");
          if (!variable.ok()) throw_status(variable.status());
          bindings.emplace(node, std::move(variable).value());
        }
        auto fn =
            from_graph_def(std::string_view(static_cast<const char*>(data.data()), data.size()), bindings);
        if (!fn.ok()) throw_status(fn.status());
        std::shared_ptr<FunctionGraph> graph = std::move(fn).value();
        graph->name = name;
        return std::make_shared<PyGraphFunction>(std::move(graph));
      },
      nb::arg("data"), nb::arg("name") = "imported", nb::arg("variables") = std::map<std::string, int64_t>(),
      "A GraphFunction over a serialized tensorflow.GraphDef: its Placeholders are the arguments, and it has "
      "no results (carve it with prune). `variables` binds each resource Placeholder (by node name) to the "
      "id of a live variable the caller holds.");
}

}  // namespace ember::python
