#include "ember/state/saved_model.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "ember/api/saved_model.h"
#include "ember/core/lookup_table.h"
#include "ember/ember.h"
#include "ember/graph/tensor_proto.h"
#include "ember/saved_model.pb.h"
#include "ember/state/tensor_bundle.h"
#include "ember/trackable_object_graph.pb.h"

namespace ember {
namespace {

namespace fs = std::filesystem;

// A SavedModel laid out as TensorFlow 2.21 writes one (checked against tf.saved_model.save of a tf.Module
// with a variable and a tf.function with an input_signature):
//   w = VarHandleOp(shared_name="w", dtype=float, shape=[2])
//   serving_default_x = Placeholder(float, [-1, 2])
//   StatefulPartitionedCall(serving_default_x, w; f=signature_wrapper)   -> x * w + 1
// the signature wrapper calls the traced function with the variable passed on; the object graph says the
// wrapper's bound input is object 1, a variable whose checkpoint key the checkpoint's object graph gives.
struct ModelParts {
  proto::SavedModel saved;
  proto::TrackableObjectGraph checkpoint_objects;
  std::map<std::string, TensorRef> values;  // checkpoint key -> value
};

proto::NodeDef* add_node(proto::GraphDef* g, const std::string& name, const std::string& op,
                         std::vector<std::string> inputs = {}) {
  proto::NodeDef* n = g->add_node();
  n->set_name(name);
  n->set_op(op);
  for (auto& i : inputs) n->add_input(i);
  return n;
}

void set_shape(proto::AttrValue& attr, std::vector<int64_t> dims) {
  to_shape_proto(dims, false, attr.mutable_shape());
}

proto::FunctionDef* add_function(proto::GraphDef* g, const std::string& name) {
  proto::FunctionDef* f = g->mutable_library()->add_function();
  f->mutable_signature()->set_name(name);
  f->mutable_signature()->set_is_stateful(true);
  auto* x = f->mutable_signature()->add_input_arg();
  x->set_name("x");
  x->set_type(proto::DT_FLOAT);
  auto* w = f->mutable_signature()->add_input_arg();
  w->set_name("w");
  w->set_type(proto::DT_RESOURCE);
  auto* y = f->mutable_signature()->add_output_arg();
  y->set_name("y");
  y->set_type(proto::DT_FLOAT);
  return f;
}

ModelParts make_model() {
  ModelParts m;
  proto::MetaGraphDef* meta = m.saved.add_meta_graphs();
  meta->mutable_meta_info_def()->add_tags("serve");
  proto::GraphDef* g = meta->mutable_graph_def();
  g->mutable_versions()->set_producer(2474);

  proto::NodeDef* w = add_node(g, "w", "VarHandleOp");
  (*w->mutable_attr())["dtype"].set_type(proto::DT_FLOAT);
  (*w->mutable_attr())["shared_name"].set_s("w");
  set_shape((*w->mutable_attr())["shape"], {2});
  add_node(g, "w/Read/ReadVariableOp", "ReadVariableOp", {"w"});
  proto::NodeDef* x = add_node(g, "serving_default_x", "Placeholder");
  (*x->mutable_attr())["dtype"].set_type(proto::DT_FLOAT);
  set_shape((*x->mutable_attr())["shape"], {-1, 2});
  proto::NodeDef* call =
      add_node(g, "StatefulPartitionedCall", "StatefulPartitionedCall", {"serving_default_x", "w"});
  (*call->mutable_attr())["f"].mutable_func()->set_name("signature_wrapper");
  (*call->mutable_attr())["Tin"].mutable_list()->add_type(proto::DT_FLOAT);
  (*call->mutable_attr())["Tin"].mutable_list()->add_type(proto::DT_RESOURCE);
  (*call->mutable_attr())["Tout"].mutable_list()->add_type(proto::DT_FLOAT);
  add_node(g, "NoOp", "NoOp");
  // The saver's function: no signature reaches it, so its ops (not ember's) are never imported.
  proto::NodeDef* saver = add_node(g, "saver_filename", "Placeholder");
  (*saver->mutable_attr())["dtype"].set_type(proto::DT_STRING);
  add_node(g, "StatefulPartitionedCall_1", "StatefulPartitionedCall", {"saver_filename", "w"});

  proto::FunctionDef* traced = add_function(g, "traced");
  {
    proto::NodeDef* read = traced->add_node_def();
    read->set_name("read");
    read->set_op("ReadVariableOp");
    read->add_input("w");
    (*read->mutable_attr())["dtype"].set_type(proto::DT_FLOAT);
    proto::NodeDef* mul = traced->add_node_def();
    mul->set_name("mul");
    mul->set_op("Mul");
    mul->add_input("x");
    mul->add_input("read:value:0");
    (*mul->mutable_attr())["T"].set_type(proto::DT_FLOAT);
    proto::NodeDef* one = traced->add_node_def();
    one->set_name("one");
    one->set_op("Const");
    (*one->mutable_attr())["dtype"].set_type(proto::DT_FLOAT);
    auto t = TensorImpl::allocate(DType::kFloat32, Shape({}));
    *static_cast<float*>((*t)->mutable_raw_data()) = 1.0f;
    to_tensor_proto(**t, (*one->mutable_attr())["value"].mutable_tensor());
    proto::NodeDef* add = traced->add_node_def();
    add->set_name("add");
    add->set_op("AddV2");
    add->add_input("mul:z:0");
    add->add_input("one:output:0");
    (*add->mutable_attr())["T"].set_type(proto::DT_FLOAT);
    (*traced->mutable_ret())["y"] = "add:z:0";
  }
  proto::FunctionDef* wrapper = add_function(g, "signature_wrapper");
  {
    proto::NodeDef* inner = wrapper->add_node_def();
    inner->set_name("inner");
    inner->set_op("StatefulPartitionedCall");
    inner->add_input("x");
    inner->add_input("w");
    (*inner->mutable_attr())["f"].mutable_func()->set_name("traced");
    (*inner->mutable_attr())["Tin"].mutable_list()->add_type(proto::DT_FLOAT);
    (*inner->mutable_attr())["Tin"].mutable_list()->add_type(proto::DT_RESOURCE);
    (*inner->mutable_attr())["Tout"].mutable_list()->add_type(proto::DT_FLOAT);
    proto::NodeDef* id = wrapper->add_node_def();
    id->set_name("identity");
    id->set_op("Identity");
    id->add_input("inner:output:0");
    (*id->mutable_attr())["T"].set_type(proto::DT_FLOAT);
    (*wrapper->mutable_ret())["y"] = "identity:output:0";
  }

  proto::SignatureDef& sig = (*meta->mutable_signature_def())["serving_default"];
  proto::TensorInfo& in = (*sig.mutable_inputs())["x"];
  in.set_name("serving_default_x:0");
  in.set_dtype(proto::DT_FLOAT);
  to_shape_proto(std::vector<int64_t>{-1, 2}, false, in.mutable_tensor_shape());
  proto::TensorInfo& out = (*sig.mutable_outputs())["y"];
  out.set_name("StatefulPartitionedCall:0");
  out.set_dtype(proto::DT_FLOAT);
  to_shape_proto(std::vector<int64_t>{-1, 2}, false, out.mutable_tensor_shape());
  sig.set_method_name("tensorflow/serving/predict");
  proto::SignatureDef& init = (*meta->mutable_signature_def())["__saved_model_init_op"];
  (*init.mutable_outputs())["__saved_model_init_op"].set_name("NoOp");

  proto::SavedObjectGraph* objects = meta->mutable_object_graph_def();
  proto::SavedObject* root = objects->add_nodes();
  auto* child = root->add_children();
  child->set_node_id(1);
  child->set_local_name("w");
  root->mutable_user_object()->set_identifier("_generic_user_object");
  proto::SavedObject* variable = objects->add_nodes();
  variable->mutable_variable()->set_dtype(proto::DT_FLOAT);
  variable->mutable_variable()->set_name("w");
  to_shape_proto(std::vector<int64_t>{2}, false, variable->mutable_variable()->mutable_shape());
  (*objects->mutable_concrete_functions())["signature_wrapper"].add_bound_inputs(1);
  (*objects->mutable_concrete_functions())["traced"].add_bound_inputs(1);

  auto* troot = m.checkpoint_objects.add_nodes();
  auto* tchild = troot->add_children();
  tchild->set_node_id(1);
  tchild->set_local_name("w");
  auto* tvar = m.checkpoint_objects.add_nodes();
  auto* attr = tvar->add_attributes();
  attr->set_name("VARIABLE_VALUE");
  attr->set_full_name("w");
  attr->set_checkpoint_key("w/.ATTRIBUTES/VARIABLE_VALUE");
  m.values["w/.ATTRIBUTES/VARIABLE_VALUE"] = Tensor::from_vector<float>({2.f, 3.f}).ref();
  return m;
}

class SavedModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ember_saved_model_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const ModelParts& m, bool with_object_graph = true) {
    fs::create_directories(dir_ / "variables");
    std::ofstream(dir_ / "saved_model.pb", std::ios::binary) << m.saved.SerializeAsString();
    BundleWriter writer((dir_ / "variables" / "variables").string());
    for (const auto& [key, value] : m.values) EXPECT_TRUE(writer.add(key, value).ok());
    if (with_object_graph)
      EXPECT_TRUE(
          writer.add_string("_CHECKPOINTABLE_OBJECT_GRAPH", m.checkpoint_objects.SerializeAsString()).ok());
    Status s = writer.finish();
    EXPECT_TRUE(s.ok()) << s.to_string();
    return dir_.string();
  }

