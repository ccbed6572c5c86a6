"""tf.random: TF 2's seed rules (global seed + op seed, sequences that replay after set_seed), values
recorded from TensorFlow 2.21 (uniform and integers bit-exact, normals to 1e-6), stateless ops as pure
functions of (seed, shape), parameters, dtypes, errors, and the moments of a million samples."""
import math

import numpy as np
import pytest

import ember as tf
from ember import errors

FLOATS = [tf.float16, tf.bfloat16, tf.float32, tf.float64]


@pytest.fixture(autouse=True)
def _reset_global_seed():
    yield
    tf.random.set_seed(None)


def _exact(tensor, expected):
    np.testing.assert_array_equal(tensor.numpy().astype(np.float64) if tensor.dtype.is_floating else tensor.numpy(),
                                  np.asarray(expected))


def _close(tensor, expected):
    np.testing.assert_allclose(tensor.numpy().astype(np.float64), expected, rtol=1e-6, atol=1e-6)


# ---- values recorded from TensorFlow 2.21 ---------------------------------------------------------------

# tf.random.set_seed(1); [tf.random.uniform([3], seed=5) for _ in range(3)]
UNIFORM_GS1_OP5 = [[0.19560599327087402, 0.029860854148864746, 0.3649308681488037],
                   [0.4430607557296753, 0.8878122568130493, 0.529292106628418],
                   [0.3607219457626343, 0.7985242605209351, 0.8622024059295654]]
# tf.random.set_seed(1); [tf.random.uniform([3]) for _ in range(2)]
UNIFORM_GS1 = [[0.1651308536529541, 0.9014812707901001, 0.6309741735458374],
               [0.5101070404052734, 0.44353175163269043, 0.40853309631347656]]
# tf.random.set_seed(2); tf.random.uniform([3])
UNIFORM_GS2 = [0.1469024419784546, 0.46425676345825195, 0.2248997688293457]
# tf.random.set_seed(1); tf.random.uniform([3], seed=6)
UNIFORM_GS1_OP6 = [0.5211156606674194, 0.9429671764373779, 0.3478199243545532]
# tf.random.set_seed(1); tf.random.normal([20], seed=7)  /  tf.random.truncated_normal([20], seed=7)
NORMAL_GS1_OP7 = [-0.657312273979187, -0.21175844967365265, -0.40897825360298157, -0.1848050057888031,
                  0.3602936267852783, -0.9464040994644165, 0.23648416996002197, -0.4522291123867035,
                  1.7723720073699951, 0.697756826877594, -1.0499000549316406, 0.3292626738548279,
                  -0.12595269083976746, 0.2427648901939392, 2.4152321815490723, 0.38932496309280396,
                  -1.92374587059021, 1.0956281423568726, 1.2758084535598755, -0.9656487703323364]
TRUNCATED_GS1_OP7 = [-0.657312273979187, -0.21175844967365265, -0.40897825360298157, -0.1848050057888031,
                     0.48211053013801575, 0.027816221117973328, 1.0926433801651, 0.7878409028053284,
                     -0.5846709609031677, -1.351812720298767, -0.48740944266319275, 0.49511924386024475,
                     -1.1903842687606812, -0.4723450243473053, 0.3924678564071655, 0.25078368186950684,
                     -0.4334774315357208, 0.34406572580337524, 0.7144502401351929, -0.21001732349395752]
