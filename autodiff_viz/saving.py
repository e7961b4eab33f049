"""Whole models on disk and as data, as Keras 3: ``model.save("m.keras")``, :func:`load_model`,
``model.get_config()`` / ``from_config``, ``model.to_json()`` / :func:`model_from_json`, :func:`clone_model`.

    >>> model.save("model.keras")                      # architecture + weights + compile state
    >>> again = adv.saving.load_model("model.keras")   # also adv.models.load_model
    >>> again.fit(x, y, epochs=1)                      # goes on as if it had never been saved

A ``.keras`` file is a zip archive, JSON and ``.npz`` only (never pickle)::

    config.json             the model as data (below), with "compile_config" when it was compiled
    metadata.json           {"package": "autodiff_viz", "version": "0.1.0", "date_saved": "2026-01-31@12:00:00"}
    model.weights.npz       every weight under its path in the model: what model.save_weights writes
    optimizer.weights.npz   the optimizer's "iterations" and its slots as "<slot>/<weight path>"
                            (m/dense/kernel), so training goes on where it stopped

An object as data is Keras 3's entry::

    {"module": "autodiff_viz.layers", "class_name": "Dense", "config": {"units": 3, ...}, "registered_name": null}

rebuilt as ``Dense(**config)``, where ``config`` is what the layer's ``get_config()`` returns and each value
that is not plain JSON is an entry in turn: a regularizer, a nested layer, a tuple
(``{"class_name": "__tuple__", ...}``), a numpy array. A function is found again by its name,
``{"class_name": "function", "config": "my_loss", "module": ...}``, never by running code from the file.
A Sequential's config lists its layers. A functional model's layers also carry ``inbound_nodes``: for each
call of the layer in the graph, its arguments, where each symbolic tensor is ``[layer name, call index,
output index]``; ``input_layers`` and ``output_layers`` name the model's inputs and outputs the same way.

Your own classes and functions are found through ``custom_objects={"MyLayer": MyLayer}`` or the decorator
:func:`register_keras_serializable`. A lambda or a nested function (a ``Lambda`` layer's, usually) is
written as Python bytecode with its source beside it, and only run when you trust the file:
``load_model(path, safe_mode=False)``, as in Keras 3.
"""
from __future__ import annotations

import base64
import builtins
import contextlib
import datetime
import dis
import importlib
import inspect
import io
import json
import marshal
import operator
import os
import sys
import tempfile
import threading
import types
import warnings
import zipfile

import numpy as np
from .state import user_stacklevel
from . import losses, metrics, models, optimizers, regularizers
from . import layers as layers_module
from .core import random as random_module
from .errors import ModelFileError
from .layers import initializers
from . import session
from .layers.base import InputLayer, KerasTensor, Layer, Operation, _touch
from .models import Functional, Model, Sequential, compiling
from .models import model as model_module
from .structure import flatten
from .core.tensor import Tensor
from .traces.model import check_folder

__all__ = ["save_model", "load_model", "model_from_json", "clone_model", "register_keras_serializable",
           "get_registered_name", "get_registered_object", "serialize_keras_object", "deserialize_keras_object",
           "custom_object_scope"]

_PACKAGE = "autodiff_viz"
_CONFIG, _METADATA, _WEIGHTS, _OPTIMIZER = "config.json", "metadata.json", "model.weights.npz", "optimizer.weights.npz"
_EXPECTED = (f"a .keras file written by model.save(): a zip archive holding {_CONFIG}, {_METADATA} and "
             f"{_WEIGHTS}")
_OPS = {"add": operator.add, "subtract": operator.sub, "multiply": operator.mul, "divide": operator.truediv,
        "matmul": operator.matmul, "power": operator.pow, "negative": operator.neg, "get_item": operator.getitem}
_PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}"


# ---------------------------------------------------------------------------
# Registered objects and the scope of a load
# ---------------------------------------------------------------------------
_REGISTERED: dict = {}      # "package>name" -> class or function
_NAMES: dict = {}           # class or function -> "package>name"


def register_keras_serializable(package="Custom", name=None):
    """Decorator that makes a class or function of your own loadable by name, as Keras 3's
    ``keras.saving.register_keras_serializable``.

        >>> @adv.saving.register_keras_serializable(package="course")
        ... class Scale(adv.layers.Layer):
        ...     def __init__(self, factor=2.0, **kwargs):
        ...         super().__init__(**kwargs)
        ...         self.factor = factor
        ...     def call(self, x):
        ...         return x * self.factor
        ...     def get_config(self):
        ...         return {**super().get_config(), "factor": self.factor}

    The class is written as ``"registered_name": "course>Scale"`` (``package>name``; ``name`` defaults to
    the class's or function's own name), and :func:`load_model` finds it there without
    ``custom_objects``. The decorated definition must have run before the file is loaded.
    """
    for what, value in (("package", package), ("name", name)):
        if value is not None and (not isinstance(value, str) or not value or ">" in value):
            raise ValueError(f"register_keras_serializable: {what} must be a non-empty string without '>', "
                             f"got {value!r}.")

    def decorator(obj):
        if not callable(obj) or not hasattr(obj, "__name__"):
            raise TypeError(f"register_keras_serializable decorates a class or a function, got "
                            f"{type(obj).__name__}.")
        key = f"{package}>{name or obj.__name__}"
        _REGISTERED[key] = obj
        _NAMES[obj] = key
        return obj
    return decorator


def get_registered_name(obj) -> str:
    """The name ``obj`` (a class or function) is saved under: ``"package>name"`` when registered, else its
    own ``__name__`` (Keras 3)."""
    return _NAMES.get(obj, getattr(obj, "__name__", None))


def get_registered_object(name, custom_objects=None, module_objects=None):
    """The class or function saved as ``name``: from ``custom_objects``, the current
    :func:`custom_object_scope`, the registered objects, then ``module_objects``; None if none has it."""
    for table in (custom_objects or {}, _context()["custom_objects"], _REGISTERED, module_objects or {}):
        if name in table:
            return table[name]
    return None


class _Scopes(threading.local):
    def __init__(self):
        self.stack = [{"custom_objects": {}, "safe_mode": True, "source": None, "live": None, "classes": None}]


_scopes = _Scopes()


def _context() -> dict:
    return _scopes.stack[-1]


@contextlib.contextmanager
def _entered(custom_objects=None, **changes):
    """Run a save or a load with ``custom_objects`` added to the known names and the other settings
    (``safe_mode``, ``source`` for messages, ``live`` for a clone) changed where not None."""
    ctx = dict(_context())
    if custom_objects:
        if not isinstance(custom_objects, dict):
            raise TypeError(f"custom_objects must be a dict {{name: class or function}}, e.g. "
                            f"{{'MyLayer': MyLayer}}; got {type(custom_objects).__name__}.")
        ctx["custom_objects"] = {**ctx["custom_objects"], **custom_objects}
    ctx.update({k: v for k, v in changes.items() if v is not None})
    _scopes.stack.append(ctx)
    try:
        yield ctx
    finally:
        _scopes.stack.pop()


def custom_object_scope(custom_objects):
    """``with adv.saving.custom_object_scope({"MyLayer": MyLayer}): ...``: every load and ``from_config``
    inside knows those names, as Keras 3's ``keras.saving.custom_object_scope``."""
    return _entered(custom_objects=dict(custom_objects))


def _at(where: str) -> str:
    """``where`` prefixed with what is being saved or loaded (``load_model: m.keras``), for messages."""
    source = _context()["source"]
    return f"{source}: {where}" if source else where


# ---------------------------------------------------------------------------
# Where classes and functions live
# ---------------------------------------------------------------------------
def _in_package(module) -> bool:
    return isinstance(module, str) and (module == _PACKAGE or module.startswith(_PACKAGE + "."))


def _public_modules() -> tuple:
    return (layers_module, models, losses, metrics, optimizers, regularizers, random_module, initializers,
            layers_module.activations)


