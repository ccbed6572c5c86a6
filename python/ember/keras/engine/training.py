"""``tf.keras.Model`` with Keras 2's semantics: subclassed (override ``call``) or functional
(``Model(inputs, outputs)``, which makes a ``Functional`` instance), plus compile/fit/evaluate/predict.

The train step (``train_step(data)``: forward, loss, gradients, ``optimizer.apply_gradients``, metric
updates) runs as ONE ember.function whose input signature has ``None`` as batch dimension, so the last,
smaller batch runs the same graph; the model, the optimizer's slots and the metrics' variables are all
made eagerly before the first trace, so it is traced once per fit's data structure. ``run_eagerly=True``
runs the step as plain Python instead.

Weights are saved with ember.train.Checkpoint (TensorFlow's checkpoint format; a functional or Sequential
model names its layers "layer-N" and "layer_with_weights-N" as tf_keras does, so keys match). ``save``
writes a SavedModel with ember.saved_model (see ``save`` for what is kept).
"""

import itertools
import json
import os

import numpy as np

from ember import dtypes
from ember.backprop import GradientTape
from ember.framework.tensor import Tensor
from ember.framework.tensor_spec import TensorSpec
from ember.module import Module
from ember.util import nest
from ember.keras.engine import base_layer, compile_utils, data_adapter
from ember.keras.engine.base_layer import Layer
from ember.keras.engine.keras_tensor import KerasTensor
from ember.keras.mixed_precision.loss_scale_optimizer import LossScaleOptimizer


def _graph_args(args, kwargs):
    """(inputs, outputs) when Model(...) is called the functional way, else None."""
    if "inputs" in kwargs and "outputs" in kwargs:
        return kwargs["inputs"], kwargs["outputs"]
    if len(args) == 2:
        return args[0], args[1]
    if len(args) == 1 and "outputs" in kwargs:
        return args[0], kwargs["outputs"]
    return None


def _child_weights(child, trainable):
    """A tracked child's weights for Note [A model's weight order]: trainable (True), non-trainable (False) or
    all (None), a layer's as it lists them, a plain Module's as tf.Module does, a container attribute's (a list
    of modules) as tf_keras' tracked list or dict: all its trainable weights, then the others."""
    if isinstance(child, list):
        if trainable is None:
            return _child_weights(child, True) + _child_weights(child, False)
        return [w for c in child for w in _child_weights(c, trainable)]
    if isinstance(child, Layer):
        return child.weights if trainable is None else child.trainable_weights if trainable else \
            child.non_trainable_weights
    return child.variables if trainable is None else child.trainable_variables if trainable else \
        child.non_trainable_variables