# tf.random.set_seed(3); tf.random.<op>([...], ..., seed=2)
SEEDED_3_2 = {
    "uniform_float64": [0.8078688572076864, 0.29901990643101306, 0.6720942939322905],
    "uniform_float16": [0.2568359375, 0.8408203125, 0.1962890625],
    "uniform_bfloat16": [0.0546875, 0.7265625, 0.5703125],
    "normal_float64": [0.6224911314691006, -0.1980299709194818, -0.8515395530462627],
    "normal_float16": [0.449951171875, 0.346923828125, -1.375],
    "int32_0_10": [1, 9, 9, 1, 5],
    "int64_-5_1e12": [806625981900, 977362977445, 413918208204, 492487469333, 733601367833],
    "uniform_-2_5": [3.9568843841552734, -0.9815813302993774, -0.863357663154602],
    "normal_10_0.5": [10.22497272491455, 10.1734037399292, 9.312334060668945],
}
# tf.random.set_seed(1) and then, in order: normal([2]), uniform([2], seed=5), uniform([2]),
# uniform([2], seed=5), uniform([2], seed=5, dtype=float64), uniform([3], seed=5),
# truncated_normal([2], seed=5), uniform([2], 0, 10, int32, seed=5), uniform([2], 0, 10, int64, seed=5),
# uniform([2], 0, 100, int32, seed=5)
MIXED_GS1 = [[-1.1012202501296997, 1.545751690864563], [0.19560599327087402, 0.029860854148864746],
             [0.5101070404052734, 0.44353175163269043], [0.2899724245071411, 0.18651282787322998],
             [0.5648487955888004, 0.9194474020156078],
             [0.37081360816955566, 0.14327168464660645, 0.8326014280319214],
             [0.3369457423686981, 1.7747600078582764], [6, 9], [0, 4], [29, 91]]
# tf.random.set_seed(None); [tf.random.uniform([2], seed=5) for _ in range(2)]; normal after a reset
NO_GLOBAL_OP5 = [[0.3883112668991089, 0.6636828184127808], [0.42907261848449707, 0.9582782983779907]]
NO_GLOBAL_OP5_NORMAL = [-1.178082823753357, -0.7099413871765137]

# Stateless ops.
S_UNIFORM_1_2 = [0.8440604209899902, 0.19204533100128174, 0.9962232112884521, 0.16038739681243896]
S_UNIFORM_1_2_F64 = [0.7524837538451801, 0.9697857725627486, 0.17592233912897481]
S_UNIFORM_3_4_F16 = [0.0107421875, 0.8837890625, 0.658203125]
S_INT32_1_2_0_100 = [40, 49, 94]
S_INT64_1_2_0_100 = [44, 78, 67]
S_INT64_5_6_BIG = [-1048152274581, -475111539008, -606759291158]  # minval -2**40, maxval 2**40
S_INT32_NEG_SEED = [4, 0, 4, 1]  # seed [-1, -2], minval -7, maxval 7
S_NORMAL_1_2 = [0.544110119342804, 0.20738030970096588, 0.0735643208026886, 0.04643455147743225, -1.301589846611023]
S_NORMAL_1_2_F64 = [-0.1423118100189212, 0.7406072461585091, -1.469047669443883]
S_NORMAL_3_4_F16 = [-0.1739501953125, 1.671875, 0.34814453125]
S_NORMAL_3_4_MEAN5_STD3 = [4.478198528289795, 10.017064094543457]
S_NORMAL_3_4 = [-0.17393383383750916, 1.6723546981811523, 0.3481701612472534, -1.7038906812667847,
                -0.6153246164321899, 0.36620965600013733, 0.08287584781646729, 0.17785657942295074,
                -0.10289465636014938, 1.1864864826202393, -0.8348783254623413, -0.02066047117114067,
                1.7816170454025269, -0.808968722820282, 0.9470722675323486, 1.3590598106384277,
                0.3187122642993927, 1.2098209857940674, 0.8516132235527039, 0.33991992473602295]
S_TRUNCATED_3_4 = [-0.17393383383750916, 1.6723546981811523, 0.3481701612472534, -1.7038906812667847,
                   0.6385190486907959, -1.309924602508545, -0.010434313677251339, -1.0422205924987793,
                   -0.7741751074790955, -0.6609441041946411, -0.3589159846305847, 0.34141263365745544,
                   0.4074305593967438, -0.01796911284327507, 0.1582828164100647, 0.3022252321243286,
                   -0.48142701387405396, 0.17611391842365265, 0.8362997770309448, 1.125745177268982]
S_TRUNCATED_BIG_SEED = [0.4748584032058716, 0.07581251859664917, -0.29107797145843506]  # seed [2**40, -7]


def test_uniform_with_global_and_op_seed_matches_tf():
    tf.random.set_seed(1)
    for expected in UNIFORM_GS1_OP5:  # the same op seed, called again, moves on
        _exact(tf.random.uniform([3], seed=5), expected)


