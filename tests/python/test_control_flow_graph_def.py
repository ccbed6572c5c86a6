"""GraphDef export and import of the functional control-flow ops (issue 15): ember's If/StatelessIf,
Case/StatelessCase and While/StatelessWhile travel with every branch, condition and body in the function
library, written in TensorFlow's form (func attributes, Tcond/Tin/Tout/T, output_shapes, variables as
DT_RESOURCE inputs), so TensorFlow imports and runs them; TensorFlow's tf.function graphs with control flow
import into ember and run with the same results."""

import numpy as np
import pytest
import tensorflow as tf

import ember as em
from ember.framework import graph_def as gdm

CONTROL_FLOW = {"If", "StatelessIf", "Case", "StatelessCase", "While", "StatelessWhile"}


def run_in_tensorflow(graph_def_bytes, feeds, fetches, *args):
    graph_def = tf.compat.v1.GraphDef.FromString(graph_def_bytes)
    wrapped = tf.compat.v1.wrap_function(lambda: tf.compat.v1.import_graph_def(graph_def, name=""), [])
    return wrapped.prune(feeds=feeds, fetches=fetches)(*[a if tf.is_tensor(a) else tf.constant(a) for a in args])


def run_in_ember(graph_def, feeds, fetches, *args, input_map=None):
    graph = em.graph_util.import_graph_def(graph_def, input_map=input_map or {})
    out = em.NewGraphFunction(graph, feeds, fetches)(*args)
    return out if isinstance(out, (list, tuple)) else [out]


def control_flow_nodes(graph_def):
    nodes = [n for n in graph_def.node if n.op in CONTROL_FLOW]
    return nodes + [n for f in graph_def.library.function for n in f.node_def if n.op in CONTROL_FLOW]


def mixed_program():
    @em.function(input_signature=[em.TensorSpec([None], em.float32), em.TensorSpec([], em.int32)])
    def f(x, i):
        y = em.cond(em.reduce_sum(x) > 0, lambda: x * 2.0, lambda: x - 1.0)
        z = em.switch_case(i, [lambda: y + 1.0, lambda: y * y, lambda: -y])

        def body(k, acc):
            return k + 1, acc + z

        _, acc = em.while_loop(lambda k, acc: k < 3, body, [0, em.zeros_like(x)])
        return acc

    return f


def test_export_writes_tensorflows_attributes_and_the_library():
    f = mixed_program()
    gd = f.get_concrete_function().graph.as_graph_def()
    library = {fn.signature.name for fn in gd.library.function}
    by_op = {n.op: n for n in gd.node}
    cond, case, loop = by_op["StatelessIf"], by_op["StatelessCase"], by_op["StatelessWhile"]
    assert cond.attr["Tcond"].type == gdm.DT_BOOL
    assert list(cond.attr["Tin"].list.type) == [gdm.DT_FLOAT] and list(cond.attr["Tout"].list.type) == [gdm.DT_FLOAT]
    assert {cond.attr["then_branch"].func.name, cond.attr["else_branch"].func.name} <= library
    assert [b.name for b in case.attr["branches"].list.func] and all(
        b.name in library for b in case.attr["branches"].list.func)
    assert len(case.attr["branches"].list.func) == 3
    assert list(loop.attr["T"].list.type) == [gdm.DT_INT32, gdm.DT_FLOAT, gdm.DT_FLOAT]
    assert loop.attr["cond"].func.name in library and loop.attr["body"].func.name in library
    assert len(loop.attr["output_shapes"].list.shape) == 3
    assert "T" not in cond.attr  # only TensorFlow's own attributes: its importer refuses others
    assert len(library) == 2 + 3 + 2


@pytest.mark.parametrize("x,i", [([1.0, 2.0], 0), ([-3.0, 1.0, 0.5], 1), ([4.0], 2), ([0.5, 0.5], 7)])
def test_tensorflow_and_ember_run_an_exported_cond_case_and_while(x, i):
    f = mixed_program()
    graph = f.get_concrete_function().graph
    gd = graph.as_graph_def()
    x = np.array(x, np.float32)
    want = f(x, np.int32(i)).numpy()
    fetches = [t.name for t in graph.outputs]
    got = run_in_tensorflow(gd.SerializeToString(), ["x:0", "i:0"], fetches, x, np.int32(i))
    np.testing.assert_allclose(got[0].numpy(), want, rtol=1e-6)
    got = run_in_ember(gd.SerializeToString(), ["x:0", "i:0"], fetches, x, np.int32(i))
    np.testing.assert_allclose(got[0].numpy(), want, rtol=1e-6)


