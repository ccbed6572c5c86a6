"""``ember.config``: run-time switches."""

_state = {"run_functions_eagerly": False}


def run_functions_eagerly(run_eagerly):
    """When True, ``ember.function``-decorated functions run as plain Python (breakpoints work)."""
    _state["run_functions_eagerly"] = bool(run_eagerly)
    from ember import _C

    _C.set_run_functions_eagerly(bool(run_eagerly))


def functions_run_eagerly():
    return _state["run_functions_eagerly"]


experimental_run_functions_eagerly = run_functions_eagerly


class optimizer:  # noqa: N801 - mirrors the tf.config.optimizer module
    """``ember.config.optimizer``: which graph passes run when a concrete function is instantiated.

    Keys are TensorFlow's where it has one: ``constant_folding``, ``arithmetic_optimization``,
    ``function_optimization`` (inlining), ``memory_optimization``, ``disable_model_pruning``,
    ``disable_meta_optimizer``; and ember's ``common_subgraph_elimination`` and ``elementwise_fusion``.
    Options apply to functions traced afterwards.
    """

    @staticmethod
    def set_experimental_options(options):
        from ember import _C

        if not isinstance(options, dict):
            raise TypeError(f"set_experimental_options: expected a dict of option names to values, got "
                            f"{type(options).__name__}")
        _C.optimizer_set_options(dict(options))

    @staticmethod
    def get_experimental_options():
        from ember import _C

        return _C.optimizer_get_options()

    @staticmethod
    def set_jit(enabled):
        """Accepted for TensorFlow compatibility: ember always fuses element-wise ops."""

    @staticmethod
    def get_jit():
        return ""


class _NativeKernelSwitches:  # tf.config.experimental's native-kernel part (the class below adds devices)
    """``ember.config.experimental``: native fused kernels (docs/fusion.md).

    Fused element-wise groups start on the interpreter and switch to native code compiled in the background.
    ``set_native_kernels("off" | "async" | "sync")`` applies to functions instantiated afterwards
    (``EMBER_JIT=0`` / ``EMBER_JIT=sync`` set it from the environment); ``"sync"`` compiles before the first
    call, so tests see the native kernel at once. ``wait_for_native_kernels()`` waits for pending compiles.
    """

    @staticmethod
    def set_native_kernels(mode):
        from ember import _C

        if not isinstance(mode, str):
            raise TypeError(f"set_native_kernels: expected 'off', 'async' or 'sync', got {mode!r}")
        _C.jit_set_mode(mode)

    @staticmethod
    def get_native_kernels():
        from ember import _C

        return _C.jit_mode()

    @staticmethod
    def wait_for_native_kernels():
        from ember import _C

        _C.jit_wait()

    @staticmethod
    def native_kernel_stats():
        """Counters: compiled, disk_hits, memory_hits, disk_rejects, failures, native_runs, interpreted_runs."""
        from ember import _C

        return _C.jit_stats()


def _stop_native_compiles():
    # Stops the JIT's compile thread after its current job before the interpreter finalizes: C++ exit
    # handlers run after static destructors that LLVM registered during a compile (Note [The compile thread]
    # in src/ember/jit/jit.cc).
    from ember import _C

    _C.jit_shutdown()


import atexit  # noqa: E402

atexit.register(_stop_native_compiles)

# More threads than this only oversubscribes the machine; a huge count would make OpenMP try to start
# that many threads.
_MAX_THREADS = 256


def _thread_count(num_threads, what):
    import operator

    try:
        n = operator.index(num_threads)
    except TypeError:
        raise TypeError(f"{what}: num_threads must be an int, got {num_threads!r}") from None
    if n < 0:
        raise ValueError(f"{what}: num_threads must be >= 0 (0 = one per core), got {n}")
    return n


class threading:  # noqa: N801 - mirrors the tf.config.threading module
    """``ember.config.threading``: thread counts (0 = one per core)."""

    _intra = 0
    _inter = 0

    @staticmethod
    def set_inter_op_parallelism_threads(num_threads):
        from ember import _C

        n = _thread_count(num_threads, "set_inter_op_parallelism_threads")
        threading._inter = n
        _C.set_inter_op_threads(min(n, _MAX_THREADS))

    @staticmethod
    def get_inter_op_parallelism_threads():
        """What was set (0, as in TensorFlow, means the system picks: one per core)."""
        return threading._inter

    @staticmethod
    def set_intra_op_parallelism_threads(num_threads):
        from ember import _C

        n = _thread_count(num_threads, "set_intra_op_parallelism_threads")
        threading._intra = n
        _C.set_intra_op_threads(min(n, _MAX_THREADS))

    @staticmethod
    def get_intra_op_parallelism_threads():
        return threading._intra


# ---------------------------------------------------------------------------------------------------------
# Devices (docs/devices.md). The physical CPU is the one physical device; set_logical_device_configuration
# splits it into logical CPUs, each with its share of the threads. Configuration closes once the devices
# are in use (listed, a tf.device scope resolved, a multi-device function placed), as in TensorFlow.
import collections as _collections

PhysicalDevice = _collections.namedtuple("PhysicalDevice", ["name", "device_type"])
LogicalDevice = _collections.namedtuple("LogicalDevice", ["name", "device_type"])


