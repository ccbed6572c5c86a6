"""GraphDef round trips with TensorFlow itself (issue 13, part 3): TensorFlow 2.21 runs what ember exports
(nested calls through a FunctionDefLibrary, None dimensions), ember runs what TensorFlow exports, and
ember's .proto files carry TensorFlow's field numbers. TensorFlow (tensorflow-cpu) is installed by the
test command (scripts/install_deps.sh --test), so nothing here is skipped."""

import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import ember as em
from ember.framework import graph_def as gdm


def test_tensorflow_and_ember_import_together_in_either_order():
    # Both load a protobuf runtime (TensorFlow's own copy, Debian's libprotobuf for ember) with symbols of
    # the same names; each order must work, and both sets of descriptors live side by side.
    script = ("import {first}, {second}\n"
              "import ember as em\n"
              "gd = em.function(lambda x: x * 2.0).get_concrete_function(em.TensorSpec([2])).graph.as_graph_def()\n"
              "from tensorflow.core.framework import graph_pb2\n"
              "back = graph_pb2.GraphDef.FromString(gd.SerializeToString())\n"
              "print([n.op for n in back.node])\n")
    for first, second in (("tensorflow", "ember"), ("ember", "tensorflow")):
        proc = subprocess.run([sys.executable, *(["-S"] if sys.flags.no_site else []), "-c",
                               script.format(first=first, second=second)],
                              env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)), capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, f"import {first} then {second}:\n{proc.stderr[-3000:]}"
        assert "['Placeholder', 'Const', 'Mul']" in proc.stdout or "'Mul'" in proc.stdout, proc.stdout


def _tf_messages():
    from tensorflow.core.framework import (attr_value_pb2, function_pb2, graph_debug_info_pb2, graph_pb2,
                                           node_def_pb2, op_def_pb2, tensor_pb2, tensor_shape_pb2, types_pb2,
                                           versions_pb2)
    return {"GraphDef": graph_pb2.GraphDef, "NodeDef": node_def_pb2.NodeDef, "AttrValue": attr_value_pb2.AttrValue,
            "NameAttrList": attr_value_pb2.NameAttrList, "TensorProto": tensor_pb2.TensorProto,
            "TensorShapeProto": tensor_shape_pb2.TensorShapeProto, "VersionDef": versions_pb2.VersionDef,
            "GraphDebugInfo": graph_debug_info_pb2.GraphDebugInfo, "OpDef": op_def_pb2.OpDef,
            "FunctionDef": function_pb2.FunctionDef, "FunctionDefLibrary": function_pb2.FunctionDefLibrary,
            "GradientDef": function_pb2.GradientDef, "DataType": types_pb2.DataType}


def _check_message(ours, theirs, path, seen=None):
    seen = set() if seen is None else seen
    if ours.full_name in seen:  # AttrValue and NameAttrList hold each other
        return
    seen.add(ours.full_name)
    assert ours.name == theirs.name, path
    their_fields = {f.name: f for f in theirs.fields}
    for field in ours.fields:
        other = their_fields.get(field.name)
        assert other is not None, f"{path}.{field.name}: TensorFlow has no such field"
        where = f"{path}.{field.name}"
        assert field.number == other.number, where
        assert field.type == other.type, where
        assert field.is_repeated == other.is_repeated, where
        real_oneof = lambda f: f.containing_oneof is not None and not f.containing_oneof.name.startswith("_")
        assert real_oneof(field) == real_oneof(other), where  # proto3 `optional` is a synthetic "_name" oneof
        if field.message_type is not None:
            _check_message(field.message_type, other.message_type, where, seen)
        if field.enum_type is not None:
            values = {v.name: v.number for v in other.enum_type.values}
            for v in field.enum_type.values:
                assert values.get(v.name) == v.number, f"{where}: {v.name}"