def nested_program():
    scale = em.constant([1.0, 2.0, 3.0])  # a captured eager value, inside the innermost function

    @em.function(input_signature=[em.TensorSpec([3], em.float32), em.TensorSpec([], em.float32)])
    def f(x, t):
        def outer_body(k, acc):
            def inner_body(j, a):
                step = em.cond(a[0] > t, lambda: a * 0.5, lambda: a + scale * t)
                return j + 1, step

            _, inner = em.while_loop(lambda j, a: j < k, inner_body, [0, acc])
            return k + 1, inner

        _, out = em.while_loop(lambda k, acc: k < 4, outer_body, [1, x])
        return em.cond(t > 1.0, lambda: em.cond(t > 2.0, lambda: out * t, lambda: out), lambda: -out)

    return f


@pytest.mark.parametrize("t", [0.5, 1.5, 2.5])
def test_nested_loops_and_conds_with_captures_round_trip_through_tensorflow(t):
    f = nested_program()
    graph = f.get_concrete_function().graph
    gd = graph.as_graph_def()
    # Functions reached only through other functions' control flow are in the library too.
    assert len(control_flow_nodes(gd)) >= 4
    inner_calls = {n.attr[a].func.name for fn in gd.library.function for n in fn.node_def
                   for a in ("then_branch", "else_branch", "cond", "body") if a in n.attr}
    assert inner_calls and inner_calls <= {fn.signature.name for fn in gd.library.function}
    x = np.array([0.25, -1.0, 2.0], np.float32)
    want = f(x, np.float32(t)).numpy()
    fetches = [tn.name for tn in graph.outputs]
    got = run_in_tensorflow(gd.SerializeToString(), ["x:0", "t:0"], fetches, x, np.float32(t))
    np.testing.assert_allclose(got[0].numpy(), want, rtol=1e-5)
    got = run_in_ember(gd.SerializeToString(), ["x:0", "t:0"], fetches, x, np.float32(t))
    np.testing.assert_allclose(got[0].numpy(), want, rtol=1e-5)


def test_variables_in_branches_and_bodies_are_resource_inputs_tensorflow_runs():
    v = em.Variable([1.0, 2.0], name="weights")
    w = em.Variable(3.0, name="bias")

    @em.function(input_signature=[em.TensorSpec([2], em.float32), em.TensorSpec([], em.bool)])
    def f(x, p):
        y = em.cond(p, lambda: x * v, lambda: x + w)  # each branch reads another variable

        def body(k, acc):
            v.assign_add(acc)
            return k + 1, acc + v.read_value()

        _, acc = em.while_loop(lambda k, acc: k < 2, body, [0, y])
        return acc

    graph = f.get_concrete_function().graph
    gd = graph.as_graph_def()
    cond = next(n for n in gd.node if n.op in ("If", "StatelessIf"))
    loop = next(n for n in gd.node if n.op in ("While", "StatelessWhile"))
    # Both branches take both variables, as TensorFlow's If passes every branch the same inputs.
    assert list(cond.attr["Tin"].list.type) == [gdm.DT_FLOAT, gdm.DT_RESOURCE, gdm.DT_RESOURCE]
    then_def = next(fn for fn in gd.library.function if fn.signature.name == cond.attr["then_branch"].func.name)
    assert [a.type for a in then_def.signature.input_arg] == [gdm.DT_FLOAT, gdm.DT_RESOURCE, gdm.DT_RESOURCE]
    # The body returns the variable it was passed, as a loop variable.
    assert list(loop.attr["T"].list.type)[-1] == gdm.DT_RESOURCE
    body_def = next(fn for fn in gd.library.function if fn.signature.name == loop.attr["body"].func.name)
    assert body_def.signature.output_arg[-1].type == gdm.DT_RESOURCE
    fetches = [t.name for t in graph.outputs]
    x = np.array([1.0, -1.0], np.float32)
    for p in (True, False):
        start_v = np.array([1.0, 2.0], np.float32)
        v.assign(start_v)
        want = f(x, p).numpy()
        want_v = v.numpy()
        theirs_v, theirs_w = tf.Variable(start_v), tf.Variable(3.0)
        got = run_in_tensorflow(gd.SerializeToString(), ["x:0", "p:0", "weights:0", "bias:0"], fetches, x, p,
                                theirs_v.handle, theirs_w.handle)
        np.testing.assert_allclose(got[0].numpy(), want, rtol=1e-6)
        np.testing.assert_allclose(theirs_v.numpy(), want_v, rtol=1e-6)
        mine_v, mine_w = em.Variable(start_v), em.Variable(3.0)
        got = run_in_ember(gd.SerializeToString(), ["x:0", "p:0"], fetches, x, p,
                           input_map={"weights:0": mine_v, "bias:0": mine_w})
        np.testing.assert_allclose(got[0].numpy(), want, rtol=1e-6)
        np.testing.assert_allclose(mine_v.numpy(), want_v, rtol=1e-6)


