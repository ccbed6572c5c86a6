"""tf.image.sample_distorted_bounding_box and stateless_sample_distorted_bounding_box (SampleDistortedBoundingBoxV2,
StatelessSampleDistortedBoundingBox: src/ember/ops/image_sample_box.cc) against TensorFlow 2.21. The
stateless op draws TensorFlow's box for the same seed (Note [Sampling a distorted box]); the stateful one
continues TensorFlow's stream across calls with a seed, and without one gives valid boxes of the same
distribution."""

import numpy as np
import pytest
import tensorflow as real_tf

import ember as em
from ember import errors

BOXES = np.array([[[0.1, 0.2, 0.5, 0.7], [0.3, 0.3, 0.9, 0.95]]], np.float32)
CASES = [([64, 48, 3], {}, np.int32),
         ([17, 200, 1], dict(min_object_covered=0.5, aspect_ratio_range=(0.5, 2.0), area_range=(0.1, 0.9)), np.int64),
         ([5, 5, 3], dict(max_attempts=3), np.uint8),
         ([300, 300, 3], dict(min_object_covered=0.0, area_range=(0.9, 1.0)), np.int16),
         ([31, 7, 3], dict(min_object_covered=0.9, aspect_ratio_range=(3.0, 4.0)), np.int32)]


def _same(ours, theirs, what):
    for o, t in zip(ours, theirs):
        assert o.dtype.name == t.dtype.name, what
        np.testing.assert_array_equal(o.numpy(), t.numpy(), err_msg=str(what))


@pytest.mark.parametrize("size,kwargs,dtype", CASES)
def test_stateless_boxes_are_tensorflows(size, kwargs, dtype):
    for s in range(60):
        seed = [s, 7 * s - 3]
        ours = em.image.stateless_sample_distorted_bounding_box(np.array(size, dtype), BOXES, seed, **kwargs)
        theirs = real_tf.image.stateless_sample_distorted_bounding_box(np.array(size, dtype), BOXES, seed, **kwargs)
        _same(ours, theirs, (size, kwargs, seed))
    traced = em.function(lambda sd: em.image.stateless_sample_distorted_bounding_box(np.array(size, dtype), BOXES,
                                                                                     sd, **kwargs))
    _same(traced(em.constant([4, 5], em.int64)),
          real_tf.image.stateless_sample_distorted_bounding_box(np.array(size, dtype), BOXES, [4, 5], **kwargs), seed)


def test_no_boxes_uses_the_image():
    empty = np.zeros((1, 0, 4), np.float32)
    ours = em.image.stateless_sample_distorted_bounding_box([40, 30, 3], empty, [1, 2],
                                                            use_image_if_no_bounding_boxes=True)
    theirs = real_tf.image.stateless_sample_distorted_bounding_box([40, 30, 3], empty, [1, 2],
                                                                  use_image_if_no_bounding_boxes=True)
    _same(ours, theirs, "no boxes")


def test_stateful_streams_continue_as_tensorflows():
    em.random.set_seed(5)
    real_tf.random.set_seed(5)
    for size, kwargs, dtype in CASES[:2]:
        for _ in range(4):
            ours = em.image.sample_distorted_bounding_box(np.array(size, dtype), BOXES, seed=3, **kwargs)
            theirs = real_tf.image.sample_distorted_bounding_box(np.array(size, dtype), BOXES, seed=3, **kwargs)
            _same(ours, theirs, (size, kwargs))


def test_unseeded_boxes_are_valid_and_distributed_like_tensorflows():
    """seed=0 draws afresh each call (TensorFlow ignores the global seed there): every box satisfies the
    constraints, and the mean crop size matches TensorFlow's over many draws."""
    sizes = {"ember": [], "tf": []}
    for _ in range(300):
        begin, size, box = em.image.sample_distorted_bounding_box([100, 80, 3], BOXES, min_object_covered=0.3)
        (y, x, _), (h, w, c) = begin.numpy(), size.numpy()
        assert c == -1 and 0 <= y and y + h <= 100 and 0 <= x and x + w <= 80
        np.testing.assert_allclose(box.numpy()[0, 0], [y / 100, x / 80, (y + h) / 100, (x + w) / 80], rtol=1e-6)
        sizes["ember"].append(h * w)
        theirs = real_tf.image.sample_distorted_bounding_box([100, 80, 3], BOXES, min_object_covered=0.3)[1].numpy()
        sizes["tf"].append(theirs[0] * theirs[1])
    ours, theirs = np.mean(sizes["ember"]), np.mean(sizes["tf"])
    assert abs(ours - theirs) < 0.15 * theirs, (ours, theirs)


