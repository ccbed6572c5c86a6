"""Keras 2's dtype policies: a ``Policy`` names the dtype a layer computes in and the dtype of its variables.
``"mixed_float16"`` and ``"mixed_bfloat16"`` compute in 16 bits and keep float32 variables; any other dtype
name is that dtype for both. ``set_global_policy`` sets the policy of layers made afterwards without a
``dtype`` (by default ``floatx()``, float32)."""

from ember import dtypes

_MIXED = {"mixed_float16": "float16", "mixed_bfloat16": "bfloat16"}


class Policy:
    """``Policy(name)``: ``compute_dtype`` and ``variable_dtype`` as strings (tf_keras' API)."""

    def __init__(self, name):
        if isinstance(name, dtypes.DType):
            raise TypeError(f"'name' must be a string, not a DType. Instead, pass DType.name. Got: {name.name}")
        if not isinstance(name, str):
            raise TypeError(f"'name' must be a string, but got: {name}")
        self._name = name
        if name in _MIXED:
            self._compute_dtype, self._variable_dtype = _MIXED[name], "float32"
        elif name == "_infer":
            self._compute_dtype = self._variable_dtype = None
        else:
            try:
                dtype = dtypes.as_dtype(name).name
            except (TypeError, ValueError) as e:
                raise ValueError(f"Cannot convert value {name} to a mixed precision Policy. Valid policies include "
                                 "'mixed_float16', 'mixed_bfloat16', and the name of any dtype such as 'float32'.") \
                    from e
            self._compute_dtype = self._variable_dtype = dtype

    @property
    def name(self):
        return self._name

    @property
    def compute_dtype(self):
        return self._compute_dtype

    @property
    def variable_dtype(self):
        return self._variable_dtype

    @property
    def is_mixed(self):
        return self._compute_dtype != self._variable_dtype

    def __repr__(self):
        return f'<Policy "{self._name}">'

    def __eq__(self, other):
        return isinstance(other, Policy) and other._name == self._name

    def __hash__(self):
        return hash(self._name)

    def get_config(self):
        return {"name": self._name}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return cls(**config)


_global_policy = [None]


def global_policy():
    """The policy of layers made without a ``dtype``: the one set, else ``Policy(floatx())``."""
    if _global_policy[0] is not None:
        return _global_policy[0]
    from ember.keras import backend

    return Policy(backend.floatx())


def set_global_policy(policy):
    """Sets the global policy from a Policy, a policy name or a dtype name; None restores the default."""
    if policy is not None and not isinstance(policy, Policy):
        policy = Policy(dtypes.as_dtype(policy).name if isinstance(policy, dtypes.DType) else policy)
    if policy is not None and policy.compute_dtype is not None and not dtypes.as_dtype(policy.compute_dtype).is_floating:
        raise ValueError(f"set_global_policy can only be used to set the global policy to floating-point policies, "
                         f"such as 'float32' and 'mixed_float16', but got policy: {policy.name}")
    _global_policy[0] = policy


def serialize(policy):
    """tf_keras' form in a layer's config: the dtype name for a plain policy, a dict for a mixed one."""
    if not policy.is_mixed:
        return policy.name
    return {"module": "keras.mixed_precision", "class_name": "Policy", "config": policy.get_config(),
            "registered_name": None}


def get(value):
    """A Policy from what a layer's ``dtype`` takes: None (the global policy), a Policy, a serialized policy,
    a policy or dtype name, or a DType."""
    if value is None:
        return global_policy()
    if isinstance(value, Policy):
        return value
    if isinstance(value, dict):  # {"class_name": "Policy", "config": {"name": ...}}
        return Policy(value.get("config", {}).get("name", "float32"))
    if isinstance(value, dtypes.DType):
        return Policy(value.name)
    if isinstance(value, str):
        return Policy(value)
    name = getattr(value, "name", None)  # another framework's Policy or DType
    if isinstance(name, str):
        return Policy(name)
    return Policy(dtypes.as_dtype(value).name)
