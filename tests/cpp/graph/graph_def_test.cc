#include "ember/graph/graph_def.h"

#include <gtest/gtest.h>

#include <random>

#include "../passes/pass_testing.h"
#include "ember/ember.h"
#include "ember/graph.pb.h"
#include "ember/graph/tensor_proto.h"
#include "ember/ops/registry.h"
#include "ember/runtime/executor.h"
#include "ember/trace/trace_context.h"
#include "wire_testing.h"

namespace ember {
namespace {

using testing::Writer;

// to_graph_def, which must succeed here.
std::string export_ok(const Graph& g) {
  auto bytes = to_graph_def(g);
  EXPECT_TRUE(bytes.ok()) << bytes.status().to_string();
  return bytes.ok() ? *bytes : std::string();
}

std::string bytes_of(std::initializer_list<int> bytes) {
  std::string s;
  for (int b : bytes) s.push_back(static_cast<char>(b));
  return s;
}

// square(square(x)) for a float32 x of unknown rank, traced from C++ (no source locations).
std::shared_ptr<FunctionGraph> trace_square_of_square() {
  auto fn = std::make_shared<FunctionGraph>();
  fn->name = "f";
  TraceContext ctx(fn.get());
  TraceScope scope(ctx);
  Tensor x(ctx.add_argument(DType::kFloat32, Shape::unknown_rank(), "x"));
  Tensor y = square(square(x));
  fn->results.push_back(ValueRef{y.impl()->graph_node(), 0});
  return fn;
}

// A graph using attributes of every type, a multi-output op, a variadic op, constants and control inputs.
std::shared_ptr<FunctionGraph> trace_many_attrs() {
  auto fn = std::make_shared<FunctionGraph>();
  fn->name = "g";
  TraceContext ctx(fn.get());
  ctx.set_location_provider([] { return SourceLocation{"/home/me/model.py", 42, "g"}; });
  TraceScope scope(ctx);
  Tensor x(ctx.add_argument(DType::kFloat32, Shape({2, 3}), "x"));
  Tensor ids(ctx.add_argument(DType::kInt32, Shape({-1}), "ids"));
  Tensor t = transpose(x, {1, 0});                                             // perm: a Const input
  Tensor squeezed = squeeze(reshape(x, {2, 1, 3}), {1});                       // Squeeze: ints
  std::vector<Tensor> rows = unstack(t);                                       // Unpack: 3 outputs
  Tensor joined = concat({rows[0], rows[2]}, 0);                               // ConcatV2: axis, N
  Tensor product = matmul(x, x, /*transpose_a=*/false, /*transpose_b=*/true);  // bools
  Tensor padded = pad(x, {{1, 0}, {0, 2}}, "CONSTANT", 0.5);                   // ints, float, string
  Tensor hot = one_hot(ids, 4, 2.0, -1.0, -1, DType::kFloat64);                // int, floats, dtype
  Tensor scale = Tensor::from_vector<float>({1, 2, 3, 4}) * Tensor(2.0f);      // folded: a Const
  Tensor scaled = joined * scale;
  Tensor r1 = random_uniform(Shape({2}));  // stateful: the second waits on the first (^RandomUniform)
  Tensor r2 = random_uniform(Shape({2}));
  for (const Tensor& out : {scaled, product, padded, hot, r1, r2, squeezed})
    fn->results.push_back(ValueRef{out.impl()->graph_node(), out.impl()->graph_output()});
  return fn;
}

std::unique_ptr<FunctionGraph> import_ok(std::string_view bytes) {
  auto imported = from_graph_def(bytes);
  EXPECT_TRUE(imported.ok()) << imported.status().to_string();
  return imported.ok() ? std::move(imported).value() : nullptr;
}

// Runs `fn` pruned to `inputs` -> `outputs`.
std::vector<Tensor> run_pruned(const FunctionGraph& fn, const std::vector<std::string>& inputs,
                               const std::vector<std::string>& outputs, const std::vector<Tensor>& args) {
  auto carved = prune_function(fn, inputs, outputs);
  EXPECT_TRUE(carved.ok()) << carved.status().to_string();
  return testing::run_compiled(CompiledFunction(*carved), args);
}

// ---- a hand-written GraphDef, for inputs TensorFlow writes but ember does not

struct NodeSpec {
  std::string name, op;
  std::vector<std::string> inputs;
  std::vector<std::pair<std::string, std::string>> attrs;  // name, serialized AttrValue
};

std::string attr_type(int datatype) {
  Writer w;
  w.write_int(6, datatype);
  return w.take();
}
std::string attr_int(int64_t v) {
  Writer w;
  w.write_int(3, v);
  return w.take();
}
std::string attr_tensor(const std::function<void(Writer&)>& fill) {
  Writer w;
  w.write_message(8, fill);
  return w.take();
}

std::string graph_def(const std::vector<NodeSpec>& nodes) {
  Writer w;
  for (const NodeSpec& n : nodes) {
    w.write_message(1, [&](Writer& node) {
      node.write_bytes(1, n.name);
      node.write_bytes(2, n.op);
      for (const std::string& in : n.inputs) node.write_bytes(3, in);
      for (const auto& attr : n.attrs) {  // not a structured binding: clang 14 cannot capture one
        node.write_message(5, [&](Writer& e) {
          e.write_bytes(1, attr.first);
          e.write_bytes(2, attr.second);
        });
      }
    });
  }
  return w.take();
}

NodeSpec placeholder(std::string name, int datatype = 1) {
  return {std::move(name), "Placeholder", {}, {{"dtype", attr_type(datatype)}}};
}

// ---- export

// The exact bytes of square(square(x)); TensorFlow's graph_pb2.GraphDef parses them as
//   node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
//          attr { key: "shape" value { shape { unknown_rank: true } } } }
//   node { name: "Square" op: "Square" input: "x" attr { key: "T" value { type: DT_FLOAT } } }
//   node { name: "Square_1" op: "Square" input: "Square" attr { key: "T" value { type: DT_FLOAT } } }
//   versions { producer: 2474 }
TEST(GraphDef, SquareOfSquareBytes) {
  auto fn = trace_square_of_square();
  const std::string attr_t_float = bytes_of({0x2a, 0x07, 0x0a, 0x01, 'T', 0x12, 0x02, 0x30, 0x01});
  const std::string expected = bytes_of({0x0a, 0x2c, 0x0a, 0x01, 'x', 0x12, 0x0b}) + "Placeholder" +
                               bytes_of({0x2a, 0x0b, 0x0a, 0x05}) + "dtype" +
                               bytes_of({0x12, 0x02, 0x30, 0x01}) +  // dtype: DT_FLOAT
                               bytes_of({0x2a, 0x0d, 0x0a, 0x05}) + "shape" +
                               bytes_of({0x12, 0x04, 0x3a, 0x02, 0x18, 0x01}) +  // shape
                               bytes_of({0x0a, 0x1c, 0x0a, 0x06}) + "Square" + bytes_of({0x12, 0x06}) +
                               "Square" + bytes_of({0x1a, 0x01, 'x'}) + attr_t_float +  //
                               bytes_of({0x0a, 0x23, 0x0a, 0x08}) + "Square_1" + bytes_of({0x12, 0x06}) +
                               "Square" + bytes_of({0x1a, 0x06}) + "Square" + attr_t_float +  //
                               bytes_of({0x22, 0x03, 0x08, 0xaa, 0x13});                      // producer 2474
  EXPECT_EQ(export_ok(fn->graph), expected);
}

TEST(GraphDef, KnownShapesAreDims) {
  auto fn = std::make_shared<FunctionGraph>();
  TraceContext ctx(fn.get());
  ctx.add_argument(DType::kInt64, Shape({-1, 3}), "batch");
  // shape { dim { size: -1 } dim { size: 3 } }: -1 is a ten-byte varint.
  const std::string shape_attr = bytes_of({0x3a, 0x11, 0x12, 0x0b, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                           0xff, 0xff, 0xff, 0x01, 0x12, 0x02, 0x08, 0x03});
  const std::string bytes = export_ok(fn->graph);
  EXPECT_NE(bytes.find(shape_attr), std::string::npos);
  EXPECT_NE(bytes.find(bytes_of({0x30, 0x09})), std::string::npos);  // dtype: DT_INT64
}

TEST(GraphDef, ConstValuesAreRawLittleEndianContent) {
  auto fn = std::make_shared<FunctionGraph>();
  {
    TraceContext ctx(fn.get());
    TraceScope scope(ctx);
    Tensor x(ctx.add_argument(DType::kInt32, Shape({2}), "x"));
    Tensor c = Tensor::from_vector<int32_t>({1, 2}) + Tensor(int32_t{0});  // folded: a Const
    Tensor y = x + c;
    fn->results.push_back(ValueRef{y.impl()->graph_node(), 0});
  }
  // value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 2 } } tensor_content: "\1\0\0\0\2\0\0\0" } }
  const std::string tensor_attr = bytes_of(
      {0x42, 0x12, 0x08, 0x03, 0x12, 0x04, 0x12, 0x02, 0x08, 0x02, 0x22, 0x08, 1, 0, 0, 0, 2, 0, 0, 0});
  const std::string bytes = export_ok(fn->graph);
  EXPECT_NE(bytes.find(tensor_attr), std::string::npos);
  EXPECT_NE(bytes.find(bytes_of({0x0a, 0x05}) + "dtype" + bytes_of({0x12, 0x02, 0x30, 0x03})),
            std::string::npos);  // Const's derived dtype
}

// ---- import

TEST(GraphDef, SquareOfSquareRoundTrips) {
  auto fn = trace_square_of_square();
  auto imported = import_ok(export_ok(fn->graph));
  ASSERT_TRUE(imported);
  EXPECT_EQ(imported->graph.to_text(), fn->graph.to_text());
  EXPECT_EQ(imported->args, std::vector<int32_t>{0});
  EXPECT_TRUE(imported->results.empty());
  auto out = run_pruned(*imported, {"x:0"}, {"Square_1:0"}, {Tensor(2.0f)});
  EXPECT_EQ(out[0].item<float>(), 16.0f);
  // Bytes -> graph -> bytes is the identity.
  EXPECT_EQ(export_ok(imported->graph), export_ok(fn->graph));
}

TEST(GraphDef, EveryAttributeTypeRoundTrips) {
  auto fn = trace_many_attrs();
  const std::string bytes = export_ok(fn->graph);
  auto imported = import_ok(bytes);
  ASSERT_TRUE(imported);
  EXPECT_EQ(imported->graph.to_text(), fn->graph.to_text());
  EXPECT_EQ(export_ok(imported->graph), bytes);
  // Inputs as TensorFlow writes them: output 0 by name, others "name:k", control inputs "^name".
  const Graph& g = imported->graph;
  const Node& concat = g.node(g.find("ConcatV2"));
  EXPECT_EQ(g.tensor_name(concat.inputs[0]), "Unpack:0");
  EXPECT_EQ(g.tensor_name(concat.inputs[1]), "Unpack:2");
  EXPECT_NE(bytes.find(bytes_of({0x1a, 0x08}) + "Unpack:2"), std::string::npos);
  EXPECT_NE(bytes.find(bytes_of({0x1a, 0x06}) + "Unpack" + bytes_of({0x1a})), std::string::npos);
  EXPECT_NE(bytes.find(bytes_of({0x1a, 0x0e}) + "^RandomUniform"), std::string::npos);
  const Node& second = g.node(g.find("RandomUniform_1"));
  ASSERT_EQ(second.control_inputs.size(), 1u);
  EXPECT_EQ(g.node(second.control_inputs[0]).name, "RandomUniform");
  // N for the variadic op; the float attribute keeps float32 precision.
  EXPECT_NE(bytes.find(bytes_of({0x0a, 0x01, 'N', 0x12, 0x02, 0x18, 0x02})), std::string::npos);
  const Node& pad = g.node(g.find("Pad"));
  EXPECT_EQ(std::get<double>(pad.attrs[pad.op->attr_index("constant_value")]), 0.5);
  EXPECT_EQ(std::get<std::string>(pad.attrs[pad.op->attr_index("mode")]), "CONSTANT");
  // A shape-like operand is a Const input (as TensorFlow writes Transpose's perm); ints stay a list.
  const Node& transpose = g.node(g.find("Transpose"));
  ASSERT_EQ(transpose.inputs.size(), 2u);
  const Node& perm = g.node(transpose.inputs[1].node);
  EXPECT_EQ(perm.op->name, "Const");
  EXPECT_EQ(Tensor(std::get<TensorRef>(perm.attrs[0])).to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));
  const Node& squeeze = g.node(g.find("Squeeze"));
  EXPECT_EQ(std::get<std::vector<int64_t>>(squeeze.attrs[0]), (std::vector<int64_t>{1}));
  // Source locations travel in GraphDef.debug_info.
  EXPECT_EQ(g.node(g.find("Transpose")).location.to_string(), "model.py:42");
  EXPECT_EQ(g.node(g.find("Transpose")).location.function, "g");
  // And the imported graph computes what the traced one does.
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, Shape({2, 3}));
  auto out = run_pruned(*imported, {"x:0"}, {"Mul:0", "Pad:0"}, {x});
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{2, 16, 18, 48}));
  EXPECT_EQ(out[1].to_vector<float>(),
            (std::vector<float>{0.5, 0.5, 0.5, 0.5, 0.5, 1, 2, 3, 0.5, 0.5, 4, 5, 6, 0.5, 0.5}));
}

