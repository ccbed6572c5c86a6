"""GraphDef export and import: ember.framework.graph_def (the messages, FuncGraph.as_graph_def) and
ember.graph_util.import_graph_def. The byte constants were checked once against TensorFlow 2.21:
``graph_pb2.GraphDef.FromString`` parses ember's bytes into the nodes listed here, and re-serializes them
(deterministic) to the same bytes; TensorFlow's own bytes below come from ``SerializeToString``."""

import numpy as np
import pytest

import ember as tf
from ember import errors
from google.protobuf.message import DecodeError

from ember.framework import graph_def as gdm

# square(square(x)) for x: float32 of unknown rank, without debug_info (see tests/cpp/graph/graph_def_test.cc).
SQUARE_OF_SQUARE_HEX = (
    "0a2c0a0178120b506c616365686f6c6465722a0b0a056474797065120230012a0d0a05736861706512043a0218010a1c0a0653"
    "717561726512065371756172651a01782a070a0154120230010a230a085371756172655f3112065371756172651a06537175"
    "6172652a070a015412023001220308aa13")

# TensorFlow 2.21's GraphDef (debug_info left out) of
#   @tf.function
#   def f(x):  # x: float32[2]
#       parts = tf.unstack(x)
#       return tf.square(parts[1]) + tf.constant(0.5)
TENSORFLOW_HEX = (
    "0a4b0a0178120b506c616365686f6c6465722a1b0a145f757365725f7370656369666965645f6e616d6512031201782a0b0a0564"
    "74797065120230012a0f0a05736861706512063a04120208020a340a07756e737461636b1206556e7061636b1a01782a070a0154"
    "120230012a0a0a0461786973120218002a090a036e756d120218020a240a0653717561726512065371756172651a09756e737461"
    "636b3a312a070a0154120230010a320a05436f6e73741205436f6e73742a0b0a056474797065120230012a150a0576616c756512"
    "0c420a080112002a040000003f0a240a03616464120541646456321a065371756172651a05436f6e73742a070a01541202300"
    "10a220a084964656e7469747912084964656e746974791a036164642a070a015412023001220308aa13")


# TensorFlow 2.21's GraphDef (debug_info and library left out) of
#   v = tf.Variable([1.0, 2.0], name="weights")
#   @tf.function
#   def f(x):  # x: float32[2]
#       v.assign_add(x)
#       return v.read_value() * 2.0
TENSORFLOW_VARIABLE_HEX = (
    "0a4b0a0178120b506c616365686f6c6465722a1b0a145f757365725f7370656369666965645f6e616d6512031201782a0b0a0564"
    "74797065120230012a0f0a05736861706512063a04120208020a690a1c41737369676e4164645661726961626c654f702f726573"
    "6f75726365120b506c616365686f6c6465722a220a145f757365725f7370656369666965645f6e616d65120a12087265736f7572"
    "63652a0b0a056474797065120230142a0b0a05736861706512023a000a580a1341737369676e4164645661726961626c654f7012"
    "1341737369676e4164645661726961626c654f701a1c41737369676e4164645661726961626c654f702f7265736f757263651a01"
    "782a0b0a056474797065120230010a660a13526561642f526561645661726961626c654f70120e526561645661726961626c654f"
    "701a1c41737369676e4164645661726961626c654f702f7265736f757263651a145e41737369676e4164645661726961626c654f"
    "702a0b0a056474797065120230010a320a084964656e7469747912084964656e746974791a13526561642f526561645661726961"
    "626c654f702a070a0154120230010a320a056d756c2f791205436f6e73742a0b0a056474797065120230012a150a0576616c7565"
    "120c420a080112002a04000000400a240a036d756c12034d756c1a084964656e746974791a056d756c2f792a070a015412023001"
    "0a2b0a0a4964656e746974795f3112084964656e746974791a036d756c1a055e4e6f4f702a070a0154120230010a380a044e6f4f"
    "7012044e6f4f701a145e41737369676e4164645661726961626c654f701a145e526561642f526561645661726961626c654f7022"
    "0308aa13")


def square_of_square_graph():
    @tf.function
    def f(x):
        return tf.square(tf.square(x))

    return f.get_concrete_function(tf.TensorSpec(None, tf.float32)).graph


