#include "ember/state/object_graph.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace ember {
namespace {

namespace fs = std::filesystem;

class ObjectGraphTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ember_object_graph_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A bundle holding `graph` (and one variable, model/w).
  StatusOr<BundleReader> write(const proto::TrackableObjectGraph& graph) {
    std::string prefix = (dir_ / "ck").string();
    BundleWriter w(prefix);
    TensorRef t = TensorImpl::allocate(DType::kFloat32, Shape{2}).value();
    EXPECT_TRUE(w.add("model/w/.ATTRIBUTES/VARIABLE_VALUE", t).ok());
    EXPECT_TRUE(w.add_string(kObjectGraphKey, graph.SerializeAsString()).ok());
    EXPECT_TRUE(w.finish().ok());
    return BundleReader::open(prefix);
  }

  fs::path dir_;
};

proto::TrackableObjectGraph model_graph() {
  proto::TrackableObjectGraph g;
  auto* root = g.add_nodes();
  auto* ref = root->add_children();
  ref->set_node_id(1);
  ref->set_local_name("model");
  auto* model = g.add_nodes();
  ref = model->add_children();
  ref->set_node_id(2);
  ref->set_local_name("w");
  auto* w = g.add_nodes();
  auto* attribute = w->add_attributes();
  attribute->set_name("VARIABLE_VALUE");
  attribute->set_full_name("w");
  attribute->set_checkpoint_key("model/w/.ATTRIBUTES/VARIABLE_VALUE");
  return g;
}

TEST_F(ObjectGraphTest, ReadsAndMapsNodesToKeys) {
  proto::TrackableObjectGraph g = model_graph();
  g.mutable_nodes(2)->add_children()->set_node_id(0);  // a cycle is fine
  auto reader = write(g);
  ASSERT_TRUE(reader.ok());
  auto graph = read_object_graph(*reader);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  EXPECT_EQ(variable_keys(*graph), (std::vector<std::string>{"", "", "model/w/.ATTRIBUTES/VARIABLE_VALUE"}));
}

TEST_F(ObjectGraphTest, BadGraphsAreDataLoss) {
  proto::TrackableObjectGraph g = model_graph();
  g.mutable_nodes(1)->mutable_children(0)->set_node_id(7);
  auto reader = write(g);
  ASSERT_TRUE(reader.ok());
  Status s = read_object_graph(*reader).status();
  EXPECT_EQ(s.code(), Code::kDataLoss);
  EXPECT_NE(s.message().find("names child node 7, but there are 3 nodes"), std::string::npos) << s.message();

  g = model_graph();
  auto* slot = g.mutable_nodes(0)->add_slot_variables();
  slot->set_original_variable_node_id(2);
  slot->set_slot_variable_node_id(-1);
  reader = write(g);
  EXPECT_EQ(read_object_graph(*reader).status().code(), Code::kDataLoss);

  reader = write(proto::TrackableObjectGraph());
  EXPECT_NE(read_object_graph(*reader).status().message().find("no nodes"), std::string::npos);
}

}  // namespace
}  // namespace ember