def test_uniform_with_global_seed_only_matches_tf():
    tf.random.set_seed(1)
    for expected in UNIFORM_GS1:
        _exact(tf.random.uniform([3]), expected)
    tf.random.set_seed(2)
    _exact(tf.random.uniform([3]), UNIFORM_GS2)
    tf.random.set_seed(1)
    _exact(tf.random.uniform([3], seed=6), UNIFORM_GS1_OP6)


def test_normal_and_truncated_normal_match_tf():
    tf.random.set_seed(1)
    _close(tf.random.normal([20], seed=7), NORMAL_GS1_OP7)
    tf.random.set_seed(1)
    out = tf.random.truncated_normal([20], seed=7)
    _close(out, TRUNCATED_GS1_OP7)
    # The normal draws beyond two stddevs (1.77, 2.42, -1.92 ...) were redrawn: the first four agree.
    _close(out[:4], NORMAL_GS1_OP7[:4])


@pytest.mark.parametrize("key", list(SEEDED_3_2))
def test_dtypes_and_parameters_match_tf(key):
    tf.random.set_seed(3)
    calls = {
        "uniform_float64": lambda: tf.random.uniform([3], dtype=tf.float64, seed=2),
        "uniform_float16": lambda: tf.random.uniform([3], dtype=tf.float16, seed=2),
        "uniform_bfloat16": lambda: tf.random.uniform([3], dtype=tf.bfloat16, seed=2),
        "normal_float64": lambda: tf.random.normal([3], dtype=tf.float64, seed=2),
        "normal_float16": lambda: tf.random.normal([3], dtype=tf.float16, seed=2),
        "int32_0_10": lambda: tf.random.uniform([5], 0, 10, dtype=tf.int32, seed=2),
        "int64_-5_1e12": lambda: tf.random.uniform([5], -5, 10**12, dtype=tf.int64, seed=2),
        "uniform_-2_5": lambda: tf.random.uniform([3], -2.0, 5.0, seed=2),
        "normal_10_0.5": lambda: tf.random.normal([3], 10.0, 0.5, seed=2),
    }
    out = calls[key]()
    expected = SEEDED_3_2[key]
    if key.startswith("normal") and out.dtype in (tf.float32, tf.float64):
        _close(out, expected)
    else:
        _exact(out, expected)


def _mixed_sequence():
    return [tf.random.normal([2]), tf.random.uniform([2], seed=5), tf.random.uniform([2]),
            tf.random.uniform([2], seed=5), tf.random.uniform([2], seed=5, dtype=tf.float64),
            tf.random.uniform([3], seed=5), tf.random.truncated_normal([2], seed=5),
            tf.random.uniform([2], 0, 10, dtype=tf.int32, seed=5),
            tf.random.uniform([2], 0, 10, dtype=tf.int64, seed=5),
            tf.random.uniform([2], 0, 100, dtype=tf.int32, seed=5)]


def test_mixed_sequence_matches_tf_and_replays_after_set_seed():
    # Op seeds count per call, and each (op, dtype, seed) pair has its own stream: the float64 uniform and
    # the int64 uniform start their own streams; the [3] uniform continues the float32 seed=5 one.
    for _ in range(2):
        tf.random.set_seed(1)
        outs = _mixed_sequence()
        for i, (out, expected) in enumerate(zip(outs, MIXED_GS1)):
            if i in (0, 6):  # normals: to 1e-6
                _close(out, expected)
            else:  # uniform floats and integers: bit-exact
                _exact(out, expected)


def test_op_seed_without_global_seed_matches_tf():
    tf.random.set_seed(None)
    for expected in NO_GLOBAL_OP5:
        _exact(tf.random.uniform([2], seed=5), expected)
    tf.random.set_seed(None)  # resets the streams, like TF's kernel cache
    _exact(tf.random.uniform([2], seed=5), NO_GLOBAL_OP5[0])
    tf.random.set_seed(None)
    _close(tf.random.normal([2], seed=5), NO_GLOBAL_OP5_NORMAL)