def _module_of(obj) -> str | None:
    """The public module of a class or function of the package (``autodiff_viz.layers`` for ``Dense``),
    else its own module."""
    module = getattr(obj, "__module__", None)
    if _in_package(module):
        for mod in _public_modules():
            if getattr(mod, obj.__name__, None) is obj:
                return mod.__name__
    return module


def _user_class(cls):
    """The class a user wrote, for the functional class ``adv.Model`` makes of it (``MyModel(inputs, outputs)``)."""
    for original, made in model_module._FUNCTIONAL_SUBCLASSES.items():
        if made is cls:
            return original
    return cls


def _import_attr(module, name):
    """``module.name`` (a dotted ``name`` is followed), or None when the module or the name is missing."""
    try:
        obj = sys.modules.get("__main__") if module == "__main__" else importlib.import_module(module)
    except Exception:   # noqa: BLE001  (a missing or broken module is "not found" here)
        return None
    for part in str(name).split("."):
        obj = getattr(obj, part, None)
    return obj


def _unknown(kind, name, module, where):
    shown = f"{kind} {name!r}" + (f" (from module {module!r})" if module else "")
    return TypeError(f"{_at(where)}: unknown {shown}. If it is your own, either pass it when loading: "
                     f"load_model(path, custom_objects={{{name!r}: {name}}}) (also model_from_json and "
                     f"from_config take custom_objects), or decorate its definition with "
                     f"@adv.saving.register_keras_serializable() and run that definition before loading.")


def _refuse_foreign(module, name, where):
    if isinstance(module, str) and module.split(".")[0] in ("keras", "tf_keras", "tensorflow"):
        raise ModelFileError(f"{_at(where)}: {name!r} comes from {module!r}: this config was written by Keras, "
                             "not autodiff_viz. Keras files hold their weights in HDF5 and name Keras' own "
                             "classes, so they are not read here. Build the model again with adv.layers (the "
                             "same names and arguments) and copy the weights with layer.set_weights().")


def _given(registered, name, ctx):
    """What ``custom_objects`` holds under the registered name or the plain name, else the registered object;
    None if neither knows it."""
    custom = ctx["custom_objects"]
    for key in (registered, name):
        if key and key in custom:
            return custom[key]
    return _REGISTERED.get(registered) if registered else None


def _resolve_class(entry, where):
    """The class an entry names: from custom objects, the registered objects, then the package itself
    (by its module, or by class name when the entry has none). A clone's classes are its own."""
    name, module, registered = entry.get("class_name"), entry.get("module"), entry.get("registered_name")
    ctx = _context()
    if ctx["classes"] is not None and (module, name) in ctx["classes"]:
        return ctx["classes"][(module, name)]
    found = _given(registered, name, ctx)
    if found is not None:
        return found
    if _in_package(module):
        found = _import_attr(module, name)
        if inspect.isclass(found):
            return found
    if module is None:
        for mod in _public_modules():
            found = getattr(mod, str(name), None)
            if inspect.isclass(found):
                return found
    _refuse_foreign(module, name, where)
    hits = [obj for key, obj in _REGISTERED.items() if key.rsplit(">", 1)[-1] == name and inspect.isclass(obj)]
    if len(hits) == 1:
        return hits[0]
    if module and not ctx["safe_mode"]:
        found = _import_attr(module, name)
        if inspect.isclass(found):
            return found
    raise _unknown("class", name, module, where)


def _resolve_function(entry, where):
    """The function a ``{"class_name": "function"}`` entry names (as :func:`_resolve_class`; with
    ``safe_mode=False`` also from its module, imported)."""
    name, module, registered = entry.get("config"), entry.get("module"), entry.get("registered_name")
    if not isinstance(name, str):
        raise ModelFileError(f"{_at(where)}: a function entry must name the function (\"config\": its name), "
                             f"got {name!r}.")
    ctx = _context()
    found = _given(registered, name, ctx)
    if found is not None:
        return found
    if _in_package(module) or (module and not ctx["safe_mode"]):
        found = _import_attr(module, name)
        if callable(found):
            return found
    _refuse_foreign(module, name, where)
    hits = [obj for key, obj in _REGISTERED.items() if key.rsplit(">", 1)[-1] == name]
    if len(hits) == 1:
        return hits[0]
    error = _unknown("function", name, module, where)
    if module and ctx["safe_mode"]:
        error = TypeError(f"{error} With safe_mode=False (a file you trust) it is also looked up in its module "
                          f"{module!r}.")
    raise error


# ---------------------------------------------------------------------------
# Objects -> data
# ---------------------------------------------------------------------------
def serialize_keras_object(obj):
    """``obj`` as JSON-ready data, as Keras 3's ``keras.saving.serialize_keras_object``: plain values as
    they are, a layer, model, optimizer, loss, metric or regularizer as ``{"module", "class_name", "config",
    "registered_name"}``, a function by name (a lambda as bytecode), a numpy array, tuple or slice as a
    small entry. A TypeError names what cannot be written and how to make it writable."""
    return _encode(obj, type(obj).__name__ if isinstance(obj, Layer) else "the object")


def _encode(obj, where, tuples=False):
    """``obj`` as JSON-ready data; ``tuples`` keeps tuples apart from lists (in a graph's call arguments,
    where ``h[(slice, 0)]`` and ``h[[slice, 0]]`` differ)."""
    if obj is None or isinstance(obj, (bool, str, int, float)):
        return obj
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.dtype):
        return obj.name
    if isinstance(obj, tuple):
        items = [_encode(o, f"{where}[{i}]", tuples) for i, o in enumerate(obj)]
        return {"class_name": "__tuple__", "config": {"value": items}} if tuples else items
    if isinstance(obj, list):
        return [_encode(o, f"{where}[{i}]", tuples) for i, o in enumerate(obj)]
    if isinstance(obj, dict):
        bad = [k for k in obj if not isinstance(k, str)]
        if bad:
            raise TypeError(f"{_at(where)}: a config dict may only have string keys (JSON's), got {bad[0]!r}.")
        return {k: _encode(v, f"{where}[{k!r}]", tuples) for k, v in obj.items()}
    if isinstance(obj, (np.ndarray, Tensor)):
        arr = np.asarray(obj._value if isinstance(obj, Tensor) else obj)
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"{_at(where)}: an array of dtype {arr.dtype} cannot be written (numbers only).")
        return {"class_name": "__numpy__", "config": {"value": arr.tolist(), "dtype": arr.dtype.name,
                                                      "shape": list(arr.shape)}}
    if isinstance(obj, slice):
        return {"class_name": "__slice__", "config": {k: _encode(getattr(obj, k), where) for k in
                                                      ("start", "stop", "step")}}
    if obj is Ellipsis:
        return {"class_name": "__ellipsis__", "config": None}
    if isinstance(obj, Layer):
        return _layer_entry(obj, where)
    if isinstance(obj, KerasTensor):
        raise TypeError(f"{_at(where)}: a symbolic tensor ({obj.name}) cannot be part of a config; symbolic "
                        "tensors belong in a functional model's graph.")
    live = _context()["live"]
    if inspect.isclass(obj):
        return {"class_name": "__class__", "config": _class_reference(obj)}
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)):
        return _live_entry(obj, live) if live is not None else _function_entry(obj, where)
    try:
        return _object_entry(obj, where)
    except TypeError:
        if live is not None:
            return _live_entry(obj, live)
        raise


def _live_entry(obj, live):
    """A clone's reference to an object it shares with the original (a function, a constraint object)."""
    key = str(len(live))
    live[key] = obj
    return {"class_name": "__live__", "config": key}


def _class_reference(cls) -> dict:
    """``{"module", "class_name", "registered_name"}`` of a class (a clone also notes the class itself)."""
    cls = _user_class(cls)
    module = _module_of(cls)
    classes = _context()["classes"]
    if classes is not None:
        classes[(module, cls.__name__)] = cls
    return {"module": module, "class_name": cls.__name__,
            "registered_name": None if _in_package(cls.__module__) else get_registered_name(cls)}