  // Loading fails with `code` and a message holding every one of `parts`.
  void expect_load_error(const ModelParts& m, Code code, std::vector<std::string> parts) {
    auto model = LoadedSavedModel::load(write(m));
    ASSERT_FALSE(model.ok());
    EXPECT_EQ(model.status().code(), code) << model.status().to_string();
    for (const std::string& part : parts)
      EXPECT_NE(model.status().message().find(part), std::string::npos)
          << "'" << part << "' not in: " << model.status().message();
  }

  fs::path dir_;
};

TEST_F(SavedModelTest, RunsTheSignatureWithTheRestoredVariable) {
  SavedModel model = load_saved_model(write(make_model()));
  EXPECT_EQ(model.signature_names(), std::vector<std::string>{"serving_default"});  // not the init op
  EXPECT_EQ(model.num_variables(), 1u);
  SavedModel::Signature sig = model.signature("serving_default");
  ASSERT_EQ(sig.inputs().size(), 1u);
  EXPECT_EQ(sig.inputs()[0].key, "x");
  EXPECT_EQ(sig.inputs()[0].shape, (std::vector<int64_t>{-1, 2}));
  EXPECT_EQ(sig.outputs()[0].key, "y");
  auto out = sig({{"x", Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2})}});
  EXPECT_EQ(out.at("y").to_vector<float>(), (std::vector<float>{3, 7, 7, 13}));  // x * [2, 3] + 1
  // Another batch size: the same compiled function.
  out = sig({{"x", Tensor::from_vector<float>({1, 1}, {1, 2})}});
  EXPECT_EQ(out.at("y").to_vector<float>(), (std::vector<float>{3, 4}));
}

