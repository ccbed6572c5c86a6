"""Custom objects Keras finds by name when it rebuilds a model from its config (``load_model``,
``model_from_config``, ``deserialize`` of layers, losses, metrics, initializers ...): the global table
(``get_custom_objects``), scopes that add to it for a while (``custom_object_scope``), and classes registered
under ``"package>name"`` (``register_keras_serializable``), as tf_keras has them."""

import contextlib
import inspect
import threading

_GLOBAL_CUSTOM_OBJECTS = {}
_GLOBAL_CUSTOM_NAMES = {}  # object -> its registered "package>name"
_scopes = threading.local()


def _scope_stack():
    if not hasattr(_scopes, "stack"):
        _scopes.stack = []
    return _scopes.stack


def get_custom_objects():
    """The global name -> object table; code may add to it (``get_custom_objects()["f"] = f``)."""
    return _GLOBAL_CUSTOM_OBJECTS


class CustomObjectScope:
    """Within ``with CustomObjectScope({"MyLayer": MyLayer}):`` the names are known to deserialization."""

    def __init__(self, *args):
        self._objects = {}
        for table in args:
            if table is not None:
                if not isinstance(table, dict):
                    raise TypeError(f"custom_object_scope: arguments must be dicts, got {type(table).__name__}")
                self._objects.update(table)

    def __enter__(self):
        _scope_stack().append(self._objects)
        return self

    def __exit__(self, *exc):
        _scope_stack().remove(self._objects)
        return False


def custom_object_scope(*args):
    return CustomObjectScope(*args)


def effective_custom_objects(custom_objects=None):
    """Every name in force: the global table, then the open scopes (innermost last), then ``custom_objects``
    (the argument of the call) — later ones win, as tf_keras' lookup order."""
    merged = dict(_GLOBAL_CUSTOM_OBJECTS)
    for scope in _scope_stack():
        merged.update(scope)
    if custom_objects:
        merged.update(custom_objects)
    return merged


def register_keras_serializable(package="Custom", name=None):
    """A decorator: the class (with ``get_config``) or function is known to deserialization as
    ``"package>name"`` (``name`` defaults to its ``__name__``)."""

    def decorator(arg):
        registered = f"{package}>{name if name is not None else arg.__name__}"
        if inspect.isclass(arg) and not hasattr(arg, "get_config"):
            raise ValueError("Cannot register a class that does not have a get_config() method.")
        _GLOBAL_CUSTOM_OBJECTS[registered] = arg
        _GLOBAL_CUSTOM_NAMES[arg] = registered
        return arg

    return decorator


def get_registered_name(obj):
    """``"package>name"`` for a registered object, else its ``__name__``."""
    if obj in _GLOBAL_CUSTOM_NAMES:
        return _GLOBAL_CUSTOM_NAMES[obj]
    return obj.__name__


def get_registered_object(name, custom_objects=None, module_objects=None):
    """The object called ``name`` in the scopes, the global table, ``custom_objects`` or ``module_objects``
    (in that order), else None."""
    for scope in reversed(_scope_stack()):
        if name in scope:
            return scope[name]
    if name in _GLOBAL_CUSTOM_OBJECTS:
        return _GLOBAL_CUSTOM_OBJECTS[name]
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    if module_objects and name in module_objects:
        return module_objects[name]
    return None


def serialize_keras_object(instance):
    """``{"class_name": ..., "config": ...}`` of an object with ``get_config``; a function by its name."""
    if instance is None:
        return None
    if hasattr(instance, "get_config"):
        return {"class_name": get_registered_name(type(instance)), "config": instance.get_config()}
    if hasattr(instance, "__name__"):
        return get_registered_name(instance)
    raise ValueError(f"Cannot serialize {instance!r}: it has no get_config() and no name")


def deserialize_keras_object(identifier, module_objects=None, custom_objects=None,
                             printable_module_name="object"):
    """The object a serialized name or ``{"class_name", "config"}`` dict stands for, found by
    ``get_registered_object``; a class is rebuilt with ``from_config``, a name of a class gives an instance."""
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        if "class_name" not in identifier or "config" not in identifier:
            raise ValueError(f"Improper config format for {printable_module_name}: {identifier}")
        cls = get_registered_object(identifier["class_name"], custom_objects, module_objects)
        if cls is None:
            raise ValueError(f"Unknown {printable_module_name}: '{identifier['class_name']}'. Please ensure you "
                             "are using a `keras.utils.custom_object_scope` and that this object is included in "
                             "the scope.")
        config = identifier["config"]
        if hasattr(cls, "from_config"):
            if "custom_objects" in inspect.signature(cls.from_config).parameters:
                return cls.from_config(config, custom_objects=effective_custom_objects(custom_objects))
            with CustomObjectScope(custom_objects or {}):
                return cls.from_config(config)
        return cls(**config)
    if isinstance(identifier, str):
        obj = get_registered_object(identifier, custom_objects, module_objects)
        if obj is None:
            raise ValueError(f"Unknown {printable_module_name}: '{identifier}'. Please ensure you are using a "
                             "`keras.utils.custom_object_scope` and that this object is included in the scope.")
        return obj() if inspect.isclass(obj) else obj
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret serialized {printable_module_name}: {identifier}")
