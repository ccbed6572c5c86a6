"""tf.config's devices and tf.device placement (docs/devices.md), checked against TensorFlow 2.21's
behaviour (the expected values below were read from TensorFlow running the same calls)."""

import pytest

import ember as tf
from ember import errors

FULL = "/job:localhost/replica:0/task:0/device:CPU:"


@pytest.fixture
def two_cpus():
    tf.config._reset_context()
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    yield cpu
    tf.config.set_soft_device_placement(True)
    tf.config._reset_context()


def test_physical_devices():
    assert tf.config.list_physical_devices() == [
        tf.config.PhysicalDevice(name="/physical_device:CPU:0", device_type="CPU")]
    assert tf.config.list_physical_devices("GPU") == []
    assert tf.config.list_physical_devices("cpu") == []  # device types are case-sensitive, as in TF
    assert tf.config.experimental.list_physical_devices("CPU") == tf.config.list_physical_devices("CPU")


def test_logical_devices(two_cpus):
    assert tf.config.list_logical_devices("CPU") == [
        tf.config.LogicalDevice(name="/device:CPU:0", device_type="CPU"),
        tf.config.LogicalDevice(name="/device:CPU:1", device_type="CPU")]
    assert tf.config.list_logical_devices("GPU") == []
    assert tf.config.get_logical_device_configuration(two_cpus) == [tf.config.LogicalDeviceConfiguration()] * 2
    assert repr(tf.config.LogicalDeviceConfiguration()) == (
        "LogicalDeviceConfiguration(memory_limit=None, experimental_priority=None, "
        "experimental_device_ordinal=None)")


def test_configuration_closes_once_initialized(two_cpus):
    tf.config.list_logical_devices()
    with pytest.raises(RuntimeError, match="Virtual devices cannot be modified after being initialized"):
        tf.config.set_logical_device_configuration(two_cpus, [tf.config.LogicalDeviceConfiguration()] * 3)
    # The same configuration again is accepted.
    tf.config.set_logical_device_configuration(two_cpus, [tf.config.LogicalDeviceConfiguration()] * 2)
    with pytest.raises(RuntimeError, match="Visible devices cannot be modified after being initialized"):
        tf.config.set_visible_devices([])


def test_configuration_errors():
    tf.config._reset_context()
    with pytest.raises(ValueError, match="Unrecognized device: 'cpu'"):
        tf.config.set_logical_device_configuration("cpu", [tf.config.LogicalDeviceConfiguration()])
    cpu = tf.config.list_physical_devices("CPU")[0]
    with pytest.raises(ValueError, match="at least one"):
        tf.config.set_logical_device_configuration(cpu, [])
    with pytest.raises(ValueError, match="Cannot set memory growth on non-GPU"):
        tf.config.experimental.set_memory_growth(cpu, True)
    with pytest.raises(KeyError):
        tf.config.experimental.get_memory_growth(cpu)
    assert tf.config.get_visible_devices() == [cpu]
    tf.config.set_visible_devices(cpu)
    assert tf.config.get_visible_devices("CPU") == [cpu]
    tf.config._reset_context()


def test_eager_tensors_on_logical_devices(two_cpus):
    x = tf.constant(1.0)
    assert x.device == FULL + "0"
    with tf.device("/cpu:1"):
        y = tf.constant(2.0)
        z = x + 1
        assert y.device == FULL + "1" and z.device == FULL + "1"
        with tf.device(None):
            assert tf.constant(1).device == FULL + "0"
    # Outside every scope ops run on CPU:0, whatever their inputs' device (TensorFlow's default device).
    assert (y + 1).device == FULL + "0"
    for name, index in [("/CPU:1", 1), ("/device:CPU:0", 0), ("cpu:0", 0), (FULL + "1", 1), ("CPU", 0)]:
        with tf.device(name):
            assert tf.constant(1).device == FULL + str(index), name


def test_nested_scopes_merge(two_cpus):
    with tf.device("/job:localhost"):
        with tf.device("cpu:1"):
            assert tf.constant(1).device == FULL + "1"
            with tf.device("/device:CPU:0"):
                assert tf.constant(1).device == FULL + "0"


def test_variables_have_their_device(two_cpus):
    with tf.device("cpu:1"):
        v = tf.Variable(1.0)
    assert v.device == FULL + "1"
    assert tf.Variable(2.0).device == FULL + "0"


def test_soft_placement_falls_back_to_cpu0(two_cpus):
    assert tf.config.get_soft_device_placement()
    x = tf.constant(1.0)
    for name in ["GPU:0", "/gpu:0", "/cpu:5"]:
        with tf.device(name):
            assert (x + 1).device == FULL + "0", name


def test_hard_placement_errors(two_cpus):
    tf.config.set_soft_device_placement(False)
    assert not tf.config.get_soft_device_placement()
    x = tf.constant(1.0)
    for name, wanted in [("/cpu:5", "CPU:5"), ("GPU:0", "GPU:0")]:
        with tf.device(name):
            with pytest.raises(errors.InvalidArgumentError) as e:
                x + 1
        assert str(e.value).startswith(
            f"Could not satisfy device specification '/job:localhost/replica:0/task:0/device:{wanted}'. "
            "enable_soft_placement=0. Supported device types [CPU]. All available devices "
            f"[{FULL}0, {FULL}1].")
    with tf.device("/job:foo/device:CPU:0"):
        with pytest.raises(errors.InvalidArgumentError, match="/job:foo/replica:0/task:0/device:CPU:0 unknown"):
            x + 1
    # The scope's error does not outlive the scope.
    assert (x + 1).device == FULL + "0"


def test_bad_device_names():
    with pytest.raises(ValueError, match="Unknown attribute 'foo' is encountered while parsing the device spec"):
        with tf.device("foo"):
            pass
    with pytest.raises(TypeError):
        with tf.device(3):
            pass


def test_op_determinism_flag():
    tf.config.experimental.enable_op_determinism()
    assert tf.config.experimental.is_op_determinism_enabled()
    tf.config.experimental.disable_op_determinism()
    assert not tf.config.experimental.is_op_determinism_enabled()
