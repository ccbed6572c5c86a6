"""initializers / regularizers / constraints share one serialize/deserialize/get (keras/utils/object_table.py):
each family behaves as tf_keras' does."""
import pytest
import tf_keras

from ember import keras

FAMILIES = [
    ("initializers", ["glorot_uniform", "GlorotUniform", "zeros", "he_normal", "orthogonal"]),
    ("regularizers", ["l1", "l2", "l1_l2", "L1L2"]),
    ("constraints", ["max_norm", "non_neg", "unit_norm", "MinMaxNorm"]),
]


@pytest.mark.parametrize("family,names", FAMILIES)
def test_get_by_name_matches_tf_keras(family, names):
    ours, theirs = getattr(keras, family), getattr(tf_keras, family)
    for name in names:
        a, b = ours.get(name), theirs.get(name)
        assert type(a).__name__ == type(b).__name__, name
        assert a.get_config() == b.get_config(), name


@pytest.mark.parametrize("family,names", FAMILIES)
def test_serialize_round_trip(family, names):
    ours = getattr(keras, family)
    for name in names:
        obj = ours.get(name)
        config = ours.serialize(obj)
        assert config["class_name"] == type(obj).__name__
        again = ours.deserialize(config)
        assert type(again) is type(obj) and again.get_config() == obj.get_config()
    assert ours.serialize(None) is None and ours.get(None) is None


@pytest.mark.parametrize("family", [f for f, _ in FAMILIES])
def test_unknown_identifier_and_class(family):
    ours, theirs = getattr(keras, family), getattr(tf_keras, family)
    with pytest.raises(ValueError) as ours_err:
        ours.get("no_such_thing")
    if family != "regularizers":  # tf_keras' regularizers.get returns an unknown name unchanged
        with pytest.raises(ValueError) as theirs_err:
            theirs.get("no_such_thing")
        assert str(ours_err.value) == str(theirs_err.value)
    assert "Unknown" in str(ours_err.value) and "no_such_thing" in str(ours_err.value)
    with pytest.raises(ValueError, match="Unknown"):
        ours.deserialize({"class_name": "NoSuchClass", "config": {}})
    with pytest.raises(ValueError, match="Could not interpret") as ours_err:
        ours.get(5)
    with pytest.raises(ValueError) as theirs_err:
        theirs.get(5)
    assert str(ours_err.value) == str(theirs_err.value)


def test_custom_objects_and_callables():
    class Mine(keras.regularizers.Regularizer):
        def __call__(self, x):
            return 0.0

        def get_config(self):
            return {}

    got = keras.regularizers.deserialize({"class_name": "Mine", "config": {}}, custom_objects={"Mine": Mine})
    assert isinstance(got, Mine)
    fn = lambda x: x  # noqa: E731
    assert keras.constraints.get(fn) is fn


def test_functions_classes_and_aliases_as_tf_keras(tf_keras=None):
    import tf_keras as theirs

    def custom_reg(w):
        return 0.0

    config = keras.regularizers.serialize(custom_reg)
    assert config == {"module": "builtins", "class_name": "function", "config": "custom_reg",
                      "registered_name": "function"}
    assert keras.regularizers.deserialize(config, custom_objects={"custom_reg": custom_reg}) is custom_reg
    with pytest.raises(ValueError, match="Unknown regularizer"):
        keras.regularizers.deserialize(config)
    assert isinstance(keras.initializers.get(keras.initializers.GlorotUniform), keras.initializers.GlorotUniform)
    for name in ["zero", "one"]:
        assert type(keras.initializers.get(name)).__name__ == type(theirs.initializers.get(name)).__name__
    for name in ["maxnorm", "nonneg", "unitnorm"]:
        assert type(keras.constraints.get(name)).__name__ == type(theirs.constraints.get(name)).__name__
    assert keras.regularizers.L2(None).get_config() == theirs.regularizers.L2(None).get_config()