TEST(GraphDef, NodesMayComeInAnyOrder) {
  // Consumers first; Placeholders become arguments in order of appearance. TensorFlow's AddV2 is ember's Add.
  std::string bytes = graph_def(
      {{"sum", "AddV2", {"b", "a:0"}, {}}, placeholder("b"), {"neg", "Neg", {"a"}, {}}, placeholder("a")});
  auto imported = import_ok(bytes);
  ASSERT_TRUE(imported);
  const Graph& g = imported->graph;
  ASSERT_EQ(imported->args.size(), 2u);
  EXPECT_EQ(g.node(imported->args[0]).name, "b");
  EXPECT_EQ(g.node(imported->args[1]).name, "a");
  EXPECT_EQ(g.to_text(),
            "b = Placeholder() {dtype=float32, shape=[], unknown_rank=false} -> float32[]\n"
            "a = Placeholder() {dtype=float32, shape=[], unknown_rank=false} -> float32[]\n"
            "sum = Add(b:0, a:0) -> float32[]\n"
            "neg = Neg(a:0) -> float32[]\n");
  auto out = run_pruned(*imported, {"a:0", "b:0"}, {"sum:0"}, {Tensor(1.5f), Tensor(2.0f)});
  EXPECT_EQ(out[0].item<float>(), 3.5f);
}