# ---- TensorFlow's graphs into ember


def tensorflow_program():
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32), tf.TensorSpec([], tf.int32)])
    def f(x, i):
        y = tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2.0, lambda: x - 1.0)
        z = tf.switch_case(i, [lambda: y + 1.0, lambda: y * y])

        def body(k, acc):
            inner = tf.while_loop(lambda j, a: j < k, lambda j, a: (j + 1, a * 0.5), [0, acc])[1]
            return k + 1, tf.cond(k > 1, lambda: inner + z, lambda: inner - z)

        _, acc = tf.while_loop(lambda k, acc: k < 4, body, [0, tf.zeros_like(x)], maximum_iterations=10)
        return acc

    return f


@pytest.mark.parametrize("x,i", [([1.0, 2.0], 0), ([-3.0, 1.0, 0.5], 1), ([4.0], 5)])
def test_ember_runs_tensorflows_cond_case_and_nested_while(x, i):
    f = tensorflow_program()
    concrete = f.get_concrete_function()
    gd = concrete.graph.as_graph_def()
    ops = {n.op for n in control_flow_nodes(gd)}
    assert {"StatelessIf", "StatelessCase", "StatelessWhile"} <= ops
    x = np.array(x, np.float32)
    got = run_in_ember(gd, ["x:0", "i:0"], [t.name for t in concrete.outputs], x, np.int32(i))
    np.testing.assert_allclose(got[0].numpy(), f(x, i).numpy(), rtol=1e-6)