def _entry(cls, config) -> dict:
    """Keras 3's entry of an object: ``{"module", "class_name", "config", "registered_name"}``."""
    reference = _class_reference(cls)
    return {"module": reference["module"], "class_name": reference["class_name"], "config": config,
            "registered_name": reference["registered_name"]}


def _function_entry(fn, where):
    name, qualname = getattr(fn, "__name__", None), getattr(fn, "__qualname__", "")
    if isinstance(fn, types.FunctionType) and (name == "<lambda>" or "<locals>" in qualname):
        return _code_entry(fn, where)
    module = _module_of(fn)
    if not name or not module:
        raise TypeError(f"{_at(where)}: the function {fn!r} has no name or module to be found again by. "
                        "Use a function defined with def at the top level of a module.")
    return {"module": module, "class_name": "function", "config": name,
            "registered_name": None if _in_package(module) else _NAMES.get(fn)}


def _global_names(code) -> set:
    """The global names the code object (and the code nested in it) reads."""
    names = set()
    for ins in dis.get_instructions(code):
        if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME") and isinstance(ins.argval, str):
            names.add(ins.argval)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _plain(value) -> bool:
    if value is None or isinstance(value, (bool, int, float, str, np.generic, np.ndarray)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return False


_ENCODING: set = set()      # ids of the functions being written (a function that refers to itself)


def _code_entry(fn, where):
    """A lambda or nested function as data: its bytecode (``marshal``, base64), its source for reading,
    its defaults, the values it closes over and the globals it reads (modules by name, functions and
    classes by reference, plain values as such; anything else must come from ``custom_objects``)."""
    if id(fn) in _ENCODING:
        raise TypeError(f"{_at(where)}: the function {fn.__qualname__} refers to itself; write it with def at the "
                        "top level of a module.")
    _ENCODING.add(id(fn))
    try:
        code = fn.__code__
        closure = []
        for var, cell in zip(code.co_freevars, fn.__closure__ or ()):
            try:
                value = cell.cell_contents
            except ValueError:
                raise TypeError(f"{_at(where)}: {fn.__qualname__} closes over {var!r}, which has no value yet.") \
                    from None
            if not (_plain(value) or isinstance(value, (types.FunctionType, type))):
                raise TypeError(f"{_at(where)}: {fn.__qualname__} closes over {var!r} = a {type(value).__name__}, "
                                "which cannot be written as data. Close over numbers, strings or arrays only, or "
                                "write the code as a Layer subclass with get_config().")
            closure.append(_encode(value, f"{where} (closed-over {var!r})", tuples=True))
        given = {}
        for var in sorted(_global_names(code)):
            if var not in fn.__globals__:
                continue        # a builtin such as len, or a name defined later
            value = fn.__globals__[var]
            if isinstance(value, types.ModuleType):
                given[var] = {"module": value.__name__}
            elif _plain(value) or isinstance(value, (types.FunctionType, type)):
                try:
                    given[var] = {"value": _encode(value, f"{where} (global {var!r})", tuples=True)}
                except TypeError:
                    given[var] = {"missing": type(value).__name__}
            else:
                given[var] = {"missing": type(value).__name__}
        return {"class_name": "__lambda__", "config": {
            "name": fn.__name__, "source": _source(fn), "python": _PYTHON,
            "code": base64.b64encode(marshal.dumps(code)).decode("ascii"),
            "defaults": _encode(list(fn.__defaults__ or ()), where, tuples=True),
            "kwdefaults": _encode(dict(fn.__kwdefaults__ or {}), where, tuples=True),
            "closure": closure, "globals": given}}
    finally:
        _ENCODING.discard(id(fn))


def _source(fn) -> str | None:
    try:
        text = inspect.getsource(fn).strip()
    except (OSError, TypeError):
        return None
    return text if len(text) <= 400 else text[:400] + " ..."


def _init_parameters(cls):
    """``(names, takes **kwargs, required names)`` of ``cls.__init__`` (after ``self``)."""
    try:
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    except (TypeError, ValueError):
        return [], True, []
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    names = [p.name for p in params if p.kind in kinds]
    required = [p.name for p in params if p.kind in kinds and p.default is p.empty]
    return names, any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params), required


_LAYER_MEMBERS = frozenset(dir(Layer)) - {"name", "trainable", "dtype"}
_BASE_PARAMETERS = ((Layer, ("trainable", "name", "dtype")),
                    (optimizers.Optimizer, ("learning_rate", "name", "clipnorm", "clipvalue", "global_clipnorm",
                                            "weight_decay")))


def _attribute(obj, name):
    """``(found, value)``: the value of constructor argument ``name`` kept on ``obj`` (an attribute of that
    name, or an entry of its ``fn_kwargs``); a schedule or callable learning rate as given."""
    fn_kwargs = getattr(obj, "fn_kwargs", None)
    if isinstance(fn_kwargs, dict) and name in fn_kwargs:
        return True, fn_kwargs[name]
    for attr in (("_learning_rate",) if name == "learning_rate" else ()) + (name,):
        try:
            value = getattr(obj, attr)
        except Exception:   # noqa: BLE001  (a property that cannot answer: not a config value)
            continue
        if not inspect.ismethod(value):
            return True, value
    return False, None


def constructor_config(obj, given=None) -> dict:
    """The arguments that rebuild ``obj``: each parameter of its class's ``__init__`` (and, behind
    ``**kwargs``, of its package base class), valued from ``given`` (its ``get_config()``) or else from
    the attribute that keeps it. A layer's members (``weights``, ``output`` ...) never count as arguments.
    The ``get_config`` of the package's optimizers and losses."""
    given = {} if given is None else given
    names, var_kw, _ = _init_parameters(type(obj))
    if var_kw:
        for base, extra in _BASE_PARAMETERS:
            if isinstance(obj, base):
                names += [n for n in extra if n not in names]
    skip = _LAYER_MEMBERS if isinstance(obj, Layer) else ()
    out = {}
    for n in names:
        if n in given:
            out[n] = given[n]
        elif n not in skip:
            found, value = _attribute(obj, n)
            if found:
                out[n] = value
    fn_kwargs = getattr(obj, "fn_kwargs", None)
    if var_kw and isinstance(fn_kwargs, dict):
        out.update({k: v for k, v in fn_kwargs.items() if k not in out})
    return out


def _check_covers(cls, config, where, read_from="its get_config() does not return") -> None:
    """Refuse, at save time, a class of one's own whose config leaves out a required argument of its
    ``__init__`` (it could not be rebuilt), unless the class rebuilds itself with its own ``from_config``."""
    from_config = getattr(cls, "from_config", None)
    if from_config is not None and not _in_package(getattr(from_config, "__module__", None)):
        return
    _, _, required = _init_parameters(cls)
    missing = [n for n in required if n not in config]
    if missing:
        shown = ", ".join(f"{n!r}: self.{n}" for n in missing)
        base = "**super().get_config(), " if issubclass(cls, Layer) else ""
        raise TypeError(f"{_at(where)}: {cls.__name__}.__init__ takes {missing}, which {read_from}, so it could "
                        f"not be rebuilt from the saved config. Add them (as Keras 3 asks): def get_config(self): "
                        f"return {{{base}{shown}}}")