TEST(GraphDef, MissingAttributesTakeTheirDefaults) {
  Writer shape;  // list { i: 2 i: 3 }: a shape given as ints works too
  shape.write_message(1, [](Writer& list) {
    int64_t dims[] = {2, 3};
    list.write_packed_ints(3, dims);
  });
  auto imported =
      import_ok(graph_def({{"x", "Placeholder", {}, {{"dtype", attr_type(1)}, {"shape", shape.take()}}},
                           {"parts", "Unpack", {"x"}, {}}}));  // num = -1, axis = 0
  ASSERT_TRUE(imported);
  const Node& parts = imported->graph.node(1);
  EXPECT_EQ(parts.outputs.size(), 2u);
  EXPECT_EQ(parts.outputs[0].shape, Shape({3}));
  EXPECT_EQ(format_attrs(*parts.op, parts.attrs), "{num=-1, axis=0}");
}

// What TensorFlow 2.21 writes (graph_pb2, deterministic; debug_info left out) for
//   @tf.function
//   def f(x):  # x: float32[2]
//     parts = tf.unstack(x)
//     return tf.square(parts[1]) + tf.constant(0.5)
// It has Placeholder's "_user_specified_name", Unpack's "num", the input "unstack:1", a scalar Const as
// float_val, AddV2 and Identity.
constexpr char kTensorFlowGraphDefHex[] =
    "0a4b0a0178120b506c616365686f6c6465722a1b0a145f757365725f7370656369666965645f6e616d6512031201782a0b0a"
    "056474797065120230012a0f0a05736861706512063a04120208020a340a07756e737461636b1206556e7061636b1a01782a"
    "070a0154120230012a0a0a0461786973120218002a090a036e756d120218020a240a0653717561726512065371756172651a"
    "09756e737461636b3a312a070a0154120230010a320a05436f6e73741205436f6e73742a0b0a056474797065120230012a15"
    "0a0576616c7565120c420a080112002a040000003f0a240a03616464120541646456321a065371756172651a05436f6e7374"
    "2a070a0154120230010a220a084964656e7469747912084964656e746974791a036164642a070a015412023001220308aa13";

std::string from_hex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  return out;
}

TEST(GraphDef, ImportsWhatTensorFlowWrites) {
  auto imported = import_ok(from_hex(kTensorFlowGraphDefHex));
  ASSERT_TRUE(imported);
  EXPECT_EQ(imported->graph.to_text(),
            "x = Placeholder() {dtype=float32, shape=[2], unknown_rank=false} -> float32[2]\n"
            "unstack = Unpack(x:0) {num=2, axis=0} -> float32[], float32[]\n"
            "Square = Square(unstack:1) -> float32[]\n"
            "Const = Const() {value=<float32[]>} -> float32[]\n"
            "add = Add(Square:0, Const:0) -> float32[]\n"
            "Identity = Identity(add:0) -> float32[]\n");
  auto out = run_pruned(*imported, {"x:0"}, {"Identity:0"}, {Tensor({3.0f, 4.0f})});
  EXPECT_EQ(out[0].item<float>(), 16.5f);
}

TEST(GraphDef, UnknownAttributesAreIgnored) {
  auto node = placeholder("x");
  node.attrs.emplace_back("_output_shapes", attr_int(1));
  node.attrs.emplace_back("_class", attr_int(2));
  EXPECT_TRUE(import_ok(graph_def({node})));
}

// ---- errors

Status import_error(std::string_view bytes) {
  auto imported = from_graph_def(bytes);
  EXPECT_FALSE(imported.ok());
  return imported.status();
}

