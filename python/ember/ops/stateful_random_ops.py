"""``tf.random.Generator``: a random stream whose state is an int64 variable (TensorFlow 2.21's design).

The Philox state is ``[counter_lo, counter_hi, key]``. Each draw of n values runs ``RngReadAndSkip``, which
returns the state and advances the counter by n * 256 blocks in one step, then a ``*V2`` stateless op
fills the output from that (key, counter): the same ops, layout and bits as TensorFlow, so
``Generator.from_seed(1).normal([3])`` equals TensorFlow's. The state is a variable, so the draws order by
automatic control dependencies inside ember.function and the generator saves in checkpoints under
TensorFlow's key (``<name>/_state_var/.ATTRIBUTES/VARIABLE_VALUE``).
"""

import enum
import os

import numpy as np

from ember import _C, dtypes, errors
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.init_scope import init_scope
from ember.ops import array_ops, math_ops
from ember.ops.random_ops import (_binomial_operands, _check_dtype, _check_float_dtype, _FLOAT_TYPES, _INT_TYPES,
                                  _int_bound)
from ember.trackable import Trackable
from ember.variables import Variable

_RngReadAndSkip = _C.op("RngReadAndSkip")
_NormalV2 = _C.op("StatelessRandomNormalV2")
_UniformV2 = _C.op("StatelessRandomUniformV2")
_TruncatedNormalV2 = _C.op("StatelessTruncatedNormalV2")
_UniformIntV2 = _C.op("StatelessRandomUniformIntV2")
_UniformFullIntV2 = _C.op("StatelessRandomUniformFullIntV2")
_StatefulRandomBinomial = _C.op("StatefulRandomBinomial")

PHILOX_STATE_SIZE = 3
PHILOX_COUNTER_SIZE = 2
_SEED_BITS = 64
_SEED_MASK = (1 << _SEED_BITS) - 1


class Algorithm(enum.Enum):
    """TensorFlow's ``tf.random.Algorithm`` ids."""
    PHILOX = 1
    THREEFRY = 2
    AUTO_SELECT = 3


def _alg_to_int(alg):
    if isinstance(alg, Algorithm):
        alg = alg.value
    elif isinstance(alg, str):
        names = {"philox": 1, "threefry": 2, "auto_select": 3}
        if alg.lower() not in names:
            raise ValueError(f"Argument `alg` got unsupported value {alg!r}. Supported values are 'philox', "
                             "'threefry' and 'auto_select'.")
        alg = names[alg.lower()]
    elif isinstance(alg, Tensor):
        alg = int(alg.numpy())
    if not isinstance(alg, (int, np.integer)) or int(alg) not in (1, 2, 3):
        raise ValueError(f"Argument `alg` got unsupported value {alg!r}. Supported values are "
                         "Algorithm.PHILOX (1), Algorithm.THREEFRY (2) and Algorithm.AUTO_SELECT (3).")
    alg = int(alg)
    if alg == Algorithm.THREEFRY.value:
        # TensorFlow accepts ThreeFry only under XLA; its CPU kernels fail at the first draw.
        raise errors.UnimplementedError(None, None, "tf.random.Generator: algorithm 'threefry' is only "
                                        "supported with XLA, which ember does not have; use 'philox'")
    return alg


def _as_int64(value):
    """Python ints above int64's range wrap into it (TF's _uint_to_int), the 64 bits kept."""
    return value - (1 << 64) if value >= (1 << 63) else value


def create_rng_state(seed, alg):
    """The int64 [3] Philox state for a seed: an int is cut into 64-bit words (low first); a vector is
    truncated to 3 words or padded with zeros on the left (so a short seed lands in the key)."""
    _alg_to_int(alg)
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        seed = int(seed)
        if seed < 0:
            seed &= (1 << (_SEED_BITS * PHILOX_STATE_SIZE)) - 1
        words = []
        for _ in range(PHILOX_STATE_SIZE):
            words.append(_as_int64(seed & _SEED_MASK))
            seed >>= _SEED_BITS
        return np.array(words, dtype=np.int64)
    if isinstance(seed, Tensor):
        seed = seed.numpy()
    seed = np.asarray(seed)
    if not np.issubdtype(seed.dtype, np.integer):
        raise TypeError(f"tf.random.Generator: a seed must be an int or a vector of ints, got {seed!r}")
    seed = np.array([_as_int64(int(v) & _SEED_MASK) for v in seed.reshape(-1)], dtype=np.int64)
    seed = seed[:PHILOX_STATE_SIZE]
    return np.concatenate([np.zeros(PHILOX_STATE_SIZE - seed.size, np.int64), seed])