def test_ember_runs_tensorflows_loops_over_variables():
    v = tf.Variable([1.0, 2.0])

    @tf.function(input_signature=[tf.TensorSpec([2], tf.float32)])
    def f(x):
        def body(k, acc):
            v.assign_add(acc)
            return k + 1, acc + v

        _, acc = tf.while_loop(lambda k, acc: k < 3, body, [0, x])
        return tf.cond(acc[0] > 0, lambda: acc * v, lambda: acc)

    concrete = f.get_concrete_function()
    gd = concrete.graph.as_graph_def()
    loop = next(n for n in gd.node if n.op in ("While", "StatelessWhile"))
    assert gdm.DT_RESOURCE in list(loop.attr["T"].list.type)
    handle = next(n.name for n in gd.node if n.op == "Placeholder" and n.attr["dtype"].type == gdm.DT_RESOURCE)
    x = np.array([0.5, -2.0], np.float32)
    mine = em.Variable([1.0, 2.0])
    got = run_in_ember(gd, ["x:0"], [t.name for t in concrete.outputs], x, input_map={handle + ":0": mine})
    want = f(x).numpy()
    np.testing.assert_allclose(got[0].numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(mine.numpy(), v.numpy(), rtol=1e-6)


def test_a_loop_result_that_is_a_variable_is_that_variable():
    """A While's result for a variable it passes through is the variable: reading it after the loop reads the
    bound variable (Note [Variables a control-flow node returns] in graph_def.cc)."""
    v = tf.Variable(1.0)

    @tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
    def f(x):
        return tf.while_loop(lambda a: a < 10.0, lambda a: a + v, [x])[0]

    concrete = f.get_concrete_function()
    gd = concrete.graph.as_graph_def()
    loop = next(n for n in gd.node if n.op in ("While", "StatelessWhile"))
    resource_output = list(loop.attr["T"].list.type).index(gdm.DT_RESOURCE)
    identity = gd.node.add(name="leak", op="Identity", input=[f"{loop.name}:{resource_output}"])
    identity.attr["T"].type = gdm.DT_RESOURCE
    read = gd.node.add(name="read_after", op="ReadVariableOp", input=["leak"])
    read.attr["dtype"].type = gdm.DT_FLOAT
    handle = next(n.name for n in gd.node if n.op == "Placeholder" and n.attr["dtype"].type == gdm.DT_RESOURCE)
    mine = em.Variable(2.5)
    graph = em.graph_util.import_graph_def(gd, input_map={handle + ":0": mine})
    loop_out, after = em.NewGraphFunction(graph, ["x:0"], [concrete.outputs[0].name, "read_after:0"])(
        np.float32(1.0))
    assert float(loop_out) == 11.0 and float(after) == 2.5


def tensorflow_program_returning_handles(same):
    v1, v2 = tf.Variable([1.0, 2.0]), tf.Variable([3.0, 4.0])

    @tf.function(input_signature=[tf.TensorSpec([], tf.bool), tf.TensorSpec([], tf.int32)])
    def f(p, i):
        other = v1 if same else v2
        h = tf.cond(p, lambda: v1.handle, lambda: other.handle)
        g = tf.switch_case(i, [lambda: v1.handle, lambda: other.handle])
        read = lambda r: tf.raw_ops.ReadVariableOp(resource=r, dtype=tf.float32)  # noqa: E731
        return read(h) * 2.0 + read(g)

    return f, (v1, v2)


@pytest.mark.parametrize("p,i", [(True, 0), (False, 1)])
def test_ember_runs_tensorflows_cond_and_case_returning_a_variable(p, i):
    """An If or Case whose branches all return the same variable returns that variable; reading it reads the
    variable bound at import."""
    f, _ = tensorflow_program_returning_handles(same=True)
    concrete = f.get_concrete_function()
    gd = concrete.graph.as_graph_def()
    assert any(gdm.DT_RESOURCE in list(n.attr["Tout"].list.type) for n in gd.node if n.op.endswith(("If", "Case")))
    handles = [n.name for n in gd.node if n.op == "Placeholder" and n.attr["dtype"].type == gdm.DT_RESOURCE]
    mine = em.Variable([1.0, 2.0])
    graph = em.graph_util.import_graph_def(gd, input_map={h + ":0": mine for h in handles})
    got = em.NewGraphFunction(graph, ["p:0", "i:0"], [t.name for t in concrete.outputs])(np.bool_(p), np.int32(i))
    np.testing.assert_array_equal(got[0].numpy() if isinstance(got, list) else got.numpy(),
                                  f(np.bool_(p), np.int32(i)).numpy())


def test_branches_returning_different_variables_are_a_clear_error():
    f, _ = tensorflow_program_returning_handles(same=False)
    gd = f.get_concrete_function().graph.as_graph_def()
    handles = sorted(n.name for n in gd.node if n.op == "Placeholder" and n.attr["dtype"].type == gdm.DT_RESOURCE)
    bindings = {h + ":0": em.Variable([1.0, 2.0], name=f"v{k}") for k, h in enumerate(handles)}
    with pytest.raises(em.errors.InvalidArgumentError, match=r"returns the variable 'v.' \(id \d+\) from one branch "
                                                             r"and 'v.' \(id \d+\) from another.*cannot choose"):
        em.graph_util.import_graph_def(gd, input_map=bindings)


def test_a_bad_branch_list_is_a_clear_error():
    f = mixed_program()
    gd = f.get_concrete_function().graph.as_graph_def()
    case = next(n for n in gd.node if n.op == "StatelessCase")
    case.attr["branches"].list.func[1].name = "a,b"
    with pytest.raises(em.errors.InvalidArgumentError, match="StatelessCase.*holds no ','"):
        em.graph_util.import_graph_def(gd)
    case.attr["branches"].list.func[1].name = "no_such_function"
    with pytest.raises(em.errors.NotFoundError, match="node 'StatelessCase'.*no function named 'no_such_function'"):
        em.graph_util.import_graph_def(gd)


def test_parallel_iterations_is_carried_and_never_changes_results():
    """parallel_iterations is a scheduling hint in TensorFlow (results never depend on it); this loop's acc
    carries work from one iteration to the next, so ember runs it in order (independent iterations overlap:
    test_parallel_iterations.py): every value gives TensorFlow's results, it is written into the While's
    attribute, and TensorFlow's own value is read back from its GraphDef."""
    def program(lib, parallel):
        @lib.function(input_signature=[lib.TensorSpec([None], lib.float32)])
        def f(x):
            def body(k, acc, other):
                # Work that does not depend on the carried values, beside work that does.
                independent = lib.sin(lib.cast(k, lib.float32) * x)
                return k + 1, acc * 0.5 + independent, other + independent * independent
            return lib.while_loop(lambda k, acc, other: k < 17, body, [0, x, lib.zeros_like(x)],
                                  parallel_iterations=parallel)[1:]
        return f

    x = np.linspace(-1.0, 1.0, 7).astype(np.float32)
    want = [v.numpy() for v in program(tf, 10)(x)]
    for parallel in (1, 2, 10, 32):
        f = program(em, parallel)
        got = f(x)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a.numpy(), b, rtol=1e-5, atol=1e-6)
        graph = f.get_concrete_function().graph
        gd = graph.as_graph_def()
        loop = next(n for n in gd.node if n.op in ("While", "StatelessWhile"))
        assert loop.attr["parallel_iterations"].i == parallel
        theirs = run_in_tensorflow(gd.SerializeToString(), ["x:0"], [t.name for t in graph.outputs], x)
        for a, b in zip(theirs, want):
            np.testing.assert_allclose(a.numpy(), b, rtol=1e-5, atol=1e-6)
    # TensorFlow's While with its own value imports, keeps it and runs.
    concrete = program(tf, 3).get_concrete_function()
    gd = concrete.graph.as_graph_def()
    graph = em.graph_util.import_graph_def(gd)
    got = em.NewGraphFunction(graph, ["x:0"], [t.name for t in concrete.outputs])(x)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b, rtol=1e-5, atol=1e-6)
    again = next(n for n in em.graph_util.import_graph_def(gd).as_graph_def().node
                 if n.op in ("While", "StatelessWhile"))
    assert again.attr["parallel_iterations"].i == 3
    for bad in (0, -2):
        with pytest.raises(TypeError, match="parallel_iterations"):
            program(em, bad)(x)