TEST(GraphDef, AnUnknownOpIsNotFoundNamingIt) {
  Status s = import_error(graph_def({placeholder("x"), {"y", "FancyOp", {"x"}, {}}}));
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_EQ(s.message(), "GraphDef: node 'y' has op 'FancyOp', which ember does not register");
  // Control characters from the input are escaped in messages.
  EXPECT_EQ(import_error(graph_def({{"y", "Fancy\x01\n", {}, {}}})).message(),
            "GraphDef: node 'y' has op 'Fancy\\x01\\x0a', which ember does not register");
}

TEST(GraphDef, BadGraphsAreInvalidArgumentNamingTheNode) {
  Status dangling = import_error(graph_def({{"y", "Neg", {"nowhere:0"}, {}}}));
  EXPECT_EQ(dangling.code(), Code::kInvalidArgument);
  EXPECT_EQ(dangling.message(), "GraphDef: node 'y': input 'nowhere:0' names no node in the GraphDef");

  Status cycle = import_error(graph_def(
      {placeholder("x"), {"a", "Add", {"x", "c"}, {}}, {"b", "Neg", {"a"}, {}}, {"c", "Neg", {"b"}, {}}}));
  EXPECT_EQ(cycle.code(), Code::kInvalidArgument);
  EXPECT_EQ(
      cycle.message(),
      "GraphDef: the inputs of node 'a' form a cycle: a <- c <- b <- a (read 'a <- b' as 'a takes an input "
      "from b')");
  EXPECT_EQ(import_error(graph_def({{"a", "Neg", {"^a"}, {}}}))
                .message()
                .rfind("GraphDef: the inputs of node 'a' "
                       "form a cycle: a <- a (",
                       0),
            0u);

  EXPECT_EQ(import_error(graph_def({placeholder("x"), placeholder("x")})).message(),
            "GraphDef: nodes #0 and #1 are both named 'x'");
  EXPECT_EQ(import_error(graph_def({placeholder("a:b")})).code(), Code::kInvalidArgument);
  EXPECT_EQ(import_error(graph_def({placeholder("x"), {"y", "Neg", {"x:one"}, {}}})).message(),
            "GraphDef: node 'y': input 'x:one' is not of the form 'name', 'name:index' or '^name'");

  Status missing = import_error(graph_def({{"x", "Placeholder", {}, {}}}));
  EXPECT_EQ(
      missing.message(),
      "GraphDef: node 'x' (op Placeholder): lacks the required attribute 'dtype' (a dtype (AttrValue.type))");
  Status wrong_type = import_error(graph_def({{"x", "Placeholder", {}, {{"dtype", attr_int(1)}}}}));
  EXPECT_EQ(wrong_type.message(),
            "GraphDef: node 'x' (op Placeholder): attribute 'dtype': should be a dtype (AttrValue.type), got "
            "AttrValue.i");
  EXPECT_EQ(import_error(graph_def({placeholder("x", /*DT_QINT8*/ 11)})).message(),
            "GraphDef: node 'x' (op Placeholder): attribute 'dtype': DataType 11 is not one ember supports");

  Status output = import_error(graph_def({placeholder("x"), {"y", "Neg", {"x:1"}, {}}}));
  EXPECT_EQ(
      output.message(),
      "GraphDef: node 'y' (op Neg): input 'x:1' asks for output 1, but 'x' (op Placeholder) has 1 output(s)");
  // Shape inference runs as when tracing, and its errors name the node too.
  Status inference =
      import_error(graph_def({placeholder("x"), placeholder("i", 3), {"y", "Add", {"x", "i"}, {}}}));
  EXPECT_EQ(inference.code(), Code::kInvalidArgument);
  EXPECT_EQ(inference.message().rfind("GraphDef: node 'y' (op Add): Add: input #1", 0), 0u)
      << inference.message();

  auto short_content = attr_tensor([](Writer& t) {
    t.write_int(1, 1);
    t.write_message(2, [](Writer& s) { s.write_message(2, [](Writer& d) { d.write_int(1, 2); }); });
    t.write_bytes(4, "abc");
  });
  EXPECT_EQ(
      import_error(graph_def({{"c", "Const", {}, {{"value", short_content}}}})).message(),
      "GraphDef: node 'c' (op Const): attribute 'value': TensorProto.tensor_content has 3 bytes; a float32 "
      "tensor of shape [2] needs 8");
  auto bad_rank = [] {
    Writer w;
    w.write_message(7, [](Writer& s) {
      for (int i = 0; i < 9; ++i) s.write_message(2, [](Writer& d) { d.write_int(1, 1); });
    });
    return w.take();
  }();
  EXPECT_EQ(
      import_error(graph_def({{"x", "Placeholder", {}, {{"dtype", attr_type(1)}, {"shape", bad_rank}}}}))
          .message(),
      "GraphDef: node 'x' (op Placeholder): attribute 'shape': TensorShapeProto: rank 9 exceeds the maximum "
      "rank 8");
}

TEST(GraphDef, CorruptBytesAreDataLoss) {
  const std::string good = export_ok(trace_square_of_square()->graph);
  // libprotobuf's parser says no more than "not a GraphDef"; every kind of corruption is DataLoss.
  const std::string kNotAGraphDef =
      "GraphDef: the bytes are not a serialized GraphDef (protobuf could not parse them: truncated or "
      "corrupt data, or a string that is not UTF-8)";
  for (const std::string& bad :
       {good.substr(0, good.size() - 2), bytes_of({0x0a, 0x80}),  // a truncated varint
        bytes_of({0x0a, 0x03, 0x0a, 0x05, 'x'}),                  // a length past the message
        bytes_of({0x0b}),                                         // a group
        bytes_of({0x0a, 0x03, 0x0a, 0x01, 0xff})}) {              // NodeDef.name not UTF-8
    Status s = import_error(bad);
    EXPECT_EQ(s.code(), Code::kDataLoss);
    EXPECT_EQ(s.message(), kNotAGraphDef);
  }
  // NodeDef.name as a varint: protobuf keeps it as an unknown field, so the node has no name.
  Status wire = import_error(bytes_of({0x0a, 0x02, 0x08, 0x01}));
  EXPECT_EQ(wire.code(), Code::kInvalidArgument);
  EXPECT_EQ(wire.message(),
            "GraphDef: node #0 has the name ''; node names must match [A-Za-z0-9.][A-Za-z0-9_.\\-/>]*");
  Writer mode;  // AttrValue.s is bytes, but ember's string attributes are text
  mode.write_bytes(2, "CO\xceSTANT");
  Writer paddings;
  paddings.write_message(1, [](Writer&) {});
  Status text = import_error(graph_def(
      {placeholder("x"), {"p", "Pad", {"x"}, {{"paddings", paddings.take()}, {"mode", mode.take()}}}}));
  EXPECT_EQ(text.message(), "GraphDef: node 'p' (op Pad): attribute 'mode': is not valid UTF-8 text");
}

