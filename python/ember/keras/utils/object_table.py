"""The serialize/deserialize/get trio that Keras gives each family of small objects (initializers,
regularizers, constraints): one implementation, one table per family."""


import types


class ObjectTable:
    """``classes``: class name -> class; ``names``: Keras' short names ("l2", "glorot_uniform") -> class;
    ``factories``: short names whose default object is not ``cls()`` (``"l1_l2"`` is ``l1_l2()``).
    ``identifier_error`` is the family's message for an identifier that is neither a name, a config nor a
    callable, as tf_keras words it. (tf_keras' regularizers.get returns an unknown name unchanged, to fail later
    when the layer calls it; here an unknown name of every family fails at once, with tf_keras' message.)"""

    def __init__(self, kind, module, classes, names, identifier_error, factories=None):
        self._kind = kind
        self._module = module
        self._classes = dict(classes)
        self._names = dict(names)
        self._identifier_error = identifier_error
        self._factories = dict(factories or {})

    def serialize(self, obj):
        if obj is None:
            return None
        if isinstance(obj, types.FunctionType):  # a plain function: by name, found again in custom_objects
            return {"module": "builtins", "class_name": "function", "config": obj.__name__,
                    "registered_name": "function"}
        config = obj.get_config() if hasattr(obj, "get_config") else {}
        return {"module": self._module, "class_name": type(obj).__name__, "config": config,
                "registered_name": None}

    def deserialize(self, config, custom_objects=None):
        from ember.keras.utils.object_registration import effective_custom_objects

        custom_objects = effective_custom_objects(custom_objects)
        if isinstance(config, str):
            if config in custom_objects:
                found = custom_objects[config]
                return found() if isinstance(found, type) else found
            return self.get(config)
        name = config["class_name"]
        if name == "function":
            function = (custom_objects or {}).get(config.get("config"))
            if function is None:
                raise self._unknown(config.get("config"))
            return function
        cls = (custom_objects or {}).get(name) or self._classes.get(name) or self._names.get(name)
        if cls is None:
            raise self._unknown(name)
        return cls.from_config(config.get("config", {}))

    def _unknown(self, name):
        return ValueError(f"Unknown {self._kind}: '{name}'. Please ensure you are using a "
                          "`keras.utils.custom_object_scope` and that this object is included in the scope. See "
                          "https://www.tensorflow.org/guide/keras/save_and_serialize#registering_the_custom_object "
                          "for details.")

    def get(self, identifier):
        if identifier is None:
            return None
        if isinstance(identifier, dict):
            return self.deserialize(identifier)
        if isinstance(identifier, str):
            factory = self._factories.get(identifier) or self._names.get(identifier) or self._classes.get(identifier)
            if factory is None:
                raise self._unknown(identifier)
            return factory()
        if isinstance(identifier, type) and identifier in self._classes.values():
            return identifier()  # Dense(kernel_initializer=GlorotUniform): an instance, as tf_keras makes
        if callable(identifier):
            return identifier
        raise ValueError(f"{self._identifier_error}: {identifier}")