def many_graph():
    @tf.function
    def g(x, ids):
        parts = tf.unstack(tf.transpose(x))
        joined = tf.concat([parts[0], parts[2]], 0) * tf.constant([1., 2., 3., 4.])
        r1 = tf.random.uniform([2])
        r2 = tf.random.uniform([2])  # stateful: runs after r1 (a control input)
        hot = tf.one_hot(ids, 4, on_value=2.0, off_value=-1.0, dtype=tf.float64)
        padded = tf.pad(x, [[1, 0], [0, 2]], constant_values=0.5)
        return joined, r1, r2, hot, padded, tf.matmul(x, x, transpose_b=True)

    return g, g.get_concrete_function(tf.TensorSpec([2, 3], tf.float32), tf.TensorSpec([None], tf.int32)).graph


def nodes_by_name(graph_def):
    return {n.name: n for n in graph_def.node}


# ---- export


def test_square_of_square_nodes_and_bytes():
    gd = square_of_square_graph().as_graph_def()
    assert isinstance(gd, gdm.GraphDef)
    assert [(n.name, n.op, list(n.input)) for n in gd.node] == [
        ("x", "Placeholder", []), ("Square", "Square", ["x"]), ("Square_1", "Square", ["Square"])]
    x, square, _ = gd.node
    assert x.attr["dtype"].type == gdm.DT_FLOAT
    assert x.attr["shape"].shape.unknown_rank
    assert x.attr["shape"].WhichOneof("value") == "shape"
    assert set(x.attr) == {"dtype", "shape"}
    assert square.attr["T"].type == gdm.DT_FLOAT == gdm.as_datatype_enum(tf.float32)
    assert gd.versions.producer == 2474
    assert gd.node[0].device == ""
    # Source locations travel in debug_info: this file's line.
    trace = gd.debug_info.traces["Square"].file_line_cols[-1]
    assert gd.debug_info.files[trace.file_index].endswith("test_graph_def.py")
    assert trace.func == "f"
    gd.ClearField("debug_info")
    assert gd.SerializeToString(deterministic=True).hex() == SQUARE_OF_SQUARE_HEX


def test_multi_output_control_inputs_and_attrs():
    _, graph = many_graph()
    gd = graph.as_graph_def()
    nodes = nodes_by_name(gd)
    # Output 0 by name, others "name:k"; the axis is the last input, as in TensorFlow's ConcatV2.
    values_and_axis = list(nodes["ConcatV2"].input)
    assert values_and_axis[:2] == ["Unpack", "Unpack:2"] and len(values_and_axis) == 3
    np.testing.assert_array_equal(gdm.make_ndarray(nodes[values_and_axis[2]].attr["value"].tensor), 0)
    concat = nodes["ConcatV2"].attr
    assert concat["N"].i == 2 and concat["Tidx"].type == gdm.DT_INT32 and "axis" not in concat
    assert [i for i in nodes["RandomUniform_1"].input if i.startswith("^")] == ["^RandomUniform"]
    perm = nodes[nodes["Transpose"].input[1]]  # perm is an input, as in TensorFlow's Transpose
    np.testing.assert_array_equal(gdm.make_ndarray(perm.attr["value"].tensor), [1, 0])
    assert nodes["Unpack"].attr["T"].type == gdm.DT_FLOAT
    assert nodes["MatMul"].attr["transpose_b"].b is True
    assert nodes["MatMul"].attr["transpose_a"].WhichOneof("value") == "b"  # set though false
    pad = nodes["Pad"].attr
    assert pad["constant_value"].f == 0.5 and pad["mode"].s == b"CONSTANT"
    paddings = nodes[nodes["Pad"].input[1]]  # an input, as in TensorFlow's Pad
    np.testing.assert_array_equal(gdm.make_ndarray(paddings.attr["value"].tensor), [[1, 0], [0, 2]])
    hot = nodes["OneHot"]  # depth, on_value and off_value are inputs, as in TensorFlow's OneHot
    depth, on_value = (gdm.make_ndarray(nodes[hot.input[k]].attr["value"].tensor) for k in (1, 2))
    assert hot.attr["T"].type == gdm.DT_DOUBLE and depth == 4 and on_value == 2.0
    shape = nodes["ids"].attr["shape"].shape
    assert [d.size for d in shape.dim] == [-1] and not shape.unknown_rank
    const = next(n.attr for n in gd.node if n.op == "Const" and n.attr["dtype"].type == gdm.DT_FLOAT)
    np.testing.assert_array_equal(gdm.make_ndarray(const["value"].tensor), [1., 2., 3., 4.])