class LogicalDeviceConfiguration(
        _collections.namedtuple("LogicalDeviceConfiguration",
                                ["memory_limit", "experimental_priority", "experimental_device_ordinal"])):
    """One logical device of a physical one (``tf.config.LogicalDeviceConfiguration``). On the CPU the
    fields are accepted and have no effect: logical CPUs share the host's memory."""

    def __new__(cls, memory_limit=None, experimental_priority=None, experimental_device_ordinal=None):
        return super().__new__(cls, memory_limit, experimental_priority, experimental_device_ordinal)


_CPU = PhysicalDevice(name="/physical_device:CPU:0", device_type="CPU")
_device_state = {"logical": None, "visible": [_CPU], "memory_growth": {}, "determinism": False}


def _reset_context():
    """Tests only, as TensorFlow's ``context._reset_context``: forget the device configuration."""
    from ember import _C

    _C.devices_reset_for_tests()
    _device_state.update(logical=None, visible=[_CPU], memory_growth={}, determinism=False)


def list_physical_devices(device_type=None):
    """``[PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')]``: ember runs on the CPU."""
    return [d for d in [_CPU] if device_type is None or d.device_type == device_type]


def list_logical_devices(device_type=None):
    """The logical devices (one per configured logical CPU); listing them closes the configuration."""
    from ember import _C

    devices = [LogicalDevice(name=n, device_type=n.split(":")[-2]) for n in _C.devices_list()]
    return [d for d in devices if device_type is None or d.device_type == device_type]


def _check_physical(device, what):
    if not isinstance(device, PhysicalDevice):
        raise ValueError(f"Unrecognized device: {device!r}")
    if device not in list_physical_devices():
        raise ValueError(f"{what}: unknown physical device {device!r}")


def set_logical_device_configuration(device, logical_devices):
    """Splits ``device`` (the CPU) into ``len(logical_devices)`` logical devices; None undoes the split."""
    from ember import _C

    _check_physical(device, "set_logical_device_configuration")
    if logical_devices is None:
        count, configs = 1, None
    else:
        configs = list(logical_devices)
        for c in configs:
            if not isinstance(c, LogicalDeviceConfiguration):
                raise ValueError(f"set_logical_device_configuration: expected LogicalDeviceConfiguration "
                                 f"objects, got {c!r}")
        count = len(configs)
        if count == 0:  # TensorFlow accepts this and then has no CPU at all: refuse it here
            raise ValueError("set_logical_device_configuration: expected at least one "
                             "LogicalDeviceConfiguration for the CPU, got an empty list")
    if _C.devices_initialized() and configs != _device_state["logical"]:
        raise RuntimeError("Virtual devices cannot be modified after being initialized")
    _C.devices_configure_cpus(count)
    _device_state["logical"] = configs


def get_logical_device_configuration(device):
    _check_physical(device, "get_logical_device_configuration")
    configs = _device_state["logical"]
    return None if configs is None else list(configs)


def get_visible_devices(device_type=None):
    return [d for d in _device_state["visible"] if device_type is None or d.device_type == device_type]


def set_visible_devices(devices, device_type=None):
    """Accepted for the CPU (it stays visible: ember has no other device to run on)."""
    from ember import _C

    if isinstance(devices, PhysicalDevice):
        devices = [devices]
    devices = list(devices)
    for d in devices:
        _check_physical(d, "set_visible_devices")
    if device_type is not None:
        devices = devices + [d for d in _device_state["visible"] if d.device_type != device_type]
    if _C.devices_initialized() and sorted(devices) != sorted(_device_state["visible"]):
        raise RuntimeError("Visible devices cannot be modified after being initialized")
    if not any(d.device_type == "CPU" for d in devices):
        raise ValueError("set_visible_devices: the CPU must stay visible (ember has no other device); "
                         f"got {devices!r}")
    _device_state["visible"] = devices


def set_soft_device_placement(enabled):
    """With soft placement (the default) an op asking for a device that does not exist runs on CPU:0."""
    from ember import _C

    _C.set_soft_device_placement(bool(enabled))


def get_soft_device_placement():
    from ember import _C

    return _C.get_soft_device_placement()


class experimental(_NativeKernelSwitches):  # noqa: N801 - mirrors the tf.config.experimental module
    """``ember.config.experimental``."""

    @staticmethod
    def set_memory_growth(device, enable):
        _check_physical(device, "set_memory_growth")
        if device.device_type != "GPU":
            raise ValueError("Cannot set memory growth on non-GPU and non-Pluggable devices")
        _device_state["memory_growth"][device] = bool(enable)

    @staticmethod
    def get_memory_growth(device):
        _check_physical(device, "get_memory_growth")
        if device not in _device_state["memory_growth"]:
            raise KeyError(device)
        return _device_state["memory_growth"][device]

    @staticmethod
    def enable_op_determinism():
        """ember's kernels give the same results run after run (fixed work splits, ordered sums), so this
        only records the request; random ops without a seed still draw differently, as in TensorFlow."""
        _device_state["determinism"] = True

    @staticmethod
    def disable_op_determinism():
        _device_state["determinism"] = False

    @staticmethod
    def is_op_determinism_enabled():
        return _device_state["determinism"]

    list_physical_devices = staticmethod(list_physical_devices)
    list_logical_devices = staticmethod(list_logical_devices)
    set_visible_devices = staticmethod(set_visible_devices)
    get_visible_devices = staticmethod(get_visible_devices)
    set_virtual_device_configuration = staticmethod(set_logical_device_configuration)
    get_virtual_device_configuration = staticmethod(get_logical_device_configuration)
    VirtualDeviceConfiguration = LogicalDeviceConfiguration