TEST(GraphDef, EmptyBytesAreAnEmptyGraph) {
  auto imported = import_ok("");
  ASSERT_TRUE(imported);
  EXPECT_EQ(imported->graph.num_nodes(), 0);
}

// ---- variables (issue 12, item 4): a GraphDef reaches only the variables bound at import

std::shared_ptr<VariableResource> resource_of(const Variable& v) {
  return ResourceManager::global().find(v.id(), "test").value();
}

// v.assign_add(x); return v.read() * 2
std::shared_ptr<FunctionGraph> trace_variable_update(const Variable& v) {
  auto fn = std::make_shared<FunctionGraph>();
  fn->name = "f";
  TraceContext ctx(fn.get());
  TraceScope scope(ctx);
  Tensor x(ctx.add_argument(DType::kFloat32, Shape({2}), "x"));
  const_cast<Variable&>(v).assign_add(x);
  Tensor y = v.read() * Tensor(2.0f);
  fn->results.push_back(ValueRef{y.impl()->graph_node(), 0});
  ctx.seal();
  return fn;
}

TEST(GraphDef, VariablesRoundTripBoundByName) {
  Variable v(Tensor::from_vector<float>({1, 2}), "weights");
  const std::string bytes = export_ok(trace_variable_update(v)->graph);
  // The export names the variable, never its process-local id: another variable of the same name and
  // value exports to the same bytes. (Searching the bytes for the id's digits matched unrelated bytes.)
  Variable twin(Tensor::from_vector<float>({1, 2}), "weights");
  ASSERT_NE(twin.id(), v.id());
  EXPECT_EQ(export_ok(trace_variable_update(twin)->graph), bytes);
  Variable w(Tensor::from_vector<float>({10, 20}), "other");
  auto imported = from_graph_def(bytes, {{"weights", resource_of(w)}});
  ASSERT_TRUE(imported.ok()) << imported.status().to_string();
  FunctionGraph& fn = **imported;
  EXPECT_EQ(fn.graph.find("weights"), -1);  // the variable is bound, not a node
  // Run as traced (not pruned: prune_function drops the control edge that orders the read after the add).
  fn.results.push_back(ValueRef{fn.graph.find("Mul"), 0});
  fn.control_outputs.push_back(fn.graph.find("AssignAddVariableOp"));
  auto out = testing::run_graph(std::move(imported).value(), {Tensor::from_vector<float>({1, 1})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{22, 42}));
  EXPECT_EQ(w.read().to_vector<float>(), (std::vector<float>{11, 21}));
  EXPECT_EQ(v.read().to_vector<float>(), (std::vector<float>{1, 2}));
}

TEST(GraphDef, AnUnboundVariableIsInvalidArgument) {
  Variable v(Tensor::from_vector<float>({1, 2}), "weights");
  auto imported = from_graph_def(export_ok(trace_variable_update(v)->graph));
  ASSERT_FALSE(imported.ok());
  EXPECT_EQ(imported.status().code(), Code::kInvalidArgument);
  EXPECT_NE(
      imported.status().message().find("node 'weights' is a resource Placeholder (a variable the graph was "
                                       "exported with), and no variable is bound to it"),
      std::string::npos)
      << imported.status().message();
}

TEST(GraphDef, ANumericVariableIdIsRefused) {
  Variable secret(Tensor::from_vector<float>({7}), "secret");
  Writer shape;
  shape.write_message(1, [](Writer& list) { list.write_packed_ints(3, std::vector<int64_t>{1}); });
  // ReadVariableOp naming a live variable by its id (what ember wrote before), with nothing bound.
  auto read = from_graph_def(
      graph_def({{"r",
                  "ReadVariableOp",
                  {},
                  {{"resource", attr_int(secret.id())}, {"dtype", attr_type(1)}, {"shape", shape.take()}}}}));
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(
      read.status().message(),
      "GraphDef: node 'r' (op ReadVariableOp): input 0 should be a variable (a resource Placeholder bound at "
      "import), got no input");
  // With a variable bound, a numeric id beside it is refused all the same.
  Variable mine(Tensor::from_vector<float>({1}), "mine");
  NodeSpec handle = placeholder("mine", /*DT_RESOURCE*/ 20);
  NodeSpec value{"c", "Const", {}, {{"value", attr_tensor([](Writer& t) {
                                       t.write_int(1, 1);
                                       t.write_message(2, [](Writer& s) {
                                         s.write_message(2, [](Writer& d) { d.write_int(1, 1); });
                                       });
                                       t.write_float(5, 0.0f);
                                     })}}};
  auto write = from_graph_def(
      graph_def(
          {handle, value, {"w", "AssignVariableOp", {"mine", "c"}, {{"resource", attr_int(secret.id())}}}}),
      {{"mine", resource_of(mine)}});
  ASSERT_FALSE(write.ok());
  EXPECT_EQ(write.status().message(),
            "GraphDef: node 'w' (op AssignVariableOp): attribute 'resource': a GraphDef names a variable by "
            "a bound "
            "resource input, never by a numeric id");
  // A variable op whose input 0 is an ordinary tensor, and a resource feeding another op, are refused.
  auto not_resource = from_graph_def(graph_def({value, {"w", "AssignVariableOp", {"c", "c"}, {}}}));
  ASSERT_FALSE(not_resource.ok());
  EXPECT_NE(not_resource.status().message().find("input 0 should be a variable"), std::string::npos);
  auto leak = from_graph_def(graph_def({handle, {"i", "Neg", {"mine"}, {}}}), {{"mine", resource_of(mine)}});
  ASSERT_FALSE(leak.ok());
  EXPECT_NE(leak.status().message().find("input 'mine' is the variable 'mine'"), std::string::npos);
  // An Identity of a variable is another name for it (TensorFlow's graphs have them on handles), and so is
  // an Identity of that Identity.
  auto alias = from_graph_def(graph_def({handle,
                                         {"i", "Identity", {"mine"}, {}},
                                         {"j", "Identity", {"i"}, {}},
                                         {"r", "ReadVariableOp", {"j"}, {{"dtype", attr_type(1)}}}}),
                              {{"mine", resource_of(mine)}});
  ASSERT_TRUE(alias.ok()) << alias.status().message();
  EXPECT_EQ((*alias)->graph.num_nodes(), 1);  // the read alone
  EXPECT_EQ(secret.read().to_vector<float>(), (std::vector<float>{7}));
}