def test_messages_carry_tensorflows_field_numbers():
    theirs = _tf_messages()
    for name, cls in theirs.items():
        if name == "DataType":
            values = {v.name: v.number for v in cls.DESCRIPTOR.values}
            ours = gdm.GraphDef.DESCRIPTOR.file.pool.FindEnumTypeByName("ember.proto.DataType")
            assert all(values[v.name] == v.number for v in ours.values)
            continue
        ours = getattr(gdm, name).DESCRIPTOR
        assert ours.full_name == "ember.proto." + name  # not TensorFlow's package: no clash
        _check_message(ours, cls.DESCRIPTOR, name)


def nested_ember_function():
    @em.function
    def inner(a):
        return em.nn.relu(a) * 2.0 + 1.0

    @em.function
    def middle(a, b):
        product = em.matmul(a, b)
        return inner(product) + product  # calls inner again: one FunctionDef for it

    @em.function(input_signature=[em.TensorSpec([None, 3], em.float32), em.TensorSpec([3, None], em.float32)])
    def outer(x, w):
        return em.tanh(middle(x, w)) - inner(em.matmul(x, w)) * em.sigmoid(em.matmul(x, w))

    return outer


def run_in_tensorflow(graph_def_bytes, feeds, fetches, *args):
    """Imports the bytes into a TensorFlow graph (TensorFlow's own reader, library included), prunes it to
    feeds -> fetches and runs it."""
    graph_def = tf.compat.v1.GraphDef.FromString(graph_def_bytes)
    wrapped = tf.compat.v1.wrap_function(lambda: tf.compat.v1.import_graph_def(graph_def, name=""), [])
    return wrapped.prune(feeds=feeds, fetches=fetches)(*[a if tf.is_tensor(a) else tf.constant(a) for a in args])


def test_tensorflow_runs_an_ember_graph_with_nested_calls_and_none_dimensions():
    outer = nested_ember_function()
    graph = outer.get_concrete_function().graph
    gd = graph.as_graph_def()
    # Each called function once, in TensorFlow's FunctionDef form.
    names = [f.signature.name for f in gd.library.function]
    assert len(names) == 2 and len(set(names)) == 2
    middle = next(f for f in gd.library.function if "middle" in f.signature.name)
    assert [a.name for a in middle.signature.input_arg] == ["a", "b"]
    assert [a.type for a in middle.signature.input_arg] == [gdm.DT_FLOAT, gdm.DT_FLOAT]
    assert list(middle.arg_attr[1].attr["_output_shapes"].list.shape[0].dim) == [
        gdm.TensorShapeProto.Dim(size=3), gdm.TensorShapeProto.Dim(size=-1)]
    add = next(n for n in middle.node_def if n.op == "AddV2")
    matmul = next(n for n in middle.node_def if n.op == "MatMul")
    call = next(n for n in middle.node_def if n.op in ("PartitionedCall", "StatefulPartitionedCall"))
    assert list(call.input) == [f"{matmul.name}:product:0"]
    assert list(add.input) == [f"{call.name}:output:0", f"{matmul.name}:product:0"]
    assert call.attr["f"].func.name in names and list(call.attr["Tin"].list.type) == [gdm.DT_FLOAT]
    assert middle.ret["output_0"] == f"{add.name}:z:0"
    rng = np.random.default_rng(0)
    for batch, width in ((5, 3), (7, 4)):  # the None dimensions take other sizes in TensorFlow
        x = rng.standard_normal((batch, 3)).astype(np.float32)
        w = rng.standard_normal((3, width)).astype(np.float32)
        got = run_in_tensorflow(gd.SerializeToString(), [t.name for t in graph.inputs],
                                [t.name for t in graph.outputs], x, w)
        np.testing.assert_allclose(got[0].numpy(), outer(x, w).numpy(), rtol=1e-5, atol=1e-6)