def _state_value(state):
    if isinstance(state, Variable):
        state = state.read_value()
    t = convert_to_tensor(state)
    if t.dtype != dtypes.int64:
        if not t.dtype.is_integer:
            raise TypeError(f"tf.random.Generator: the state must be an int64 vector, got dtype {t.dtype.name}")
        t = math_ops.cast(t, dtypes.int64)
    if t.shape.as_list() != [PHILOX_STATE_SIZE]:
        raise ValueError(f"Shapes {t.shape} and ({PHILOX_STATE_SIZE},) are incompatible: a Philox "
                         f"generator's state is an int64 vector of {PHILOX_STATE_SIZE} elements")
    return t


def _num_elements(shape):
    if isinstance(shape, Tensor):
        return math_ops.reduce_prod(math_ops.cast(shape, dtypes.int64))
    return int(np.prod(np.asarray(shape, dtype=np.int64)))


class Generator(Trackable):
    """``tf.random.Generator(copy_from=None, state=None, alg=None)``."""

    @classmethod
    def from_state(cls, state, alg):
        return cls(state=state, alg=alg)

    @classmethod
    def from_seed(cls, seed, alg=None):
        alg = _alg_to_int(Algorithm.PHILOX if alg is None else alg)
        return cls(state=create_rng_state(seed, alg), alg=alg)

    @classmethod
    def from_non_deterministic_state(cls, alg=None):
        if _op_determinism_enabled():
            raise RuntimeError('"from_non_deterministic_state" cannot be called when determinism is enabled.')
        alg = _alg_to_int(Algorithm.PHILOX if alg is None else alg)
        state = np.frombuffer(os.urandom(8 * PHILOX_STATE_SIZE), dtype=np.int64).copy()
        return cls(state=state, alg=alg)

    @classmethod
    def from_key_counter(cls, key, counter, alg):
        return cls(state=_key_counter_state(key, counter), alg=alg)

    def __init__(self, copy_from=None, state=None, alg=None):
        if copy_from is not None:
            if state is not None or alg is not None:
                raise ValueError("tf.random.Generator: pass either copy_from or (state, alg), not both")
            with init_scope():
                self._state_var = Variable(copy_from.state.read_value(), trainable=False, name="StateVar")
            self._alg = copy_from.algorithm
            return
        if state is None or alg is None:
            raise ValueError("tf.random.Generator: state and alg must both be given (or use from_seed)")
        alg = _alg_to_int(alg)
        if isinstance(state, Variable):
            if state.dtype != dtypes.int64 or state.shape.as_list() != [PHILOX_STATE_SIZE]:
                raise ValueError(f"tf.random.Generator: a state variable must be int64 of shape "
                                 f"[{PHILOX_STATE_SIZE}], got {state.dtype.name} {state.shape}")
            self._state_var = state
        else:
            value = _state_value(state)
            with init_scope():
                self._state_var = Variable(value, trainable=False, name="StateVar")
        self._alg = alg

    # ---- state
    @property
    def state(self):
        return self._state_var

    @property
    def algorithm(self):
        return self._alg

    @property
    def key(self):
        return self._state_var.read_value()[-1]

    def reset(self, state):
        self._state_var.assign(_state_value(state))

    def reset_from_seed(self, seed):
        self._state_var.assign(convert_to_tensor(create_rng_state(seed, self._alg)))

    def reset_from_key_counter(self, key, counter):
        self._state_var.assign(_key_counter_state(key, counter))

    def skip(self, delta):
        """Advances the counter as a draw of ``delta`` values would; returns the state before."""
        return _RngReadAndSkip(convert_to_tensor(self._alg, dtype=dtypes.int32),
                               _int64(delta), self._state_var._id)

    def _prepare_key_counter(self, shape):
        counter_key = self.skip(_num_elements(shape))
        return counter_key[PHILOX_STATE_SIZE - 1:], counter_key[:PHILOX_COUNTER_SIZE]

    def _alg_tensor(self):
        return convert_to_tensor(self._alg, dtype=dtypes.int32)

    # ---- distributions
    def normal(self, shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, name=None):
        dtype = _check_float_dtype(dtype)
        shape = _shape(shape, "StatelessRandomNormalV2")
        key, counter = self._prepare_key_counter(shape)
        rnd = _NormalV2(shape, key, counter, self._alg_tensor(), dtype)
        return rnd * convert_to_tensor(stddev, dtype=dtype) + convert_to_tensor(mean, dtype=dtype)

    def truncated_normal(self, shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, name=None):
        dtype = _check_float_dtype(dtype)
        shape = _shape(shape, "StatelessTruncatedNormalV2")
        key, counter = self._prepare_key_counter(shape)
        rnd = _TruncatedNormalV2(shape, key, counter, self._alg_tensor(), dtype)
        return rnd * convert_to_tensor(stddev, dtype=dtype) + convert_to_tensor(mean, dtype=dtype)

    def uniform(self, shape, minval=0, maxval=None, dtype=dtypes.float32, name=None):
        dtype = _check_dtype(dtype, _FLOAT_TYPES + _INT_TYPES)
        if dtype.is_integer:
            if (minval is None) != (maxval is None):
                raise ValueError(f"For integer dtype {dtype!r}, minval and maxval must be both `None` or both "
                                 f"non-`None`; got minval={minval} and maxval={maxval}")
            if minval is None:
                return self.uniform_full_int(shape, dtype)
            shape = _shape(shape, "StatelessRandomUniformIntV2")
            lo, hi = _int_bound(minval, "minval"), _int_bound(maxval, "maxval")
            key, counter = self._prepare_key_counter(shape)
            return _UniformIntV2(shape, key, counter, self._alg_tensor(), lo, hi, dtype)
        maxval = 1 if maxval is None else maxval
        shape = _shape(shape, "StatelessRandomUniformV2")
        key, counter = self._prepare_key_counter(shape)
        rnd = _UniformV2(shape, key, counter, self._alg_tensor(), dtype)
        minval = convert_to_tensor(minval, dtype=dtype)
        return rnd * (convert_to_tensor(maxval, dtype=dtype) - minval) + minval

    def uniform_full_int(self, shape, dtype=dtypes.int64, name=None):
        """Raw bits over the dtype's range. TF's default dtype is uint64; ember has no uint64, so int64
        (the same bits) is the default and the only 64-bit choice."""
        dtype = _check_dtype(dtype, _INT_TYPES)
        shape = _shape(shape, "StatelessRandomUniformFullIntV2")
        key, counter = self._prepare_key_counter(shape)
        return _UniformFullIntV2(shape, key, counter, self._alg_tensor(), dtype)

    def binomial(self, shape, counts, probs, dtype=dtypes.int32, name=None):
        """Binomial(counts, probs) draws of shape ``shape`` (ending with counts' and probs' broadcast shape)."""
        dtype = _check_dtype(dtype, _FLOAT_TYPES + _INT_TYPES)
        shape, counts, probs = _binomial_operands(shape, counts, probs, "StatefulRandomBinomial")
        return _StatefulRandomBinomial(self._alg_tensor(), shape, counts, probs, self._state_var._id, dtype)

    def make_seeds(self, count=1):
        """[2, count] int64 seeds for the stateless ops (a key row and a zero row, as TF)."""
        keys = self.uniform_full_int([count], dtypes.int64)
        return array_ops.stack([keys, array_ops.zeros_like(keys)])

    def split(self, count=1):
        """``count`` new generators keyed by fresh draws of this one (state [0, 0, key], as TF)."""
        keys = self.uniform_full_int([count], dtypes.int64)
        return [Generator(state=array_ops.concat([convert_to_tensor([0, 0], dtype=dtypes.int64),
                                                  array_ops.reshape(k, [1])], 0), alg=self._alg)
                for k in array_ops.unstack(keys, num=count)]