# ---- TF 2's seed rules --------------------------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda seed: tf.random.uniform([4, 3], seed=seed),
    lambda seed: tf.random.normal([7], seed=seed, dtype=tf.float64),
    lambda seed: tf.random.truncated_normal([5], seed=seed, dtype=tf.float16),
    lambda seed: tf.random.uniform([6], 0, 1000, dtype=tf.int32, seed=seed),
    lambda seed: tf.random.uniform([6], -(2**40), 2**40, dtype=tf.int64, seed=seed),
], ids=["uniform", "normal", "truncated_normal", "int32", "int64"])
def test_sequences_replay_after_set_seed(make):
    for op_seed in (None, 11):
        tf.random.set_seed(42)
        first = [make(op_seed).numpy() for _ in range(3)]
        tf.random.set_seed(42)
        again = [make(op_seed).numpy() for _ in range(3)]
        for a, b in zip(first, again):
            np.testing.assert_array_equal(a, b)
        # Successive calls differ.
        assert not np.array_equal(first[0], first[1]) and not np.array_equal(first[1], first[2])


def test_different_seeds_give_different_values():
    tf.random.set_seed(1)
    a = tf.random.uniform([8], seed=5).numpy()
    tf.random.set_seed(1)
    b = tf.random.uniform([8], seed=6).numpy()
    tf.random.set_seed(2)
    c = tf.random.uniform([8], seed=5).numpy()
    assert not np.array_equal(a, b) and not np.array_equal(a, c) and not np.array_equal(b, c)


def test_unseeded_calls_differ():
    tf.random.set_seed(None)
    a, b = tf.random.uniform([16]).numpy(), tf.random.uniform([16]).numpy()
    assert not np.array_equal(a, b)
    a, b = tf.random.normal([16]).numpy(), tf.random.normal([16]).numpy()
    assert not np.array_equal(a, b)


def test_global_seed_counts_unseeded_ops():
    # With a global seed, unseeded ops take successive op seeds: the second call is not the first again,
    # and the same program replays exactly.
    tf.random.set_seed(7)
    a = [tf.random.uniform([3]).numpy(), tf.random.normal([3]).numpy(), tf.random.uniform([3]).numpy()]
    tf.random.set_seed(7)
    b = [tf.random.uniform([3]).numpy(), tf.random.normal([3]).numpy(), tf.random.uniform([3]).numpy()]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[0], a[2])


# ---- stateless ops ---------------------------------------------------------------------------------------------

def test_stateless_values_match_tf():
    _exact(tf.random.stateless_uniform([3], seed=[1, 2]), S_UNIFORM_1_2[:3])
    _exact(tf.random.stateless_uniform([2, 2], seed=[1, 2]), np.reshape(S_UNIFORM_1_2, [2, 2]))
    _exact(tf.random.stateless_uniform([3], seed=[1, 2], dtype=tf.float64), S_UNIFORM_1_2_F64)
    _exact(tf.random.stateless_uniform([3], seed=(3, 4), dtype=tf.float16), S_UNIFORM_3_4_F16)
    _exact(tf.random.stateless_uniform([3], seed=[1, 2], minval=0, maxval=100, dtype=tf.int32), S_INT32_1_2_0_100)
    _exact(tf.random.stateless_uniform([3], seed=[1, 2], minval=0, maxval=100, dtype=tf.int64), S_INT64_1_2_0_100)
    _exact(tf.random.stateless_uniform([3], seed=[5, 6], minval=-(2**40), maxval=2**40, dtype=tf.int64),
           S_INT64_5_6_BIG)
    _exact(tf.random.stateless_uniform([4], seed=[-1, -2], minval=-7, maxval=7, dtype=tf.int32), S_INT32_NEG_SEED)
    _close(tf.random.stateless_normal([5], seed=[1, 2]), S_NORMAL_1_2)
    _close(tf.random.stateless_normal([3], seed=[1, 2], dtype=tf.float64), S_NORMAL_1_2_F64)
    _exact(tf.random.stateless_normal([3], seed=(3, 4), dtype=tf.float16), S_NORMAL_3_4_F16)
    _close(tf.random.stateless_normal([2], seed=(3, 4), mean=5.0, stddev=3.0), S_NORMAL_3_4_MEAN5_STD3)
    _close(tf.random.stateless_normal([20], seed=tf.constant([3, 4], tf.int64)), S_NORMAL_3_4)
    _close(tf.random.stateless_truncated_normal([20], seed=[3, 4]), S_TRUNCATED_3_4)
    _close(tf.random.stateless_truncated_normal([3], seed=tf.constant([2**40, -7], tf.int64)), S_TRUNCATED_BIG_SEED)