def test_tensorflow_runs_captured_values_several_results_and_casts():
    scale = em.constant([1.0, 2.0, 3.0])

    @em.function
    def two(a):
        # A captured eager value: traced inside `outer`, `two` takes it as an input (as TensorFlow's
        # function does), and the outer graph holds it as a Const.
        return a * scale, em.exp(a)

    @em.function
    def rounded(a):
        return em.cast(em.cast(a * 4.0, em.int32), em.float32)  # Cast's SrcT, derived from its input

    @em.function(input_signature=[em.TensorSpec([None, 3], em.float32)])
    def outer(x):
        p, q = two(x)
        return p - q + rounded(x)

    graph = outer.get_concrete_function().graph
    gd = graph.as_graph_def()
    two_def = next(f for f in gd.library.function if "two" in f.signature.name)
    assert len(two_def.signature.output_arg) == 2 and len(two_def.signature.input_arg) == 2
    cast = next(n for f in gd.library.function for n in f.node_def if n.op == "Cast")
    assert cast.attr["SrcT"].type == gdm.DT_FLOAT and cast.attr["DstT"].type == gdm.DT_INT32
    x = np.random.default_rng(2).standard_normal((6, 3)).astype(np.float32)
    got = run_in_tensorflow(gd.SerializeToString(), ["x:0"], [t.name for t in graph.outputs], x)
    np.testing.assert_allclose(got[0].numpy(), outer(x).numpy(), rtol=1e-6)


def test_variables_of_called_functions_are_resource_arguments():
    v = em.Variable([1.0, 2.0], name="weights")

    @em.function
    def step(x):
        v.assign_add(x)
        return v.read_value() * 2.0

    @em.function
    def middle(x):
        return step(x) + 1.0

    @em.function(input_signature=[em.TensorSpec([2], em.float32)])
    def outer(x):
        return middle(x) * 3.0

    graph = outer.get_concrete_function().graph
    gd = graph.as_graph_def()
    for function in gd.library.function:  # each passes the variable on, as TensorFlow's functions do
        assert [a.type for a in function.signature.input_arg] == [gdm.DT_FLOAT, gdm.DT_RESOURCE]
        assert function.signature.is_stateful
    fetches = [t.name for t in graph.outputs]
    x = np.array([1.0, 1.0], np.float32)
    # ember binds its own variable to the resource Placeholder "weights"; the exported one is untouched.
    mine = em.Variable([10.0, 20.0])
    imported = em.graph_util.import_graph_def(gd, input_map={"weights:0": mine})
    got = em.NewGraphFunction(imported, ["x:0"], fetches)(x)
    np.testing.assert_array_equal(got.numpy(), [69.0, 129.0])
    np.testing.assert_array_equal(mine.numpy(), [11.0, 21.0])
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
    # A call passing a variable to a function that takes none (or the other way round) is refused.
    broken = gdm.GraphDef()
    broken.CopyFrom(gd)
    del broken.library.function[0].signature.input_arg[1:]
    with pytest.raises(em.errors.InvalidArgumentError, match=r"the call passes 1 variable\(s\), but it takes 0"):
        em.graph_util.import_graph_def(broken, input_map={"weights:0": mine})
    # TensorFlow runs it with a variable of its own fed to the resource Placeholder.
    theirs = tf.Variable([10.0, 20.0])
    got = run_in_tensorflow(gd.SerializeToString(), ["x:0", "weights:0"], fetches, x, theirs.handle)
    np.testing.assert_array_equal(got[0].numpy(), [69.0, 129.0])
    np.testing.assert_array_equal(theirs.numpy(), [11.0, 21.0])


def test_ember_reads_back_its_own_library():
    outer = nested_ember_function()
    graph = outer.get_concrete_function().graph
    imported = em.graph_util.import_graph_def(graph.as_graph_def().SerializeToString())
    fn = em.NewGraphFunction(imported, [t.name for t in graph.inputs], [t.name for t in graph.outputs])
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.0
    w = np.ones((3, 2), np.float32)
    np.testing.assert_allclose(fn(x, w).numpy(), outer(x, w).numpy(), rtol=1e-6)