TEST_F(SavedModelTest, SignatureOutlivesTheModel) {
  std::optional<SavedModel::Signature> sig;
  { sig = load_saved_model(write(make_model())).signature("serving_default"); }
  auto out = (*sig)({{"x", Tensor::from_vector<float>({1, 1}, {1, 2})}});
  EXPECT_EQ(out.at("y").to_vector<float>(), (std::vector<float>{3, 4}));
}

TEST_F(SavedModelTest, ConcurrentCallsOfOneSignature) {
  // A server calls one loaded signature from many request threads.
  SavedModel::Signature sig = load_saved_model(write(make_model())).signature("serving_default");
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const float v = static_cast<float>(t * 100 + i);
        auto out = sig({{"x", Tensor::from_vector<float>({v, v}, {1, 2})}});
        if (out.at("y").to_vector<float>() != std::vector<float>{2 * v + 1, 3 * v + 1}) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST_F(SavedModelTest, HandleNoCallBindsIsMatchedBySharedName) {
  ModelParts m = make_model();
  m.saved.mutable_meta_graphs(0)->mutable_object_graph_def()->mutable_concrete_functions()->clear();
  auto out = load_saved_model(write(m)).signature("serving_default")(
      {{"x", Tensor::from_vector<float>({1, 1}, {1, 2})}});
  EXPECT_EQ(out.at("y").to_vector<float>(), (std::vector<float>{3, 4}));
}

TEST_F(SavedModelTest, CyclicObjectGraphStillLoads) {
  // The loader follows ids, never walks the object graph, so a cycle cannot make it loop.
  ModelParts m = make_model();
  auto* back = m.saved.mutable_meta_graphs(0)->mutable_object_graph_def()->mutable_nodes(1)->add_children();
  back->set_node_id(0);
  back->set_local_name("parent");
  EXPECT_TRUE(LoadedSavedModel::load(write(m)).ok());
}

TEST_F(SavedModelTest, CallErrorsNameTheSignatureAndInput) {
  SavedModel::Signature sig = load_saved_model(write(make_model())).signature("serving_default");
  auto expect_error = [&](const std::map<std::string, Tensor>& inputs, std::vector<std::string> parts) {
    auto out = sig.call(inputs);
    ASSERT_FALSE(out.ok());
    EXPECT_EQ(out.status().code(), Code::kInvalidArgument);
    for (const std::string& part : parts)
      EXPECT_NE(out.status().message().find(part), std::string::npos) << out.status().message();
  };
  expect_error({}, {"signature 'serving_default'", "'x'", "missing"});
  expect_error({{"x", Tensor::from_vector<float>({1, 1}, {1, 2})}, {"z", Tensor({1.f})}},
               {"'z'", "does not take"});
  expect_error({{"x", Tensor::from_vector<int32_t>({1, 1}, {1, 2})}}, {"'x'", "float32 [None, 2]", "int32"});
  expect_error({{"x", Tensor::from_vector<float>({1, 1, 1}, {1, 3})}}, {"'x'", "float32 [None, 2]", "[1,3]"});
  expect_error({{"x", Tensor::from_vector<float>({1, 1}, {2})}}, {"'x'", "float32 [None, 2]"});
  EXPECT_THROW(sig({}), StatusError);
}

TEST_F(SavedModelTest, UnknownSignatureListsTheOthers) {
  SavedModel model = load_saved_model(write(make_model()));
  try {
    model.signature("predict");
    FAIL() << "no error";
  } catch (const StatusError& e) {
    EXPECT_EQ(e.status().code(), Code::kNotFound);
    EXPECT_NE(e.status().message().find("serving_default"), std::string::npos) << e.what();
  }
}

TEST_F(SavedModelTest, MissingDirectoryAndFiles) {
  auto model = LoadedSavedModel::load("/nonexistent/ember/model");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), Code::kNotFound);
  EXPECT_NE(model.status().message().find("/nonexistent/ember/model"), std::string::npos);
  fs::create_directories(dir_);
  model = LoadedSavedModel::load(dir_.string());
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("saved_model.pb"), std::string::npos) << model.status().message();
  EXPECT_THROW(load_saved_model("/nonexistent/ember/model"), StatusError);
}

