"""Objects as data and back, as Keras 3's ``serialization_lib``: the entries a ``.keras`` file and ``get_config`` hold.

    >>> entry = adv.saving.serialize_keras_object(adv.layers.Dense(3))
    >>> entry["module"], entry["class_name"]
    ('autodiff_viz.layers', 'Dense')
    >>> layer = adv.saving.deserialize_keras_object(entry)

An object as data is Keras 3's entry::

    {"module": "autodiff_viz.layers", "class_name": "Dense", "config": {"units": 3, ...}, "registered_name": null}

rebuilt as ``Dense(**config)``, where ``config`` is what the object's ``get_config()`` returns and each value
that is not plain JSON is an entry in turn: a regularizer, a nested layer, a tuple
(``{"class_name": "__tuple__", ...}``), a numpy array. A function is found again by its name,
``{"class_name": "function", "config": "my_loss", "module": ...}``, never by running code from the file.

This module names no class of the package: the data names the module and the class, and the classes say
how they are written through a small protocol, read from the class:

* ``_keras_kind``: ``"layer"`` (``Layer``), ``"model"``, ``"input"`` (``InputLayer``), ``"operation"`` (an
  operator as a graph step), ``"symbolic"`` (``KerasTensor``);
* ``_config_base_parameters``: arguments a base class takes behind a subclass's ``**kwargs``
  (``name``, ``trainable``, ``dtype`` for layers; ``learning_rate`` … for optimizers);
* ``_config_is_complete``: the class's ``get_config()`` lists everything (Sequential, functional models);
* ``get_build_config()`` / ``build_from_config(config)``: a model built by its first call (Keras 3);
* ``_written_as``: the class a user wrote, behind the functional class a ``Model`` subclass becomes.

Your own classes and functions are found through ``custom_objects={"MyLayer": MyLayer}`` or the decorator
:func:`register_keras_serializable`. A lambda or a nested function (a ``Lambda`` layer's, usually) is
written as Python bytecode with its source beside it, and only run when you trust the file
(``safe_mode=False``), as in Keras 3.
"""
from __future__ import annotations

import base64
import builtins
import contextlib
import dis
import importlib
import inspect
import marshal
import sys
import threading
import types

import numpy as np

from ..base.errors import ModelFileError
from ..core.tensor import Tensor

_PACKAGE = "autodiff_viz"
_PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}"
#: The package's public modules, where its classes and functions are found by name (a config names one of them).
PUBLIC_MODULES = ("autodiff_viz.layers", "autodiff_viz.models", "autodiff_viz.losses", "autodiff_viz.metrics",
                  "autodiff_viz.optimizers", "autodiff_viz.regularizers", "autodiff_viz.random",
                  "autodiff_viz.layers.initializers", "autodiff_viz.layers.activations")
_LAYER_KINDS = ("layer", "model", "input", "operation")


def _kind(obj) -> str | None:
    """What an object or class is to this module (its class's ``_keras_kind``), or None."""
    return getattr(obj if inspect.isclass(obj) else type(obj), "_keras_kind", None)


def _is_layer(obj) -> bool:
    return _kind(obj) in _LAYER_KINDS


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


def _public(dotted: str):
    """The object a public dotted name of the package stands for, followed from the package face
    (``autodiff_viz.random`` is ``adv.random``, wherever its code lives), or None."""
    obj = sys.modules.get(_PACKAGE)
    for part in dotted.split(".")[1:]:
        obj = getattr(obj, part, None)
    return obj


def _public_modules() -> list:
    """``(public name, module)`` of the package's public modules (all there once the package face is imported)."""
    return [(name, module) for name in PUBLIC_MODULES if (module := _public(name)) is not None]


def _public_name(module: str) -> str:
    """The name the package face gives a module of the package (``autodiff_viz.nn`` for ``autodiff_viz.core.nn``),
    or the module's own name."""
    found = sys.modules.get(module)
    for attr, value in vars(sys.modules.get(_PACKAGE, types)).items():
        if value is found and found is not None and inspect.ismodule(value):
            return f"{_PACKAGE}.{attr}"
    return module


def _module_of(obj) -> str | None:
    """The public module of a class or function of the package (``autodiff_viz.layers`` for ``Dense``),
    else its own module. Files name public modules, so moving code inside the package breaks no file."""
    module = getattr(obj, "__module__", None)
    if _in_package(module):
        for name, mod in _public_modules():
            if getattr(mod, obj.__name__, None) is obj:
                return name
        return _public_name(module)
    return module