def test_unstack_inside_a_function_gives_indexed_inputs():
    @tf.function
    def f(x):
        a, b, c = tf.unstack(x)
        return a + c * b

    gd = f.get_concrete_function(tf.TensorSpec([3, 2], tf.float32)).graph.as_graph_def()
    nodes = nodes_by_name(gd)
    assert list(nodes["Mul"].input) == ["Unpack:2", "Unpack:1"]
    assert list(nodes["Add"].input) == ["Unpack", "Mul"]
    assert nodes["Unpack"].attr["num"].i in (-1, 3)


def test_messages_round_trip_through_bytes():
    _, graph = many_graph()
    gd = graph.as_graph_def()
    data = gd.SerializeToString(deterministic=True)
    again = gdm.GraphDef.FromString(data)
    assert again == gd and again.SerializeToString(deterministic=True) == data
    parsed = gdm.GraphDef()
    assert parsed.ParseFromString(data) == len(data)
    assert [n.name for n in parsed.node] == [n.name for n in gd.node]
    copy = gdm.GraphDef()
    copy.CopyFrom(gd)
    copy.node[0].name = "renamed"
    assert gd.node[0].name == "x" and copy != gd
    assert "op: \"Placeholder\"" in str(gd) and "type: DT_FLOAT" in str(gd)


# ---- import


def test_import_and_run_square_of_square():
    g = square_of_square_graph()
    gd = g.as_graph_def()
    g2 = tf.graph_util.import_graph_def(gd)
    assert [op.name for op in g2.get_operations()] == ["x", "Square", "Square_1"]
    assert [t.name for t in g2.inputs] == ["x:0"] and g2.outputs == []
    assert g2.get_operation_by_name("Square_1").inputs[0].name == "Square:0"
    fn = tf.NewGraphFunction(g2, inputs=["x:0"], outputs=["Square_1:0"])
    assert float(fn(2.0)) == 16.0
    # Locations come back from debug_info.
    assert g2.get_operation_by_name("Square").source_location[0].endswith("test_graph_def.py")


def test_imported_graph_computes_what_the_function_does():
    g, graph = many_graph()
    imported = tf.graph_util.import_graph_def(graph.as_graph_def())
    assert imported.as_text() == graph.as_text()
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    ids = np.array([0, 3, 1], np.int32)
    expected = g(x, ids)
    fn = tf.NewGraphFunction(imported, inputs=["x:0", "ids:0"], outputs=["Mul:0", "OneHot:0", "Pad:0", "MatMul:0"])
    for got, want in zip(fn(x, ids), [expected[0], expected[3], expected[4], expected[5]]):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    # Re-exporting the imported graph gives the same bytes (debug_info included).
    assert imported.as_graph_def() == graph.as_graph_def()


def test_import_what_tensorflow_writes():
    gd = gdm.GraphDef.FromString(bytes.fromhex(TENSORFLOW_HEX))
    assert gd.SerializeToString(deterministic=True).hex() == TENSORFLOW_HEX  # the messages keep TensorFlow's bytes
    assert gd.node[0].attr["_user_specified_name"].s == b"x"
    const = gd.node[3].attr["value"].tensor
    assert list(const.float_val) == [0.5] and gdm.make_ndarray(const) == np.float32(0.5)
    g = tf.graph_util.import_graph_def(gd)
    assert g.get_operation_by_name("add").type == "Add"  # TensorFlow's AddV2
    fn = tf.NewGraphFunction(g, inputs=["x:0"], outputs=["Identity:0"])
    assert float(fn(np.array([3., 4.], np.float32))) == 16.5


def test_import_options():
    gd = square_of_square_graph().as_graph_def()
    tensor, op = tf.graph_util.import_graph_def(gd, return_elements=["Square_1:0", "Square"])
    assert tensor.name == "Square_1:0" and tensor.dtype == tf.float32
    assert op.type == "Square" and op.name == "Square"
    g = tf.graph_util.import_graph_def(gd, name="imported")
    assert [o.name for o in g.get_operations()] == ["imported/x", "imported/Square", "imported/Square_1"]
    assert float(tf.NewGraphFunction(g, ["imported/x:0"], ["imported/Square_1:0"])(3.0)) == 81.0
    mapped = tf.graph_util.import_graph_def(gd, input_map={"x:0": tf.constant(3.0)})
    assert float(tf.NewGraphFunction(mapped, [], ["Square_1:0"])()) == 81.0
    assert tf.graph_util.import_graph_def(gd.SerializeToString()).as_text() == \
        tf.graph_util.import_graph_def(gd).as_text()
    with pytest.raises(ValueError, match="not found in graph_def"):
        tf.graph_util.import_graph_def(gd, input_map={"nope:0": 1.0})
    with pytest.raises(ValueError, match="Requested return_element 'nope' not found"):
        tf.graph_util.import_graph_def(gd, return_elements=["nope"])
    with pytest.raises(TypeError):
        tf.graph_util.import_graph_def("not a graph")