TEST_F(SavedModelTest, BytesThatAreNotASavedModel) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "saved_model.pb", std::ios::binary) << "\xff\xff\xff\xff garbage";
  auto model = LoadedSavedModel::load(dir_.string());
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), Code::kDataLoss);
  EXPECT_NE(model.status().message().find("saved_model.pb"), std::string::npos);
}

TEST_F(SavedModelTest, WrongTagsListTheTagSetsThereAre) {
  auto model = LoadedSavedModel::load(write(make_model()), {"train"});
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), Code::kNotFound);
  EXPECT_NE(model.status().message().find("{serve}"), std::string::npos) << model.status().message();
}

TEST_F(SavedModelTest, SignatureNamingAMissingTensor) {
  ModelParts m = make_model();
  (*(*m.saved.mutable_meta_graphs(0)->mutable_signature_def())["serving_default"].mutable_outputs())["y"]
      .set_name("nope:0");
  expect_load_error(m, Code::kInvalidArgument,
                    {"signature 'serving_default'", "'y'", "'nope:0'", "not in the graph"});
}

TEST_F(SavedModelTest, CallOfAMissingFunction) {
  ModelParts m = make_model();
  auto* g = m.saved.mutable_meta_graphs(0)->mutable_graph_def();
  (*g->mutable_node(3)->mutable_attr())["f"].mutable_func()->set_name("gone");
  expect_load_error(m, Code::kInvalidArgument,
                    {"StatefulPartitionedCall", "'gone'", "not in the GraphDef's library"});
}

