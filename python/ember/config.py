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


class experimental:  # noqa: N801 - mirrors tf.config.experimental
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