class Model(Layer):
    """A Layer with training: ``compile``, ``fit``, ``evaluate``, ``predict``, ``save``, ``summary``."""

    def __new__(cls, *args, **kwargs):
        if cls is Model and _graph_args(args, kwargs) is not None:
            from ember.keras.engine.training import Functional

            return super().__new__(Functional)
        return super().__new__(cls)

    def __init__(self, *args, **kwargs):
        graph = _graph_args(args, kwargs)
        name = kwargs.pop("name", None)
        trainable = kwargs.pop("trainable", True)
        for key in ("inputs", "outputs"):
            kwargs.pop(key, None)
        kwargs.pop("dynamic", None)
        unknown = set(kwargs) - {"dtype", "autocast"}
        if unknown:
            raise TypeError(f"Keyword argument not understood: {sorted(unknown)[0]!r}")
        if name is None and graph is not None and type(self) in (Model, Functional):
            name = base_layer.unique_object_name("model")
        super().__init__(name=name, trainable=trainable, **kwargs)
        self._ember_graph = None
        self._ember_compiled = None  # (LossesContainer, MetricsContainer)
        self._ember_functions = {}
        self._ember_input_specs = None  # the first call's input structure (for save and build)
        self.optimizer = None
        self.stop_training = False
        self.history = None
        self._is_compiled = False
        self._run_eagerly = False
        self._ember_strategy = _current_strategy()  # Keras 2: a model made in strategy.scope() trains under it
        if graph is not None:
            self._init_graph_network(*graph)

    # ---- the functional graph
    def _init_graph_network(self, inputs, outputs):
        from ember.keras.engine.functional import GraphNetwork

        self._ember_graph = GraphNetwork(inputs, outputs, self.name)
        self._autocast = False  # as tf_keras: the graph's layers cast their own inputs (a float32 one keeps them)
        self.input_spec = self._ember_graph.input_specs()
        if len(self.input_spec) == 1 and not isinstance(self._ember_graph.nested_inputs, (list, dict)):
            self.input_spec = self.input_spec[0]
        self.built = True
        self._expects_training_arg = True
        self._expects_mask_arg = True
        self._default_training = None
        self._ember_input_specs = nest.map_structure(lambda t: TensorSpec(t.shape, t.dtype, t.name),
                                                     self._ember_graph.nested_inputs)

    @property
    def _is_graph_network(self):
        return self._ember_graph is not None

    @property
    def inputs(self):
        return self._ember_graph.inputs if self._ember_graph is not None else None

    @property
    def outputs(self):
        return self._ember_graph.outputs if self._ember_graph is not None else None

    def _graph_shapes(self, tensors):
        shapes = [tuple(t.shape.as_list()) for t in tensors]
        return shapes[0] if len(shapes) == 1 else shapes

    @property
    def input_shape(self):
        if self._ember_graph is None:
            return super().input_shape
        return self._graph_shapes(self._ember_graph.inputs)

    @property
    def output_shape(self):
        if self._ember_graph is None:
            return super().output_shape
        return self._graph_shapes(self._ember_graph.outputs)

    @property
    def input(self):
        if self._ember_graph is None:
            return super().input
        return self._ember_graph.nested_inputs

    @property
    def output(self):
        if self._ember_graph is None:
            return super().output
        return self._ember_graph.nested_outputs

    @property
    def input_names(self):
        return [x._keras_history[0].name for x in self.inputs] if self._ember_graph else None

    @property
    def output_names(self):
        if self._ember_graph is None:
            return None
        names = []
        for x in self._ember_graph.outputs:
            layer = x._keras_history[0]
            name = layer.name
            if name in names:
                name = f"{name}_{len(layer._inbound_nodes) - 1}"
            names.append(name)
        return names

    def call(self, inputs, training=None, mask=None):
        if self._ember_graph is None:
            raise NotImplementedError(f"Model {self.name}: a subclassed Model must implement `call` (or create the "
                                      "model with Model(inputs, outputs))")
        return self._ember_graph.run(inputs, self.name, mask)

    def __call__(self, *args, **kwargs):
        if self._ember_input_specs is None and args and not any(
                isinstance(x, KerasTensor) for x in nest.flatten(args[0])):
            self._ember_input_specs = nest.map_structure(_batch_spec, args[0])
        return super().__call__(*args, **kwargs)

    def _sublayers(self):
        own = super()._sublayers()
        if self._ember_graph is None:
            return own
        return base_layer._dedupe(list(self._ember_graph.layers) + own)

    # Note [A model's weight order]: tf_keras' Model lists weights child by child, in the order of its tracked
    # children (a functional or Sequential model's layers; a subclassed model's attributes, plain tf.Modules
    # included), each layer's trainable then non-trainable weights, and the model's own weights last; a plain
    # Layer instead lists all its trainable weights first (Layer.weights), and so does a list, tuple or dict
    # attribute (tf_keras tracks it as one wrapper, which lists as a Layer; a dict by sorted keys). `set_weights` of a tf_keras model's
    # `get_weights` relies on it: a BatchNormalization's moving statistics sit right after its gamma and beta.
    def _weight_children(self):
        if self._ember_graph is None and type(self)._sublayers is Model._sublayers:
            # A subclassed model: attribute order, layers and modules alike; a list, tuple or dict attribute is
            # one child, the list of the modules inside it (tf_keras tracks it as one wrapper object).
            children = []
            for key, value in vars(self).items():
                if key.startswith("_ember"):
                    continue
                modules = base_layer._dedupe(
                    [v for v in base_layer._leaves(value) if isinstance(v, Module) and v is not self])
                if isinstance(value, (list, tuple, dict)):
                    children += [modules] if modules else []
                else:
                    children += modules
            return children
        tracked = [v for v in self._attribute_leaves() if isinstance(v, Module) and v is not self]
        return base_layer._dedupe(self._sublayers() + [v for v in tracked if not isinstance(v, Layer)])

    def _own_split(self):
        own = base_layer._dedupe([v for _, v in self._ember_weights])
        return [v for v in own if v.trainable], [v for v in own if not v.trainable]

    @property
    def trainable_weights(self):
        if not self._trainable:
            return []
        trainable, _ = self._own_split()
        return base_layer._dedupe([w for child in self._weight_children() for w in _child_weights(child, True)] +
                                  trainable)

    @property
    def non_trainable_weights(self):
        children = self._weight_children()
        trainable, non_trainable = self._own_split()
        out = [w for child in children for w in _child_weights(child, False)]
        if not self._trainable:  # all trainable ones first, as tf_keras
            out = [w for child in children for w in _child_weights(child, True)] + trainable + out
        return base_layer._dedupe(out + non_trainable)

    @property
    def weights(self):
        trainable, non_trainable = self._own_split()
        return base_layer._dedupe([w for child in self._weight_children() for w in _child_weights(child, None)] +
                                  trainable + non_trainable)

    @property
    def layers(self):
        if self._ember_graph is not None:
            return list(self._ember_graph.layers)
        return self._sublayers()

    def get_layer(self, name=None, index=None):
        if index is not None and name is not None:
            raise ValueError(f"Provide only a layer name or a layer index. Received: index={index}, name={name}.")
        if index is not None:
            if len(self.layers) <= index:
                raise ValueError(f"Was asked to retrieve layer at index {index} but model only has "
                                 f"{len(self.layers)} layers.")
            return self.layers[index]
        if name is not None:
            for layer in self.layers:
                if layer.name == name:
                    return layer
            raise ValueError(f"No such layer: {name}. Existing layers are: {[l.name for l in self.layers]}.")
        raise ValueError("Provide either a layer name or layer index at `get_layer`.")

    def build(self, input_shape):
        """Makes the weights of a subclassed model by tracing ``call`` on inputs of ``input_shape``."""
        if self._ember_graph is not None or self.built:
            self.built = True
            return
        if input_shape is None:
            raise ValueError("Input shape must be defined when calling `build()` on a `Model` subclass.")
        if isinstance(input_shape, dict):
            specs = {k: TensorSpec(v, self._dtype) for k, v in input_shape.items()}
        elif isinstance(input_shape, list) and input_shape and isinstance(input_shape[0], (list, tuple)):
            specs = [TensorSpec(s, self._dtype) for s in input_shape]
        else:
            specs = TensorSpec(tuple(input_shape) if not hasattr(input_shape, "as_list") else input_shape,
                               self._dtype)
        self.built = True  # the traced call below must not come back here
        try:
            self._trace_forward(specs)
        except Exception:
            self.built = False
            raise

    build._ember_default = True

    # ---- tf.distribute (Keras 2: the strategy whose scope the model was created, or compiled, in)
    @property
    def distribute_strategy(self):
        from ember.distribute import distribute_lib

        return self._ember_strategy or distribute_lib.get_strategy()

    def _ember_scope(self):
        import contextlib

        return self._ember_strategy.scope() if self._ember_strategy is not None else contextlib.nullcontext()

    def _trace_forward(self, specs, training=False):
        with self._ember_scope():
            return self._trace_forward_in_scope(specs, training)

    def _trace_forward_in_scope(self, specs, training=False):
        """Traces a forward pass on ``specs`` (creating any weights, eagerly); returns the output specs."""
        from ember.polymorphic_function import function

        flat = nest.flatten(specs)

        def forward(*tensors):
            return self(nest.pack_sequence_as(specs, list(tensors)), training=training)

        concrete = function(forward, autograph=False).get_concrete_function(*flat)
        if self._ember_input_specs is None:
            self._ember_input_specs = specs
        return nest.map_structure(lambda t: TensorSpec(t.shape, t.dtype), concrete._structured_outputs)

    def _ember_default_save_signature(self):
        """The ``serving_default`` signature that ``tf.saved_model.save(model)`` and ``model.save`` write, as
        tf_keras writes it: the model at inference on its input specs (inputs named after the Input layers),
        returning ``{output name: tensor}``; None while the input specs are unknown."""
        from ember.polymorphic_function import function

        specs = self._ember_input_specs
        if specs is None:
            return None
        flat = nest.flatten(specs)
        names = [s.name or f"input_{i + 1}" for i, s in enumerate(flat)]
        specs = nest.pack_sequence_as(specs, [TensorSpec(s.shape, s.dtype, n) for s, n in zip(flat, names)])
        output_names = self.output_names

        def serve(inputs):
            outputs = nest.flatten(self(inputs, training=False))
            keys = output_names if output_names and len(output_names) == len(outputs) else [
                f"output_{i + 1}" for i in range(len(outputs))]
            return dict(zip(keys, outputs))

        return function(serve, input_signature=[specs], autograph=False)

    # ---- checkpoint dependencies: layers by position for graph networks (tf_keras' names)
    def _trackable_children(self):
        children = super()._trackable_children()
        if self._ember_graph is None:
            return [(n, v) for n, v in children if n not in ("history",)]
        deps, weighted = [], 0
        for index, layer in enumerate(self.layers):
            if layer.weights:
                deps.append((f"layer_with_weights-{weighted}", layer))
                weighted += 1
            deps.append((f"layer-{index}", layer))
        names = {n for n, _ in deps}
        return deps + [(n, v) for n, v in children if n not in names and n != "history"]

    # ---- compile
    def compile(self, optimizer="rmsprop", loss=None, metrics=None, loss_weights=None, weighted_metrics=None,
                run_eagerly=None, steps_per_execution=None, jit_compile=None, **kwargs):
        from ember.keras import optimizers

        unknown = set(kwargs) - {"sample_weight_mode", "target_tensors", "distribute", "pss_evaluation_shards"}
        if unknown:
            raise TypeError(f"Invalid keyword argument(s) in `compile()`: {sorted(unknown)}. Valid keyword arguments "
                            "include 'cloning', 'experimental_run_tf_function', 'distribute', 'target_tensors', or "
                            "'sample_weight_mode'.")
        if self._ember_strategy is None:
            self._ember_strategy = _current_strategy()
        if hasattr(optimizer, "apply_gradients") and not isinstance(optimizer, (str, dict)):
            self.optimizer = optimizer  # Keras optimizers, and the compat.v1 ones the seeds use
        else:
            self.optimizer = optimizers.get(optimizer)
        if self._ember_policy.name == "mixed_float16" and isinstance(self.optimizer, optimizers.Optimizer) and \
                not isinstance(self.optimizer, LossScaleOptimizer):
            self.optimizer = LossScaleOptimizer(self.optimizer)  # as tf_keras: float16 gradients need it
        self._ember_compiled = (compile_utils.LossesContainer(loss, loss_weights),
                                compile_utils.MetricsContainer(metrics, weighted_metrics))
        self._ember_functions = {}
        self._run_eagerly = bool(run_eagerly)
        self._is_compiled = True
        self.loss = loss
        self.compiled_loss, self.compiled_metrics = self._ember_compiled

    @property
    def run_eagerly(self):
        return self._run_eagerly

    @run_eagerly.setter
    def run_eagerly(self, value):
        self._run_eagerly = bool(value)

    @property
    def metrics(self):
        """The compiled loss's and metrics' objects, then those of add_metric in the model's layers."""
        added = super().metrics
        if self._ember_compiled is None:
            return added
        losses, metrics = self._ember_compiled
        return losses.metrics + metrics.metrics + added

    @property
    def metrics_names(self):
        return [m.name for m in self.metrics]

    def reset_states(self):
        """Resets the states of every stateful layer inside (Keras 2's ``Model.reset_states``)."""
        for layer in self._flatten_layers():
            if layer is not self and getattr(layer, "stateful", False) and hasattr(layer, "reset_states"):
                layer.reset_states()

    def reset_metrics(self):
        for m in self.metrics:
            m.reset_state()

    def _assert_compiled(self, what):
        if self._ember_compiled is None:
            raise RuntimeError(f"You must compile your model before {what}. Call `model.compile(optimizer, loss)`.")

    # ---- the steps (overridable, as in Keras 2)
    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None):
        losses, _ = self._ember_compiled
        return losses(y, y_pred, sample_weight, regularization_losses=self.losses)

    def compute_metrics(self, x, y, y_pred, sample_weight):
        _, metrics = self._ember_compiled
        metrics.update_state(y, y_pred, sample_weight)
        return self.get_metrics_result()

    def get_metrics_result(self):
        from ember.distribute import distribute_lib

        if distribute_lib.in_distributed_replica_context():  # the metrics' global values, read once for all
            return distribute_lib.get_replica_context().merge_call(lambda _: self.get_metrics_result())
        return {m.name: m.result() for m in self.metrics}

    def train_step(self, data):
        x, y, sample_weight = data_adapter.unpack_x_y_sample_weight(data)
        scaling = isinstance(self.optimizer, LossScaleOptimizer)
        with GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x, y, y_pred, sample_weight)
            scaled_loss = self.optimizer.get_scaled_loss(loss) if scaling else loss
        variables = self.trainable_variables
        gradients = tape.gradient(scaled_loss, variables)
        if scaling:
            gradients = self.optimizer.get_unscaled_gradients(gradients)
        self.optimizer.apply_gradients(zip(gradients, variables))
        if not _is_keras_optimizer(self.optimizer):  # Keras optimizers apply constraints themselves
            _apply_constraints(variables)
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def test_step(self, data):
        x, y, sample_weight = data_adapter.unpack_x_y_sample_weight(data)
        y_pred = self(x, training=False)
        self.compute_loss(x, y, y_pred, sample_weight)
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def predict_step(self, data):
        x, _, _ = data_adapter.unpack_x_y_sample_weight(data)
        return self(x, training=False)

    # ---- building everything before the first trace
    def _prepare(self, x, y):
        """Builds the model, the compiled losses/metrics and the optimizer's slots eagerly, from the specs of
        a first batch, so that the step functions create no variables when they trace (in the model's
        strategy scope: its metrics' and optimizer's variables are distributed too)."""
        with self._ember_scope():
            self._prepare_in_scope(x, y)

    def _prepare_in_scope(self, x, y):
        x_specs = nest.map_structure(_batch_spec, x)
        if not self.built or self._ember_input_specs is None:
            y_pred_specs = self._trace_forward(x_specs)
        else:
            y_pred_specs = self._output_specs(x_specs)
        if self._ember_compiled is None:
            return
        losses, metrics = self._ember_compiled
        y_pred_example = nest.map_structure(lambda s: _Spec(s.shape, s.dtype), y_pred_specs)
        if not losses.built:
            losses.build(y_pred_example, self.output_names if self._ember_graph is not None else None)
        if not metrics.built and y is not None:
            y_example = nest.map_structure(lambda t: _Spec(TensorShape_of(t), _dtype_of(t)), y)
            metrics.build(y_example, y_pred_example, losses._output_names, losses._losses)
        build = getattr(self.optimizer, "build", None)
        if build is not None and not getattr(self.optimizer, "built", True):
            build(self.trainable_variables)

    def _output_specs(self, x_specs):
        key = ("output_specs", _structure_key(x_specs))
        if key not in self._ember_functions:
            self._ember_functions[key] = self._trace_forward(x_specs)
        return self._ember_functions[key]

    def _step_function(self, kind, batch):
        """The ember.function running ``train_step``/``test_step``/``predict_step`` for batches shaped like
        ``batch`` (flat tensors, batch dimension None)."""
        flat = nest.flatten(batch)
        positions = [i for i, v in enumerate(flat) if v is not None]
        specs = [_batch_spec(flat[i]) for i in positions]
        key = (kind, _structure_key(batch), tuple((tuple(s.shape.as_list()), s.dtype.name) for s in specs))
        fn = self._ember_functions.get(key)
        if fn is not None:
            return fn, positions
        step = {"train": self.train_step, "test": self.test_step, "predict": self.predict_step}[kind]
        if not self._run_eagerly:
            from ember.autograph import api as autograph_api

            step = autograph_api.converted(step, recursive_only=True)  # a user's override; ember's stays

        def run(*tensors):
            values = list(flat)
            for i, t in zip(positions, tensors):
                values[i] = t
            return step(nest.pack_sequence_as(batch, values))

        strategy = self._ember_strategy
        if strategy is not None:
            # One part of the global batch per replica (split by _run_step), the step run by each replica,
            # its outputs reduced as Keras 2 does: logs from the first replica (the metrics are synchronized
            # on read, so each replica's are the global ones), predictions concatenated.
            run_one, replicas, k = run, len(strategy.extended.worker_devices), len(specs)  # local replicas
            specs = specs * replicas

            def run(*tensors):
                from ember.distribute.values import PerReplica

                parts = PerReplica([tuple(tensors[r * k:(r + 1) * k]) for r in range(replicas)])
                outputs = strategy.run(lambda part: run_one(*part), args=(parts,))
                if kind == "predict":
                    return strategy.gather(outputs, axis=0)
                return strategy.experimental_local_results(outputs)[0]

        if self._run_eagerly:
            fn = run
        else:
            from ember.polymorphic_function import function

            fn = function(run, input_signature=specs)
        self._ember_functions[key] = fn
        return fn, positions

    def _run_step(self, kind, batch):
        fn, positions = self._step_function(kind, batch)
        flat = nest.flatten(batch)
        tensors = [flat[i] for i in positions]
        if self._ember_strategy is not None:
            from ember.distribute import input_lib

            with self._ember_scope():
                return fn(*input_lib.split_for_replicas(self._ember_strategy, tensors))
        return fn(*tensors)

    # ---- fit / evaluate / predict
    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None, validation_split=0.0,
            validation_data=None, shuffle=True, class_weight=None, sample_weight=None, initial_epoch=0,
            steps_per_epoch=None, validation_steps=None, validation_batch_size=None, validation_freq=1,
            max_queue_size=10, workers=1, use_multiprocessing=False):
        from ember.keras import callbacks as callbacks_mod

        self._assert_compiled("training/testing")
        verbose = _verbosity(verbose)
        data = data_adapter.adapt(x, y, sample_weight, batch_size, steps_per_epoch, shuffle, class_weight)
        if validation_split and validation_data is None:
            if not isinstance(data, data_adapter.ArrayData):
                raise ValueError("`validation_split` is only supported for Tensors or NumPy arrays, found following "
                                 f"types in the input: {type(x).__name__}")
            data, val = data.split(validation_split)
        elif validation_data is not None:
            if isinstance(validation_data, (tuple, list)) and len(validation_data) in (2, 3) and \
                    data_adapter._is_array_structure(validation_data[0]):
                vx, vy, vsw = data_adapter.unpack_x_y_sample_weight(tuple(validation_data))
                val = data_adapter.adapt(vx, vy, vsw, validation_batch_size or batch_size, validation_steps)
            else:
                val = data_adapter.adapt(validation_data, batch_size=validation_batch_size or batch_size,
                                         steps=validation_steps)
        else:
            val = None
        steps = steps_per_epoch if steps_per_epoch is not None else data.steps
        callback_list = callbacks_mod.CallbackList(callbacks, add_history=True, add_progbar=verbose != 0, model=self,
                                                   verbose=verbose, epochs=epochs, steps=steps)
        self.stop_training = False
        callback_list.on_train_begin()
        initial_epoch, initial_step = self._resume_point(initial_epoch, steps)
        logs = {}
        prepared = False
        for epoch in range(initial_epoch, epochs):
            self.reset_metrics()
            callback_list.on_epoch_begin(epoch)
            step_logs = None
            # A fit resumed mid-epoch (BackupAndRestore) skips the batches trained before the backup, so that
            # without shuffling it trains as the uninterrupted fit would have (tf_keras instead trains on the
            # epoch's first batches again, and its array input stays shifted by as many batches after that).
            first_step, initial_step = initial_step, 0
            batches = itertools.islice(data.batches(steps_per_epoch), first_step, None)
            for step, batch in enumerate(batches, start=first_step):
                callback_list.on_train_batch_begin(step)
                if not prepared:
                    self._prepare(batch[0], batch[1])
                    prepared = True
                step_logs = self._run_step("train", _trim(batch))
                logs = _to_python(step_logs)
                callback_list.on_train_batch_end(step, logs)
                if self.stop_training:
                    break
            if step_logs is None:
                raise ValueError("Unexpected result of `train_function` (Empty logs). This could be due to issues in "
                                 "input pipeline that resulted in an empty dataset. Otherwise, please use "
                                 "`Model.compile(..., run_eagerly=True)`, or `tf.config.run_functions_eagerly(True)` "
                                 "for more information of where went wrong, or file a issue/bug to `tf.keras`.")
            epoch_logs = dict(logs)
            if val is not None and (epoch + 1) % validation_freq == 0 if isinstance(validation_freq, int) \
                    else val is not None and (epoch + 1) in validation_freq:
                val_logs = self._evaluate_data(val, validation_steps, callback_list=None, verbose=0)
                epoch_logs.update({"val_" + k: v for k, v in val_logs.items()})
            callback_list.on_epoch_end(epoch, epoch_logs)
            logs = epoch_logs
            if self.stop_training:
                break
        callback_list.on_train_end(logs)
        return self.history

    def _resume_point(self, initial_epoch, steps):
        """``(epoch, step)`` to start fit at: ``initial_epoch``'s start, unless a BackupAndRestore callback
        restored a backup in on_train_begin (it leaves its state in ``_ember_training_state``)."""
        training_state = getattr(self, "_ember_training_state", None)
        self._ember_training_state = None  # one fit's: a later fit without the callback starts afresh
        if training_state is None:
            return initial_epoch, 0
        return training_state.resume_point(initial_epoch, steps)

    def _evaluate_data(self, data, steps, callback_list, verbose):
        self.reset_metrics()
        logs = {}
        if callback_list is not None:
            callback_list.on_test_begin()
        prepared = False
        for step, batch in enumerate(data.batches(steps)):
            if callback_list is not None:
                callback_list.on_test_batch_begin(step)
            if not prepared:
                self._prepare(batch[0], batch[1])
                prepared = True
            logs = _to_python(self._run_step("test", _trim(batch)))
            if callback_list is not None:
                callback_list.on_test_batch_end(step, logs)
        if callback_list is not None:
            callback_list.on_test_end(logs)
        return logs

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None, steps=None,
                 callbacks=None, max_queue_size=10, workers=1, use_multiprocessing=False, return_dict=False,
                 **kwargs):
        from ember.keras import callbacks as callbacks_mod

        self._assert_compiled("training/testing")
        verbose = _verbosity(verbose)
        data = data_adapter.adapt(x, y, sample_weight, batch_size, steps)
        callback_list = callbacks_mod.CallbackList(callbacks, add_progbar=verbose != 0, model=self, verbose=verbose,
                                                   epochs=1, steps=steps if steps is not None else data.steps)
        logs = self._evaluate_data(data, steps, callback_list, verbose)
        if return_dict:
            return logs
        values = [logs[name] for name in self.metrics_names if name in logs]
        return values[0] if len(values) == 1 else values

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None, max_queue_size=10, workers=1,
                use_multiprocessing=False):
        from ember.keras import callbacks as callbacks_mod

        verbose = _verbosity(verbose)
        data = data_adapter.adapt(x, None, None, batch_size, steps)
        callback_list = callbacks_mod.CallbackList(callbacks, add_progbar=verbose != 0, model=self, verbose=verbose,
                                                   epochs=1, steps=steps if steps is not None else data.steps)
        callback_list.on_predict_begin()
        outputs = []
        for step, batch in enumerate(data.batches(steps)):
            callback_list.on_predict_batch_begin(step)
            batch_x = batch[0]
            if not self.built or self._ember_input_specs is None:
                self._trace_forward(nest.map_structure(_batch_spec, batch_x))
            result = self._run_step("predict", (batch_x,))
            outputs.append(nest.map_structure(lambda t: t.numpy(), result))
            callback_list.on_predict_batch_end(step, {"outputs": result})
        if not outputs:
            raise ValueError("Unexpected result of `predict_function` (Empty batch_outputs). Please use "
                             "`Model.compile(..., run_eagerly=True)`, or `tf.config.run_functions_eagerly(True)` for "
                             "more information of where went wrong, or file a issue/bug to `tf.keras`.")
        callback_list.on_predict_end()
        flat = [nest.flatten(o) for o in outputs]
        joined = [np.concatenate([f[i] for f in flat], axis=0) for i in range(len(flat[0]))]
        return nest.pack_sequence_as(outputs[0], joined)

    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None, reset_metrics=True,
                       return_dict=False):
        self._assert_compiled("training/testing")
        batch = next(data_adapter.adapt(x, y, sample_weight, batch_size=_num(x), class_weight=class_weight).batches())
        if reset_metrics:
            self.reset_metrics()
        self._prepare(batch[0], batch[1])
        logs = _to_python(self._run_step("train", _trim(batch)))
        return self._batch_result(logs, return_dict)

    def test_on_batch(self, x, y=None, sample_weight=None, reset_metrics=True, return_dict=False):
        self._assert_compiled("training/testing")
        batch = next(data_adapter.adapt(x, y, sample_weight, batch_size=_num(x)).batches())
        if reset_metrics:
            self.reset_metrics()
        self._prepare(batch[0], batch[1])
        logs = _to_python(self._run_step("test", _trim(batch)))
        return self._batch_result(logs, return_dict)

    def predict_on_batch(self, x):
        batch = next(data_adapter.adapt(x, batch_size=_num(x)).batches())
        if not self.built or self._ember_input_specs is None:
            self._trace_forward(nest.map_structure(_batch_spec, batch[0]))
        result = self._run_step("predict", (batch[0],))
        return nest.map_structure(lambda t: t.numpy(), result)

    def _batch_result(self, logs, return_dict):
        if return_dict:
            return logs
        values = [logs[name] for name in self.metrics_names if name in logs]
        return values[0] if len(values) == 1 else values

    # ---- weights on disk
    def save_weights(self, filepath, overwrite=True, save_format=None, options=None):
        """Writes the weights (and the optimizer's state, when it has any) as a TensorFlow checkpoint."""
        from ember.train import Checkpoint
        from ember.train import checkpoint_management

        from ember.keras import hdf5_format

        filepath = os.fspath(filepath)
        if hdf5_format.is_hdf5_path(filepath, save_format):
            return hdf5_format.save_weights(self, filepath, overwrite)
        if filepath.endswith(".keras"):
            raise NotImplementedError(f"ember.keras: save_weights({filepath!r}) in .keras format is not "
                                      "implemented; use a TensorFlow checkpoint prefix (no extension) or a .h5 path")
        if not overwrite and os.path.exists(filepath + ".index"):
            raise FileExistsError(f"{filepath} exists and overwrite=False")
        directory = os.path.dirname(filepath)
        if directory:
            os.makedirs(directory, exist_ok=True)
        Checkpoint(root=self).write(filepath)
        checkpoint_management.update_checkpoint_state(directory or ".", filepath, [filepath])

    def load_weights(self, filepath, by_name=False, skip_mismatch=False, options=None):
        """Restores weights written by ``save_weights`` (or tf_keras' TF-format ``save_weights``)."""
        from ember.train import Checkpoint

        from ember.keras import hdf5_format

        filepath = os.fspath(filepath)
        if hdf5_format.is_hdf5_path(filepath):
            return hdf5_format.load_weights(self, filepath, by_name, skip_mismatch)
        if by_name or skip_mismatch:
            raise ValueError("load_weights: by_name and skip_mismatch are for HDF5 (.h5) files, as in tf_keras")
        if filepath.endswith(".keras"):
            raise NotImplementedError(f"ember.keras: load_weights({filepath!r}) in .keras format is not "
                                      "implemented")
        return Checkpoint(root=self).restore(filepath).expect_partial()

    def get_weights(self):
        return super().get_weights()

    def save(self, filepath, overwrite=True, save_format=None, **kwargs):
        from ember.keras import models as saving

        saving.save_model(self, filepath, overwrite=overwrite, save_format=save_format, **kwargs)

    # ---- configuration
    def get_config(self):
        if self._ember_graph is None:
            config = {"name": self.name, "trainable": self.trainable}
            return config
        from ember.keras import models as saving

        return saving.functional_config(self)

    @classmethod
    def from_config(cls, config, custom_objects=None):
        if "layers" in config and "input_layers" in config:
            from ember.keras import models as saving

            return saving.functional_from_config(cls if cls is not Model else Functional, config, custom_objects)
        return cls(**config)

    def to_json(self, **kwargs):
        return json.dumps({"class_name": type(self).__name__, "config": self.get_config(),
                           "keras_version": "2.21.0", "backend": "tensorflow"}, default=_json_default, **kwargs)

    def summary(self, line_length=None, positions=None, print_fn=None, expand_nested=False, show_trainable=False,
                layer_range=None):
        from ember.keras.utils import layer_utils

        if not self.built:
            raise ValueError("This model has not yet been built. Build the model first by calling `build()` or by "
                             "calling the model on a batch of data.")
        layer_utils.print_summary(self, line_length=line_length, positions=positions, print_fn=print_fn,
                                  expand_nested=expand_nested, show_trainable=show_trainable,
                                  layer_range=layer_range)

    def __reduce__(self):
        raise TypeError("ember.keras models cannot be pickled; use model.save or save_weights")

    def __deepcopy__(self, memo):
        raise TypeError("ember.keras models cannot be deep-copied; use tf.keras.models.clone_model")