@pytest.mark.parametrize("kwargs,inputs,match", [
    (dict(area_range=(0.0, 1.0)), {}, "area_range"),
    (dict(area_range=(0.5, 1.5)), {}, "area_range"),
    (dict(aspect_ratio_range=(-1.0, 1.0)), {}, "aspect_ratio_range"),
    (dict(max_attempts=0), {}, "max_attempts"),
    ({}, dict(bounding_boxes=np.zeros((1, 0, 4), np.float32)), "no bounding boxes"),
    ({}, dict(bounding_boxes=np.array([[[0.1, 0.2, 1.5, 0.7]]], np.float32)), "in \\[0, 1\\]"),
    ({}, dict(image_size=np.array([4, 4], np.int32)), "image_size"),
    (dict(min_object_covered=-0.5), {}, "min_object_covered"),
])
def test_errors_name_the_op(kwargs, inputs, match):
    args = {"image_size": np.array([8, 8, 3], np.int32), "bounding_boxes": BOXES, **inputs}
    with pytest.raises((real_tf.errors.InvalidArgumentError, ValueError)):
        real_tf.image.stateless_sample_distorted_bounding_box(seed=[1, 2], **args, **kwargs)
    with pytest.raises(errors.InvalidArgumentError, match=f"StatelessSampleDistortedBoundingBox.*{match}"):
        em.image.stateless_sample_distorted_bounding_box(seed=[1, 2], **args, **kwargs)
    with pytest.raises(errors.InvalidArgumentError, match=f"SampleDistortedBoundingBoxV2.*{match}"):
        em.image.sample_distorted_bounding_box(seed=1, **args, **kwargs)


def test_graph_def_round_trip_runs_in_tensorflow():
    """aspect_ratio_range and area_range travel as TensorFlow's list(float) attributes."""
    from test_graph_def_tf import run_in_tensorflow

    fn = em.function(lambda sd: em.image.stateless_sample_distorted_bounding_box(
        np.array([64, 48, 3], np.int32), BOXES, sd, aspect_ratio_range=(0.5, 2.0), area_range=(0.1, 0.9)),
        input_signature=[em.TensorSpec([2], em.int64)])
    graph = fn.get_concrete_function().graph
    gd = graph.as_graph_def()
    node = next(n for n in gd.node if n.op == "StatelessSampleDistortedBoundingBox")
    assert list(node.attr["area_range"].list.f) == pytest.approx([0.1, 0.9])
    theirs = run_in_tensorflow(gd.SerializeToString(), [graph.inputs[0].name], [t.name for t in graph.outputs],
                               np.array([3, 4], np.int64))
    _same(fn(em.constant([3, 4], em.int64)), theirs, "GraphDef")


def test_raw_ops_take_the_list_float_defaults():
    args = dict(image_size=[8, 8, 3], bounding_boxes=BOXES, min_object_covered=0.1, seed=[1, 2])
    _same(em.raw_ops.StatelessSampleDistortedBoundingBox(**args),
          real_tf.raw_ops.StatelessSampleDistortedBoundingBox(**args), "raw defaults")


@pytest.mark.parametrize("other", [dict(max_attempts=50), dict(use_image_if_no_bounding_boxes=True),
                                   dict(area_range=(0.05, 0.9)), dict(aspect_ratio_range=(0.75, 1.3))])
def test_a_call_with_other_attributes_has_its_own_stream(other):
    # TensorFlow caches an eager kernel per attribute set: the call with other attributes starts a fresh
    # stream of the same seeds, and the calls without them go on with theirs.
    def calls(lib, seed):
        draw = lambda **kw: lib.image.sample_distorted_bounding_box([40, 30, 3], BOXES, seed=seed, **kw)
        return [draw(), draw(**other), draw(), draw(**other)]

    em.random.set_seed(11)
    real_tf.random.set_seed(11)
    seed = 1000 + len(str(other))
    for ours, theirs in zip(calls(em, seed), calls(real_tf, seed)):
        _same(ours, theirs, other)