@pytest.mark.parametrize("fn", [tf.random.stateless_uniform, tf.random.stateless_normal,
                                tf.random.stateless_truncated_normal],
                         ids=["uniform", "normal", "truncated_normal"])
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
def test_stateless_is_deterministic_in_seed_and_shape(fn, dtype):
    a = fn([4, 5], seed=[7, 11], dtype=dtype).numpy()
    tf.random.set_seed(123)  # neither the global seed nor other random ops affect stateless ops
    tf.random.uniform([10])
    b = fn([4, 5], seed=tf.constant([7, 11]), dtype=dtype).numpy()
    c = fn([4, 5], seed=tf.constant([7, 11], tf.int64), dtype=dtype).numpy()
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    assert not np.array_equal(a, fn([4, 5], seed=[7, 12], dtype=dtype).numpy())
    assert not np.array_equal(a, fn([4, 5], seed=[8, 11], dtype=dtype).numpy())
    assert fn([0, 3], seed=[1, 2], dtype=dtype).shape == (0, 3)
    assert fn([], seed=[1, 2], dtype=dtype).shape == ()


def test_stateless_int_is_deterministic():
    a = tf.random.stateless_uniform([100], seed=[3, 9], minval=-50, maxval=50, dtype=tf.int32).numpy()
    b = tf.random.stateless_uniform([100], seed=[3, 9], minval=-50, maxval=50, dtype=tf.int32).numpy()
    np.testing.assert_array_equal(a, b)
    assert a.min() >= -50 and a.max() < 50
    assert not np.array_equal(a, tf.random.stateless_uniform([100], seed=[3, 10], minval=-50, maxval=50,
                                                              dtype=tf.int32).numpy())


def test_stateless_parameters():
    base = tf.random.stateless_uniform([1000], seed=[1, 2]).numpy().astype(np.float64)
    out = tf.random.stateless_uniform([1000], seed=[1, 2], minval=-3.0, maxval=5.0).numpy()
    np.testing.assert_allclose(out, base * 8 - 3, rtol=1e-6, atol=1e-6)
    assert out.min() >= -3 and out.max() < 5
    normal = tf.random.stateless_normal([1000], seed=[1, 2]).numpy().astype(np.float64)
    out = tf.random.stateless_normal([1000], seed=[1, 2], mean=2.0, stddev=0.5).numpy()
    np.testing.assert_allclose(out, normal * 0.5 + 2, rtol=1e-6, atol=1e-6)
    out = tf.random.stateless_truncated_normal([1000], seed=[1, 2], mean=-1.0, stddev=3.0).numpy()
    assert out.min() >= -7 and out.max() <= 5


# ---- parameters, shapes and dtypes ----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
def test_float_dtypes_and_ranges(dtype):
    tf.random.set_seed(5)
    out = tf.random.uniform([2000], dtype=dtype)
    values = out.numpy().astype(np.float64)
    assert out.dtype == dtype and values.min() >= 0 and values.max() < 1
    out = tf.random.uniform([2000], minval=-2, maxval=3, dtype=dtype)
    values = out.numpy().astype(np.float64)
    assert values.min() >= -2 and values.max() <= 3  # <= : 16-bit rounding may reach maxval
    assert tf.random.normal([3], dtype=dtype).dtype == dtype
    out = tf.random.truncated_normal([2000], mean=1.0, stddev=2.0, dtype=dtype)
    values = out.numpy().astype(np.float64)
    assert out.dtype == dtype and values.min() >= -3.01 and values.max() <= 5.01