# ---- variables (issue 12, item 4): a GraphDef reaches only the variables bound at import


def variable_graph(v):
    @tf.function
    def f(x):
        v.assign_add(x)
        return v.read_value() * 2.0

    return f.get_concrete_function(tf.TensorSpec([2], tf.float32)).graph


def test_variables_export_as_tensorflow_writes_them():
    v = tf.Variable([1.0, 2.0], name="weights")
    gd = variable_graph(v).as_graph_def()
    nodes = nodes_by_name(gd)
    # As TensorFlow 2.21 writes a captured variable: a scalar DT_RESOURCE Placeholder, input 0 of the ops.
    handle = nodes["weights"]
    assert handle.op == "Placeholder" and handle.attr["dtype"].type == gdm.DT_RESOURCE
    assert handle.attr["shape"].WhichOneof("value") == "shape" and list(handle.attr["shape"].shape.dim) == []
    assert handle.attr["_user_specified_name"].s == b"weights"
    assert nodes["AssignAddVariableOp"].input[:2] == ["weights", "x"]
    assert nodes["ReadVariableOp"].input[0] == "weights"
    # TensorFlow's attributes of the variable ops (TensorFlow 2.21 imports these bytes, with input_map binding
    # "weights:0" to a variable's handle, and computes what ember does).
    assert set(nodes["AssignAddVariableOp"].attr) == {"dtype"} and set(nodes["ReadVariableOp"].attr) == {"dtype"}
    assert nodes["AssignAddVariableOp"].attr["dtype"].type == gdm.DT_FLOAT
    for node in gd.node:  # no process-wide variable id travels
        assert "resource" not in node.attr, node


def test_variables_round_trip_bound_by_name():
    v = tf.Variable([1.0, 2.0], name="weights")
    gd = variable_graph(v).as_graph_def()
    w = tf.Variable([10.0, 20.0], name="other")
    g = tf.graph_util.import_graph_def(gd, input_map={"weights:0": w})
    assert g.as_text() == variable_graph(w).as_text()  # as if traced with w
    # Run a read-only graph here (the write is run in tests/cpp/graph/graph_def_test.cc, since
    # NewGraphFunction's prune drops the control edge that orders a read after an add).
    @tf.function
    def read():
        return v.read_value() * 2.0

    gd = read.get_concrete_function().graph.as_graph_def()
    g = tf.graph_util.import_graph_def(gd, input_map={"weights:0": w})
    np.testing.assert_array_equal(tf.NewGraphFunction(g, inputs=[], outputs=["Mul:0"])().numpy(), [20.0, 40.0])
    # Binding the original variable by its short name works too; a prefix renames the binding with the node.
    g = tf.graph_util.import_graph_def(gd, input_map={"weights": v}, name="p")
    np.testing.assert_array_equal(tf.NewGraphFunction(g, inputs=[], outputs=["p/Mul:0"])().numpy(), [2.0, 4.0])
    # Re-exported, the graph names the variable it was bound to.
    assert "other" in {n.name for n in tf.graph_util.import_graph_def(gd, input_map={"weights": w}).as_graph_def().node}


def test_import_variables_as_tensorflow_writes_them():
    gd = gdm.GraphDef.FromString(bytes.fromhex(TENSORFLOW_VARIABLE_HEX))
    handle = nodes_by_name(gd)["AssignAddVariableOp/resource"]
    assert handle.attr["dtype"].type == gdm.DT_RESOURCE
    # ember registers no NoOp (TensorFlow's sink of the function's control outputs): leave it and its user out.
    kept = [n for n in gd.node if n.name not in ("NoOp", "Identity_1")]
    del gd.node[:]
    gd.node.extend(kept)
    read = nodes_by_name(gd)["Read/ReadVariableOp"]
    assert list(read.input) == ["AssignAddVariableOp/resource", "^AssignAddVariableOp"]
    del read.input[1:]  # only the read runs below (see test_variables_round_trip_bound_by_name)
    w = tf.Variable([10.0, 20.0])
    g = tf.graph_util.import_graph_def(gd, input_map={"AssignAddVariableOp/resource:0": w})
    assert g.get_operation_by_name("Read/ReadVariableOp").type == "ReadVariableOp"
    np.testing.assert_array_equal(tf.NewGraphFunction(g, [], ["Read/ReadVariableOp:0"])().numpy(), [10.0, 20.0])
    with pytest.raises(errors.InvalidArgumentError, match="node 'AssignAddVariableOp/resource' is a resource Placeholder"):
        tf.graph_util.import_graph_def(gd)


