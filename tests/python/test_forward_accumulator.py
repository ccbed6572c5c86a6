"""tf.autodiff.ForwardAccumulator: JVPs eagerly and in ember.function, nested with GradientTape (Hessian-
vector products both ways), variables, unconnected targets and the constructor's checks, against TensorFlow."""
import numpy as np
import pytest
import tensorflow as tf

import ember as em


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def same_as_tensorflow(run):
    """Runs ``run(lib)`` with ember and with TensorFlow and compares the tensors it returns pairwise."""
    got, want = run(em), run(tf)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        close(a, b)


X = np.array([[0.5, -1.0], [2.0, 0.3]], np.float32)
V = np.array([[1.0, 0.5], [-0.25, 2.0]], np.float32)
W = np.array([0.7, -0.2], np.float32)


def model(lib, x, w):
    h = lib.tanh(lib.matmul(x, x) + w)
    return lib.reduce_sum(lib.exp(h) * lib.sin(x), axis=1)


def jvp_eager(lib):
    x, v, w = lib.constant(X), lib.constant(V), lib.constant(W)
    with lib.autodiff.ForwardAccumulator(x, v) as acc:
        y = model(lib, x, w)
    return acc.jvp(y)


def test_jvp_matches_tensorflow_eagerly():
    close(jvp_eager(em), jvp_eager(tf))


def test_jvp_matches_tensorflow_in_a_function():
    close(em.function(lambda: jvp_eager(em))(), jvp_eager(tf))


def test_jvp_of_several_primals_and_nested_targets():
    def run(lib):
        x, w = lib.constant(X), lib.constant(W)
        tangents = {"x": lib.constant(V), "w": [lib.ones(2)]}
        with lib.autodiff.ForwardAccumulator({"x": x, "w": [w]}, tangents) as acc:
            y = model(lib, x, w)
            z = y * 2.0
        out = acc.jvp({"y": y, "pair": (z, x)})
        return [out["y"], out["pair"][0], out["pair"][1]]

    same_as_tensorflow(run)


def test_jvp_inside_the_block_and_of_a_primal_itself():
    def run(lib):
        x = lib.constant(X)
        with lib.autodiff.ForwardAccumulator(x, lib.constant(V)) as acc:
            y = x * x
            inside = acc.jvp(y)
            z = y + 1.0
        return inside, acc.jvp(z), acc.jvp(x)

    same_as_tensorflow(run)


def test_unconnected_targets_give_none_or_zeros():
    def run(lib):
        x = lib.constant(X)
        with lib.autodiff.ForwardAccumulator(x, lib.constant(V)) as acc:
            c = lib.constant([1.0, 2.0, 3.0])
            n = lib.cast(x, lib.int32)
        return (acc.jvp(c), acc.jvp(c, unconnected_gradients="zero"), acc.jvp(n),
                acc.jvp(c, unconnected_gradients=lib.UnconnectedGradients.ZERO))

    got, want = run(em), run(tf)
    assert got[0] is None and want[0] is None
    assert got[2] is None and want[2] is None
    close(got[1], want[1])
    close(got[3], want[3])
    assert got[1].shape == want[1].shape == (3,)


def test_ops_outside_the_block_are_not_seen():
    def run(lib):
        x = lib.constant(X)
        acc = lib.autodiff.ForwardAccumulator(x, lib.constant(V))
        before = x * 3.0
        with acc:
            inside = x * 3.0
        return acc.jvp(before), acc.jvp(inside)

    (e_before, e_inside), (t_before, t_inside) = run(em), run(tf)
    assert e_before is None and t_before is None
    close(e_inside, t_inside)


def test_variable_primal():
    def run(lib):
        w = lib.Variable(W)
        with lib.autodiff.ForwardAccumulator(w, lib.constant([1.0, -3.0])) as acc:
            y = lib.reduce_sum(w * w * w)
        return acc.jvp(y)

    close(run(em), run(tf))


def hvp_forward_over_backward(lib, x, v):
    with lib.autodiff.ForwardAccumulator(x, v) as acc:
        with lib.GradientTape() as tape:
            tape.watch(x)
            y = lib.reduce_sum(model(lib, x, lib.constant(W)) ** 2)
        g = tape.gradient(y, x)
    return acc.jvp(g)


def hvp_backward_over_forward(lib, x, v):
    with lib.GradientTape() as tape:
        tape.watch(x)
        with lib.autodiff.ForwardAccumulator(x, v) as acc:
            y = lib.reduce_sum(model(lib, x, lib.constant(W)) ** 2)
        jvp = acc.jvp(y)
    return tape.gradient(jvp, x)


@pytest.mark.parametrize("hvp", [hvp_forward_over_backward, hvp_backward_over_forward])
def test_hessian_vector_products_match_tensorflow(hvp):
    want = hvp(tf, tf.constant(X), tf.constant(V))
    close(hvp(em, em.constant(X), em.constant(V)), want, 1e-4)
    traced = em.function(lambda x, v: hvp(em, x, v))
    close(traced(em.constant(X), em.constant(V)), want, 1e-4)


def test_nested_accumulators_give_a_second_directional_derivative():
    def run(lib):
        x = lib.constant(1.5)
        with lib.autodiff.ForwardAccumulator(x, lib.constant(1.0)) as outer:
            with lib.autodiff.ForwardAccumulator(x, lib.constant(1.0)) as inner:
                y = x ** 3
            first = inner.jvp(y)
        return first, outer.jvp(first)

    same_as_tensorflow(run)


def test_constructor_checks_match_tensorflow():
    for lib in (em, tf):
        x = lib.constant([1.0, 2.0])
        with pytest.raises(ValueError, match="don't have the same nested structure"):
            lib.autodiff.ForwardAccumulator([x], lib.constant([1.0, 0.5]))
        with pytest.raises((ValueError, TypeError), match="dtype"):
            lib.autodiff.ForwardAccumulator(x, lib.constant([1, 2]))
        with pytest.raises(AttributeError, match="'float' object has no attribute 'dtype'"):
            lib.autodiff.ForwardAccumulator(3.0, 1.0)
        with pytest.raises(ValueError, match="not a valid UnconnectedGradients"):
            lib.autodiff.ForwardAccumulator(x, x).jvp(x, unconnected_gradients="bad")


def test_tangent_of_the_wrong_shape_is_refused():
    # TensorFlow accepts it here and fails later, inside some op's forward rule; ember says so at once.
    with pytest.raises(ValueError, match=r"tangent of shape \(3,\) was given for a primal of shape \(2,\)"):
        em.autodiff.ForwardAccumulator(em.constant([1.0, 2.0]), em.constant([1.0, 2.0, 3.0]))


def test_autodiff_gradient_tape_is_gradient_tape():
    assert em.autodiff.GradientTape is em.GradientTape


def test_jvp_through_a_called_function():
    def run(lib):
        x = lib.constant(X)
        inner = lib.function(lambda a: lib.sin(a) * a)
        with lib.autodiff.ForwardAccumulator(x, lib.constant(V)) as acc:
            y = inner(x)
        return [acc.jvp(y)]

    same_as_tensorflow(run)