@pytest.mark.parametrize("dtype", [tf.int32, tf.int64], ids=lambda d: d.name)
def test_integer_uniform(dtype):
    tf.random.set_seed(9)
    out = tf.random.uniform([5000], minval=-3, maxval=4, dtype=dtype)
    values = out.numpy()
    assert out.dtype == dtype and set(values.tolist()) == set(range(-3, 4))
    out = tf.random.uniform([10], minval=tf.constant(1), maxval=tf.constant(30), dtype=dtype)
    assert out.numpy().min() >= 1 and out.numpy().max() < 30
    assert tf.random.uniform([0], 5, 5, dtype=dtype).shape == (0,)  # no draws: an empty range is fine


def test_tensor_parameters_and_shapes():
    tf.random.set_seed(3)
    a = tf.random.uniform(tf.constant([2, 3]), seed=2)
    tf.random.set_seed(3)
    b = tf.random.uniform((2, 3), seed=2)
    tf.random.set_seed(3)
    c = tf.random.uniform(np.array([2, 3]), seed=2)
    assert a.shape == (2, 3)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(a.numpy(), c.numpy())
    tf.random.set_seed(3)
    out = tf.random.uniform([2], tf.constant(1.0), tf.constant(3.0), seed=2)
    _exact(out, [2.7019670009613037, 1.2909767627716064])  # recorded from TF 2.21
    tf.random.set_seed(3)
    out = tf.random.uniform([2], [0.0, 10.0], [1.0, 20.0], seed=2)
    _exact(out, [0.8509835004806519, 11.454883575439453])
    tf.random.set_seed(3)
    out = tf.random.normal([2], [0.0, 10.0], 2.0, seed=2)
    _close(out, [0.899889349937439, 10.693613052368164])
    assert tf.random.uniform([]).shape == ()
    assert tf.random.normal([0, 4]).shape == (0, 4)


# ---- errors -------------------------------------------------------------------------------------------------

def test_integer_uniform_requires_maxval():
    with pytest.raises(ValueError, match="Must specify maxval for integer dtype"):
        tf.random.uniform([5], dtype=tf.int32)
    with pytest.raises(ValueError, match="Must specify maxval for integer dtype"):
        tf.random.uniform([5], minval=1, dtype=tf.int64)
    with pytest.raises(ValueError, match="`minval` and `maxval` must be both None or not None"):
        tf.random.stateless_uniform([2], seed=[1, 2], dtype=tf.int32)


def test_invalid_dtypes():
    for dtype in (tf.int8, tf.int16, tf.uint8, tf.bool):
        with pytest.raises(ValueError, match="Argument `dtype` got invalid value"):
            tf.random.uniform([5], 0, 3, dtype=dtype)
        with pytest.raises(ValueError, match="Argument `dtype` got invalid value"):
            tf.random.stateless_uniform([5], seed=[1, 2], minval=0, maxval=3, dtype=dtype)
    for fn in (tf.random.normal, tf.random.truncated_normal):
        with pytest.raises(TypeError):
            fn([4], dtype=tf.int32)
    with pytest.raises(TypeError):
        tf.random.stateless_normal([4], seed=[1, 2], dtype=tf.int32)
    with pytest.raises(TypeError):
        tf.random.uniform([2], 0, 2.5, dtype=tf.int32)  # TF: cannot convert 2.5 to int32


def test_bad_ranges_and_shapes():
    with pytest.raises(errors.InvalidArgumentError, match=r"^RandomUniformInt: Need minval < maxval, got 3 >= 3"):
        tf.random.uniform([5], 3, 3, dtype=tf.int32)
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"^StatelessRandomUniformInt: Need minval < maxval, got 5 >= 2"):
        tf.random.stateless_uniform([5], seed=[1, 2], minval=5, maxval=2, dtype=tf.int64)
    with pytest.raises(errors.InvalidArgumentError, match="RandomUniformInt: minval .* must fit in int32"):
        tf.random.uniform([5], 0, 2**40, dtype=tf.int32)
    with pytest.raises(errors.InvalidArgumentError, match=r"^RandomUniform: .*-1"):
        tf.random.uniform([-1])
    with pytest.raises(errors.InvalidArgumentError, match=r"^RandomStandardNormal: .*-2"):
        tf.random.normal([3, -2])