// Issue 12, item 9: a few bytes must not ask for billions of outputs (this hung or aborted in Unpack's shape
// function); sizes from a GraphDef are checked before anything that large is made.
TEST(GraphDef, HugeCountsFromBytesAreRefusedBeforeAllocating) {
  auto shape_attr = [](std::vector<int64_t> dims, bool unknown_rank) {
    Writer w;
    w.write_message(7, [&](Writer& s) {
      for (int64_t d : dims) s.write_message(2, [&](Writer& dim) { dim.write_int(1, d); });
      if (unknown_rank) s.write_bool(3, true);
    });
    return w.take();
  };
  NodeSpec empty = placeholder("x");
  empty.attrs.emplace_back("shape", shape_attr({3037000500, 0}, false));
  auto unpack = from_graph_def(graph_def({empty, {"u", "Unpack", {"x"}, {}}}));
  ASSERT_FALSE(unpack.ok());
  EXPECT_EQ(unpack.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(unpack.status().message(),
            "GraphDef: node 'u' (op Unpack): Unpack: cannot unpack shape [3037000500,0] along axis 0 into "
            "3037000500 tensors; at most 1048576 outputs are supported");
  NodeSpec unknown = placeholder("x");
  unknown.attrs.emplace_back("shape", shape_attr({}, true));
  auto by_attr =
      from_graph_def(graph_def({unknown, {"u", "Unpack", {"x"}, {{"num", attr_int(int64_t{1} << 40)}}}}));
  ASSERT_FALSE(by_attr.ok());
  EXPECT_EQ(
      by_attr.status().message(),
      "GraphDef: node 'u' (op Unpack): Unpack: num 1099511627776 is more than the 1048576 outputs supported");
  // A shape whose size overflows int64, as a TensorShapeProto or as a list of ints.
  NodeSpec overflowing = placeholder("x");
  overflowing.attrs.emplace_back("shape", shape_attr({int64_t{1} << 62, 4}, false));
  auto as_shape = from_graph_def(graph_def({overflowing}));
  ASSERT_FALSE(as_shape.ok());
  EXPECT_EQ(as_shape.status().message(),
            "GraphDef: node 'x' (op Placeholder): attribute 'shape': TensorShapeProto: shape "
            "[4611686018427387904,4] is too large: the product of its dimensions exceeds 2^63-1");
  Writer list;
  list.write_message(1, [](Writer& l) { l.write_packed_ints(3, std::vector<int64_t>{4, int64_t{1} << 62}); });
  NodeSpec as_ints = placeholder("x");
  as_ints.attrs.emplace_back("shape", list.take());
  auto listed = from_graph_def(graph_def({as_ints}));
  ASSERT_FALSE(listed.ok());
  EXPECT_EQ(
      listed.status().message(),
      "GraphDef: node 'x' (op Placeholder): attribute 'shape': shape [4,4611686018427387904] has more than "
      "2^63 - 1 elements");
}

// Random bytes, every truncation and random mutations of real GraphDefs: never a crash, only a Status
// of an expected kind; what imports exports again.
TEST(GraphDef, FuzzNeverCrashes) {
  std::mt19937 rng(1234);
  auto check = [](std::string_view bytes) {
    auto imported = from_graph_def(bytes);
    if (imported.ok()) {
      (void)export_ok((*imported)->graph);
      return;
    }
    Code c = imported.status().code();
    EXPECT_TRUE(c == Code::kDataLoss || c == Code::kInvalidArgument || c == Code::kNotFound)
        << imported.status().to_string();
    EXPECT_FALSE(imported.status().message().empty());
  };
  for (int i = 0; i < 3000; ++i) {
    std::string bytes(rng() % 64, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    check(bytes);
  }
  const std::string seeds[] = {export_ok(trace_square_of_square()->graph),
                               export_ok(trace_many_attrs()->graph), from_hex(kTensorFlowGraphDefHex)};
  for (const std::string& seed : seeds) {
    for (size_t n = 0; n < seed.size(); ++n) check(seed.substr(0, n));
    for (int i = 0; i < 3000; ++i) {
      std::string bytes = seed;
      int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits; ++e) {
        size_t at = rng() % bytes.size();
        switch (rng() % 3) {
          case 0:
            bytes[at] = static_cast<char>(rng());
            break;
          case 1:
            bytes[at] = static_cast<char>(bytes[at] ^ (1 << (rng() % 8)));
            break;
          default:
            bytes.erase(at, 1 + rng() % 3);
            break;
        }
        if (bytes.empty()) break;
      }
      check(bytes);
    }
  }
}

}  // namespace
}  // namespace ember