def _user_class(cls):
    """The class a user wrote, for the functional class ``adv.Model`` makes of it (``MyModel(inputs, outputs)``)."""
    return cls.__dict__.get("_written_as", cls)


def _import_attr(module, name):
    """``module.name`` (a dotted ``name`` is followed), or None when the module or the name is missing."""
    obj = _public(module) if _in_package(module) else None     # a public name, as files write them
    if obj is None:
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
        for _, mod in _public_modules():
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
    return _encode(obj, type(obj).__name__ if _is_layer(obj) else "the object")


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
    if _is_layer(obj):
        return _layer_entry(obj, where)
    if _kind(obj) == "symbolic":
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


def _base_parameters(cls) -> list:
    """The arguments ``cls``'s package base classes take behind ``**kwargs`` (their ``_config_base_parameters``)."""
    names = []
    for base in cls.__mro__:
        for name in base.__dict__.get("_config_base_parameters", ()):
            if name not in names:
                names.append(name)
    return names


_members_of: dict = {}


def _layer_members(cls) -> frozenset:
    """The base layer's members (``weights``, ``output`` ...): attributes of a layer that are never arguments."""
    base = next(b for b in reversed(cls.__mro__) if b.__dict__.get("_keras_kind") == "layer")
    members = _members_of.get(base)
    if members is None:
        members = _members_of[base] = frozenset(dir(base)) - set(base.__dict__.get("_config_base_parameters", ()))
    return members


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
        names += [n for n in _base_parameters(type(obj)) if n not in names]
    skip = _layer_members(type(obj)) if _is_layer(obj) else ()
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
        base = "**super().get_config(), " if _is_layer(cls) else ""
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
    if _kind(layer) in ("input", "operation"):
        try:
            return layer.get_config()
        except TypeError as exc:
            raise TypeError(f"{_at(where)}: {exc}") from None
    given = layer.get_config()
    if not isinstance(given, dict):
        raise TypeError(f"{_at(where)}: {type(layer).__name__}.get_config() returned {type(given).__name__}, not "
                        "a dict.")
    if getattr(type(layer), "_config_is_complete", False):
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
    build_config = layer.get_build_config() if _kind(layer) == "model" else None
    if build_config:
        entry["build_config"] = _encode(build_config, where)
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
    if _is_layer(cls):
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
    if _is_layer(obj):
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
    if _kind(cls) == "input" and not isinstance(config, dict):
        raise ModelFileError(f"{_at(where)}: an InputLayer's config must be a dict with batch_shape.")
    if _kind(cls) in ("input", "operation"):
        try:
            return cls.from_config(config if isinstance(config, dict) else {})
        except ModelFileError as exc:
            raise ModelFileError(f"{_at(where)}: {exc}") from None
    if _kind(cls) == "model":
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
    model.build_from_config({"input_shape": shapes})


def _decode_code(config, where):
    """Python code written by :func:`_code_entry`, as a function; refused in safe mode."""
    if not isinstance(config, dict):
        raise ModelFileError(f"{_at(where)}: a damaged __lambda__ entry (its config must be a dict).")
    shown = config.get("source") or f"a function named {config.get('name', '?')!r}"
    name = config.get("name")
    if isinstance(name, str) and name != "<lambda>":
        # a function written with def inside another one: Keras 3 writes only its name and finds it again
        # in custom_objects (or among the registered objects); so does this, before any code is read
        found = _given(None, name, _context())
        if found is None:
            hits = [obj for key, obj in _REGISTERED.items() if key.rsplit(">", 1)[-1] == name]
            found = hits[0] if len(hits) == 1 else None
        if found is not None:
            return found
        if _context()["safe_mode"]:
            raise TypeError(f"{_at(where)}: unknown function {name!r} (defined inside another function, so it "
                            f"cannot be imported by name). Pass it when loading, as Keras 3 finds a function "
                            f"by its name: load_model(path, custom_objects={{{name!r}: {name}}}) (also "
                            "model_from_json and from_config take custom_objects), or decorate its definition "
                            "with @adv.saving.register_keras_serializable() and run that definition before "
                            "loading. The file also holds its code; if you trust the file, safe_mode=False "
                            "rebuilds it from that code.")
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