def test_ember_runs_a_tensorflow_graph_with_a_function_library():
    @tf.function
    def inner(a):
        return tf.nn.relu(a) * 2.0 + 1.0

    @tf.function
    def middle(a, b):
        return inner(a) + tf.matmul(a, b)

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32), tf.TensorSpec([3, 3], tf.float32)])
    def outer(x, w):
        return tf.tanh(middle(x, w)) + inner(x)

    concrete = outer.get_concrete_function()
    gd = concrete.graph.as_graph_def()
    assert len(gd.library.function) == 2  # TensorFlow wrote the nested functions as FunctionDefs
    graph = em.graph_util.import_graph_def(gd)  # TensorFlow's message object: its bytes are read
    fn = em.NewGraphFunction(graph, ["x:0", "w:0"], [t.name for t in concrete.outputs])
    rng = np.random.default_rng(1)
    for batch in (4, 9):
        x = rng.standard_normal((batch, 3)).astype(np.float32)
        w = rng.standard_normal((3, 3)).astype(np.float32)
        np.testing.assert_allclose(fn(x, w).numpy(), outer(x, w).numpy(), rtol=1e-5, atol=1e-6)


def test_ember_binds_the_variables_of_tensorflows_functions():
    v = tf.Variable([1.0, 2.0], name="weights")

    @tf.function
    def step(x):
        v.assign_add(x)
        return v.read_value() * 2.0

    @tf.function(input_signature=[tf.TensorSpec([2], tf.float32)])
    def outer(x):
        return step(x) + 1.0

    concrete = outer.get_concrete_function()
    gd = concrete.graph.as_graph_def()
    # TensorFlow's NoOps (sinks of the side effects) are left out, their control edges forwarded.
    assert any(n.op == "NoOp" for n in gd.node) and any(n.op == "NoOp" for n in gd.library.function[0].node_def)
    handle = next(n.name for n in gd.node if n.op == "Placeholder" and n.attr["dtype"].type == gdm.DT_RESOURCE)
    mine = em.Variable([10.0, 20.0])
    graph = em.graph_util.import_graph_def(gd, input_map={handle + ":0": mine})
    got = em.NewGraphFunction(graph, ["x:0"], [t.name for t in concrete.outputs])(np.array([1.0, 1.0], np.float32))
    np.testing.assert_array_equal(got.numpy(), [23.0, 43.0])
    np.testing.assert_array_equal(mine.numpy(), [11.0, 21.0])
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


def test_a_bad_library_is_a_clear_error():
    @tf.function
    def inner(a):
        return a * 2.0

    @tf.function(input_signature=[tf.TensorSpec([2], tf.float32)])
    def outer(x):
        return inner(x)

    gd = gdm.GraphDef.FromString(outer.get_concrete_function().graph.as_graph_def().SerializeToString())
    function = gd.library.function[0]
    call = next(n for n in gd.node if n.op.endswith("PartitionedCall"))
    # A function that calls itself.
    recursive = gdm.GraphDef()
    recursive.CopyFrom(gd)
    body = next(n for n in recursive.library.function[0].node_def if n.op == "Mul")
    body.op = "PartitionedCall"
    body.attr.clear()
    body.attr["f"].func.name = function.signature.name
    del body.input[1:]
    identity = next(n for n in recursive.library.function[0].node_def if n.op == "Identity")
    identity.input[0] = f"{body.name}:output:0"
    with pytest.raises(em.errors.InvalidArgumentError, match="calls itself"):
        em.graph_util.import_graph_def(recursive)
    # An output arg without a ret entry, and a body input naming an output arg the op does not have.
    broken = gdm.GraphDef()
    broken.CopyFrom(gd)
    broken.library.function[0].ret.clear()
    with pytest.raises(em.errors.InvalidArgumentError, match="has no entry in ret"):
        em.graph_util.import_graph_def(broken)
    broken.CopyFrom(gd)
    identity = next(n for n in broken.library.function[0].node_def if n.op == "Identity")
    identity.input[0] = identity.input[0].replace(":z:", ":nonexistent:")
    with pytest.raises(em.errors.InvalidArgumentError, match="has no output 'nonexistent'"):
        em.graph_util.import_graph_def(broken)
    assert call.attr["f"].func.name == function.signature.name