TEST_F(SavedModelTest, FunctionCallingItself) {
  ModelParts m = make_model();
  auto* g = m.saved.mutable_meta_graphs(0)->mutable_graph_def();
  // traced now calls the wrapper, which calls traced: a cycle the importer refuses.
  auto* f = g->mutable_library()->mutable_function(0);
  f->mutable_node_def(1)->set_op("StatefulPartitionedCall");
  (*f->mutable_node_def(1)->mutable_attr())["f"].mutable_func()->set_name("signature_wrapper");
  auto model = LoadedSavedModel::load(write(m));
  EXPECT_FALSE(model.ok());
}

TEST_F(SavedModelTest, VariableMissingFromTheCheckpoint) {
  ModelParts m = make_model();
  m.values.clear();
  m.values["other"] = Tensor({1.f}).ref();
  expect_load_error(m, Code::kNotFound, {"variable 'w'", "w/.ATTRIBUTES/VARIABLE_VALUE"});
}

TEST_F(SavedModelTest, CheckpointWithoutObjectGraph) {
  ModelParts m = make_model();
  auto model = LoadedSavedModel::load(write(m, /*with_object_graph=*/false));
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("_CHECKPOINTABLE_OBJECT_GRAPH"), std::string::npos)
      << model.status().message();
}

TEST_F(SavedModelTest, VariableOfAnotherDtypeOrShape) {
  ModelParts m = make_model();
  m.values["w/.ATTRIBUTES/VARIABLE_VALUE"] = Tensor::from_vector<int32_t>({1, 2}).ref();
  expect_load_error(m, Code::kInvalidArgument, {"variable 'w'", "float32", "int32"});
  m.values["w/.ATTRIBUTES/VARIABLE_VALUE"] = Tensor::from_vector<float>({1, 2, 3}).ref();
  expect_load_error(m, Code::kInvalidArgument, {"variable 'w'", "[2]", "[3]"});
}

// tf.Variable(..., shape=[None]) saved: the loaded variable keeps the declared shape, so the compiled
// signature serves a value of another length assigned later.
TEST_F(SavedModelTest, VariableOfPartlyKnownShapeKeepsIt) {
  ModelParts m = make_model();
  proto::MetaGraphDef* meta = m.saved.mutable_meta_graphs(0);
  for (proto::NodeDef& n : *meta->mutable_graph_def()->mutable_node())
    if (n.name() == "w") set_shape((*n.mutable_attr())["shape"], {-1});
  to_shape_proto(std::vector<int64_t>{-1}, false,
                 meta->mutable_object_graph_def()->mutable_nodes(1)->mutable_variable()->mutable_shape());
  auto model = LoadedSavedModel::load(write(m));
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const std::shared_ptr<VariableResource>& w = (*model)->variables().at("w");
  EXPECT_EQ(w->shape(), Shape{kUnknownDim});
  auto sig = (*model)->signature("serving_default");
  ASSERT_TRUE(sig.ok());
  std::map<std::string, TensorRef, std::less<>> inputs;
  inputs["x"] = Tensor::from_vector<float>({1, 2}, {1, 2}).ref();
  w->write(Tensor::from_vector<float>({5.f}).ref());  // x * [5] + 1
  auto out = (*sig)->call(inputs);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(Tensor((*out)[0]).to_vector<float>(), (std::vector<float>{6, 11}));
}

