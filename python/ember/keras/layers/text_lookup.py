"""Keras 2's text and lookup preprocessing layers (tf_keras): StringLookup, IntegerLookup and
TextVectorization, over ember.lookup tables.

A lookup layer holds its vocabulary in a ``StaticHashTable`` (token -> index, or index -> token when
``invert``); index 0 is the mask token in "int" mode when there is one, then ``num_oov_indices`` OOV
indices, then the vocabulary. ``adapt`` counts tokens eagerly in Python (NumPy) and orders them by count,
most frequent first, ties broken by the larger token, as tf_keras; "tf_idf" weights are
log(1 + documents / (1 + documents holding the token)), the OOV indices getting their mean. Design:
docs/keras.md (text preprocessing).
"""

import collections

import numpy as np

from ember.framework.tensor_shape import TensorShape
from ember.init_scope import init_scope
from ember.keras.engine.base_layer import Layer, TrackableWeightHandler

__all__ = ["IntegerLookup", "StringLookup", "TextVectorization"]

_OUTPUT_MODES = ("int", "one_hot", "multi_hot", "count", "tf_idf")
_INT64_MAX = np.iinfo(np.int64).max


def _tf():
    import ember

    return ember


def _is_ragged(x):
    return hasattr(x, "flat_values") and hasattr(x, "row_splits")


def _listify(value):
    """A config value as plain Python (tensors and arrays as lists, bytes as str)."""
    if value is None or isinstance(value, str):
        return value
    if hasattr(value, "numpy"):
        value = value.numpy()
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [v.decode("utf-8") if isinstance(v, bytes) else v for v in value]
    return value


def _batches(data, batch_size):
    """The NumPy batches ``adapt`` sees: a tf.data dataset's elements, or slices of ``batch_size`` (32 by
    default) rows of an array, list or tensor (as tf_keras batches such data)."""
    tf = _tf()
    if isinstance(data, tf.data.Dataset):
        for element in data:
            yield element
        return
    if _is_ragged(data):
        yield data
        return
    array = data.numpy() if hasattr(data, "numpy") else np.asarray(data)
    if array.ndim == 0:
        yield array
        return
    step = batch_size or 32
    for start in range(0, len(array), step):
        yield array[start:start + step]


def _check_adapt_outside_functions():
    """tf_keras' RuntimeError: adapt reads its data eagerly, so not while a function traces."""
    from ember import _C

    if _C.in_trace():
        raise RuntimeError("Detected a call to `PreprocessingLayer.adapt` inside a `tf.function`. "
                           "`PreprocessingLayer.adapt is a high-level endpoint that manages its own `tf.function`. "
                           "Please move the call to `PreprocessingLayer.adapt` outside of all enclosing "
                           "`tf.function`s. Note that you can call a `PreprocessingLayer` directly on `Tensor`s "
                           "inside a `tf.function` like: `layer(x)`, or update its state like: "
                           "`layer.update_state(x)`.")


def _documents(batch):
    """The documents (lists of tokens) of one batch: each row of a matrix or ragged batch, or the whole of a
    vector or scalar (tf_keras counts a rank-1 batch as one document)."""
    if _is_ragged(batch):
        return [list(row) for row in batch.to_list()]
    array = batch.numpy() if hasattr(batch, "numpy") else np.asarray(batch)
    if array.ndim <= 1:
        return [array.reshape(-1).tolist()]
    return [row.reshape(-1).tolist() for row in array]


def _encode(indices, output_mode, depth, dtype, idf_weights=None):
    """Indices [batch] or [batch, n] (dense or ragged) -> [batch, depth] one_hot / multi_hot / count /
    tf_idf vectors; indices outside [0, depth) (the dropped mask) count for nothing."""
    tf = _tf()
    if _is_ragged(indices):
        hot = tf.one_hot(indices.flat_values, depth, dtype=dtype)
        counts = tf.math.unsorted_segment_sum(hot, tf.cast(indices.value_rowids(), tf.int32),
                                              tf.cast(indices.nrows(), tf.int32))
    else:
        if indices.shape.rank == 0:
            indices = tf.expand_dims(indices, -1)
        if output_mode == "one_hot" and indices.shape[-1] != 1:
            indices = tf.expand_dims(indices, -1)
        if indices.shape.rank > 2:
            raise ValueError("When output_mode is not `'int'`, maximum supported output rank is 2. Received "
                             f"output_mode {output_mode} and input shape {indices.shape}, which would result "
                             f"in output rank {indices.shape.rank}.")
        counts = tf.reduce_sum(tf.one_hot(indices, depth, dtype=dtype), axis=-2)
    if output_mode in ("one_hot", "multi_hot"):
        return tf.minimum(counts, tf.ones([], dtype))
    if output_mode == "tf_idf":
        # Before adapt or set_vocabulary (a model rebuilt from its config) the weights are zeros.
        weights = tf.zeros([depth], dtype) if idf_weights is None else tf.cast(idf_weights, dtype)
        return counts * weights
    return counts