def _shape_operand_program(m):
    """Shape operands computed at run time: Shape, StridedSlice, Pack into Reshape, Fill, Tile, a reduction
    axis, Range, Pad, GatherV2, OneHot, Slice."""
    def program(x):
        n = m.shape(x)[0]
        rows = m.reshape(x, [n * 2, -1])
        widened = m.tile(m.reduce_sum(rows, axis=1, keepdims=True), [1, 3])
        picked = m.gather(m.transpose(widened), m.range(n) % 3, axis=1)
        padded = m.pad(picked, [[0, 1], [n // 2, 0]])
        hot = m.one_hot(m.range(n), n + 1)
        return (m.reduce_sum(padded) + m.reduce_sum(m.slice(x, [0, 1], [n, 2])) + m.reduce_sum(hot)
                + m.reduce_sum(m.fill(m.shape(x), 0.5)))
    return program


def test_tensorflow_runs_ember_shape_operands_computed_in_the_graph():
    f = em.function(_shape_operand_program(em), input_signature=[em.TensorSpec([None, 4], em.float32)])
    graph = f.get_concrete_function().graph
    gd = graph.as_graph_def()
    assert {"Reshape", "Tile", "Sum", "GatherV2", "Pad", "OneHot", "Slice", "Fill", "Range"} <= {
        n.op for n in gd.node}
    for batch in (2, 5):
        x = np.arange(batch * 4, dtype=np.float32).reshape(batch, 4)
        got = run_in_tensorflow(gd.SerializeToString(), [t.name for t in graph.inputs],
                                [t.name for t in graph.outputs], x)
        np.testing.assert_allclose(got[0].numpy(), f(x).numpy(), rtol=1e-6)


def test_ember_runs_tensorflows_shape_operands_computed_in_the_graph():
    program = tf.function(_shape_operand_program(tf), input_signature=[tf.TensorSpec([None, 4], tf.float32)])
    concrete = program.get_concrete_function()
    graph = em.graph_util.import_graph_def(concrete.graph.as_graph_def())
    fn = em.NewGraphFunction(graph, ["x:0"], [t.name for t in concrete.outputs])
    for batch in (2, 5):
        x = np.arange(batch * 4, dtype=np.float32).reshape(batch, 4)
        np.testing.assert_allclose(fn(x).numpy(), program(x).numpy(), rtol=1e-6)


def _concat_program(m):
    """ConcatV2 whose axis is an input computed in the graph, and one whose axis is a function argument."""
    def program(x, axis):
        joined = m.concat([x, x * 2.0], m.rank(x) - 1)
        return m.reduce_sum(joined, axis=0) * 1.0, m.concat([x, x + 1.0, x], axis)
    return program


_CONCAT_SIGNATURE = [([None, 3], "float32"), ([], "int32")]


def test_tensorflow_runs_an_ember_concat_whose_axis_is_an_input():
    f = em.function(_concat_program(em),
                    input_signature=[em.TensorSpec(s, getattr(em, d)) for s, d in _CONCAT_SIGNATURE])
    graph = f.get_concrete_function().graph
    gd = graph.as_graph_def()
    concats = [n for n in gd.node if n.op == "ConcatV2"]
    assert len(concats) == 2
    for node in concats:  # TensorFlow's signature: values..., axis; N and Tidx, no axis attribute
        assert len(node.input) == node.attr["N"].i + 1 and node.attr["Tidx"].type == gdm.DT_INT32
        assert "axis" not in node.attr
    for batch, axis in ((2, 0), (4, -1), (1, 1)):
        x = np.arange(batch * 3, dtype=np.float32).reshape(batch, 3)
        got = run_in_tensorflow(gd.SerializeToString(), [t.name for t in graph.inputs],
                                [t.name for t in graph.outputs], x, np.int32(axis))
        for g, e in zip(got, f(x, axis)):
            np.testing.assert_array_equal(g.numpy(), e.numpy())


def test_ember_runs_a_tensorflow_concat_whose_axis_is_an_input():
    program = tf.function(_concat_program(tf),
                          input_signature=[tf.TensorSpec(s, getattr(tf, d)) for s, d in _CONCAT_SIGNATURE])
    concrete = program.get_concrete_function()
    graph = em.graph_util.import_graph_def(concrete.graph.as_graph_def())
    fn = em.NewGraphFunction(graph, [t.name for t in concrete.inputs], [t.name for t in concrete.outputs])
    for batch, axis in ((2, 0), (4, -2), (3, 1)):
        x = np.arange(batch * 3, dtype=np.float32).reshape(batch, 3)
        ours, theirs = fn(x, np.int32(axis)), program(x, np.int32(axis))
        for o, t in zip(ours, theirs):
            np.testing.assert_array_equal(o.numpy(), t.numpy())
    with pytest.raises(em.errors.InvalidArgumentError, match="ConcatV2.*axis 2 is out of range"):
        fn(np.ones([2, 3], np.float32), np.int32(2))


def test_tensorflow_runs_the_gradient_of_a_concat_whose_axis_is_computed():
    """The gradient slices at ConcatOffset's offsets, written with TensorFlow's attributes (N, shape_type)."""
    @em.function(input_signature=[em.TensorSpec([None, 3], em.float32), em.TensorSpec([], em.int32)])
    def grad(x, axis):
        with em.GradientTape() as tape:
            tape.watch(x)
            y = em.reduce_sum(em.concat([x, x * 3.0], axis) ** 2)
        return tape.gradient(y, x)

    graph = grad.get_concrete_function().graph
    gd = graph.as_graph_def()
    offsets = [n for n in gd.node if n.op == "ConcatOffset"]
    assert len(offsets) == 1 and set(offsets[0].attr) == {"N", "shape_type"}
    assert offsets[0].attr["N"].i == 2 and offsets[0].attr["shape_type"].type == gdm.DT_INT32
    for batch, axis in ((2, 0), (3, 1), (1, -1)):
        x = np.arange(batch * 3, dtype=np.float32).reshape(batch, 3)
        got = run_in_tensorflow(gd.SerializeToString(), [t.name for t in graph.inputs],
                                [t.name for t in graph.outputs], x, np.int32(axis))
        np.testing.assert_allclose(got[0].numpy(), grad(x, axis).numpy(), rtol=1e-6)


def test_ember_runs_tensorflows_training_graph_of_activations():
    """TensorFlow's gradient graph of a loss over every activation whose gradient TensorFlow writes as its
    own op (ReluGrad, Relu6Grad, EluGrad, SeluGrad, SoftsignGrad, SigmoidGrad, TanhGrad, SqrtGrad, RsqrtGrad,
    ReciprocalGrad, LeakyReluGrad; TensorFlow 2.21 differentiates Softplus with Sigmoid) runs in ember with
    TensorFlow's values."""
    activations = [tf.nn.relu, tf.nn.relu6, tf.nn.elu, tf.nn.selu, tf.nn.softplus, tf.nn.softsign, tf.sigmoid,
                   tf.tanh, lambda v: tf.sqrt(tf.abs(v) + 0.5), lambda v: tf.math.rsqrt(tf.abs(v) + 0.5),
                   lambda v: tf.math.reciprocal(tf.abs(v) + 0.5), lambda v: tf.nn.leaky_relu(v, 0.3)]

    def gradients(x, w):
        with tf.GradientTape() as tape:
            tape.watch([x, w])
            h = tf.matmul(x, w)
            loss = tf.add_n([tf.reduce_sum(f(h) * (k + 1.0)) for k, f in enumerate(activations)])
        return tape.gradient(loss, [x, w])

    fn_tf = tf.function(gradients, input_signature=[tf.TensorSpec([None, 4], tf.float32),
                                                     tf.TensorSpec([4, 6], tf.float32)])
    concrete = fn_tf.get_concrete_function()
    ops = {node.op for node in concrete.graph.as_graph_def().node}
    expected = {"ReluGrad", "Relu6Grad", "EluGrad", "SeluGrad", "SoftsignGrad", "SigmoidGrad",
                "TanhGrad", "SqrtGrad", "RsqrtGrad", "ReciprocalGrad", "LeakyReluGrad"}
    assert expected <= ops, expected - ops
    graph = em.graph_util.import_graph_def(concrete.graph.as_graph_def())
    fn = em.NewGraphFunction(graph, [t.name for t in concrete.inputs], [t.name for t in concrete.outputs])
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((4, 6)).astype(np.float32)
    for ours, theirs in zip(fn(x, w), fn_tf(x, w)):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=2e-5, atol=2e-5)


def test_ember_runs_tensorflows_training_graph_with_dynamic_shapes():
    """TensorFlow's gradient graph of a loss over a None batch: its reduction gradients build shapes with
    DynamicStitch and ListDiff, bias_add's with BiasAddGrad, gather's with IndexedSlices (values, indices,
    dense shape as three outputs). ember imports it and computes TensorFlow's values."""
    def gradients(x, w, b, emb, ids, labels):
        with tf.GradientTape() as tape:
            tape.watch([x, w, b, emb])
            h = tf.nn.bias_add(tf.matmul(x, w), b) + tf.reduce_mean(tf.gather(emb, ids), axis=1)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=h))
            loss += tf.reduce_sum(tf.math.reduce_std(h, axis=0)) + tf.reduce_max(h)
            loss += tf.reduce_prod(tf.sigmoid(h[:2, :2])) + tf.reduce_logsumexp(h)
            loss += tf.reduce_sum(tf.math.unsorted_segment_sum(h, [0, 1, 0], 2)) + tf.reduce_sum(tf.nn.moments(h, [0])[1])
        return tape.gradient(loss, [x, w, b, emb])

    specs = [tf.TensorSpec([None, 4], tf.float32), tf.TensorSpec([4, 6], tf.float32), tf.TensorSpec([6], tf.float32),
             tf.TensorSpec([10, 6], tf.float32), tf.TensorSpec([None, 3], tf.int32), tf.TensorSpec([None], tf.int32)]
    fn_tf = tf.function(gradients, input_signature=specs)
    concrete = fn_tf.get_concrete_function()
    ops = {node.op for node in concrete.graph.as_graph_def().node}
    assert {"DynamicStitch", "BiasAddGrad", "ListDiff"} <= ops, ops
    graph = em.graph_util.import_graph_def(concrete.graph.as_graph_def())
    fn = em.NewGraphFunction(graph, [t.name for t in concrete.inputs], [t.name for t in concrete.outputs])
    rng = np.random.default_rng(0)
    args = (rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((4, 6)).astype(np.float32),
            rng.standard_normal(6).astype(np.float32), rng.standard_normal((10, 6)).astype(np.float32),
            np.array([[1, 2, 3], [4, 5, 6], [0, 0, 9]], np.int32), np.array([1, 2, 5], np.int32))
    theirs = tf.nest.flatten(fn_tf(*args), expand_composites=True)
    ours = fn(*args)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=2e-5, atol=2e-5)