TEST_F(SavedModelTest, ObjectIdsOutOfRange) {
  ModelParts m = make_model();
  auto& functions = *m.saved.mutable_meta_graphs(0)->mutable_object_graph_def()->mutable_concrete_functions();
  functions["signature_wrapper"].set_bound_inputs(0, 1 << 30);
  expect_load_error(m, Code::kInvalidArgument, {"object 1073741824"});
  m = make_model();
  m.checkpoint_objects.mutable_nodes()->RemoveLast();  // a checkpoint of the root alone
  m.checkpoint_objects.mutable_nodes(0)->clear_children();
  expect_load_error(m, Code::kInvalidArgument, {"variable 'w'", "object 1", "checkpoint's object graph"});
  m = make_model();  // a dangling child in the checkpoint's object graph: its reader refuses it
  m.checkpoint_objects.mutable_nodes()->RemoveLast();
  expect_load_error(m, Code::kDataLoss, {"variables", "names child node 1"});
  m = make_model();  // bound to the root, which is not a variable
  (*m.saved.mutable_meta_graphs(0)
        ->mutable_object_graph_def()
        ->mutable_concrete_functions())["signature_wrapper"]
      .set_bound_inputs(0, 0);
  expect_load_error(m, Code::kInvalidArgument, {"not a variable"});
}

TEST_F(SavedModelTest, HugeShapeInASignature) {
  ModelParts m = make_model();
  auto& info =
      (*(*m.saved.mutable_meta_graphs(0)->mutable_signature_def())["serving_default"].mutable_inputs())["x"];
  info.mutable_tensor_shape()->mutable_dim(0)->set_size(int64_t{1} << 62);
  info.mutable_tensor_shape()->mutable_dim(1)->set_size(int64_t{1} << 62);
  expect_load_error(m, Code::kInvalidArgument, {"'x'"});
}

// Every truncation and many bit flips of a valid saved_model.pb: a Status or a model, never a crash.
TEST_F(SavedModelTest, TruncatedAndBitFlippedBytes) {
  ModelParts m = make_model();
  const std::string dir = write(m);
  const std::string bytes = m.saved.SerializeAsString();
  const std::string prefix = dir + "/variables/variables";
  int ok = 0;
  for (size_t n = 0; n < bytes.size(); n += 1) {
    auto model =
        LoadedSavedModel::load_from_bytes(std::string_view(bytes).substr(0, n), prefix, {"serve"}, dir);
    ok += model.ok();
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 400; ++i) {
    std::string mutated = bytes;
    for (int k = 0; k < 1 + i % 4; ++k)
      mutated[rng() % mutated.size()] ^= static_cast<char>(1 << (rng() % 8));
    auto model = LoadedSavedModel::load_from_bytes(mutated, prefix, {"serve"}, dir);
    if (!model.ok()) continue;
    for (const std::string& name : (*model)->signature_names()) {
      auto sig = (*model)->signature(name);
      ASSERT_TRUE(sig.ok());
      std::map<std::string, TensorRef, std::less<>> inputs;
      inputs["x"] = Tensor::from_vector<float>({1, 1}, {1, 2}).ref();
      (void)(*sig)->call(inputs);
    }
  }
  EXPECT_LT(ok, static_cast<int>(bytes.size()));  // most truncations fail (and say why)
}