def _object_config(obj, where) -> dict:
    """The config of an optimizer, loss, metric, regularizer, schedule or object of one's own. A class of
    one's own with a ``get_config`` of its own gives it; the package's classes (whose ``get_config``, where
    there is one, may not list every argument) are read from their constructor and attributes."""
    cls = type(obj)
    get_config = getattr(cls, "get_config", None)
    if get_config is not None and not _in_package(getattr(get_config, "__module__", None)):
        config = obj.get_config()
        if not isinstance(config, dict):
            raise TypeError(f"{_at(where)}: {cls.__name__}.get_config() returned {type(config).__name__}, not a "
                            "dict of its constructor's arguments.")
        _check_covers(cls, config, where)
        return config
    if cls.__init__ is object.__init__ or not callable(getattr(cls, "__init__", None)) or \
            cls.__module__ == "builtins":
        raise TypeError(f"{_at(where)}: a {cls.__name__} ({obj!r:.60}) cannot be written as data. Use a name "
                        "the package knows, a function defined with def (registered with "
                        "@adv.saving.register_keras_serializable()), or an object whose class has get_config().")
    given = obj.get_config() if get_config is not None else {}
    config = constructor_config(obj, given if isinstance(given, dict) else {})
    if not _in_package(cls.__module__):
        _check_covers(cls, config, where, "it keeps under no attribute of the same name and has no get_config() "
                                          "to return")
    return config


def _object_entry(obj, where):
    config = _object_config(obj, where)
    return _entry(type(obj), _encode(config, f"{where} ({type(obj).__name__})"))


def _layer_config(layer, where) -> dict:
    """A layer's config for its entry: its ``get_config()``, for the package's layers completed with any
    constructor argument it leaves out (``name``, ``trainable``, ``dtype`` ...), read from the layer."""
    if isinstance(layer, InputLayer):
        return {"batch_shape": list(layer.batch_shape), "dtype": layer.dtype if layer._explicit_dtype else None,
                "name": layer.name}
    if isinstance(layer, Operation):
        op = next((k for k, fn in _OPS.items() if fn is layer.fn), None)
        if op is None:
            raise TypeError(f"{_at(where)}: the graph step {layer.name!r} runs {layer.fn!r}, which cannot be "
                            "written as data. Write it as a layer: adv.layers.Lambda(function) (saved as code, "
                            "loaded with safe_mode=False) or a Layer subclass with get_config().")
        return {"name": layer.name, "op": op}
    given = layer.get_config()
    if not isinstance(given, dict):
        raise TypeError(f"{_at(where)}: {type(layer).__name__}.get_config() returned {type(given).__name__}, not "
                        "a dict.")
    if isinstance(layer, (Sequential, Functional)):
        return given
    cls = type(layer)
    if _in_package(cls.__module__):
        found = constructor_config(layer, given)
        return {**given, **{k: v for k, v in found.items() if k not in given}}
    _check_covers(_user_class(cls), given, where)
    return given


def _layer_entry(layer, where):
    config = _layer_config(layer, where)
    entry = _entry(type(layer), _encode(config, where))
    if isinstance(layer, Model) and not isinstance(layer, (Sequential, Functional)):
        shape = layer.__dict__.get("_build_input_shape")
        if layer.built and shape is not None:
            entry["build_config"] = {"input_shape": _encode(shape, where)}
    return entry


# ---------------------------------------------------------------------------
# Data -> objects
# ---------------------------------------------------------------------------
def deserialize_keras_object(config, custom_objects=None, safe_mode=None, **kwargs):
    """The object :func:`serialize_keras_object` wrote (Keras 3's ``keras.saving.deserialize_keras_object``).

    ``custom_objects`` names classes and functions of your own (``{"MyLayer": MyLayer}``). Python code (a
    lambda) is refused unless ``safe_mode=False``; None keeps the setting of the load it runs in (safe by
    default). An object that is already rebuilt (not data) is given back as it is.
    """
    if kwargs:
        raise TypeError(f"deserialize_keras_object: unexpected keyword argument(s) {sorted(kwargs)}.")
    with _entered(custom_objects=custom_objects, safe_mode=safe_mode):
        return _decode(config, "the config")


def _is_entry(data) -> bool:
    return isinstance(data, dict) and isinstance(data.get("class_name"), str) and "config" in data


def _decode(data, where):
    if isinstance(data, list):
        return [_decode(d, f"{where}[{i}]") for i, d in enumerate(data)]
    if isinstance(data, dict):
        if _is_entry(data):
            return _decode_entry(data, where)
        return {k: _decode(v, f"{where}[{k!r}]") for k, v in data.items()}
    return data


def _decode_entry(entry, where):
    name, config = entry["class_name"], entry["config"]
    try:
        if name == "__tuple__":
            return tuple(_decode(config["value"], where))
        if name == "__numpy__":
            return np.array(config["value"], dtype=config["dtype"]).reshape(config.get("shape", -1))
        if name == "__slice__":
            return slice(*(_decode(config[k], where) for k in ("start", "stop", "step")))
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelFileError(f"{_at(where)}: a damaged {name} entry ({exc!r}); expected what "
                             "serialize_keras_object writes.") from None
    if name == "__ellipsis__":
        return Ellipsis
    if name == "__lambda__":
        return _decode_code(config, where)
    if name == "__live__":
        live = _context()["live"]
        if live is None or config not in live:
            raise ModelFileError(f"{_at(where)}: a reference to a live object, which only a clone_model in "
                                 "progress can resolve; this config was not written to be stored.")
        return live[config]
    if name == "__class__":
        return _resolve_class(config if isinstance(config, dict) else {}, where)
    if name == "__keras_tensor__":
        raise ModelFileError(f"{_at(where)}: a symbolic tensor outside a functional model's inbound_nodes.")
    if name == "function":
        return _resolve_function(entry, where)
    cls = _resolve_class(entry, where)
    if not inspect.isclass(cls):
        if callable(cls) and config is None:
            return cls
        raise TypeError(f"{_at(where)}: {name!r} should be a class (its entry has a config), but the name gives "
                        f"{cls!r}. Check custom_objects.")
    if issubclass(cls, Layer):
        return _make_layer(cls, entry, where)
    return _construct(cls, _decode(config if config is not None else {}, where), where)


def _construct(cls, config, where, layer_name=None):
    """``cls`` rebuilt from its decoded ``config``: through its own ``from_config`` when it has one of its
    own, else ``cls(**config)``, leaving out the base arguments (``name``, ``trainable``, ``dtype``) its
    ``__init__`` does not take (a layer then gets its name and ``trainable`` set after)."""
    if not isinstance(config, dict):
        raise ModelFileError(f"{_at(where)}: the config of {cls.__name__} must be a dict, got "
                             f"{type(config).__name__}.")
    from_config = getattr(cls, "from_config", None)
    own = from_config is not None and not _in_package(getattr(from_config, "__module__", None))
    later = {}
    if not own:
        names, var_kw, _ = _init_parameters(cls)
        if not var_kw:
            later = {k: config[k] for k in ("name", "trainable", "dtype") if k in config and k not in names}
            config = {k: v for k, v in config.items() if k not in later}
    try:
        obj = cls.from_config(config) if own else cls(**config)
    except (TypeError, ValueError) as exc:
        fix = "" if _in_package(cls.__module__) else (
            f" {cls.__name__}.get_config() must return every argument of its __init__ (config = "
            "super().get_config(); config.update(units=self.units)), or the class must define "
            "from_config(cls, config).")
        raise type(exc)(f"{_at(where)}: {cls.__name__} could not be rebuilt from its config "
                        f"{_short(config)}: {exc}.{fix}") from exc
    if isinstance(obj, Layer):
        name = layer_name or later.get("name")
        if isinstance(name, str) and obj.name != name and not obj.built:
            obj._name = name
        if "trainable" in later:
            obj.trainable = bool(later["trainable"])
    return obj


def _short(config) -> str:
    text = repr(config)
    return text if len(text) <= 200 else text[:200] + " ...}"


