"""Bad SavedModels (issue 16, part 3): truncated, bit-flipped and hostile saved_model.pb files raise an
ember.errors exception naming the file and what is wrong; none crashes, hangs or allocates what the file
claims. Loading executes nothing from the file (class names are never looked up)."""

import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember as tf
from ember import errors
from ember.framework import graph_def as gd
from ember.saved_model.loader import read_saved_model


class _Model(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable(np.ones((2, 3), np.float32), name="w")
        self.inner = tf.Module()
        self.inner.b = tf.Variable(np.zeros(3, np.float32), name="b")

    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32)])
    def __call__(self, x):
        return tf.matmul(x, self.w) + self.inner.b


@pytest.fixture
def saved(tmp_path):
    path = str(tmp_path / "model")
    tf.saved_model.save(_Model(), path)
    return path


def _rewrite(path, edit):
    saved_model, file = read_saved_model(path)
    edit(saved_model.meta_graphs[0])
    with open(file, "wb") as f:
        f.write(saved_model.SerializeToString())


def _node_kinds(meta):
    return [n.WhichOneof("kind") for n in meta.object_graph_def.nodes]


def _raises(path, cls, pattern):
    with pytest.raises(cls, match=pattern) as info:
        tf.saved_model.load(path)
    assert path in str(info.value)


def test_a_missing_file_is_not_found(tmp_path):
    with pytest.raises(errors.NotFoundError, match="saved_model.pb"):
        tf.saved_model.load(str(tmp_path))


