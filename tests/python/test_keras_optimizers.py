"""ember.keras.optimizers beyond SGD/Adam's update rules (those are in test_optimizers.py): get / serialize /
deserialize as compile() uses them."""

import pytest

from ember.keras import optimizers


@pytest.mark.parametrize("name", ["adam", "Adam", "ADAM", "sgd", "SGD"])
def test_get_makes_a_fresh_optimizer_with_defaults_from_a_name(name):
    optimizer = optimizers.get(name)
    assert type(optimizer).__name__.lower() == name.lower()
    assert optimizers.get(name) is not optimizer


def test_get_round_trips_serialize():
    sgd = optimizers.SGD(learning_rate=0.5, momentum=0.9, nesterov=True, name="s")
    again = optimizers.get(optimizers.serialize(sgd))
    assert type(again) is optimizers.SGD and again.get_config() == sgd.get_config()
    assert optimizers.get(sgd) is sgd


def test_get_bad_identifiers():
    with pytest.raises(ValueError, match="Could not interpret optimizer identifier: 3"):
        optimizers.get(3)
    with pytest.raises(ValueError, match="Unknown optimizer: 'adamm'"):
        optimizers.get("adamm")