def _make_layer(cls, entry, where):
    config = entry.get("config")
    if cls is InputLayer:
        if not isinstance(config, dict):
            raise ModelFileError(f"{_at(where)}: an InputLayer's config must be a dict with batch_shape.")
        return InputLayer(batch_shape=config.get("batch_shape"), shape=config.get("shape"),
                          dtype=config.get("dtype"), name=config.get("name"))
    if cls is Operation:
        op = config.get("op") if isinstance(config, dict) else None
        if op not in _OPS:
            raise ModelFileError(f"{_at(where)}: a graph step of unknown op {op!r}; the ops that are written as "
                                 f"data are {sorted(_OPS)}.")
        return Operation(_OPS[op], op, name=config.get("name"))
    if issubclass(cls, Model):
        from_config = cls.from_config
        if _in_package(getattr(from_config, "__module__", None)):
            model = from_config(config)
        else:
            model = _construct(cls, _decode(config if config is not None else {}, where), where)
        _build(model, entry.get("build_config"), where)
        return model
    name = config.get("name") if isinstance(config, dict) else None
    return _construct(cls, _decode(config if config is not None else {}, where), where, layer_name=name)


def _build(model, build_config, where) -> None:
    """Build a model that is not built yet (a Sequential without Input, a subclassed model) from the input
    shape its first call had, as Keras 3's ``build_from_config``."""
    if model.built or not isinstance(build_config, dict) or build_config.get("input_shape") is None:
        return
    shape = _decode(build_config["input_shape"], where)
    shapes = shape if isinstance(shape, list) and shape and isinstance(shape[0], (list, tuple)) else [shape]
    try:
        shapes = [tuple(None if n is None else int(n) for n in one) for one in shapes]
    except (TypeError, ValueError):
        raise ModelFileError(f"{_at(where)}: build_config input_shape must be a shape (or a list of shapes), "
                             f"got {shape!r}.") from None
    models.run_build_batch(model, shapes)


def _decode_code(config, where):
    """Python code written by :func:`_code_entry`, as a function; refused in safe mode."""
    if not isinstance(config, dict):
        raise ModelFileError(f"{_at(where)}: a damaged __lambda__ entry (its config must be a dict).")
    shown = config.get("source") or f"a function named {config.get('name', '?')!r}"
    if _context()["safe_mode"]:
        raise ValueError(f"{_at(where)} holds Python code ({shown}), and rebuilding it would run code from the "
                         "file, so it is refused by default, as Keras 3 refuses a Lambda layer's lambda. If you "
                         "trust the file, load it with safe_mode=False (load_model(path, safe_mode=False), "
                         "model_from_json(text, safe_mode=False)). Or replace the lambda by a function defined "
                         "with def and registered with @adv.saving.register_keras_serializable() (or passed in "
                         "custom_objects), or by a Layer subclass with get_config().")
    if config.get("python") != _PYTHON:
        raise ModelFileError(f"{_at(where)}: the code of {shown} is bytecode of Python {config.get('python')}, "
                             f"which Python {_PYTHON} cannot run. Load the file with Python "
                             f"{config.get('python')}, or rebuild that layer in code.")
    try:
        code = marshal.loads(base64.b64decode(config["code"]))
    except (KeyError, TypeError, ValueError, EOFError) as exc:
        raise ModelFileError(f"{_at(where)}: the code of {shown} is damaged ({exc!r}).") from None
    if not isinstance(code, types.CodeType):
        raise ModelFileError(f"{_at(where)}: the code of {shown} is not a code object.")
    custom = _context()["custom_objects"]
    namespace = {"__builtins__": builtins}
    missing = []
    for var, spec in (config.get("globals") or {}).items():
        if var in custom:
            namespace[var] = custom[var]
        elif "module" in spec:
            try:
                namespace[var] = importlib.import_module(spec["module"])
            except ImportError as exc:
                raise ModelFileError(f"{_at(where)}: {shown} uses the module {spec['module']!r}, which cannot "
                                     f"be imported here ({exc}).") from None
        elif "value" in spec:
            namespace[var] = _decode(spec["value"], f"{where} (global {var!r})")
        else:
            missing.append(f"{var} (a {spec.get('missing', 'value')})")
    if missing:
        raise TypeError(f"{_at(where)}: {shown} uses {', '.join(missing)}, which the file cannot hold. Pass "
                        f"them when loading: custom_objects={{{', '.join(repr(m.split()[0]) for m in missing)}: "
                        "...}.")
    closure = tuple(types.CellType(_decode(v, where)) for v in config.get("closure") or ())
    if len(closure) != len(code.co_freevars):
        raise ModelFileError(f"{_at(where)}: the code of {shown} closes over {len(code.co_freevars)} values, the "
                             f"file holds {len(closure)}.")
    fn = types.FunctionType(code, namespace, config.get("name") or code.co_name,
                            tuple(_decode(config.get("defaults") or [], where)) or None, closure or None)
    fn.__kwdefaults__ = _decode(config.get("kwdefaults"), where) or None
    return fn


# ---------------------------------------------------------------------------
# Sequential and functional configs
# ---------------------------------------------------------------------------
def sequential_config(model) -> dict:
    """What ``Sequential.get_config()`` returns (see :meth:`autodiff_viz.Sequential.get_config`)."""
    where = f"model {model.name!r}"
    entries = []
    spec = model._input_spec
    if spec is not None:
        entries.append(_entry(InputLayer, {
            "batch_shape": list(spec.shape), "dtype": None if spec.dtype is None else np.dtype(spec.dtype).name,
            "name": spec.name}))
    entries += [_layer_entry(layer, f"{where} > layer {layer.name!r}") for layer in model._layers]
    config = {"name": model.name, "trainable": model.trainable, "dtype": model.dtype, "layers": entries}
    shape = model.__dict__.get("_build_input_shape")
    if spec is None and model.built and shape is not None:
        config["build_input_shape"] = _encode(shape, where)
    return config


def functional_config(model) -> dict:
    """What a functional model's ``get_config()`` returns (see :meth:`autodiff_viz.models.Functional.get_config`)."""
    where = f"model {model.name!r}"
    mine = {id(n) for n in model._nodes}
    index, calls, named = {}, {}, {}
    for layer in model._functional_layers:
        other = named.setdefault(layer.name, layer)
        if other is not layer:
            raise ValueError(f"{_at(where)}: two layers are named {layer.name!r} ({type(other).__name__} and "
                             f"{type(layer).__name__}); a saved graph names each layer once. Give them distinct "
                             "names (name=...) when you make them.")
        nodes = layer._inbound_nodes[:1] if isinstance(layer, InputLayer) else \
            [n for n in layer._inbound_nodes if id(n) in mine]
        calls[id(layer)] = nodes
        for i, node in enumerate(nodes):
            index[id(node)] = i

    def reference(t):
        node, i = t._keras_history
        return [node.layer.name, index[id(node)], i]

    def arguments(obj, at):
        if isinstance(obj, KerasTensor):
            return {"class_name": "__keras_tensor__", "config": {"shape": list(obj.shape), "dtype": obj.dtype,
                                                                 "keras_history": reference(obj)}}
        if isinstance(obj, list):
            return [arguments(o, at) for o in obj]
        if isinstance(obj, tuple):
            return {"class_name": "__tuple__", "config": {"value": [arguments(o, at) for o in obj]}}
        if isinstance(obj, dict):
            return {k: arguments(v, at) for k, v in obj.items()}
        return _encode(obj, at, tuples=True)

    def structure(obj):
        if isinstance(obj, KerasTensor):
            return reference(obj)
        if isinstance(obj, dict):
            return {k: structure(v) for k, v in obj.items()}
        return [structure(o) for o in obj]

    for t in model._inputs_flat:
        layer = t._keras_history[0].layer if t._keras_history else None
        if not isinstance(layer, InputLayer):
            raise ValueError(f"{_at(where)}: input {t.name!r} is not made by adv.layers.Input, so the graph cannot "
                             "be written from its inputs. Make the model's inputs with adv.layers.Input(shape).")
    entries = []
    for layer in model._functional_layers:
        at = f"{where} > layer {layer.name!r}"
        entry = _layer_entry(layer, at)
        entry["name"] = layer.name
        entry["inbound_nodes"] = [] if isinstance(layer, InputLayer) else [
            {"args": arguments(list(node.args), at), "kwargs": arguments(dict(node.kwargs), at)}
            for node in calls[id(layer)]]
        entries.append(entry)
    return {"name": model.name, "trainable": model.trainable, "dtype": model.dtype, "layers": entries,
            "input_layers": structure(model._input_struct), "output_layers": structure(model._output_struct)}