// A TensorFlow 1 style model whose signatures name top-level tensors of two MutableHashTableV2 nodes with
// one shared_name: "insert" (k, v -> size, through `writer`) and "find" (k -> v, through `reader`).
ModelParts make_table_model() {
  ModelParts m;
  proto::MetaGraphDef* meta = m.saved.add_meta_graphs();
  meta->mutable_meta_info_def()->add_tags("serve");
  proto::GraphDef* g = meta->mutable_graph_def();
  g->mutable_versions()->set_producer(2474);
  for (const char* name : {"k", "v"}) {
    proto::NodeDef* p = add_node(g, name, "Placeholder");
    (*p->mutable_attr())["dtype"].set_type(proto::DT_INT64);
    set_shape((*p->mutable_attr())["shape"], {-1});
  }
  for (const char* name : {"writer", "reader"}) {
    proto::NodeDef* t = add_node(g, name, "MutableHashTableV2");
    (*t->mutable_attr())["shared_name"].set_s("vocab");
    (*t->mutable_attr())["key_dtype"].set_type(proto::DT_INT64);
    (*t->mutable_attr())["value_dtype"].set_type(proto::DT_INT64);
  }
  auto set_types = [](proto::NodeDef* n) {
    (*n->mutable_attr())["Tin"].set_type(proto::DT_INT64);
    (*n->mutable_attr())["Tout"].set_type(proto::DT_INT64);
  };
  set_types(add_node(g, "insert", "LookupTableInsertV2", {"writer", "k", "v"}));
  add_node(g, "size", "LookupTableSizeV2", {"writer", "^insert"});
  proto::NodeDef* missing = add_node(g, "missing", "Const");
  (*missing->mutable_attr())["dtype"].set_type(proto::DT_INT64);
  to_tensor_proto(*Tensor::from_vector<int64_t>({-1}, {}).ref(),
                  (*missing->mutable_attr())["value"].mutable_tensor());
  set_types(add_node(g, "find", "LookupTableFindV2", {"reader", "k", "missing"}));

  auto info = [](proto::SignatureDef& sig, bool input, const char* key, const char* tensor,
                 std::vector<int64_t> shape) {
    proto::TensorInfo& t = (*(input ? sig.mutable_inputs() : sig.mutable_outputs()))[key];
    t.set_name(tensor);
    t.set_dtype(proto::DT_INT64);
    to_shape_proto(shape, false, t.mutable_tensor_shape());
  };
  proto::SignatureDef& insert = (*meta->mutable_signature_def())["insert"];
  info(insert, true, "k", "k:0", {-1});
  info(insert, true, "v", "v:0", {-1});
  info(insert, false, "size", "size:0", {});
  proto::SignatureDef& find = (*meta->mutable_signature_def())["find"];
  info(find, true, "k", "k:0", {-1});
  info(find, false, "v", "find:0", {-1});
  m.checkpoint_objects.add_nodes();
  meta->mutable_object_graph_def()->add_nodes()->mutable_user_object()->set_identifier(
      "_generic_user_object");
  return m;
}

TEST_F(SavedModelTest, TablesAreSharedByNameWithinALoadAndNotAcrossLoads) {
  // As TensorFlow's C++ loader, whose Session holds the tables: Note [Tables shared within one load].
  const std::string dir = write(make_table_model());
  SavedModel first = load_saved_model(dir), second = load_saved_model(dir);
  auto keys = Tensor::from_vector<int64_t>({7, 8});
  auto size = first.signature("insert")({{"k", keys}, {"v", Tensor::from_vector<int64_t>({70, 80})}});
  EXPECT_EQ(size.at("size").to_vector<int64_t>(), (std::vector<int64_t>{2}));
  // `reader` shares `writer`'s table within the first load ...
  EXPECT_EQ(first.signature("find")({{"k", keys}}).at("v").to_vector<int64_t>(),
            (std::vector<int64_t>{70, 80}));
  // ... and the second load has tables of its own, as has an op run outside any load.
  EXPECT_EQ(second.signature("find")({{"k", keys}}).at("v").to_vector<int64_t>(),
            (std::vector<int64_t>{-1, -1}));
  auto outside = LookupTableRegistry::global().create_for_op("MutableHashTableV2", "", "vocab", DType::kInt64,
                                                             DType::kInt64, /*is_mutable=*/true);
  ASSERT_TRUE(outside.ok());
  EXPECT_EQ((*outside)->size(), 0);
}

TEST_F(SavedModelTest, SignaturesOwnTheLoadsTables) {
  std::optional<SavedModel::Signature> insert, find;
  {
    SavedModel model = load_saved_model(write(make_table_model()));
    insert = model.signature("insert");
    find = model.signature("find");
  }
  auto keys = Tensor::from_vector<int64_t>({7});
  (*insert)({{"k", keys}, {"v", Tensor::from_vector<int64_t>({70})}});
  EXPECT_EQ((*find)({{"k", keys}}).at("v").to_vector<int64_t>(), (std::vector<int64_t>{70}));
  // The registry no longer owns a table of this load: the signatures do.
  EXPECT_TRUE(LookupTableRegistry::global().release_shared("_load_").empty());
}

}  // namespace
}  // namespace ember