class _NullInitializer:
    """Initializes nothing: the table of a layer without a vocabulary stays uninitialized, so calling the
    layer is FailedPrecondition "not initialized", as tf_keras' (its `NullInitializer`)."""

    def __init__(self, key_dtype, value_dtype):
        self.key_dtype = key_dtype
        self.value_dtype = value_dtype

    def initialize(self, table):
        pass


class VocabWeightHandler(TrackableWeightHandler):
    """tf_keras' ``VocabWeightHandler``: an adaptable lookup layer lists its vocabulary (without the mask
    and OOV tokens) among its weights, so ``get_weights`` returns it and ``set_weights`` rebuilds the table
    from it."""

    def __init__(self, layer):
        self._layer = layer

    def get_tensors(self):
        layer = self._layer
        tokens = layer.get_vocabulary(include_special_tokens=False)
        return [_tf().constant(tokens, dtype=_tf().as_dtype(layer.vocabulary_dtype))]

    def set_weights(self, weights):
        layer = self._layer
        tokens = np.asarray(weights[0]).reshape(-1).tolist()
        layer._ember_table = layer._make_table([layer._python_token(t) for t in tokens])
        layer._freeze_size()


class _IndexLookup(Layer):
    """What StringLookup and IntegerLookup share: the vocabulary table, adapt, the index layout and the
    output encodings."""

    def __init__(self, max_tokens, num_oov_indices, mask_token, oov_token, vocabulary_dtype, vocabulary=None,
                 idf_weights=None, invert=False, output_mode="int", sparse=False, pad_to_max_tokens=False,
                 **kwargs):
        frozen_size = kwargs.pop("vocabulary_size", None)
        kwargs.pop("has_input_vocabulary", None)
        kwargs.pop("has_static_table", None)
        if max_tokens is not None and max_tokens <= 1:
            raise ValueError(f"If set, `max_tokens` must be greater than 1. Received: max_tokens={max_tokens}")
        if pad_to_max_tokens and max_tokens is None:
            raise ValueError(f"If pad_to_max_tokens is True, must set `max_tokens`. Received: max_tokens="
                             f"{max_tokens}")
        if num_oov_indices < 0:
            raise ValueError(f"`num_oov_indices` must be greater than or equal to 0. Received: "
                             f"num_oov_indices={num_oov_indices}")
        output_mode = {"binary": "multi_hot", "tf-idf": "tf_idf"}.get(output_mode, output_mode)
        if output_mode not in _OUTPUT_MODES:
            raise ValueError(f"Unknown value for `output_mode`. Allowed values are: {list(_OUTPUT_MODES)}. "
                             f"Received: output_mode={output_mode}")
        if invert and output_mode != "int":
            raise ValueError(f"`output_mode` must be `'int'` when `invert` is true. Received: output_mode="
                             f"{output_mode}")
        if sparse and output_mode == "int":
            raise ValueError(f"`sparse` may only be true if `output_mode` is `'one_hot'`, `'multi_hot'`, `'count'` "
                             f"or `'tf_idf'`. Received: sparse={sparse} and output_mode={output_mode}")
        if idf_weights is not None and output_mode != "tf_idf":
            raise ValueError(f"`idf_weights` should only be set if `output_mode` is `'tf_idf'`. Received: "
                             f"idf_weights={idf_weights} and output_mode={output_mode}")
        kwargs.setdefault("dtype", "int64" if output_mode == "int" else "float32")
        super().__init__(**kwargs)
        self.invert = invert
        self.max_tokens = max_tokens
        self.num_oov_indices = num_oov_indices
        self.mask_token = mask_token
        self.oov_token = oov_token
        self.output_mode = output_mode
        self.sparse = sparse
        self.pad_to_max_tokens = pad_to_max_tokens
        self.vocabulary_dtype = vocabulary_dtype
        self.input_vocabulary = vocabulary
        self.input_idf_weights = idf_weights
        self._ember_frozen_size = frozen_size
        # tf_keras makes a "tf_idf" layer's weights variable here, so a layer built inside a function
        # creates a variable on each trace (TensorFlow's ValueError), as tf_keras' does.
        # Its shape is tf_keras' (None,): a vocabulary (adapt, set_vocabulary, set_weights, a checkpoint) of
        # any size assigns its weights to this one variable.
        self._ember_idf = self._make_idf_variable(np.zeros(self._token_start(), np.float32)) \
            if output_mode == "tf_idf" else None
        self._ember_table = self._uninitialized_table()
        self._ember_adapt_state = self._make_adapt_state() if vocabulary is None else []
        self._ember_vocabulary_weight = VocabWeightHandler(self) if vocabulary is None else None
        if vocabulary is not None:
            self.set_vocabulary(vocabulary, idf_weights)

    def _own_variables(self):
        # tf_keras' weights, in its order: the idf weights ("tf_idf"), then for a layer made without a
        # vocabulary its vocabulary and ("tf_idf") its adapt state's document count.
        weights = [self._ember_idf] if self._ember_idf is not None else []
        if self._ember_vocabulary_weight is not None:
            weights.append(self._ember_vocabulary_weight)
            weights += [v for name, v in self._ember_adapt_state if name == "num_documents"]
        return weights

    def _trackable_children(self):
        # The table (and the tf_idf weights) under tf_keras' names, so a SavedModel holds them (and the
        # functions that use them bind them), and keras.models.load_model finds them in tf_keras' too.
        children = [("lookup_table", self._ember_table)]
        if self._ember_idf is not None:
            children.append(("idf_weights", self._ember_idf))
        return super()._trackable_children() + children + self._ember_adapt_state

    def _make_adapt_state(self):
        """tf_keras' adapt state, by its names: ``token_counts`` (and, for "tf_idf", ``token_document_counts``
        and ``num_documents``), which tf_keras empties once adapt is done. ember counts in NumPy and keeps them
        empty; a SavedModel holds them because tf_keras' load_model, rebuilding an adaptable layer from its
        config, expects each of them in the checkpoint."""
        tf = _tf()
        key_dtype = tf.as_dtype(self.vocabulary_dtype)
        # Made eagerly: tf_keras makes them in the graph of a function that builds the layer, where its
        # `call` never reads them, and ember cannot make a MutableHashTable per call (docs/lookup.md).
        with init_scope():
            state = [("token_counts", tf.lookup.experimental.MutableHashTable(key_dtype, tf.int64, 0))]
            if self.output_mode == "tf_idf":
                state.append(("token_document_counts",
                              tf.lookup.experimental.MutableHashTable(key_dtype, tf.int64, 0)))
        if self.output_mode == "tf_idf":
            state.append(("num_documents", tf.Variable(0, dtype=tf.int64, trainable=False, name="Variable")))
        return state

    # ---- the index layout
    def _oov_start(self):
        return 1 if self.mask_token is not None and self.output_mode == "int" else 0

    def _token_start(self):
        return self._oov_start() + self.num_oov_indices

    def _key_dtype(self):
        tf = _tf()
        return tf.int64 if self.invert else tf.as_dtype(self.vocabulary_dtype)

    def _default_index(self):
        return self._oov_start() if self.num_oov_indices == 1 else -1

    def _uninitialized_table(self):
        tf = _tf()
        value_dtype = tf.as_dtype(self.vocabulary_dtype) if self.invert else tf.int64
        default = self.oov_token if self.invert else self._default_index()
        with init_scope():
            return tf.lookup.StaticHashTable(_NullInitializer(self._key_dtype(), value_dtype), default)

    def _make_table(self, tokens, filename=None):
        """The StaticHashTable of ``tokens`` (or of a vocabulary file, a token per line) at their indices, made
        eagerly (a layer built inside a function holds its table, as a StaticHashTable made there is)."""
        with init_scope():
            return self._make_table_eagerly(tokens, filename)

    def _make_table_eagerly(self, tokens, filename):
        tf = _tf()
        vocab_dtype = tf.as_dtype(self.vocabulary_dtype)
        start = self._token_start()
        default = self.oov_token if self.invert else self._default_index()
        if filename is not None:
            whole, number = tf.lookup.TextFileIndex.WHOLE_LINE, tf.lookup.TextFileIndex.LINE_NUMBER
            if self.invert:
                init = tf.lookup.TextFileInitializer(filename, tf.int64, number, vocab_dtype, whole,
                                                     value_index_offset=start)
            else:
                init = tf.lookup.TextFileInitializer(filename, vocab_dtype, whole, tf.int64, number,
                                                     value_index_offset=start)
            return tf.lookup.StaticHashTable(init, default)
        tokens = tf.constant(list(tokens), dtype=vocab_dtype) if len(tokens) else tf.zeros([0], vocab_dtype)
        indices = tf.range(start, start + int(tokens.shape[0]), dtype=tf.int64)
        keys, values = (indices, tokens) if self.invert else (tokens, indices)
        return tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(keys, values), default)

    # ---- vocabulary
    def _ember_set_table_entries(self, keys, values):
        """The vocabulary a table of this layer's layout holds (keras.models.load_model restores an adapted
        one from the SavedModel's table)."""
        tokens, indices = (values, keys) if self.invert else (keys, values)
        pairs = sorted(zip(indices.numpy().tolist(), tokens.numpy().tolist()))
        self._ember_table = self._make_table([self._python_token(t) for _, t in pairs])

    def _python_token(self, token):
        return token.decode("utf-8") if isinstance(token, bytes) else token

    def set_vocabulary(self, vocabulary, idf_weights=None):
        """Sets the vocabulary (a list, array, tensor, or a file with a token per line) and, for "tf_idf",
        its idf weights."""
        if self.output_mode == "tf_idf" and idf_weights is None:
            raise ValueError("`idf_weights` must be set if output_mode is TF_IDF")
        if self.output_mode != "tf_idf" and idf_weights is not None:
            raise ValueError(f"`idf_weights` should only be set if output_mode is `'tf_idf'`. Received: "
                             f"output_mode={self.output_mode} and idf_weights={idf_weights}")
        if isinstance(vocabulary, str):
            import os

            if not os.path.exists(vocabulary):
                raise ValueError(f"Vocabulary file {vocabulary} does not exist.")
            if self.output_mode == "tf_idf":
                raise ValueError("output_mode `'tf_idf'` does not support loading a vocabulary from file.")
            self._ember_table = self._make_table([], filename=vocabulary)
            self._freeze_size()
            return
        tokens = [self._python_token(t) for t in _listify(vocabulary)]
        if not tokens:
            raise ValueError(f"Cannot set an empty vocabulary, you passed {vocabulary}.")
        special = [self.mask_token] * self._oov_start() + [self.oov_token] * self.num_oov_indices
        has_special = tokens[:len(special)] == special
        if has_special:
            tokens = tokens[len(special):]
        repeated = [t for t, n in collections.Counter(tokens).items() if n > 1]
        if repeated:
            raise ValueError("The passed vocabulary has at least one repeated term. Please uniquify your "
                             f"dataset. The repeated terms are {repeated}")
        if self.mask_token is not None and self.mask_token in tokens:
            raise ValueError("Found reserved mask token at unexpected location in `vocabulary`. Note that passed "
                             "`vocabulary` does not need to include the OOV and mask tokens. Either remove all "
                             "mask and OOV tokens, or include them only at the start of the vocabulary in "
                             f"precisely this order: {special}. Received: mask_token={self.mask_token} at "
                             f"vocabulary index {tokens.index(self.mask_token) + len(special) * has_special}")
        if self.oov_token is not None and self.invert and self.oov_token in tokens:
            raise ValueError("Found reserved OOV token at unexpected location in `vocabulary`. Note that passed "
                             "`vocabulary` does not need to include the OOV and mask tokens. Either remove all "
                             "mask and OOV tokens, or include them only at the start of the vocabulary in "
                             f"precisely this order: {special}. Received: oov_token={self.oov_token}")
        size = len(tokens) + self._token_start()
        if self.max_tokens is not None and size > self.max_tokens:
            raise ValueError(f"Attempted to set a vocabulary larger than the maximum vocab size. Passed vocab "
                             f"size is {size}, max vocab size is {self.max_tokens}.")
        self._ember_table = self._make_table(tokens)
        if self.output_mode == "tf_idf":
            weights = np.asarray(_listify(idf_weights), dtype=np.float64)
            if len(weights) != len(tokens) + (len(special) if has_special else 0):
                raise ValueError(f"`idf_weights` must be the same length as vocabulary. len(idf_weights) is "
                                 f"{len(weights)}, len(vocabulary) is {len(_listify(vocabulary))}")
            if not has_special:
                weights = np.concatenate([np.full(self._token_start(), weights.mean()), weights])
            self._set_idf(weights)
        self._freeze_size()

    def _set_idf(self, weights):
        if self.pad_to_max_tokens and self.max_tokens is not None:
            weights = np.pad(weights, (0, self.max_tokens - len(weights)))
        self._ember_idf.assign(np.asarray(weights, dtype=np.float32))

    def _make_idf_variable(self, weights):
        # Named as tf_keras' (an unnamed tf.Variable): its HDF5 weight is "Variable:0".
        return _tf().Variable(weights, trainable=False, name="Variable", shape=TensorShape([None]))

    def _idf_weights_for_call(self, depth):
        """The idf weights once a vocabulary has set them, which is when they have the encoding's length;
        None (zeros) before, in a layer rebuilt from its config."""
        with init_scope():
            length = int(self._ember_idf.read_value().shape[0])
        return self._ember_idf if length == depth else None

    def _freeze_size(self):
        if self.output_mode == "int" or self.pad_to_max_tokens:
            self._ember_frozen_size = self.vocabulary_size()
            return
        size = self.vocabulary_size()
        if self._ember_frozen_size is not None and self._ember_called and size != self._ember_frozen_size:
            raise RuntimeError(f"When using `output_mode={self.output_mode}` and `pad_to_max_tokens=False`, the "
                               "vocabulary size cannot be changed after the layer is called. Old vocab size is "
                               f"{self._ember_frozen_size}, new vocab size is {size}")
        self._ember_frozen_size = size

    @property
    def _ember_called(self):
        return self.__dict__.get("_ember_was_called", False)

    def vocabulary_size(self):
        """The vocabulary's size, mask and OOV indices included."""
        with init_scope():  # the table is eager, also in a layer built inside a function
            return int(self._ember_table.size().numpy()) + self._token_start()

    def get_vocabulary(self, include_special_tokens=True):
        """The tokens by index (the mask and OOV tokens first unless ``include_special_tokens`` is False)."""
        with init_scope():
            keys, values = self._ember_table.export()
        tokens, indices = (values, keys) if self.invert else (keys, values)
        by_index = dict(zip(indices.numpy().tolist(), (self._python_token(t) for t in tokens.numpy().tolist())))
        vocabulary = [by_index.get(i, self.oov_token) for i in range(self.vocabulary_size())]
        if self.mask_token is not None and self.output_mode == "int":
            vocabulary[0] = self.mask_token
        return vocabulary if include_special_tokens else vocabulary[self._token_start():]

    def adapt(self, data, batch_size=None, steps=None):
        """Learns the vocabulary (and idf weights) from ``data``: a list, array, tensor or tf.data dataset.
        The layer is built afterwards, as tf_keras'."""
        _check_adapt_outside_functions()
        if self.input_vocabulary is not None:
            raise ValueError(f"Cannot adapt {type(self).__name__} layer after setting a static vocabulary via "
                             "init argument or `set_vocabulary`.")
        documents = []
        for i, batch in enumerate(_batches(data, batch_size)):
            if steps is not None and i >= steps:
                break
            documents.extend(_documents(batch))
        self._adapt_documents(documents)
        self.built = True

    def _adapt_documents(self, documents):
        counts = collections.Counter()
        document_counts = collections.Counter()
        for document in documents:
            tokens = [self._python_token(t) for t in document]
            counts.update(tokens)
            document_counts.update(set(tokens))
        for special in (self.mask_token, self.oov_token):
            counts.pop(special, None)
        ordered = sorted(counts, key=lambda t: (counts[t], t), reverse=True)
        if self.max_tokens:
            ordered = ordered[:self.max_tokens - self._token_start()]
        self._ember_table = self._make_table(ordered)
        if self.output_mode == "tf_idf":
            held = np.array([document_counts[t] for t in ordered], dtype=np.float64)
            weights = np.log(1 + len(documents) / (1 + held))
            mean = weights.mean() if len(weights) else 0.0
            self._set_idf(np.concatenate([np.full(self._token_start(), mean), weights]))
        self._freeze_size()

    # ---- calling
    def _lookup_dense(self, inputs):
        tf = _tf()
        found = self._ember_table.lookup(inputs)
        if self.mask_token is not None:
            mask_value = self.mask_token if self.invert else 0 if self.output_mode == "int" else _INT64_MAX
            mask_key = 0 if self.invert else self.mask_token
            found = tf.where(tf.equal(inputs, tf.constant(mask_key, inputs.dtype)),
                             tf.constant(mask_value, found.dtype), found)
        if self.invert:
            return found
        if self.num_oov_indices == 0:
            missing = tf.equal(found, tf.constant(-1, found.dtype))
            message = ["When `num_oov_indices=0` all inputs should be in vocabulary, found OOV values"]
            # ember's Assert op prints numbers only, so string OOV values are not listed.
            shown = [tf.boolean_mask(inputs, missing)] if inputs.dtype.is_integer else []
            tf.debugging.Assert(tf.logical_not(tf.reduce_any(missing)), message + shown)
        elif self.num_oov_indices > 1:
            if inputs.dtype.is_integer:
                buckets = tf.math.floormod(tf.cast(inputs, tf.int64), self.num_oov_indices)
            else:
                buckets = tf.strings.to_hash_bucket_fast(inputs, self.num_oov_indices)
            found = tf.where(tf.equal(found, tf.constant(-1, found.dtype)), buckets + self._oov_start(), found)
        return found

    def _check_size_known(self):
        if self.output_mode != "int" and not self.pad_to_max_tokens and self._ember_frozen_size is None:
            raise RuntimeError(f"When using `output_mode={self.output_mode}` and `pad_to_max_tokens=False`, you "
                               "must set the layer's vocabulary before calling it. Either pass a `vocabulary` "
                               "argument to the layer, or call `adapt` with some sample data.")

    def _lookup(self, inputs):
        """The indices of ``inputs`` (dense or ragged), before any encoding."""
        tf = _tf()
        key_dtype = self._key_dtype()
        if _is_ragged(inputs):
            flat = inputs.flat_values
            if flat.dtype != key_dtype:
                flat = tf.cast(flat, key_dtype)
            return inputs.with_flat_values(self._lookup_dense(flat))
        inputs = tf.convert_to_tensor(inputs)
        if inputs.dtype != key_dtype:
            inputs = tf.cast(inputs, key_dtype)
        return self._lookup_dense(inputs)

    def call(self, inputs):
        tf = _tf()
        self._check_size_known()
        self.__dict__["_ember_was_called"] = True
        indices = self._lookup(inputs)
        if self.output_mode == "int":
            if self.invert:
                return indices
            if _is_ragged(indices):
                return indices.with_flat_values(tf.cast(indices.flat_values, self.compute_dtype))
            return tf.cast(indices, self.compute_dtype)
        depth = self.max_tokens if self.pad_to_max_tokens else self._ember_frozen_size
        idf_weights = self._idf_weights_for_call(depth) if self.output_mode == "tf_idf" else None
        encoded = _encode(indices, self.output_mode, depth, self.compute_dtype, idf_weights)
        # tf_keras' SparseTensor holds the encoding's nonzero entries, in row-major order.
        return tf.sparse.from_dense(encoded) if self.sparse else encoded

    def compute_output_shape(self, input_shape):
        if self.output_mode == "int":
            return TensorShape(input_shape)
        depth = self.max_tokens if self.pad_to_max_tokens else self._ember_frozen_size
        return TensorShape([TensorShape(input_shape).as_list()[0] if TensorShape(input_shape).rank else None,
                            depth])

    def get_config(self):
        return {**super().get_config(), "invert": self.invert, "max_tokens": self.max_tokens,
                "num_oov_indices": self.num_oov_indices, "oov_token": self.oov_token,
                "mask_token": self.mask_token, "output_mode": self.output_mode, "sparse": self.sparse,
                "pad_to_max_tokens": self.pad_to_max_tokens, "vocabulary_dtype": self.vocabulary_dtype,
                "idf_weights": _listify(self.input_idf_weights), "vocabulary": _listify(self.input_vocabulary),
                "vocabulary_size": self._ember_frozen_size}