def test_bad_stateless_seeds():
    with pytest.raises(errors.InvalidArgumentError, match=r"seed must have shape \[2\], not \[3\]"):
        tf.random.stateless_uniform([2], seed=[1, 2, 3])
    with pytest.raises(errors.InvalidArgumentError, match="StatelessRandomNormal: seed must have shape"):
        tf.random.stateless_normal([2], seed=[[1, 2]])
    with pytest.raises(errors.InvalidArgumentError, match=r"StatelessRandomUniform: .*got float32"):
        tf.random.stateless_uniform([4], seed=[1.0, 2.0])


# ---- large outputs, generated in parallel ------------------------------------------------------------------

# (values at LARGE_INDICES, sum of all values) of a 1000003-element output, recorded from TF 2.21: Philox
# streams split over threads must still give every element TF's value.
LARGE_N = 1_000_003
LARGE_INDICES = [0, 1023, 1024, 65536, 500001, LARGE_N - 1]
LARGE = {
    "stateless_uniform": ([0.8440604209899902, 0.7810745239257812, 0.23839759826660156, 0.8930950164794922,
                           0.1738370656967163, 0.923230767250061], 499580.3846575022),
    "stateless_normal": ([0.544110119342804, 0.16886210441589355, 0.16820591688156128, 0.02848978154361248,
                          0.28809916973114014, -0.022382013499736786], -731.6406800484622),
    "stateless_truncated_normal": ([0.544110119342804, 1.7358629703521729, -1.841849446296692, -0.08327452093362808,
                                    -0.7790878415107727, 1.4748222827911377], -48.731309373351905),
    "stateless_int32": ([-860, -552, 168, -600, 83, 245], -358707.0),
    # tf.random.set_seed(1), then these four calls in order.
    "uniform": ([0.7787855863571167, 0.34394896030426025, 0.09788680076599121, 0.6590859889984131,
                 0.6481256484985352, 0.22812020778656006], 499988.896381855),
    "uniform_again": ([0.10613906383514404, 0.9755672216415405, 0.03903365135192871, 0.7361971139907837,
                       0.8275834321975708, 0.08513426780700684], 500038.75238633156),
    "truncated_normal": ([-0.6708612442016602, -0.44052639603614807, -0.7201921939849854, -1.2025326490402222,
                          -0.37953704595565796, 0.3083500266075134], 1115.712320212775),
    "int32": ([3, 0, 4, 3, 4, 0], 2999512.0),
}


def test_large_outputs_match_tf(threads):
    n = LARGE_N
    outs = {
        "stateless_uniform": tf.random.stateless_uniform([n], seed=[1, 2]),
        "stateless_normal": tf.random.stateless_normal([n], seed=[1, 2]),
        "stateless_truncated_normal": tf.random.stateless_truncated_normal([n], seed=[1, 2]),
        "stateless_int32": tf.random.stateless_uniform([n], seed=[1, 2], minval=-1000, maxval=1000, dtype=tf.int32),
    }
    tf.random.set_seed(1)
    outs["uniform"] = tf.random.uniform([n], seed=3)
    outs["uniform_again"] = tf.random.uniform([n], seed=3)
    outs["truncated_normal"] = tf.random.truncated_normal([n], seed=3)
    outs["int32"] = tf.random.uniform([n], 0, 7, dtype=tf.int32, seed=3)
    for name, out in outs.items():
        values, total = LARGE[name]
        picked = out.numpy()[LARGE_INDICES]
        if "normal" in name:
            np.testing.assert_allclose(picked, values, rtol=1e-6, atol=1e-6, err_msg=name)
            assert out.numpy().astype(np.float64).sum() == pytest.approx(total, abs=1e-3), name
        else:
            np.testing.assert_array_equal(picked, values, err_msg=name)
            assert out.numpy().astype(np.float64).sum() == total, name


# ---- moments of a million samples -------------------------------------------------------------------------

N = 1_000_000