class _NotReady(Exception):
    """A graph call whose input tensors are not all made yet."""


def _is_reference(data) -> bool:
    return (isinstance(data, list) and len(data) == 3 and isinstance(data[0], str)
            and all(isinstance(i, int) and not isinstance(i, bool) for i in data[1:]))


def _functional_from_config(cls, config, where):
    entries = config.get("layers")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ModelFileError(f"{_at(where)}: 'layers' must be a list of layer entries.")
    created, pending, order, made = {}, {}, [], {}
    for entry in entries:
        name = entry.get("name") or (entry.get("config") or {}).get("name")
        if not isinstance(name, str) or name in created:
            raise ModelFileError(f"{_at(where)}: each layer entry needs a name of its own, got {name!r}.")
        layer = _decode_entry(entry, f"{where} > layer {name!r}")
        if not isinstance(layer, Layer):
            raise ModelFileError(f"{_at(where)}: the entry of {name!r} is a {type(layer).__name__}, not a layer.")
        created[name], pending[name] = layer, list(entry.get("inbound_nodes") or [])
        order.append(name)
        if isinstance(layer, InputLayer):
            made[(name, 0)] = [layer._tensor]

    def tensor(ref, at):
        if not _is_reference(ref):
            raise ModelFileError(f"{_at(at)}: a tensor must be written [layer name, call, output], got {ref!r}.")
        name, call, i = ref
        if name not in created:
            raise ModelFileError(f"{_at(at)}: it reads a tensor of layer {name!r}, which the config does not have.")
        if (name, call) not in made:
            raise _NotReady(ref)
        outputs = made[(name, call)]
        if not 0 <= i < len(outputs):
            raise ModelFileError(f"{_at(at)}: it reads output {i} of layer {name!r}, which has {len(outputs)}.")
        return outputs[i]

    def arguments(data, at):
        if isinstance(data, list):
            return [arguments(d, at) for d in data]
        if isinstance(data, dict):
            if data.get("class_name") == "__keras_tensor__":
                return tensor((data.get("config") or {}).get("keras_history"), at)
            if data.get("class_name") == "__tuple__" and isinstance(data.get("config"), dict):
                return tuple(arguments(data["config"].get("value", []), at))
            if _is_entry(data):
                return _decode_entry(data, at)
            return {k: arguments(v, at) for k, v in data.items()}
        return data

    calls_done = dict.fromkeys(order, 0)
    while any(pending.values()):
        progressed = False
        for name in order:
            layer, queue = created[name], pending[name]
            while queue:
                at = f"{where} > layer {name!r} (call {calls_done[name]})"
                node = queue[0]
                if not isinstance(node, dict):
                    raise ModelFileError(f"{_at(at)}: an inbound node must be {{\"args\": [...], \"kwargs\": "
                                         f"{{...}}}}, got {node!r:.80}.")
                try:
                    args = arguments(node.get("args", []), at)
                    kwargs = arguments(node.get("kwargs", {}), at)
                except _NotReady:
                    break
                outputs = layer(*args, **kwargs)
                made[(name, calls_done[name])] = flatten(outputs)[0]
                calls_done[name] += 1
                queue.pop(0)
                progressed = True
        if not progressed:
            stuck = next(n for n in order if pending[n])
            raise ModelFileError(f"{_at(where)}: the graph cannot be rebuilt: call {calls_done[stuck]} of layer "
                                 f"{stuck!r} reads tensors that no call of the config makes. The config is "
                                 "damaged or was edited by hand.")

    def structure(data, at):
        if _is_reference(data):
            return tensor(data, at)
        if isinstance(data, dict):
            return {k: structure(v, at) for k, v in data.items()}
        if isinstance(data, list):
            return [structure(d, at) for d in data]
        raise ModelFileError(f"{_at(at)}: must be a tensor [layer name, call, output] or a list or dict of them, "
                             f"got {data!r:.80}.")

    try:
        inputs = structure(config.get("input_layers"), f"{where} input_layers")
        outputs = structure(config.get("output_layers"), f"{where} output_layers")
    except _NotReady as exc:
        raise ModelFileError(f"{_at(where)}: the model's inputs or outputs name {exc.args[0]}, which no call of the "
                             "config makes.") from None
    kwargs = {k: config[k] for k in ("name", "trainable", "dtype") if config.get(k) is not None}
    model_cls = Functional if cls is Model else cls
    try:
        model = model_cls(inputs=inputs, outputs=outputs, **kwargs)
    except TypeError as exc:
        raise TypeError(f"{_at(where)}: {cls.__name__}(inputs, outputs, name=...) failed: {exc}. A Model subclass "
                        "saved as a functional model must take inputs, outputs and **kwargs in __init__ (and pass "
                        "them to super().__init__), or define from_config.") from exc
    position = {id(created[n]): i for i, n in enumerate(order)}
    model._functional_layers = sorted(model._functional_layers, key=lambda layer: position.get(id(layer), -1))
    _touch()
    return model


def _sequential_from_config(cls, config, where):
    entries = config.get("layers")
    if not isinstance(entries, list):
        raise ModelFileError(f"{_at(where)}: 'layers' must be a list of layer entries.")
    model = cls(name=config.get("name"), dtype=config.get("dtype"))
    for i, entry in enumerate(entries):
        name = (entry.get("config") or {}).get("name") if isinstance(entry, dict) else None
        layer = _decode(entry, f"{where} > layer {name or i!r}")
        if not isinstance(layer, Layer):
            raise ModelFileError(f"{_at(where)}: layer {i} of the config is a {type(layer).__name__}, not a layer.")
        model.add(layer)
    shape = config.get("build_input_shape")
    if shape is not None and not model.built:
        _build(model, {"input_shape": shape}, where)
    if config.get("trainable") is False:
        model.trainable = False
    return model


def model_from_config(cls, config, custom_objects=None, safe_mode=None):
    """What ``Model.from_config`` does (see :meth:`autodiff_viz.Model.from_config`)."""
    if isinstance(config, dict) and _is_entry(config) and isinstance(config.get("config"), dict) \
            and "layers" in config["config"]:
        config = config["config"]       # a whole entry (to_json's), as Keras 3 accepts
    if not isinstance(config, dict):
        raise TypeError(f"{cls.__name__}.from_config: the config must be a dict (what get_config() returns), "
                        f"got {type(config).__name__}.")
    with _entered(custom_objects=custom_objects, safe_mode=safe_mode):
        where = f"model {config.get('name', cls.__name__)!r}"
        if "layers" in config and "input_layers" in config:
            if issubclass(cls, Sequential):
                raise ValueError(f"{_at(where)}: this is a functional model's config (it has input_layers); "
                                 "rebuild it with adv.Model.from_config(config).")
            return _functional_from_config(cls, config, where)
        if "layers" in config and (issubclass(cls, Sequential) or cls in (Model, Functional)):
            return _sequential_from_config(cls if issubclass(cls, Sequential) else Sequential, config, where)
        if cls in (Model, Functional):
            raise ValueError(f"{_at(where)}: {cls.__name__}.from_config needs a functional model's config (with "
                             f"layers, input_layers and output_layers); got keys {sorted(config)}.")
        return _construct(cls, _decode(config, where), where, layer_name=config.get("name"))