def test_an_unbound_variable_is_a_clear_error():
    v = tf.Variable([1.0, 2.0], name="weights")
    gd = variable_graph(v).as_graph_def()
    with pytest.raises(errors.InvalidArgumentError, match="node 'weights' is a resource Placeholder.*no variable "
                       "is bound to it.*input_map=\\{'weights:0': variable\\}"):
        tf.graph_util.import_graph_def(gd)
    with pytest.raises(TypeError, match="must be bound to an ember.Variable, got Tensor"):
        tf.graph_util.import_graph_def(gd, input_map={"weights:0": tf.constant([1.0, 2.0])})
    u = tf.Variable([1, 2], name="ints")
    with pytest.raises(errors.InvalidArgumentError, match="variable 'ints' has dtype int32 but the value has dtype float32"):
        tf.graph_util.import_graph_def(gd, input_map={"weights:0": u})
    with pytest.raises(errors.InvalidArgumentError, match="attribute 'dtype' is float32, but the bound variable "
                       "'ints' has dtype int32"):
        read = gdm.NodeDef(name="r", op="ReadVariableOp", input=["weights"], attr={"dtype": gdm.AttrValue(type=gdm.DT_FLOAT)})
        tf.graph_util.import_graph_def(gdm.GraphDef(node=[gd.node[0], read]), input_map={"weights:0": u})


def test_a_graph_cannot_reach_a_variable_by_its_numeric_id():
    secret = tf.Variable([7.0], name="secret")
    # What ember's GraphDefs carried before: ReadVariableOp naming a live variable by its process-wide id.
    crafted = gdm.GraphDef(node=[gdm.NodeDef(name="r", op="ReadVariableOp", attr={
        "resource": gdm.AttrValue(i=secret._id), "dtype": gdm.AttrValue(type=gdm.DT_FLOAT),
        "shape": gdm.AttrValue(list=gdm.AttrValue.ListValue(i=[1]))})])
    with pytest.raises(errors.InvalidArgumentError, match="node 'r' \\(op ReadVariableOp\\): input 0 should be a "
                       "variable \\(a resource Placeholder bound at import\\), got no input"):
        tf.graph_util.import_graph_def(crafted)
    # With a bound variable, a numeric id beside it is still refused, and the write cannot be redirected.
    mine = tf.Variable([1.0], name="mine")
    handle = gdm.NodeDef(name="mine", op="Placeholder", attr={"dtype": gdm.AttrValue(type=gdm.DT_RESOURCE)})
    value = gdm.NodeDef(name="c", op="Const", attr={"value": gdm.AttrValue(tensor=gdm.make_tensor_proto([0.0]))})
    write = gdm.NodeDef(name="w", op="AssignVariableOp", input=["mine", "c"],
                        attr={"resource": gdm.AttrValue(i=secret._id)})
    with pytest.raises(errors.InvalidArgumentError, match="attribute 'resource': a GraphDef names a variable by a "
                       "bound resource input, never by a numeric id"):
        tf.graph_util.import_graph_def(gdm.GraphDef(node=[handle, value, write]), input_map={"mine:0": mine})
    # A resource may feed only a variable op (or an Identity, which is another name for it).
    neg = gdm.NodeDef(name="i", op="Neg", input=["mine"])
    with pytest.raises(errors.InvalidArgumentError, match="input 'mine' is the variable 'mine'"):
        tf.graph_util.import_graph_def(gdm.GraphDef(node=[handle, neg]), input_map={"mine:0": mine})
    np.testing.assert_array_equal(secret.numpy(), [7.0])


def test_huge_counts_from_bytes_are_refused_before_allocating():
    # Issue 12, item 9: a 70-byte GraphDef feeding a [3037000500, 0] placeholder to Unpack hung or aborted.
    dims = gdm.TensorShapeProto(dim=[gdm.TensorShapeProto.Dim(size=3037000500), gdm.TensorShapeProto.Dim(size=0)])
    gd = gdm.GraphDef(node=[
        gdm.NodeDef(name="x", op="Placeholder", attr={"dtype": gdm.AttrValue(type=gdm.DT_FLOAT),
                                                      "shape": gdm.AttrValue(shape=dims)}),
        gdm.NodeDef(name="u", op="Unpack", input=["x"])])
    with pytest.raises(errors.InvalidArgumentError, match="node 'u' \\(op Unpack\\): Unpack: cannot unpack shape "
                       "\\[3037000500,0\\] along axis 0 into 3037000500 tensors; at most 1048576"):
        tf.graph_util.import_graph_def(gd.SerializeToString())