def test_truncated_files_are_data_loss(saved):
    data = open(os.path.join(saved, "saved_model.pb"), "rb").read()
    for cut in (1, 7, len(data) // 3, len(data) // 2, len(data) - 3):
        with open(os.path.join(saved, "saved_model.pb"), "wb") as f:
            f.write(data[:cut])
        with pytest.raises(errors.OpError) as info:
            tf.saved_model.load(saved)
        assert saved in str(info.value), (cut, info.value)


def test_a_child_out_of_range(saved):
    _rewrite(saved, lambda m: m.object_graph_def.nodes[0].children.add(node_id=1000, local_name="ghost"))
    _raises(saved, errors.InvalidArgumentError, "refers to object 1000")


def test_cycles_in_the_object_graph_load_without_recursion(saved):
    def edit(meta):
        meta.object_graph_def.nodes[0].children.add(node_id=0, local_name="me")
        inner = next(i for i, n in enumerate(meta.object_graph_def.nodes)
                     if any(c.local_name == "b" for c in n.children))
        meta.object_graph_def.nodes[inner].children.add(node_id=0, local_name="parent")

    _rewrite(saved, edit)
    loaded = tf.saved_model.load(saved)
    assert loaded.me is loaded and loaded.inner.parent is loaded
    np.testing.assert_array_equal(loaded(tf.constant([[1.0, 1.0]])).numpy(), [[2.0, 2.0, 2.0]])


def test_a_variable_of_a_type_ember_lacks(saved):
    def edit(meta):
        nodes = meta.object_graph_def.nodes
        nodes[_node_kinds(meta).index("variable")].variable.dtype = 21  # DT_VARIANT
    _rewrite(saved, edit)
    _raises(saved, errors.InvalidArgumentError, "DT_VARIANT")


def test_a_huge_variable_shape_is_checked_against_the_checkpoint(saved):
    def edit(meta):
        shape = meta.object_graph_def.nodes[_node_kinds(meta).index("variable")].variable.shape
        del shape.dim[:]
        shape.dim.add(size=2**40)
        shape.dim.add(size=2**40)
    _rewrite(saved, edit)
    _raises(saved, errors.InvalidArgumentError, "checkpoint holds")


def test_a_function_naming_a_missing_concrete_function(saved):
    def edit(meta):
        meta.object_graph_def.nodes[_node_kinds(meta).index("function")].function.concrete_functions.append("nope")
    _rewrite(saved, edit)
    _raises(saved, errors.NotFoundError, "'nope'")


def test_a_signature_naming_a_missing_function(saved):
    def edit(meta):
        kinds = _node_kinds(meta)
        bare = [i for i, k in enumerate(kinds) if k == "bare_concrete_function"][-1]
        meta.object_graph_def.nodes[bare].bare_concrete_function.concrete_function_name = "missing_fn"
    _rewrite(saved, edit)
    _raises(saved, errors.NotFoundError, "missing_fn")


def test_a_signature_def_without_its_function(saved):
    _rewrite(saved, lambda m: m.signature_def["extra"].CopyFrom(m.signature_def["serving_default"]))
    _raises(saved, errors.NotFoundError, "signature_def 'extra'")


def test_a_library_node_calling_a_missing_function(saved):
    def edit(meta):
        function = meta.graph_def.library.function[0]
        node = function.node_def.add(name="rogue", op="StatefulPartitionedCall")
        node.attr["f"].func.name = "__inference_not_in_library_7"
    _rewrite(saved, edit)
    _raises(saved, errors.NotFoundError, "__inference_not_in_library_7")


def test_bound_inputs_must_be_variables(saved):
    def edit(meta):
        fn = meta.object_graph_def.concrete_functions
        for name in fn:
            fn[name].bound_inputs[0] = 0  # the root, a user object
    _rewrite(saved, edit)
    _raises(saved, errors.InvalidArgumentError, "as a variable")


def test_negative_dimensions_in_a_signature(saved):
    def edit(meta):
        for saved_fn in meta.object_graph_def.concrete_functions.values():
            spec = saved_fn.canonicalized_input_signature.tuple_value.values[0].tuple_value.values
            if spec:
                spec[0].tensor_spec_value.shape.dim[0].size = -7
    _rewrite(saved, edit)
    _raises(saved, errors.InvalidArgumentError, "dimension -7")


def test_a_function_with_the_wrong_number_of_arguments_fails_at_the_call(saved):
    def edit(meta):
        for f in meta.graph_def.library.function:
            f.signature.input_arg.add(name="extra", type=gd.DT_FLOAT)
    _rewrite(saved, edit)
    loaded = tf.saved_model.load(saved)
    with pytest.raises(errors.InvalidArgumentError, match="takes 4 arguments"):
        loaded(tf.constant([[1.0, 1.0]]))


def test_a_missing_checkpoint(saved):
    shutil.rmtree(os.path.join(saved, "variables"))
    _raises(saved, errors.NotFoundError, "no checkpoint")


def test_class_names_in_the_file_are_never_looked_up(saved):
    def edit(meta):
        meta.object_graph_def.nodes[0].user_object.identifier = "os.system"
    _rewrite(saved, edit)
    loaded = tf.saved_model.load(saved)
    assert type(loaded).__module__ == "ember.saved_model.loader"


_FLIP_SCRIPT = textwrap.dedent("""
    import os, random, shutil, sys
    import ember as tf
    from ember import errors
    src, work, seed, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    data = open(os.path.join(src, "saved_model.pb"), "rb").read()
    rng = random.Random(seed)
    ok = failed = 0
    for case in range(count):
        mutated = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(mutated))
            mutated[i] ^= 1 << rng.randrange(8)
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(src, work)
        open(os.path.join(work, "saved_model.pb"), "wb").write(bytes(mutated))
        try:
            loaded = tf.saved_model.load(work)
            try:
                loaded.signatures["serving_default"](x=tf.constant([[1.0, 2.0]]))
            except (TypeError, ValueError, KeyError, errors.OpError):
                # The mutated signature no longer takes this call, or a flipped attribute made a valid but
                # different program (saved_model.pb has no checksum: a MatMul's transpose_a flipped loads
                # and then fails in the op, naming it): a clear error about the call is fine.
                pass
            ok += 1
        except errors.OpError as e:
            if work not in str(e):
                print("UNNAMED", seed, case, type(e).__name__, e)
                sys.exit(3)
            failed += 1
        except Exception as e:
            print("UNEXPECTED", seed, case, type(e).__name__, e)
            sys.exit(2)
    print("FUZZ-COUNTS", "cases", count, "loaded", ok, "rejected", failed)
""")


def test_bit_flips_raise_clear_errors_and_never_crash(saved, tmp_path):
    import datetime

    for seed in (1, int(datetime.date.today().strftime("%Y%m%d"))):
        proc = subprocess.run([sys.executable, *(["-S"] if sys.flags.no_site else []), "-c", _FLIP_SCRIPT, saved,
                               str(tmp_path / "work"), str(seed), "150"],
                              env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)), capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, f"seed {seed}: rc {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
        assert "FUZZ-COUNTS" in proc.stdout
        print(proc.stdout.strip().splitlines()[-1])


def test_many_function_objects_share_one_restored_concrete_function(tmp_path):
    # 20,000 function objects naming one concrete function (a file may repeat names at will): each is
    # restored, and the function behind them is checked and imported once.
    path = str(tmp_path / "wide")
    tf.saved_model.save(_Model(), path)

    def edit(meta):
        nodes = meta.object_graph_def.nodes
        template = nodes[_node_kinds(meta).index("function")]
        for i in range(20000):
            nodes.add().CopyFrom(template)
            nodes[0].children.add(node_id=len(nodes) - 1, local_name=f"f{i}")

    _rewrite(path, edit)
    loaded = tf.saved_model.load(path)
    assert loaded.f0.concrete_functions[0] is loaded.f19999.concrete_functions[0]
    np.testing.assert_array_equal(loaded.f19999(tf.constant([[1.0, 1.0]])).numpy(), [[2.0, 2.0, 2.0]])


def test_a_constant_naming_a_missing_node(saved):
    def edit(meta):
        node = meta.object_graph_def.nodes.add()
        node.constant.operation = "no_such_node"
        meta.object_graph_def.nodes[0].children.add(node_id=len(meta.object_graph_def.nodes) - 1, local_name="c")
    _rewrite(saved, edit)
    _raises(saved, errors.InvalidArgumentError, "no_such_node")
