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

How each object becomes data (Keras 3's entries: module, class name, config) is
:mod:`autodiff_viz.keras_base.serialization`; this module writes and reads the files.
"""
from __future__ import annotations

import contextlib
import datetime
import io
import json
import os
import sys
import tempfile
import warnings
import zipfile

import numpy as np

from .base import session
from .base.errors import ModelFileError, WeightsFileError
from .base.files import check_folder
from .base.state import is_package_code, user_stacklevel
from .base.version import __version__
from .keras_base.serialization import (
    _at,
    _build,
    _decode,
    _decode_entry,
    _encode,
    _entered,
    _is_entry,
    _kind,
    _refuse_foreign,
    custom_object_scope,
    deserialize_keras_object,
    get_registered_name,
    get_registered_object,
    register_keras_serializable,
    serialize_keras_object,
)

__all__ = ["save_model", "load_model", "model_from_json", "clone_model", "register_keras_serializable",
           "get_registered_name", "get_registered_object", "serialize_keras_object", "deserialize_keras_object",
           "custom_object_scope"]

_PACKAGE = "autodiff_viz"
_CONFIG, _METADATA, _WEIGHTS, _OPTIMIZER = "config.json", "metadata.json", "model.weights.npz", "optimizer.weights.npz"
_EXPECTED = (f"a .keras file written by model.save(): a zip archive holding {_CONFIG}, {_METADATA} and "
             f"{_WEIGHTS}")
_PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}"


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
    if not _kind(out["optimizer"]) == "optimizer":
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
    path = path_of(filepath, what, ".keras")
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
    if not _kind(model) == "model":
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
    if not getattr(type(model), "_config_is_complete", False) and "build_config" not in config and model.weights:
        raise ValueError(f"save: {path}: {model.name} ({type(model).__name__}) was built without being called, so "
                         "its input shape is unknown and a loaded copy could not be built. Call it once on a batch "
                         "(model(x[:1])) before saving.")
    if compile_config is not None:
        config["compile_config"] = compile_config
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
    _write_npz(buffer, arrays)
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
    stored = _read_npz(f"{path} ({_WEIGHTS})", what="load_model", file=io.BytesIO(members[_WEIGHTS]),
                              expected=f"the {_WEIGHTS} that model.save() writes")
    entry = {k: v for k, v in config.items() if k != "compile_config"}
    with _entered(custom_objects=custom_objects, safe_mode=bool(safe_mode)), session.seeded(0):
        model = _decode_entry(entry, "the model")
        if not _kind(model) == "model":
            raise ModelFileError(f"load_model: {path} describes a {type(model).__name__}, not a model.")
        _build(model, config.get("build_config"), "the model")
        paths = _weights_of(model, "load_model")
        model._check_weights(paths, stored, f"{path} ({_WEIGHTS})", "load_model")
        compiled = state = None
        if compile and config.get("compile_config") is not None:
            if not is_package_code(type(model).compile):
                warnings.warn(f"load_model: {type(model).__name__} defines its own compile(), so the model was not "
                              "compiled from the file (as Keras 3); call model.compile(...) yourself.", UserWarning,
                              stacklevel=user_stacklevel())
            else:
                compiled = _compile_objects(config["compile_config"], "compile_config")
                opt_stored = _read_npz(f"{path} ({_OPTIMIZER})", what="load_model",
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
    if not _kind(model) == "model":
        raise TypeError(f"clone_model: expected a model (adv.Sequential, adv.Model), got {type(model).__name__}.")
    with _entered(live={}, classes={}, source="clone_model", safe_mode=True):
        entry = serialize_keras_object(model)
        clone = _decode_entry(entry, "the model")
        _build(clone, entry.get("build_config"), "the model")
    return clone


def path_of(filepath, what: str, ending: str) -> str:
    """``filepath`` (a str or ``pathlib.Path``) as a str, or a TypeError naming ``what`` and the ``ending``
    the file needs (``'.npz'`` for weights, ``'.keras'`` for a whole model)."""
    try:
        path = os.fspath(filepath)
    except TypeError:
        raise TypeError(f"{what}: the file must be a path (str or pathlib.Path) ending in '{ending}', got "
                        f"{type(filepath).__name__}.") from None
    if not isinstance(path, str):
        raise TypeError(f"{what}: the file must be a path (str or pathlib.Path) ending in '{ending}', got bytes.")
    return path


def _write_npz(target, arrays: dict) -> None:
    """Write ``{key: array}`` as an ``.npz`` archive (numpy's format, no pickle) to a path or a binary file:
    the weights file of ``save_weights``, and the weights inside a ``.keras`` file."""
    np.savez(target, **arrays)


def _read_npz(path, what="load_weights", file=None,
              expected="an .npz archive written by model.save_weights()") -> dict:
    """The arrays of an ``.npz`` weights file, or a :class:`WeightsFileError` that says what is wrong.

    ``file``: a binary file object to read instead of ``path`` (a member of a ``.keras`` archive); ``path``
    then only names it in messages.
    """
    if file is None and not os.path.exists(path):
        raise FileNotFoundError(f"{what}: {path} does not exist (expected {expected}).")
    if file is None and os.path.isdir(path):
        raise WeightsFileError(f"{what}: {path} is a directory, not {expected}.")
    try:
        f = np.load(path if file is None else file, allow_pickle=False)
        if not hasattr(f, "files"):
            raise WeightsFileError(f"{what}: {path} holds a single array, not {expected} "
                                   "(one array per weight).")
        with f:
            return {k: f[k] for k in f.files}
    except WeightsFileError:
        raise
    except (zipfile.BadZipFile, EOFError, OSError) as exc:
        raise WeightsFileError(f"{what}: {path} is not a readable .npz (zip) archive ({exc}); expected "
                               f"{expected}. Nothing was loaded.") from None
    except ValueError as exc:
        if "pickle" in str(exc):
            raise WeightsFileError(f"{what}: {path} holds pickled Python objects, which are never loaded "
                                   f"(they can run code); expected {expected}, with numeric arrays only. "
                                   "Nothing was loaded.") from None
        raise WeightsFileError(f"{what}: {path} could not be read as {expected} ({exc}). "
                               "Nothing was loaded.") from None


def _bytes(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.2f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024