def _truncated_moments(a=2.0):
    """Mean and variance of the standard normal truncated to (-a, a)."""
    pdf = math.exp(-a * a / 2) / math.sqrt(2 * math.pi)
    mass = math.erf(a / math.sqrt(2))
    return 0.0, 1 - 2 * a * pdf / mass


def test_uniform_moments():
    tf.random.set_seed(1234)
    x = tf.random.uniform([N], minval=-1.0, maxval=3.0).numpy().astype(np.float64)
    assert x.min() >= -1 and x.max() < 3
    assert x.mean() == pytest.approx(1.0, abs=5 * math.sqrt(16 / 12 / N))
    assert x.var() == pytest.approx(16 / 12, rel=5e-3)
    counts = np.histogram(x, bins=8, range=(-1, 3))[0]
    np.testing.assert_allclose(counts, N / 8, rtol=0.01)
    x = tf.random.stateless_uniform([N], seed=[5, 5], dtype=tf.float64).numpy()
    assert x.mean() == pytest.approx(0.5, abs=5 * math.sqrt(1 / 12 / N))
    assert x.var() == pytest.approx(1 / 12, rel=5e-3)


def test_normal_moments():
    tf.random.set_seed(99)
    x = tf.random.normal([N], mean=3.0, stddev=2.0).numpy().astype(np.float64)
    assert x.mean() == pytest.approx(3.0, abs=5 * 2 / math.sqrt(N))
    assert x.std() == pytest.approx(2.0, rel=5e-3)
    assert np.mean(np.abs(x - 3) < 2) == pytest.approx(0.6827, abs=3e-3)  # one-sigma mass
    skew = np.mean(((x - x.mean()) / x.std()) ** 3)
    kurt = np.mean(((x - x.mean()) / x.std()) ** 4)
    assert abs(skew) < 0.01 and kurt == pytest.approx(3.0, abs=0.03)
    x = tf.random.stateless_normal([N], seed=[1, 1], dtype=tf.float64).numpy()
    assert x.mean() == pytest.approx(0.0, abs=5 / math.sqrt(N))
    assert x.std() == pytest.approx(1.0, rel=5e-3)


@pytest.mark.parametrize("stateless", [False, True], ids=["stateful", "stateless"])
def test_truncated_normal_stays_within_two_stddevs(stateless):
    if stateless:
        x = tf.random.stateless_truncated_normal([N], seed=[4, 2], mean=1.0, stddev=0.5).numpy()
    else:
        tf.random.set_seed(77)
        x = tf.random.truncated_normal([N], mean=1.0, stddev=0.5).numpy()
    x = x.astype(np.float64)
    assert x.min() >= 1 - 2 * 0.5 and x.max() <= 1 + 2 * 0.5
    _, variance = _truncated_moments()
    assert x.mean() == pytest.approx(1.0, abs=5 * 0.5 * math.sqrt(variance / N))
    assert x.var() == pytest.approx(0.25 * variance, rel=5e-3)
    assert np.mean(np.abs(x - 1) > 0.9) > 0.005  # the tails near the cut are populated


def test_integer_uniform_is_uniform():
    tf.random.set_seed(2024)
    x = tf.random.uniform([N], minval=-5, maxval=5, dtype=tf.int64).numpy()
    counts = np.bincount(x + 5, minlength=10)
    assert counts.size == 10
    np.testing.assert_allclose(counts, N / 10, rtol=0.01)
    x = tf.random.stateless_uniform([N], seed=[6, 7], minval=0, maxval=7, dtype=tf.int32).numpy()
    np.testing.assert_allclose(np.bincount(x, minlength=7), N / 7, rtol=0.01)


@pytest.mark.parametrize("call", [lambda s: tf.random.set_seed(s), lambda s: tf.random.normal([2], seed=s),
                                  lambda s: tf.random.uniform([2], seed=s)])
def test_string_tensor_seed_is_a_type_error(call):
    # Found by the API fuzzer: a string scalar seed reached NumPy's .item() on bytes (AttributeError).
    with pytest.raises(TypeError, match="seed must be an int, got a string tensor"):
        call(tf.constant("a b"))