# ---- TensorFlow's TensorArrays (TensorList ops on DT_VARIANT handles) imported: Note [TensorLists as dense
# tensors] in src/ember/ops/tensor_array.cc, src/ember/graph/tensor_list_import.cc


def run_tensorflow_function_in_ember(f, *args):
    """f's concrete graph as TensorFlow exports it, imported into ember and run; with what f itself gives."""
    concrete = f.get_concrete_function()
    gd = concrete.graph.as_graph_def()
    graph = em.graph_util.import_graph_def(gd.SerializeToString())
    out = em.NewGraphFunction(graph, [t.name for t in concrete.inputs], [t.name for t in concrete.outputs])(*args)
    want = f(*args)
    return [o.numpy() for o in (out if isinstance(out, (list, tuple)) else [out])], \
        [w.numpy() for w in (want if isinstance(want, (list, tuple)) else [want])], gd


def list_ops(graph_def):
    return {n.op for n in graph_def.node} | {n.op for fn in graph_def.library.function for n in fn.node_def
                                            if "List" in n.op}


@tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
def tensorflow_tensor_array_loop(x):
    n = tf.shape(x)[0]
    ta = tf.TensorArray(tf.float32, size=n)
    tb = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
    src = tf.TensorArray(tf.float32, size=n).unstack(x)

    def body(i, ta, tb):
        r = src.read(i)
        return i + 1, ta.write(i, r * 2.0), tb.write(i, tf.reduce_sum(r))

    _, ta, tb = tf.while_loop(lambda i, ta, tb: i < n, body, [0, ta, tb])
    return ta.stack(), tb.stack(), tb.size()


