// ember's dense lists rewritten into TensorFlow's variant lists (graph/tensor_list_export.cc), and the
// import-side rewrite of a split list read back (graph/tensor_list_import.cc), on hand-written GraphDefs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ember/graph.pb.h"
#include "ember/graph/tensor_list_import.h"

namespace ember::graph_def_internal {
namespace {

proto::NodeDef* add_node(google::protobuf::RepeatedPtrField<proto::NodeDef>& nodes, const std::string& name,
                         const std::string& op, std::vector<std::string> inputs) {
  proto::NodeDef* n = nodes.Add();
  n->set_name(name);
  n->set_op(op);
  for (const std::string& in : inputs) n->add_input(in);
  (*n->mutable_attr())["T"].set_type(proto::DT_FLOAT);
  return n;
}

const proto::NodeDef* find_node(const google::protobuf::RepeatedPtrField<proto::NodeDef>& nodes,
                                const std::string& name) {
  for (const proto::NodeDef& n : nodes)
    if (n.name() == name) return &n;
  return nullptr;
}

// x -> ScatterIntoExistingList -> Gather (a list op: takes the variant) and Identity (dense: a Stack).
proto::GraphDef scatter_then_gather() {
  proto::GraphDef gd;
  auto& nodes = *gd.mutable_node();
  add_node(nodes, "x", "Placeholder", {});
  add_node(nodes, "v", "Placeholder", {});
  add_node(nodes, "i", "Placeholder", {});
  add_node(nodes, "scatter", "TensorListScatterIntoExistingList", {"x", "v", "i"});
  add_node(nodes, "gather", "TensorListGather", {"scatter", "i", "shape"});
  add_node(nodes, "y", "Identity", {"scatter"});
  for (proto::NodeDef& n : nodes)
    if (n.op().rfind("TensorList", 0) == 0) (*n.mutable_attr())["element_dtype"].set_type(proto::DT_FLOAT);
  return gd;
}

TEST(TensorListExport, DenseValuesEnterAsFromTensorAndListsPassBetweenListOps) {
  proto::GraphDef gd = scatter_then_gather();
  ASSERT_TRUE(write_tensorflow_lists(gd).ok());
  const auto& nodes = gd.node();
  // The list-making node is renamed; its Stack takes its name, so "scatter:0" is still the dense value.
  const proto::NodeDef* scatter = find_node(nodes, "scatter/tensor_list");
  ASSERT_NE(scatter, nullptr);
  EXPECT_EQ(scatter->op(), "TensorListScatterIntoExistingList");
  EXPECT_EQ(scatter->attr().count("T"), 0u);
  const proto::NodeDef* from = find_node(nodes, scatter->input(0));
  ASSERT_NE(from, nullptr);
  EXPECT_EQ(from->op(), "TensorListFromTensor");
  EXPECT_EQ(from->input(0), "x");
  EXPECT_EQ(from->attr().at("element_dtype").type(), proto::DT_FLOAT);
  EXPECT_EQ(find_node(nodes, "gather")->input(0), "scatter/tensor_list");
  const proto::NodeDef* stack = find_node(nodes, "scatter");
  ASSERT_NE(stack, nullptr);
  EXPECT_EQ(stack->op(), "TensorListStack");
  EXPECT_EQ(stack->input(0), "scatter/tensor_list");
  EXPECT_EQ(find_node(nodes, "y")->input(0), "scatter");
}

TEST(TensorListExport, AFunctionReturnsItsListStacked) {
  proto::GraphDef gd;
  proto::FunctionDef& f = *gd.mutable_library()->add_function();
  f.mutable_signature()->set_name("f");
  for (const char* arg : {"x", "v", "i"}) f.mutable_signature()->add_input_arg()->set_name(arg);
  proto::NodeDef* scatter =
      add_node(*f.mutable_node_def(), "scatter", "TensorListScatterIntoExistingList", {"x", "v", "i"});
  (*scatter->mutable_attr())["element_dtype"].set_type(proto::DT_FLOAT);
  f.mutable_signature()->add_output_arg()->set_name("output_0");
  (*f.mutable_ret())["output_0"] = "scatter:output_handle:0";
  ASSERT_TRUE(write_tensorflow_lists(gd).ok());
  const proto::FunctionDef& out = gd.library().function(0);
  const std::string ret = out.ret().at("output_0");
  EXPECT_EQ(ret, "scatter/stack:tensor:0");
  const proto::NodeDef* stack = find_node(out.node_def(), "scatter/stack");
  ASSERT_NE(stack, nullptr);
  EXPECT_EQ(stack->input(0), "scatter:output_handle:0");
  EXPECT_EQ(find_node(out.node_def(), "scatter")->input(0), "tensor_list/from_tensor:output_handle:0");
}

TEST(TensorListExport, InplaceUpdateIsWrittenAsTensorScatterUpdate) {
  proto::GraphDef gd;
  auto& nodes = *gd.mutable_node();
  for (const char* name : {"x", "i", "v"}) add_node(nodes, name, "Placeholder", {});
  add_node(nodes, "write", "InplaceUpdate", {"x", "i", "v"});
  ASSERT_TRUE(write_tensorflow_lists(gd).ok());
  const proto::NodeDef* write = find_node(gd.node(), "write");
  ASSERT_NE(write, nullptr);
  EXPECT_EQ(write->op(), "TensorScatterUpdate");
  const proto::NodeDef* indices = find_node(gd.node(), write->input(1));
  ASSERT_NE(indices, nullptr);
  EXPECT_EQ(indices->op(), "ExpandDims");
  EXPECT_EQ(indices->input(0), "i");
}

TEST(TensorListExport, AGraphWithoutListsIsLeftAlone) {
  proto::GraphDef gd;
  add_node(*gd.mutable_node(), "x", "Placeholder", {});
  const std::string before = gd.SerializeAsString();
  ASSERT_TRUE(write_tensorflow_lists(gd).ok());
  EXPECT_EQ(gd.SerializeAsString(), before);
  EXPECT_FALSE(gd.has_library());
}

TEST(TensorListImport, ASplitListReadBackBecomesPlainOps) {
  proto::GraphDef gd;
  auto& nodes = *gd.mutable_node();
  for (const char* name : {"value", "shape", "lengths", "index", "leading"})
    add_node(nodes, name, "Placeholder", {});
  add_node(nodes, "split", "TensorListSplit", {"value", "shape", "lengths"});
  add_node(nodes, "alias", "Identity", {"split"});
  add_node(nodes, "concat", "TensorListConcatV2", {"alias", "shape", "leading"});
  add_node(nodes, "item", "TensorListGetItem", {"split", "index", "shape"});
  add_node(nodes, "count", "TensorListLength", {"split"});
  add_node(nodes, "joined_lengths", "Identity", {"concat:1"});
  for (proto::NodeDef& n : nodes) (*n.mutable_attr())["T"].set_type(proto::DT_VARIANT);
  ASSERT_TRUE(type_tensor_lists(gd).ok());
  EXPECT_EQ(find_node(gd.node(), "split"), nullptr);  // only read back: never made
  EXPECT_EQ(find_node(gd.node(), "alias"), nullptr);
  EXPECT_EQ(find_node(gd.node(), "concat")->op(), "Identity");
  EXPECT_EQ(find_node(gd.node(), "concat")->input(0), "value");
  EXPECT_EQ(find_node(gd.node(), "joined_lengths")->input(0), "concat/lengths");
  EXPECT_EQ(find_node(gd.node(), "item")->op(), "StridedSlice");
  EXPECT_EQ(find_node(gd.node(), "item")->input(0), "value");
  EXPECT_EQ(find_node(gd.node(), "count")->op(), "Size");
  EXPECT_EQ(find_node(gd.node(), "count")->input(0), "lengths");
}

TEST(TensorListImport, ASplitListUsedOtherwiseKeepsItsSplitForThoseUses) {
  proto::GraphDef gd;
  auto& nodes = *gd.mutable_node();
  for (const char* name : {"value", "shape", "lengths"}) add_node(nodes, name, "Placeholder", {});
  add_node(nodes, "split", "TensorListSplit", {"value", "shape", "lengths"});
  add_node(nodes, "count", "TensorListLength", {"split"});
  add_node(nodes, "stack", "TensorListStack", {"split", "shape"});
  (*nodes.Mutable(3)->mutable_attr())["element_dtype"].set_type(proto::DT_FLOAT);
  (*nodes.Mutable(5)->mutable_attr())["element_dtype"].set_type(proto::DT_FLOAT);
  ASSERT_TRUE(type_tensor_lists(gd).ok());
  EXPECT_NE(find_node(gd.node(), "split"), nullptr);
  EXPECT_EQ(find_node(gd.node(), "stack")->input(0), "split");
  EXPECT_EQ(find_node(gd.node(), "count")->op(), "Size");
}

}  // namespace
}  // namespace ember::graph_def_internal
