"""The Keras engine: Layer, InputSpec, KerasTensor/Node (the functional API), Model, Sequential, training."""