# ---------------------------------------------------------------------------
# The compile state
# ---------------------------------------------------------------------------
def _compile_config(model, paths):
    """``(compile_config, optimizer arrays)`` of a compiled model, or ``(None, None)``."""
    opt = model.optimizer
    if opt is None:
        return None, None
    compiled = model._compile_metrics is not None
    config = {"optimizer": _encode(opt, "the optimizer"),
              "loss": _encode(model.loss, "the loss"),
              "loss_weights": _encode(model.loss_weights, "loss_weights"),
              "metrics": _encode(model._metric_specs, "metrics") if compiled else None,
              "weighted_metrics": _encode(model._weighted_specs, "weighted_metrics") if compiled else None}
    by_id = {v._id: p for p, v in paths.items()}
    excluded = [by_id[i] for i in sorted(getattr(opt, "_no_decay_ids", ())) if i in by_id]
    names = list(getattr(opt, "_no_decay_names", ()))
    if excluded or names:
        config["exclude_from_weight_decay"] = {"weights": excluded, "var_names": names}
    arrays = {"iterations": np.asarray(int(opt.iterations), dtype=np.int64)}
    for vid, state in (getattr(opt, "_state", None) or {}).items():
        if vid in by_id and isinstance(state, dict):
            for slot, value in state.items():
                arrays[f"{slot}/{by_id[vid]}"] = np.asarray(value)
    return config, arrays


def _compile_objects(config, where):
    if not isinstance(config, dict):
        raise ModelFileError(f"{_at(where)}: compile_config must be a dict, got {type(config).__name__}.")
    out = {k: _decode(config.get(k), f"{where} {k}") for k in
           ("optimizer", "loss", "loss_weights", "metrics", "weighted_metrics")}
    if not isinstance(out["optimizer"], optimizers.Optimizer):
        raise ModelFileError(f"{_at(where)}: compile_config's optimizer is a {type(out['optimizer']).__name__}, "
                             "not an optimizer.")
    return out


def _optimizer_state(opt, stored, paths, source):
    """``(iterations, {path: {slot: array}})`` read from ``stored``, or a ModelFileError listing every way
    it does not fit the optimizer and the model."""
    stored = dict(stored)
    iterations = stored.pop("iterations", None)
    problems = []
    if iterations is None or iterations.shape != () or iterations.dtype.kind not in "iu" or int(iterations) < 0:
        problems.append("iterations: missing, or not one whole number ≥ 0")
    slots = tuple(getattr(opt, "slot_names", ()))
    state: dict = {}
    for key, arr in stored.items():
        slot, _, path = key.partition("/")
        if path not in paths:
            problems.append(f"{key}: {path!r} is not a weight of the model")
        elif slot not in slots:
            problems.append(f"{key}: {type(opt).__name__} has no slot {slot!r} (its slots: {list(slots)})")
        elif arr.shape != paths[path].shape:
            problems.append(f"{key}: shape {arr.shape}, the weight has {paths[path].shape}")
        elif arr.dtype.kind not in "fiu":
            problems.append(f"{key}: {arr.dtype} values, not numbers")
        else:
            state.setdefault(path, {})[slot] = arr
    problems += [f"{path}: slots {sorted(have)}, {type(opt).__name__} keeps {sorted(slots)}"
                 for path, have in state.items() if set(have) != set(slots)]
    if problems:
        raise ModelFileError(f"load_model: {source} does not fit the model's optimizer ({type(opt).__name__}); "
                             "nothing was loaded. Load with compile=False to leave the optimizer out.\n  - "
                             + "\n  - ".join(problems))
    return int(iterations), state


# ---------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------
def _keras_path(filepath, what):
    path = model_module.path_of(filepath, what, ".keras")
    if path.endswith(".keras"):
        return path
    hint = ("An '.npz' file holds weights alone: model.save_weights(path) writes one, and "
            "model.load_weights(path) reads it into a model built in code." if what == "load_model" else
            "For the weights alone, model.save_weights(path) writes an '.npz' file (read by model.load_weights).")
    if path.endswith((".h5", ".hdf5")):
        hint = "Keras' legacy HDF5 format is not supported here (no h5py). " + hint
    raise ValueError(f"{what}: the file name must end in '.keras' (e.g. 'model.keras'), got {path!r}. {hint}")


def save_model(model, filepath, overwrite=True) -> None:
    """Write ``model`` to a ``.keras`` file: what ``model.save(filepath)`` does (see the module docstring).

    Everything is checked and turned into data before the file is touched; it is then written to a
    temporary file in the same folder and renamed over ``filepath``, so a save that fails leaves the file
    that was there (if any) as it was. ``overwrite=False`` refuses an existing file.
    """
    path = _keras_path(filepath, "save")
    if not isinstance(model, Model):
        raise TypeError(f"save: expected a model (adv.Sequential, adv.Model), got {type(model).__name__}.")
    check_folder("save", path)
    if os.path.isdir(path):
        raise IsADirectoryError(f"save: {path} is a folder; give a file name ending in '.keras'.")
    if not overwrite and os.path.exists(path):
        raise FileExistsError(f"save: {path} exists; pass overwrite=True to replace it.")
    paths = _weights_of(model, "save")
    with _entered(source=f"save: {path}"):
        config = serialize_keras_object(model)
        compile_config, opt_arrays = _compile_config(model, paths)
    if not isinstance(model, (Sequential, Functional)) and "build_config" not in config and model.weights:
        raise ValueError(f"save: {path}: {model.name} ({type(model).__name__}) was built without being called, so "
                         "its input shape is unknown and a loaded copy could not be built. Call it once on a batch "
                         "(model(x[:1])) before saving.")
    if compile_config is not None:
        config["compile_config"] = compile_config
    from . import __version__
    metadata = {"package": _PACKAGE, "version": __version__,
                "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S")}
    members = [(_METADATA, json.dumps(metadata, indent=2).encode()),
               (_CONFIG, json.dumps(config, indent=2).encode()),
               (_WEIGHTS, _npz_bytes({k: v._value for k, v in paths.items()}))]
    if opt_arrays is not None:
        members.append((_OPTIMIZER, _npz_bytes(opt_arrays)))
    _write_atomically(path, members)


def _weights_of(model, what) -> dict:
    """``{path: variable}`` of a built model (one without weights, e.g. of activations alone, has none)."""
    if not model.built or any(not layer.built for layer in model._all_layers()):
        return model._weights_or_error(what)
    return model._weight_paths()


def _npz_bytes(arrays) -> bytes:
    buffer = io.BytesIO()
    model_module._write_npz(buffer, arrays)
    return buffer.getvalue()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _umask()