# ---- errors


def node(name, op, inputs=(), **attrs):
    return gdm.NodeDef(name=name, op=op, input=list(inputs), attr=attrs)


def placeholder(name, datatype=gdm.DT_FLOAT):
    return node(name, "Placeholder", dtype=gdm.AttrValue(type=datatype))


def test_bad_graphs_name_the_node():
    with pytest.raises(errors.NotFoundError, match="node 'y' has op 'FancyOp', which ember does not register"):
        tf.graph_util.import_graph_def(gdm.GraphDef(node=[placeholder("x"), node("y", "FancyOp", ["x"])]))
    with pytest.raises(errors.InvalidArgumentError, match="node 'y': input 'nowhere:0' names no node"):
        tf.graph_util.import_graph_def(gdm.GraphDef(node=[node("y", "Neg", ["nowhere:0"])]))
    cycle = gdm.GraphDef(node=[node("a", "Neg", ["b"]), node("b", "Neg", ["a"])])
    with pytest.raises(errors.InvalidArgumentError, match="form a cycle: a <- b <- a"):
        tf.graph_util.import_graph_def(cycle)
    with pytest.raises(errors.InvalidArgumentError, match="lacks the required attribute 'dtype'"):
        tf.graph_util.import_graph_def(gdm.GraphDef(node=[node("x", "Placeholder")]))
    with pytest.raises(errors.InvalidArgumentError, match="'dtype': should be a dtype"):
        tf.graph_util.import_graph_def(gdm.GraphDef(node=[node("x", "Placeholder", dtype=gdm.AttrValue(i=1))]))


def test_corrupt_bytes_are_data_loss():
    good = gdm.GraphDef.FromString(bytes.fromhex(SQUARE_OF_SQUARE_HEX)).SerializeToString()
    # The messages are protobuf's: bad bytes are its DecodeError. (A field of the wrong wire type, as
    # NodeDef.name as a varint in b"\x0a\x02\x08\x01", is an unknown field to protobuf: that node has no name.)
    with pytest.raises(errors.InvalidArgumentError, match="node #0 has the name ''"):
        tf.graph_util.import_graph_def(b"\x0a\x02\x08\x01")
    for bad in (good[:-2], b"\x0a\x80", b"\x0b", b"\x0a\x03\x0a\x01\xff"):
        with pytest.raises(DecodeError):
            gdm.GraphDef.FromString(bad)
    # AttrValue.func -> NameAttrList.attr -> AttrValue ... nests without end; 101 levels is too deep.
    nested = b""
    for _ in range(101):
        nested = b"\x52" + _length_delimited(b"\x12" + _length_delimited(b"\x12" + _length_delimited(nested)))
    with pytest.raises(DecodeError):
        gdm.AttrValue.FromString(nested)
    # import_graph_def with bytes, and the C++ reader behind it, raise ember's DataLossError.
    for bad in (good[:-2], b"\x0a\x80", b"\x0b", b"\x0a\x03\x0a\x01\xff"):
        with pytest.raises(errors.DataLossError, match="GraphDef: the bytes are not a serialized GraphDef"):
            tf.graph_util.import_graph_def(bad)
        with pytest.raises(errors.DataLossError, match="GraphDef: the bytes are not a serialized GraphDef"):
            tf.graph_util.import_graph_def(bad, name="prefixed")  # parsed in Python first
    # Each AttrValue -> NameAttrList nesting is two messages deep: 101 of them pass protobuf's limit of 100.
    node = b"\x0a\x01x\x12\x0bPlaceholder\x2a" + _length_delimited(b"\x0a\x01f\x12" + _length_delimited(nested))
    with pytest.raises(errors.DataLossError):
        tf._C.function_from_graph_def(b"\x0a" + _length_delimited(node))


def _length_delimited(payload):
    length, out = len(payload), bytearray()
    while length >= 0x80:
        out.append((length & 0x7f) | 0x80)
        length >>= 7
    return bytes(out + bytearray([length])) + payload