class StringLookup(_IndexLookup):
    """``tf.keras.layers.StringLookup``: strings -> vocabulary indices (or back, with ``invert=True``)."""

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token="[UNK]", vocabulary=None,
                 idf_weights=None, encoding="utf-8", invert=False, output_mode="int", sparse=False,
                 pad_to_max_tokens=False, **kwargs):
        kwargs.pop("vocabulary_dtype", None)
        self.encoding = encoding
        super().__init__(max_tokens=max_tokens, num_oov_indices=num_oov_indices, mask_token=mask_token,
                         oov_token=oov_token, vocabulary_dtype="string", vocabulary=vocabulary,
                         idf_weights=idf_weights, invert=invert, output_mode=output_mode, sparse=sparse,
                         pad_to_max_tokens=pad_to_max_tokens, **kwargs)

    def get_config(self):
        config = {**super().get_config(), "encoding": self.encoding}
        del config["vocabulary_dtype"]
        return config


class IntegerLookup(_IndexLookup):
    """``tf.keras.layers.IntegerLookup``: integers -> vocabulary indices (or back, with ``invert=True``)."""

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token=-1, output_mode="int",
                 sparse=False, pad_to_max_tokens=False, invert=False, vocabulary_dtype="int64", vocabulary=None,
                 idf_weights=None, **kwargs):
        tf = _tf()
        if not tf.as_dtype(vocabulary_dtype).is_integer:
            raise ValueError(f"`vocabulary_dtype` must be an integer dtype. Received: {vocabulary_dtype}")
        if vocabulary_dtype != "int64":
            raise NotImplementedError(f"IntegerLookup(vocabulary_dtype={vocabulary_dtype!r}): ember holds "
                                      "integer vocabularies as int64 only")
        if oov_token is None:
            raise ValueError("`oov_token` for IntegerLookup cannot be None.")
        if max_tokens is not None and max_tokens <= 1:
            raise ValueError(f"If `max_tokens` is set for `IntegerLookup`, it must be greater than 1. Received: "
                             f"max_tokens={max_tokens}")
        super().__init__(max_tokens=max_tokens, num_oov_indices=num_oov_indices, mask_token=mask_token,
                         oov_token=oov_token, vocabulary_dtype=vocabulary_dtype, vocabulary=vocabulary,
                         idf_weights=idf_weights, invert=invert, output_mode=output_mode, sparse=sparse,
                         pad_to_max_tokens=pad_to_max_tokens, **kwargs)


