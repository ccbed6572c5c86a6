// Bindings for GraphDef export and import (ember/graph/graph_def.h): a GraphFunction's graph as the bytes
// of a serialized tensorflow.GraphDef, and a GraphFunction over the graph such bytes describe. Python's
// message classes (ember/framework/graph_def.py) are built from the descriptors compiled in here, so both
// languages use the same proto/ember/*.proto, and all meaning (attributes, tensors, functions) is decided
// in C++.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>

#include <functional>
#include <memory>
#include <set>
#include <string>

#include "ember/core/lookup_table.h"
#include "ember/event.pb.h"
#include "ember/example.pb.h"
#include "ember/graph.pb.h"
#include "ember/graph/graph_def.h"
#include "ember/graph/tensor_proto.h"
#include "ember/ops/registry.h"
#include "ember/saved_model.pb.h"
#include "ember/tensor_bundle.pb.h"
#include "ember/trackable_object_graph.pb.h"
#include "python/py_function.h"
#include "python/py_status.h"
#include "python/py_tensor.h"

namespace nb = nanobind;

namespace ember::python {

namespace {

// A GraphDef carries no values of this process, so a floating value the function captured is written as the
// Const it stands for. Branches and loop bodies lift such values into the outermost function (Note [Folded
// values of concrete arguments] in trace/trace_context.cc), where a FunctionDef used to hold them as Consts.
Graph graph_for_export(const FunctionGraph& fn) {
  Graph g = fn.graph;
  static const OpDef& const_op = op_def("Const");
  for (size_t k = 0; k < fn.captured_values.size(); ++k) {
    const TensorRef& value = fn.captured_values[k];
    if (!is_floating(value->dtype()) && !is_complex(value->dtype())) continue;
    Node& n = g.mutable_node(fn.args[fn.num_call_args() + k]);
    n.op = &const_op;
    n.attrs.clear();
    n.attrs.push_back(value);
  }
  return g;
}

}  // namespace

void bind_graph_def(nb::module_& m) {
  // tf.version's GRAPH_DEF_VERSION: the producer version ember's GraphDefs carry.
  m.attr("graph_def_version") = kGraphDefProducer;
  // tf.version's COMPILER_VERSION, spelled as TensorFlow's ("Clang 18.1.8").
#if defined(__clang__)
  m.attr("compiler_version") = "Clang " __clang_version__;
#else
  m.attr("compiler_version") = "GCC " __VERSION__;
#endif
  m.def(
      "graph_def_from_function",
      [](const PyGraphFunction& f) {
        auto bytes = to_graph_def(graph_for_export(f.fn()));
        if (!bytes.ok()) throw_status(bytes.status());
        return nb::bytes(bytes->data(), bytes->size());
      },
      "The function's graph as a serialized tensorflow.GraphDef.");
  m.def(
      "graph_def_and_variable_nodes",
      [](const PyGraphFunction& f) {
        std::map<int64_t, std::string> nodes;
        auto bytes = to_graph_def(graph_for_export(f.fn()), &nodes);
        if (!bytes.ok()) throw_status(bytes.status());
        return nb::make_tuple(nb::bytes(bytes->data(), bytes->size()), nodes);
      },
      "(GraphDef bytes, {variable id: name of the resource Placeholder standing for it}).");
  m.def(
      "function_from_graph_def",
      [](nb::bytes data, const std::string& name, const std::map<std::string, int64_t>& variables) {
        // The ids come from the caller's ember.Variable objects, never from the bytes.
        VariableBindings bindings;
        for (const auto& [node, id] : variables) {
          if (id >= kFirstTableId) {  // a lookup table (Note [Table ids])
            auto table = LookupTableRegistry::global().find(id, "import_graph_def");
            if (!table.ok()) throw_status(table.status());
            bindings.emplace(node, table_binding(std::move(table).value()));
            continue;
          }
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
      "id of a live variable or lookup table the caller holds.");
  m.def(
      "graph_def_descriptors",
      [] {
        // Every file of proto/ember/*.proto that a root message lives in, each after the files it imports
        // (a DescriptorPool accepts a file only once its imports are there). Naming a root here also keeps
        // its object file linked in from the static ember_proto library.
        const google::protobuf::FileDescriptor* roots[] = {
            proto::GraphDef::descriptor()->file(),
            proto::BundleEntryProto::descriptor()->file(),
            proto::TrackableObjectGraph::descriptor()->file(),
            proto::SavedModel::descriptor()->file(),
            proto::Event::descriptor()->file(),
            proto::Example::descriptor()->file(),
        };
        google::protobuf::FileDescriptorSet set;
        std::set<std::string> added;
        std::function<void(const google::protobuf::FileDescriptor*)> add = [&](const auto* file) {
          if (!added.insert(file->name()).second) return;
          for (int i = 0; i < file->dependency_count(); ++i) add(file->dependency(i));
          file->CopyTo(set.add_file());
        };
        for (const auto* file : roots) add(file);
        std::string bytes = set.SerializeAsString();
        return nb::bytes(bytes.data(), bytes.size());
      },
      "The serialized FileDescriptorSet of proto/ember/*.proto (and the google/protobuf files they import), "
      "as compiled into ember, imports first.");
  m.def(
      "tensor_from_tensor_proto",
      [](nb::bytes data) {
        proto::TensorProto message;
        if (!message.ParseFromArray(data.data(), static_cast<int>(data.size())))
          throw_status(
              make_error(Code::kDataLoss, "TensorProto: the bytes are not a serialized TensorProto"));
        TensorRef t;
        Status s = from_tensor_proto(message, t);
        if (!s.ok()) throw_status(s);
        return nb::steal(wrap_tensor(std::move(t)));
      },
      "The tensor a serialized TensorProto holds (raw content, or typed values where the last repeats).");
}

}  // namespace ember::python