def test_fuzz_never_crashes():
    rng = np.random.default_rng(0)
    _, graph = many_graph()
    seeds = [bytes.fromhex(SQUARE_OF_SQUARE_HEX), graph.as_graph_def().SerializeToString(),
             bytes.fromhex(TENSORFLOW_HEX)]
    inputs = [rng.integers(0, 256, rng.integers(0, 48), dtype=np.uint8).tobytes() for _ in range(300)]
    for seed in seeds:
        inputs += [seed[:n] for n in range(0, len(seed), 7)]
        for _ in range(300):
            data = bytearray(seed)
            for _ in range(rng.integers(1, 4)):
                at = int(rng.integers(0, len(data)))
                data[at] = int(rng.integers(0, 256)) if rng.random() < 0.5 else data[at] ^ (1 << int(rng.integers(8)))
            inputs.append(bytes(data))
    parsed = imported = 0
    for data in inputs:
        # The C++ reader, on the raw bytes.
        try:
            tf._C.function_from_graph_def(data)
        except (errors.DataLossError, errors.InvalidArgumentError, errors.NotFoundError) as e:
            assert str(e).startswith("GraphDef: ")
        # The Python messages, then the import of what they parsed.
        try:
            gd = gdm.GraphDef.FromString(data)
        except DecodeError:
            continue
        parsed += 1
        try:
            tf.graph_util.import_graph_def(gd)
            imported += 1
        except (errors.DataLossError, errors.InvalidArgumentError, errors.NotFoundError) as e:
            assert str(e).startswith("GraphDef: ")
    assert parsed > 100 and imported > 10


# ---- messages and tensors


def test_message_api():
    attr = gdm.AttrValue(i=0)
    assert attr.WhichOneof("value") == "i" and attr.HasField("i") and not attr.HasField("f")
    assert attr.SerializeToString() == b"\x18\x00"  # a oneof member is written even at its default
    attr.f = 1.5
    assert attr.WhichOneof("value") == "f" and attr.i == 0 and attr.SerializeToString() == b"\x25\x00\x00\xc0\x3f"
    assert gdm.AttrValue().SerializeToString() == b""
    assert gdm.AttrValue(list=gdm.AttrValue.ListValue()).SerializeToString() == b"\x0a\x00"
    assert gdm.AttrValue(list=gdm.AttrValue.ListValue(i=[1, -1])).SerializeToString() == \
        b"\x0a\x0d\x1a\x0b\x01" + b"\xff" * 9 + b"\x01"
    assert gdm.AttrValue.FromString(b"\x0a\x04\x18\x01\x18\x02").list.i == [1, 2]  # unpacked ints read too
    assert gdm.VersionDef(producer=-1).SerializeToString() == b"\x08" + b"\xff" * 9 + b"\x01"
    assert gdm.VersionDef.FromString(b"\x08" + b"\xff" * 9 + b"\x01").producer == -1
    with pytest.raises(AttributeError):
        gdm.NodeDef().nonexistent
    with pytest.raises(TypeError):
        gdm.NodeDef(attr={"T": 3})
    # GraphDef.library (field 2) is written between node and versions, in field-number order, so
    # TensorFlow's bytes survive unchanged.
    library = b"\x12\x04\x0a\x02\x0a\x00"
    with_library = gdm.GraphDef.FromString(bytes.fromhex(SQUARE_OF_SQUARE_HEX) + library)
    data = with_library.SerializeToString(deterministic=True)
    assert data == bytes.fromhex(SQUARE_OF_SQUARE_HEX)[:-5] + library + bytes.fromhex(SQUARE_OF_SQUARE_HEX)[-5:]


@pytest.mark.parametrize("dtype", [tf.float16, tf.bfloat16, tf.float32, tf.float64, tf.int8, tf.int16, tf.int32,
                                   tf.int64, tf.uint8, tf.bool])
def test_tensor_protos_round_trip(dtype):
    values = np.array([[1, 0, 3], [4, 5, 0]]).astype(dtype.as_numpy_dtype)
    proto = gdm.make_tensor_proto(values, dtype=dtype)
    assert gdm.as_dtype(proto.dtype) == dtype
    assert [d.size for d in proto.tensor_shape.dim] == [2, 3]
    back = gdm.make_ndarray(gdm.TensorProto.FromString(proto.SerializeToString()))
    assert back.dtype == values.dtype
    np.testing.assert_array_equal(back.astype(np.float64), values.astype(np.float64))