namespace ember {
namespace {

// ---- the function library (issue 13, part 3)

TEST(GraphDefLibrary, CalledFunctionsAreWrittenOnceInTensorFlowsForm) {
  auto inner = function([](const Tensor& x) { return square(x) + 1.0f; }, "inner");
  auto middle = function([&](const Tensor& x) { return inner(x) * inner(x + 1.0f); }, "middle");
  auto fn = std::make_shared<FunctionGraph>();
  fn->name = "outer";
  {
    TraceContext ctx(fn.get());
    TraceScope scope(ctx);
    Tensor x(ctx.add_argument(DType::kFloat32, Shape({-1}), "x"));
    Tensor y = middle(x) - inner(x);
    fn->results.push_back(ValueRef{y.impl()->graph_node(), 0});
  }
  proto::GraphDef gd;
  ASSERT_TRUE(gd.ParseFromString(export_ok(fn->graph)));
  ASSERT_EQ(gd.library().function_size(), 2);  // inner once, though called from both
  const proto::FunctionDef* middle_def = nullptr;
  for (const auto& f : gd.library().function())
    if (f.signature().name().find("middle") != std::string::npos) middle_def = &f;
  ASSERT_NE(middle_def, nullptr);
  ASSERT_EQ(middle_def->signature().input_arg_size(), 1);
  EXPECT_EQ(middle_def->signature().input_arg(0).type(), proto::DT_FLOAT);
  EXPECT_EQ(middle_def->signature().output_arg(0).name(), "output_0");
  int calls = 0;
  for (const proto::NodeDef& n : middle_def->node_def()) {
    if (n.op() != "PartitionedCall") continue;
    ++calls;
    EXPECT_EQ(n.attr().at("Tin").list().type_size(), 1);
    EXPECT_EQ(n.attr().at("Tout").list().type(0), proto::DT_FLOAT);
    EXPECT_NE(n.attr().at("f").func().name().find("inner"), std::string::npos);
  }
  EXPECT_EQ(calls, 2);
  const std::string& ret = middle_def->ret().at("output_0");
  EXPECT_NE(ret.find(":z:0"), std::string::npos) << ret;  // Mul's output arg is TensorFlow's "z"

  // Read back, the library functions are this process's again, and compute the same.
  auto imported = import_ok(export_ok(fn->graph));
  ASSERT_TRUE(imported);
  EXPECT_EQ(imported->callees.size(), 2u);  // the two calls in the top-level graph
  Tensor x = Tensor::from_vector<float>({1, 2, 3});
  std::vector<Tensor> got = run_pruned(*imported, {"x:0"}, {fn->graph.tensor_name(fn->results[0])}, {x});
  std::vector<Tensor> want = testing::run_compiled(CompiledFunction(fn), {x});
  EXPECT_EQ(got[0].to_vector<float>(), want[0].to_vector<float>());
}

// A FunctionDef as TensorFlow writes it: "node:output_arg:index" inputs, arguments by name, `ret`.
TEST(GraphDefLibrary, ReadsTensorFlowsFunctionDefs) {
  proto::GraphDef gd;
  proto::FunctionDef* f = gd.mutable_library()->add_function();
  f->mutable_signature()->set_name("__inference_twice_plus_7");
  auto* arg = f->mutable_signature()->add_input_arg();
  arg->set_name("a");
  arg->set_type(proto::DT_FLOAT);
  auto* out = f->mutable_signature()->add_output_arg();
  out->set_name("identity");
  out->set_type(proto::DT_FLOAT);
  proto::NodeDef* mul = f->add_node_def();
  mul->set_name("mul");
  mul->set_op("AddV2");
  mul->add_input("a");
  mul->add_input("a");
  (*mul->mutable_attr())["T"].set_type(proto::DT_FLOAT);
  proto::NodeDef* id = f->add_node_def();
  id->set_name("Identity");
  id->set_op("Identity");
  id->add_input("mul:z:0");
  (*f->mutable_ret())["identity"] = "Identity:output:0";
  proto::NodeDef* x = gd.add_node();
  x->set_name("x");
  x->set_op("Placeholder");
  (*x->mutable_attr())["dtype"].set_type(proto::DT_FLOAT);
  (*x->mutable_attr())["shape"].mutable_shape()->add_dim()->set_size(-1);
  proto::NodeDef* call = gd.add_node();
  call->set_name("call");
  call->set_op("StatefulPartitionedCall");
  call->add_input("x");
  (*call->mutable_attr())["f"].mutable_func()->set_name("__inference_twice_plus_7");
  auto imported = import_ok(gd.SerializeAsString());
  ASSERT_TRUE(imported);
  std::vector<Tensor> got = run_pruned(*imported, {"x:0"}, {"call:0"}, {Tensor::from_vector<float>({1, 5})});
  EXPECT_EQ(got[0].to_vector<float>(), (std::vector<float>{2, 10}));

  // An output arg the op does not have, and a function that calls itself, are InvalidArgument.
  id->set_input(0, "mul:product:0");
  Status bad_arg = import_error(gd.SerializeAsString());
  EXPECT_EQ(bad_arg.message(),
            "GraphDef: node 'call' (op PartitionedCall): function '__inference_twice_plus_7': node "
            "'Identity': input 'mul:product:0': op Add has no output 'product' (or not that many)");
  id->set_input(0, "mul:z:0");
  mul->set_op("PartitionedCall");
  mul->clear_attr();
  (*mul->mutable_attr())["f"].mutable_func()->set_name("__inference_twice_plus_7");
  mul->mutable_input()->RemoveLast();
  id->set_input(0, "mul:output:0");
  Status recursive = import_error(gd.SerializeAsString());
  EXPECT_EQ(recursive.code(), Code::kInvalidArgument);
  EXPECT_NE(recursive.message().find("calls itself"), std::string::npos) << recursive.message();
}

// TensorFlow's NoOps gather control edges; ember leaves them out and forwards the edges (through a chain).
TEST(GraphDefLibrary, NoOpsForwardTheirControlEdges) {
  proto::GraphDef gd;
  auto add = [&](const std::string& name, const std::string& op, std::vector<std::string> inputs) {
    proto::NodeDef* node = gd.add_node();
    node->set_name(name);
    node->set_op(op);
    for (const std::string& in : inputs) node->add_input(in);
    if (op == "Placeholder") {
      (*node->mutable_attr())["dtype"].set_type(proto::DT_FLOAT);
      (*node->mutable_attr())["shape"].mutable_shape()->set_unknown_rank(true);
    }
    return node;
  };
  add("x", "Placeholder", {});
  add("a", "Neg", {"x"});
  add("b", "Exp", {"x"});
  add("sink", "NoOp", {"^a"});
  add("sink2", "NoOp", {"^sink", "^b", "^sink2"});  // a NoOp cycle ends the expansion
  add("y", "Square", {"x", "^sink2"});
  auto imported = import_ok(gd.SerializeAsString());
  ASSERT_TRUE(imported);
  const Graph& g = imported->graph;
  EXPECT_LT(g.find("sink"), 0);
  const Node& y = g.node(g.find("y"));
  std::vector<std::string> waits;
  for (int32_t c : y.control_inputs) waits.push_back(g.node(c).name);
  std::sort(waits.begin(), waits.end());
  EXPECT_EQ(waits, (std::vector<std::string>{"a", "b"}));
}

// A type attribute naming an operand's dtype is written only when the operand is an input: ConcatV2's
// Tidx is the axis's dtype (int32), never a value's (this wrote float while the axis was an attribute).
TEST(GraphDef, TypeAttributesNameTheOperandsDtype) {
  proto::GraphDef gd;
  ASSERT_TRUE(gd.ParseFromString(export_ok(trace_many_attrs()->graph)));
  const OpDef& concat = op_def("ConcatV2");
  for (const proto::NodeDef& n : gd.node()) {
    if (n.op() != "ConcatV2") continue;
    auto tidx = n.attr().find("Tidx");
    if (concat.inputs.size() < 2) {
      EXPECT_EQ(tidx, n.attr().end());
    } else {
      ASSERT_NE(tidx, n.attr().end());
      EXPECT_EQ(tidx->second.type(), proto::DT_INT32);
    }
  }
}

// ---- tables a GraphDef creates (Note [Tables in a GraphDef])

// TensorFlow's graph of a StaticHashTable: HashTableV2 -> LookupTableImportV2 (its initializer) and
// LookupTableFindV2 after it.
std::string table_graph(const std::string& shared_name, int value_dtype = proto::DT_INT64) {
  proto::GraphDef gd;
  auto add = [&](const std::string& name, const std::string& op, std::vector<std::string> inputs) {
    proto::NodeDef* n = gd.add_node();
    n->set_name(name);
    n->set_op(op);
    for (auto& in : inputs) n->add_input(in);
    return n->mutable_attr();
  };
  auto table = add("table", "HashTableV2", {});
  (*table)["key_dtype"].set_type(proto::DT_STRING);
  (*table)["value_dtype"].set_type(static_cast<proto::DataType>(value_dtype));
  (*table)["shared_name"].set_s(shared_name);
  auto constant = [&](const std::string& name, const Tensor& value) {
    auto attrs = add(name, "Const", {});
    (*attrs)["dtype"].set_type(value.dtype() == DType::kString ? proto::DT_STRING : proto::DT_INT64);
    to_tensor_proto(*value.impl(), (*attrs)["value"].mutable_tensor());
  };
  TensorRef keys = TensorImpl::allocate(DType::kString, Shape({2})).value();
  keys->mutable_data<std::string>()[0] = "a";
  keys->mutable_data<std::string>()[1] = "b";
  constant("keys", Tensor(keys));
  constant("values", Tensor::from_vector<int64_t>({1, 2}));
  TensorRef default_value = TensorImpl::allocate(DType::kInt64, Shape()).value();
  default_value->mutable_data<int64_t>()[0] = -1;
  constant("default", Tensor(default_value));
  add("init", "LookupTableImportV2", {"table", "keys", "values"});
  auto x = add("x", "Placeholder", {});
  (*x)["dtype"].set_type(proto::DT_STRING);
  (*x)["shape"].mutable_shape()->set_unknown_rank(true);
  add("find", "LookupTableFindV2", {"table", "x", "default", "^init"});
  return gd.SerializeAsString();
}

std::vector<int64_t> run_find(std::unique_ptr<FunctionGraph> fn, const std::vector<std::string>& keys) {
  fn->results.push_back(ValueRef{fn->graph.find("find"), 0});
  TensorRef x = TensorImpl::allocate(DType::kString, Shape({static_cast<int64_t>(keys.size())})).value();
  for (size_t i = 0; i < keys.size(); ++i) x->mutable_data<std::string>()[i] = keys[i];
  auto out = testing::run_graph(std::move(fn), {Tensor(x)});
  return out.size() == 1 ? out[0].to_vector<int64_t>() : std::vector<int64_t>{};
}

TEST(GraphDef, ATableCreatedInTheGraphIsBoundAtImport) {
  auto imported = from_graph_def(table_graph(""));
  ASSERT_TRUE(imported.ok()) << imported.status().to_string();
  EXPECT_EQ((*imported)->graph.find("table"), -1);  // bound, not a node
  EXPECT_EQ(run_find(std::move(imported).value(), {"b", "z", "a"}), (std::vector<int64_t>{2, -1, 1}));
}

TEST(GraphDef, TablesWithOneSharedNameAreOneTable) {
  auto first = from_graph_def(table_graph("graph_def_test_shared"));
  auto second = from_graph_def(table_graph("graph_def_test_shared"));
  ASSERT_TRUE(first.ok() && second.ok());
  const Node& a = (*first)->graph.node((*first)->graph.find("find"));
  const Node& b = (*second)->graph.node((*second)->graph.find("find"));
  EXPECT_EQ(std::get<int64_t>(a.attrs[0]), std::get<int64_t>(b.attrs[0]));
  auto unshared_a = from_graph_def(table_graph(""));
  auto unshared_b = from_graph_def(table_graph(""));
  ASSERT_TRUE(unshared_a.ok() && unshared_b.ok());
  EXPECT_NE(std::get<int64_t>((*unshared_a)->graph.node((*unshared_a)->graph.find("find")).attrs[0]),
            std::get<int64_t>((*unshared_b)->graph.node((*unshared_b)->graph.find("find")).attrs[0]));
  // The same shared name for a table of other dtypes names the node and both kinds of table.
  auto other = from_graph_def(table_graph("graph_def_test_shared", proto::DT_FLOAT));
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), Code::kInvalidArgument);
  EXPECT_NE(other.status().message().find("node 'table' (op HashTableV2)"), std::string::npos)
      << other.status().message();
  EXPECT_NE(other.status().message().find("names a HashTable of string -> int64"), std::string::npos)
      << other.status().message();
}

}  // namespace
}  // namespace ember