class Functional(Model):
    """The class of ``Model(inputs, outputs)``: a graph of layers."""

    def __init__(self, inputs=None, outputs=None, name=None, trainable=True, **kwargs):
        super().__init__(inputs=inputs, outputs=outputs, name=name, trainable=trainable, **kwargs)


class _Spec:
    """A shape and dtype standing for a tensor while metrics are chosen (no value)."""

    def __init__(self, shape, dtype):
        from ember.framework.tensor_shape import TensorShape

        self.shape = TensorShape(shape)
        self.dtype = dtypes.as_dtype(dtype)


def TensorShape_of(x):  # noqa: N802
    from ember.framework.tensor_shape import TensorShape

    return TensorShape(list(np.shape(x)) if not hasattr(x, "shape") else x.shape)


def _dtype_of(x):
    if isinstance(x, Tensor) or hasattr(x, "dtype") and isinstance(getattr(x, "dtype"), dtypes.DType):
        return x.dtype
    array = np.asarray(x)
    if np.issubdtype(array.dtype, np.floating):
        return dtypes.float32
    return dtypes.as_dtype(array.dtype)


def _batch_spec(x):
    """A TensorSpec of ``x`` with the batch (first) dimension unknown."""
    shape = list(x.shape.as_list() if isinstance(x, Tensor) else np.shape(x))
    if shape:
        shape[0] = None
    return TensorSpec(shape, _dtype_of(x))