def test_typed_tensor_values_repeat_the_last():
    splat = gdm.TensorProto(dtype=gdm.DT_FLOAT, float_val=[7.0],
                            tensor_shape=gdm.TensorShapeProto(dim=[gdm.TensorShapeProto.Dim(size=2)] * 2))
    np.testing.assert_array_equal(gdm.make_ndarray(splat), np.full((2, 2), 7, np.float32))
    halves = gdm.TensorProto(dtype=gdm.DT_HALF, half_val=[0x3c00, 0x4000],
                             tensor_shape=gdm.TensorShapeProto(dim=[gdm.TensorShapeProto.Dim(size=2)]))
    np.testing.assert_array_equal(gdm.make_ndarray(halves), np.array([1, 2], np.float16))
    assert gdm.make_ndarray(gdm.TensorProto(dtype=gdm.DT_INT64)).shape == ()
    assert gdm.as_dtype(gdm.DT_STRING) == tf.string
    assert gdm.as_dtype(gdm.DT_RESOURCE) == tf.resource  # a variable's handle, as TensorFlow's tf.resource
    with pytest.raises(TypeError, match="DT_VARIANT"):
        gdm.as_dtype(gdm.DT_VARIANT)


def test_make_ndarray_never_trusts_sizes():
    # Issue 12, item 9: sizes from bytes are checked exactly, before anything is allocated.
    def proto(dims, **values):
        return gdm.TensorProto(dtype=gdm.DT_FLOAT, tensor_shape=gdm.TensorShapeProto(
            dim=[gdm.TensorShapeProto.Dim(size=d) for d in dims]), **values)

    with pytest.raises(ValueError, match="would expand its listed values to more than 1073741824 bytes"):
        gdm.make_ndarray(proto([2**40], float_val=[1.0]))  # was a MemoryError from np.repeat
    # 2^62 + 1 times 4 wraps to 4 in int64: 16 bytes of content must not pass for it.
    with pytest.raises(ValueError, match="exceeds 2.63-1"):
        gdm.make_ndarray(proto([2**62 + 1, 4], tensor_content=b"\0" * 16))
    with pytest.raises(ValueError, match="TensorProto: dimension -1 is negative"):
        gdm.make_ndarray(proto([-1], float_val=[1.0]))
    assert gdm.make_ndarray(proto([3037000500, 0])).shape == (3037000500, 0)


def test_a_graph_cannot_reach_variables_through_a_function_of_the_process():
    # A called function's variables travel as DT_RESOURCE arguments (its FunctionDef in the library), so
    # importing needs them bound like the graph's own (issue 12, item 4).
    secret = tf.Variable([7.0], name="secret")

    @tf.function
    def leak():
        secret.assign([0.0])
        return secret.read_value()

    @tf.function
    def outer():
        return leak() * 1.0

    gd = outer.get_concrete_function().graph.as_graph_def()
    call = next(n for n in gd.node if n.op == "StatefulPartitionedCall")
    assert list(call.input) == ["secret"] and list(call.attr["Tin"].list.type) == [gdm.DT_RESOURCE]
    assert [a.type for a in gd.library.function[0].signature.input_arg] == [gdm.DT_RESOURCE]
    with pytest.raises(errors.InvalidArgumentError, match="node 'secret' is a resource Placeholder"):
        tf.graph_util.import_graph_def(gd)
    mine = tf.Variable([1.0])
    g = tf.graph_util.import_graph_def(gd, input_map={"secret:0": mine})
    assert float(tf.NewGraphFunction(g, [], [call.name + ":0"])()[0]) == 0.0
    np.testing.assert_array_equal(mine.numpy(), [0.0])
    np.testing.assert_array_equal(secret.numpy(), [7.0])
    # Without the library, the call names the live function of this process, which uses a variable.
    gd.ClearField("library")
    gd.node.remove(next(n for n in gd.node if n.name == "secret"))
    del call.input[:]
    with pytest.raises(errors.InvalidArgumentError, match=f"calls the function '{call.attr['f'].func.name}' of this "
                       "process, which uses a variable; a GraphDef reaches only the variables bound at import"):
        tf.graph_util.import_graph_def(gd)
    np.testing.assert_array_equal(secret.numpy(), [7.0])

    @tf.function
    def pure(x):
        return x * 2.0

    @tf.function
    def calls_pure(x):
        return pure(x) + 1.0

    # A function without state may still be called, so in-process round trips of nested functions work.
    gd = calls_pure.get_concrete_function(tf.TensorSpec([], tf.float32)).graph.as_graph_def()
    g = tf.graph_util.import_graph_def(gd)
    assert float(tf.NewGraphFunction(g, ["x:0"], ["Add:0"])(2.0)) == 5.0