_PUNCTUATION = r'[!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\']'


class TextVectorization(Layer):
    """``tf.keras.layers.TextVectorization``: strings -> standardized, split (and ngrammed) tokens ->
    vocabulary indices or count vectors, through a StringLookup whose mask token is ""."""

    def __init__(self, max_tokens=None, standardize="lower_and_strip_punctuation", split="whitespace", ngrams=None,
                 output_mode="int", output_sequence_length=None, pad_to_max_tokens=False, vocabulary=None,
                 idf_weights=None, sparse=False, ragged=False, encoding="utf-8", **kwargs):
        vocabulary_size = kwargs.pop("vocabulary_size", None)
        kwargs.pop("has_input_vocabulary", None)
        # The layer takes strings (its dtype, as tf_keras's); its StringLookup has the output dtype.
        output_dtype = kwargs.pop("dtype", None)
        if output_dtype in (None, "string"):
            output_dtype = "int64" if output_mode == "int" else "float32"
        super().__init__(dtype="string", **kwargs)
        if standardize not in (None, "lower", "strip_punctuation", "lower_and_strip_punctuation") and \
                not callable(standardize):
            raise ValueError(f"Unknown value for `standardize`. Allowed values are: (None, 'lower', "
                             f"'strip_punctuation', 'lower_and_strip_punctuation'). Received: standardize="
                             f"{standardize}")
        if split not in (None, "whitespace", "character") and not callable(split):
            raise ValueError(f"Unknown value for `split`. Allowed values are: (None, 'whitespace', 'character'). "
                             f"Received: split={split}")
        if ngrams is not None and not (isinstance(ngrams, int) or
                                       (isinstance(ngrams, (tuple, list)) and all(isinstance(n, int)
                                                                                  for n in ngrams))):
            raise ValueError(f"`ngrams` must be None, an integer, or a tuple of integers. Received: ngrams={ngrams}")
        if output_mode == "int" and output_sequence_length is not None and output_sequence_length < 1:
            raise ValueError(f"`output_sequence_length` must be >= 1. Received: {output_sequence_length}")
        if output_mode != "int" and output_sequence_length is not None:
            raise ValueError(f"`output_sequence_length` must not be set if `output_mode` is not 'int'. Received "
                             f"output_sequence_length={output_sequence_length}.")
        if ragged and output_mode != "int":
            raise ValueError(f"`ragged` must not be true if `output_mode` is `'int'`. Received: ragged={ragged} "
                             f"and output_mode={output_mode}")
        if ragged and output_sequence_length is not None:
            raise ValueError(f"`output_sequence_length` must not be set if ragged is True. Received: "
                             f"output_sequence_length={output_sequence_length}")
        self._standardize = standardize
        self._split = split
        self._ngrams_arg = ngrams
        self._ngrams = tuple(range(1, ngrams + 1)) if isinstance(ngrams, int) else \
            tuple(ngrams) if ngrams is not None else None
        self._output_mode = output_mode
        self._output_sequence_length = output_sequence_length
        self._ragged = ragged
        self._encoding = encoding
        self._lookup_layer = StringLookup(max_tokens=max_tokens, vocabulary=vocabulary, idf_weights=idf_weights,
                                          pad_to_max_tokens=pad_to_max_tokens, mask_token="",
                                          output_mode=output_mode, sparse=sparse, encoding=encoding,
                                          vocabulary_size=vocabulary_size, dtype=output_dtype)

    def _preprocess(self, inputs):
        tf = _tf()
        inputs = tf.convert_to_tensor(inputs)
        if inputs.dtype != tf.string:
            raise ValueError(f"TextVectorization takes string inputs; received dtype {inputs.dtype.name}")
        if self._standardize in ("lower", "lower_and_strip_punctuation"):
            inputs = tf.strings.lower(inputs)
        if self._standardize in ("strip_punctuation", "lower_and_strip_punctuation"):
            inputs = tf.strings.regex_replace(inputs, _PUNCTUATION, "")
        if callable(self._standardize):
            inputs = self._standardize(inputs)
        if self._split is None:
            return inputs
        if inputs.shape.rank > 1:
            if inputs.shape[-1] != 1:
                raise ValueError("When using TextVectorization to tokenize strings, the input rank must be 1 or "
                                 f"the last shape dimension must be 1. Received: inputs.shape={inputs.shape} with "
                                 f"rank={inputs.shape.rank}")
            inputs = tf.squeeze(inputs, axis=-1)
        if inputs.shape.rank == 0:
            inputs = tf.expand_dims(inputs, 0)
        if self._split == "whitespace":
            tokens = tf.strings.split(inputs)
        elif self._split == "character":
            tokens = tf.strings.unicode_split(inputs, "UTF-8")
        else:
            tokens = self._split(inputs)
        if self._ngrams is not None:
            tokens = tf.strings.ngrams(tokens, ngram_width=self._ngrams, separator=" ")
        return tokens

    def adapt(self, data, batch_size=None, steps=None):
        """Learns the vocabulary from strings: a list, an array, a tensor or a tf.data dataset (the layer is
        built afterwards, as tf_keras')."""
        _check_adapt_outside_functions()
        if self._lookup_layer.input_vocabulary is not None:
            raise ValueError("Cannot adapt TextVectorization layer after setting a static vocabulary via init "
                             "argument or `set_vocabulary`.")
        documents = []
        for i, batch in enumerate(_batches(data, batch_size)):
            if steps is not None and i >= steps:
                break
            batch = self._preprocess(batch)
            documents.extend(_documents(batch) if _is_ragged(batch) else
                             [[t] for t in np.asarray(batch.numpy()).reshape(-1).tolist()])
        self._lookup_layer._adapt_documents(documents)
        self._lookup_layer.built = self.built = True

    def call(self, inputs):
        tf = _tf()
        indices = self._lookup_layer(self._preprocess(inputs))
        if self._output_mode != "int" or not _is_ragged(indices):
            return indices
        if self._ragged:
            return indices
        dense = indices.to_tensor(default_value=0)
        length = self._output_sequence_length
        if length is None:
            return dense
        dense = dense[:, :length]
        pad = length - tf.shape(dense)[1]
        padded = tf.pad(dense, tf.stack([tf.constant([0, 0]), tf.stack([tf.constant(0), pad])]))
        return tf.reshape(padded, [-1, length])  # static [batch, length], as Keras' output shape

    def get_vocabulary(self, include_special_tokens=True):
        return self._lookup_layer.get_vocabulary(include_special_tokens)

    def vocabulary_size(self):
        return self._lookup_layer.vocabulary_size()

    def set_vocabulary(self, vocabulary, idf_weights=None):
        self._lookup_layer.set_vocabulary(vocabulary, idf_weights)

    def compute_output_shape(self, input_shape):
        batch = TensorShape(input_shape).as_list()[0] if TensorShape(input_shape).rank else None
        if self._output_mode == "int":
            return TensorShape([batch, self._output_sequence_length])
        return self._lookup_layer.compute_output_shape(input_shape)

    def get_config(self):
        lookup = self._lookup_layer
        return {**super().get_config(), "max_tokens": lookup.max_tokens, "standardize": self._standardize,
                "split": self._split, "ngrams": self._ngrams_arg, "output_mode": self._output_mode,
                "output_sequence_length": self._output_sequence_length,
                "pad_to_max_tokens": lookup.pad_to_max_tokens, "sparse": lookup.sparse, "ragged": self._ragged,
                "vocabulary": _listify(lookup.input_vocabulary), "idf_weights": _listify(lookup.input_idf_weights),
                "encoding": self._encoding, "vocabulary_size": lookup._ember_frozen_size}
