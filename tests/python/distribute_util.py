"""Logical CPU devices for the tf.distribute tests (TensorFlow's tests split the CPU the same way)."""

import ember as tf

_CONFIGURED = 4


def logical_cpus(n):
    """``n`` device names "cpu:0".."cpu:{n-1}", splitting the CPU into 4 logical devices where tf.config can
    (once per process: the split is fixed when the devices are first used)."""
    config = tf.config
    if hasattr(config, "set_logical_device_configuration"):
        have = config.list_logical_devices("CPU")
        if len(have) < n:
            cpu = config.list_physical_devices("CPU")[0]
            try:
                config.set_logical_device_configuration(cpu, [config.LogicalDeviceConfiguration()] * _CONFIGURED)
            except RuntimeError:
                pass  # already initialized by an earlier test: use what there is
            have = config.list_logical_devices("CPU")
        assert len(have) >= n, f"the tests need {n} logical CPU devices, this process has {len(have)}"
    return [f"cpu:{i}" for i in range(n)]