def _structure_key(structure):
    def leaf(x):
        return None if x is None else 0

    flat = nest.flatten(structure)
    return repr(nest.pack_sequence_as(structure, [leaf(v) for v in flat])) if flat else repr(structure)


def _current_strategy():
    from ember.distribute import distribute_lib

    return distribute_lib.get_strategy() if distribute_lib.has_strategy() else None


def _trim(batch):
    """(x, y, sw) without trailing Nones, as Keras hands data to train_step."""
    x, y, sw = batch
    if sw is not None:
        return (x, y, sw)
    if y is not None:
        return (x, y)
    return (x,)


def _to_python(logs):
    out = {}
    for k, v in (logs or {}).items():
        value = v.numpy() if hasattr(v, "numpy") else np.asarray(v)
        out[k] = float(value) if np.ndim(value) == 0 else value
    return out


def _num(x):
    first = nest.flatten(x)[0]
    return int(np.shape(first)[0]) if np.ndim(first) else 1


def _verbosity(verbose):
    if verbose == "auto":
        return 1
    return int(verbose)


def _is_keras_optimizer(optimizer):
    from ember.keras import optimizers

    return isinstance(optimizer, optimizers.Optimizer)


def _apply_constraints(variables):
    for v in variables:
        constraint = getattr(v, "constraint", None)
        if constraint is not None:
            v.assign(constraint(v))


def _json_default(obj):
    if obj is Ellipsis:  # x[..., 0] in an op layer's arguments, written as tf_keras writes it
        return {"class_name": "__ellipsis__"}
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, (tuple, set)):
        return list(obj)
    if hasattr(obj, "as_list"):
        return obj.as_list()
    raise TypeError(f"Not JSON serializable: {obj!r}")