@pytest.mark.parametrize("rows", [1, 4])
def test_ember_runs_tensorflows_tensor_array_loop(rows):
    x = np.arange(rows * 3, dtype=np.float32).reshape(rows, 3) / 4.0
    got, want, gd = run_tensorflow_function_in_ember(tensorflow_tensor_array_loop, x)
    assert {"TensorListReserve", "TensorListFromTensor", "TensorListGetItem", "TensorListSetItem",
            "TensorListStack", "TensorListLength"} <= list_ops(gd)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)


def test_ember_runs_tensorflows_while_gradient_with_its_accumulators():
    """TensorFlow's While gradient keeps the forward values in TensorLists (EmptyTensorList, PushBack in the
    forward loop, PopBack in the backward one)."""
    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32), tf.TensorSpec([3], tf.float32)])
    def f(x, w):
        with tf.GradientTape() as tape:
            tape.watch(w)
            n = tf.shape(x)[0]
            _, h = tf.while_loop(lambda i, h: i < n, lambda i, h: (i + 1, tf.sin(h * w) + x[i]), [0, tf.zeros([3])])
            y = tf.reduce_sum(h * h)
        return y, tape.gradient(y, w)

    x = np.arange(12, dtype=np.float32).reshape(4, 3) / 10.0
    got, want, gd = run_tensorflow_function_in_ember(f, x, np.array([0.5, -1.0, 2.0], np.float32))
    assert {"EmptyTensorList", "TensorListPushBack", "TensorListPopBack"} <= list_ops(gd)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("p", [True, False])
def test_ember_runs_tensorflows_tensor_array_through_cond_and_nested_loops(p):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32), tf.TensorSpec([], tf.bool)])
    def f(x, p):
        ta = tf.TensorArray(tf.float32, size=3, element_shape=[2]).write(0, x[:2])
        ta = tf.cond(p, lambda: ta.write(2, x[1:3] * 3.0), lambda: ta)

        def outer(j, ta):
            def inner(k, ta):
                return k + 1, ta.write(k, ta.read(k) + tf.cast(j, tf.float32))
            return j + 1, tf.while_loop(lambda k, ta: k < 3, inner, [0, ta])[1]

        _, ta = tf.while_loop(lambda j, ta: j < 2, outer, [0, ta])
        return ta.stack(), ta.read(1)

    got, want, _ = run_tensorflow_function_in_ember(f, np.array([1.0, 2.0, 3.0], np.float32), np.array(p))
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def test_tensor_list_errors_are_tensorflows():
    """Out-of-range reads and writes of an imported list fail as TensorFlow's kernels do (InvalidArgument)."""
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32), tf.TensorSpec([], tf.int32)])
    def f(x, i):
        return tf.TensorArray(tf.float32, size=2).write(i, x).stack()

    concrete = f.get_concrete_function()
    graph = em.graph_util.import_graph_def(concrete.graph.as_graph_def().SerializeToString())
    run = em.NewGraphFunction(graph, ["x:0", "i:0"], [t.name for t in concrete.outputs])
    np.testing.assert_array_equal(run(np.array([1.0, 2.0], np.float32), np.int32(1)).numpy(),
                                  f(np.array([1.0, 2.0], np.float32), np.int32(1)).numpy())
    for tensorflow_run in (f, run):
        with pytest.raises((tf.errors.InvalidArgumentError, em.errors.InvalidArgumentError),
                           match="Trying to modify element 5 in a list with 2 elements"):
            tensorflow_run(np.array([1.0, 2.0], np.float32), np.int32(5))