def _int64(value):
    if isinstance(value, Tensor):
        return value if value.dtype == dtypes.int64 else math_ops.cast(value, dtypes.int64)
    return convert_to_tensor(value, dtype=dtypes.int64)


def _shape(shape, op):
    return array_ops._shape_operand(shape, op, "shape", TypeError, vector=True)


def _key_counter_state(key, counter):
    counter = convert_to_tensor(counter, dtype=dtypes.int64)
    key = convert_to_tensor(key, dtype=dtypes.int64)
    if counter.shape.as_list() != [PHILOX_COUNTER_SIZE]:
        raise ValueError(f"Shapes {counter.shape} and ({PHILOX_COUNTER_SIZE},) are incompatible: a Philox "
                         "counter has 2 int64 words")
    if key.shape.rank != 0:
        raise ValueError(f"Shapes {key.shape} and () are incompatible: a Philox key is an int64 scalar")
    return array_ops.concat([counter, array_ops.reshape(key, [1])], 0)


def _op_determinism_enabled():
    return bool(_C.random_op_determinism()) if hasattr(_C, "random_op_determinism") else False


_global_generator = None


def get_global_generator():
    """The process's generator, created from a non-deterministic state on first use."""
    global _global_generator
    if _global_generator is None:
        if _op_determinism_enabled():
            raise RuntimeError('"get_global_generator" cannot be called if determinism is enabled, unless '
                               '"set_global_generator" has already been called. Please call '
                               '"set_global_generator" first.')
        with init_scope():
            _global_generator = Generator.from_non_deterministic_state()
    return _global_generator


def set_global_generator(generator):
    """Replaces the global generator (functions traced before keep the one they captured)."""
    global _global_generator
    _global_generator = generator