def _write_atomically(path, members) -> None:
    """Write the zip archive to a temporary file beside ``path``, then rename it over ``path``."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_DEFLATED) as archive:
                for name, data in members:
                    archive.writestr(name, data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, os.stat(path).st_mode & 0o777 if os.path.exists(path) else 0o666 & ~_UMASK)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _read_members(path) -> dict:
    if not os.path.exists(path):
        raise FileNotFoundError(f"load_model: {path} does not exist (expected {_EXPECTED}).")
    if os.path.isdir(path):
        raise ModelFileError(f"load_model: {path} is a folder, not {_EXPECTED}.")
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
            return {name: archive.read(name) for name in (_CONFIG, _METADATA, _WEIGHTS, _OPTIMIZER) if name in names}
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, RuntimeError, ValueError) as exc:
        raise ModelFileError(f"load_model: {path} is not a .keras archive: it cannot be read as a zip file "
                             f"({exc}). Expected {_EXPECTED}. Nothing was loaded.") from None


def _json_member(members, name, path):
    try:
        return json.loads(members[name].decode("utf-8"))
    except UnicodeDecodeError as exc:
        problem = f"it is not UTF-8 text ({exc})"
    except json.JSONDecodeError as exc:
        problem = f"it is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
    raise ModelFileError(f"load_model: the {name} of {path} cannot be read: {problem}. Expected the JSON that "
                         "model.save() writes; the file is damaged. Nothing was loaded.")


def _check_origin(metadata, config, path) -> None:
    """Refuse a file written by Keras or another package, before anything is built."""
    if metadata is not None:
        if not isinstance(metadata, dict):
            raise ModelFileError(f"load_model: the {_METADATA} of {path} must be a JSON object, got "
                                 f"{type(metadata).__name__}. Expected {_EXPECTED}.")
        package = metadata.get("package")
        if package is None and "keras_version" in metadata:
            raise ModelFileError(f"load_model: {path} was written by Keras {metadata['keras_version']} (its "
                                 f"{_METADATA} says so), not by autodiff_viz. Keras keeps the weights in HDF5 "
                                 "(model.weights.h5), which is not read here. Build the model again with "
                                 "adv.layers (the same names and arguments) and copy the weights with "
                                 "layer.set_weights(keras_layer.get_weights()).")
        if package != _PACKAGE:
            raise ModelFileError(f"load_model: {path} was written by {package!r}, not {_PACKAGE!r} (its "
                                 f"{_METADATA} says so). Expected {_EXPECTED}.")
    if not _is_entry(config):
        raise ModelFileError(f"load_model: the {_CONFIG} of {path} is not a model entry (a JSON object with "
                             "\"class_name\" and \"config\", as model.save() writes). Nothing was loaded.")
    _refuse_foreign(config.get("module"), config.get("class_name"), "the model")




def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):
    """A model from a ``.keras`` file written by ``model.save``, as Keras 3's ``keras.saving.load_model``.

    The model is rebuilt from ``config.json``, built, and given the weights of ``model.weights.npz`` (all
    checked against the model before any is assigned, as ``load_weights`` does). With ``compile=True`` and
    a model that was compiled, it is compiled again with the same optimizer, loss and metrics, and the
    optimizer's state (``iterations`` and its slots, e.g. Adam's ``m`` and ``v``) is restored, so ``fit``
    continues exactly as the saved model would have.

    Args:
        filepath: a ``.keras`` file (str or ``pathlib.Path``).
        custom_objects: ``{name: class or function}`` for the layers, losses, metrics and functions of your
            own that the file names (or register them with :func:`register_keras_serializable`).
        compile: re-compile the model (and restore the optimizer) when the file says how.
        safe_mode: refuse to run Python code from the file (a lambda, e.g. a ``Lambda`` layer's), as
            Keras 3. Pass ``False`` only for a file you trust.

    Raises:
        FileNotFoundError: the file does not exist.
        ModelFileError: (a ``ValueError``) the file is not a ``.keras`` archive, lacks ``config.json`` or
            ``model.weights.npz``, holds damaged JSON, was written by Keras or another package, or its
            optimizer state does not fit.
        WeightsFileError: the weights do not fit the model the config describes.
        TypeError: the file names a class or function that is not known (the message says how to make it
            known).

    Nothing outside the new model changes: the global random generator is not advanced either.
    """
    path = _keras_path(filepath, "load_model")
    with _entered(source=f"load_model: {path}"):
        return _load(path, custom_objects, compile, safe_mode)


def _load(path, custom_objects, compile, safe_mode):
    members = _read_members(path)
    if _CONFIG not in members:
        raise ModelFileError(f"load_model: {path} is a zip archive without {_CONFIG}, so it is not a model "
                             f"file; expected {_EXPECTED}. Nothing was loaded.")
    metadata = _json_member(members, _METADATA, path) if _METADATA in members else None
    config = _json_member(members, _CONFIG, path)
    _check_origin(metadata, config, path)
    if _WEIGHTS not in members:
        raise ModelFileError(f"load_model: {path} holds no {_WEIGHTS} (the model's weights); expected "
                             f"{_EXPECTED}. Nothing was loaded.")
    stored = model_module._read_npz(f"{path} ({_WEIGHTS})", what="load_model", file=io.BytesIO(members[_WEIGHTS]),
                              expected=f"the {_WEIGHTS} that model.save() writes")
    entry = {k: v for k, v in config.items() if k != "compile_config"}
    with _entered(custom_objects=custom_objects, safe_mode=bool(safe_mode)), session.seeded(0):
        model = _decode_entry(entry, "the model")
        if not isinstance(model, Model):
            raise ModelFileError(f"load_model: {path} describes a {type(model).__name__}, not a model.")
        _build(model, config.get("build_config"), "the model")
        paths = _weights_of(model, "load_model")
        model._check_weights(paths, stored, f"{path} ({_WEIGHTS})", "load_model")
        compiled = state = None
        if compile and config.get("compile_config") is not None:
            if compiling._overrides(model, "compile"):
                warnings.warn(f"load_model: {type(model).__name__} defines its own compile(), so the model was not "
                              "compiled from the file (as Keras 3); call model.compile(...) yourself.", UserWarning,
                              stacklevel=user_stacklevel())
            else:
                compiled = _compile_objects(config["compile_config"], "compile_config")
                opt_stored = model_module._read_npz(f"{path} ({_OPTIMIZER})", what="load_model",
                                              file=io.BytesIO(members[_OPTIMIZER]),
                                              expected=f"the {_OPTIMIZER} that model.save() writes") \
                    if _OPTIMIZER in members else {"iterations": np.asarray(0)}
                state = _optimizer_state(compiled["optimizer"], opt_stored, paths, f"{path} ({_OPTIMIZER})")
    for k, v in paths.items():
        v.assign(stored[k])
    if compiled is not None:
        model.compile(**compiled)
        opt = model.optimizer
        iterations, slots = state
        opt.iterations = iterations
        for p, values in slots.items():
            var = paths[p]
            opt._state[var._id] = {s: np.array(a, dtype=var.dtype) for s, a in values.items()}
        excluded = config["compile_config"].get("exclude_from_weight_decay")
        if isinstance(excluded, dict):
            opt.exclude_from_weight_decay(var_list=[paths[p] for p in excluded.get("weights", []) if p in paths],
                                          var_names=excluded.get("var_names") or None)
    return model


def model_from_json(json_string, custom_objects=None, safe_mode=True):
    """A model from ``model.to_json()``'s text, as Keras 3's ``keras.models.model_from_json``: the
    architecture only, with freshly initialised weights and not compiled. ``custom_objects`` and
    ``safe_mode`` as in :func:`load_model` (``safe_mode`` is this package's addition)."""
    if not isinstance(json_string, (str, bytes)):
        raise TypeError(f"model_from_json: expected the JSON text of model.to_json(), got "
                        f"{type(json_string).__name__}.")
    try:
        config = json.loads(json_string)
    except json.JSONDecodeError as exc:
        raise ModelFileError(f"model_from_json: the text is not valid JSON ({exc.msg} at line {exc.lineno}, "
                             f"column {exc.colno}); expected what model.to_json() returns.") from None
    if not _is_entry(config):
        raise ModelFileError("model_from_json: the JSON is not a model entry (an object with \"class_name\" and "
                             "\"config\", as model.to_json() writes).")
    with _entered(custom_objects=custom_objects, safe_mode=bool(safe_mode), source="model_from_json"):
        _refuse_foreign(config.get("module"), config.get("class_name"), "the model")
        model = _decode_entry(config, "the model")
        _build(model, config.get("build_config"), "the model")
    return model


def clone_model(model):
    """A new model with the same architecture (layers, names, graph, shared layers) and new weights, freshly
    initialised from the global generator (``adv.layers.set_random_seed``), as Keras 3's
    ``keras.models.clone_model``; it is not compiled. Your own classes and functions need no registration
    here: the clone uses the very ones the model holds (a ``Lambda``'s function included)."""
    if not isinstance(model, Model):
        raise TypeError(f"clone_model: expected a model (adv.Sequential, adv.Model), got {type(model).__name__}.")
    with _entered(live={}, classes={}, source="clone_model", safe_mode=True):
        entry = serialize_keras_object(model)
        clone = _decode_entry(entry, "the model")
        _build(clone, entry.get("build_config"), "the model")
    return clone