def test_ember_runs_tensorflows_assert_with_its_message():
    """TensorFlow's Assert (inside the If that guards it) takes its strings as DT_STRING Consts among its data;
    ember folds them into its template (graph/assert_import.cc), and fails with TensorFlow's text."""
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def f(x):
        tf.debugging.Assert(tf.reduce_all(x > 0), ["x:", x, "n", tf.shape(x)], summarize=4)
        return x * 2.0

    concrete = f.get_concrete_function()
    graph = em.graph_util.import_graph_def(concrete.graph.as_graph_def().SerializeToString())
    run = em.NewGraphFunction(graph, ["x:0"], [t.name for t in concrete.outputs])
    ok = np.array([1.0, 2.0], np.float32)
    np.testing.assert_array_equal(np.asarray(run(ok)).reshape(-1), f(ok).numpy())
    bad = np.array([1.0, -2.0], np.float32)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"assertion failed: \[x:\] \[1 -2\] \[n\] \[2\]"):
        f(bad)
    with pytest.raises(em.errors.InvalidArgumentError, match=r"assertion failed: \[x:\] \[1 -2\] \[n\] \[2\]"):
        run(bad)


def string_assert(lib):
    @lib.function(input_signature=[lib.TensorSpec([None], lib.float32), lib.TensorSpec([], lib.string),
                                   lib.TensorSpec([None], lib.string)])
    def f(x, name, names):
        lib.debugging.Assert(lib.reduce_all(x > 0), ["x must be positive for", name, x, lib.constant("tail"), names])
        return x * 2.0

    return f


STRING_ASSERT_MESSAGE = r"assertion failed: \[x must be positive for\] \[abc\] \[1 -2\] \[tail\] \[p q\]"


def test_assert_with_string_tensors_among_its_data_fails_with_tensorflows_message():
    """String tensors print bare inside their brackets, as TensorFlow's Assert prints them."""
    bad = (np.array([1.0, -2.0], np.float32), "abc", np.array(["p", "q"]))
    for lib, error in ((tf, tf.errors.InvalidArgumentError), (em, em.errors.InvalidArgumentError)):
        with pytest.raises(error, match=STRING_ASSERT_MESSAGE):
            string_assert(lib)(*bad)
    with pytest.raises(em.errors.InvalidArgumentError, match=r"assertion failed: \[ab\] \[c d\]"):
        em.debugging.Assert(em.constant(False), [em.constant("ab"), em.constant(["c", "d"])])


def test_an_exported_assert_with_string_tensors_runs_in_tensorflow_and_ember(tmp_path):
    """Written in TensorFlow's layout (its text as DT_STRING Consts among the data, graph/assert_import.cc):
    TensorFlow loads the SavedModel and fails with the same message; so does ember's loader."""
    f = string_assert(em)
    gd = f.get_concrete_function().graph.as_graph_def()
    asserts = [n for n in gd.node if n.op == "Assert"]
    assert len(asserts) == 1 and "template" not in asserts[0].attr
    assert list(asserts[0].attr["T"].list.type).count(gdm.DT_STRING) == 4  # two texts, two tensors
    module = em.Module()
    module.f = f
    em.saved_model.save(module, str(tmp_path / "assert"))
    ok = (np.array([1.0, 2.0], np.float32), "abc", np.array(["p", "q"]))
    bad = (np.array([1.0, -2.0], np.float32), "abc", np.array(["p", "q"]))
    for lib, error in ((tf, tf.errors.InvalidArgumentError), (em, em.errors.InvalidArgumentError)):
        loaded = lib.saved_model.load(str(tmp_path / "assert"))
        np.testing.assert_array_equal(np.asarray(loaded.f(*ok)), [2.0, 4.0])
        with pytest.raises(error, match=STRING_ASSERT_MESSAGE):
            loaded.f(*bad)


def test_ember_runs_tensorflows_assert_of_string_tensors():
    f = string_assert(tf)
    concrete = f.get_concrete_function()
    graph = em.graph_util.import_graph_def(concrete.graph.as_graph_def().SerializeToString())
    run = em.NewGraphFunction(graph, ["x:0", "name:0", "names:0"], [t.name for t in concrete.outputs])
    with pytest.raises(em.errors.InvalidArgumentError, match=STRING_ASSERT_MESSAGE):
        run(np.array([1.0, -2.0], np.float32), "abc", np.array(["p", "q"]))
