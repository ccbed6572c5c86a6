"""Logical CPU devices for the tf.distribute tests (TensorFlow's tests split the CPU the same way)."""

import ember as tf

_CONFIGURED = 4


def _split(config):
    cpu = config.list_physical_devices("CPU")[0]
    config.set_logical_device_configuration(cpu, [config.LogicalDeviceConfiguration()] * _CONFIGURED)


def logical_cpus(n):
    """``n`` device names "cpu:0".."cpu:{n-1}", with the CPU split into 4 logical devices where tf.config can.

    The split is fixed once the devices are in use (listing them closes it, as in TensorFlow); if an earlier
    test of the process fixed fewer, the configuration is reset for tests, as TensorFlow's tests do."""
    config = tf.config
    if not hasattr(config, "set_logical_device_configuration"):
        return [f"cpu:{i}" for i in range(n)]  # device scopes only record names: any name serves
    try:
        _split(config)
    except RuntimeError:  # already in use
        if len(config.list_logical_devices("CPU")) < n:
            config._reset_context()
            _split(config)
    have = config.list_logical_devices("CPU")
    assert len(have) >= n, f"the tests need {n} logical CPU devices, this process has {len(have)}"
    return [f"cpu:{i}" for i in range(n)]
