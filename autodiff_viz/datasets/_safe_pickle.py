"""Reading the pickled parts of Keras' dataset files without running code from them.

Two formats need pickle: the CIFAR batches (each a pickled dict of a numpy
array and a list of labels) and the ragged sequences of IMDB and Reuters
(``.npz`` members holding object arrays). Python's ``pickle`` can call any
importable function while it loads, so a tampered file could run code.
Here the unpickler only resolves the globals that rebuilding a numpy array
needs (``numpy.ndarray``, ``numpy.dtype``, ``multiarray._reconstruct`` under
both numpy spellings, and ``_codecs.encode``, which protocol-2 pickles use
to store bytes); dicts, lists, ints, bytes and strings need no global.
Anything else is refused with an error, before it is called.

Numeric ``.npz`` members are read with pickling off entirely.
"""
from __future__ import annotations

import io
import pickle
import zipfile

import numpy as np

ALLOWED = frozenset({
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("_codecs", "encode"),
})


class RestrictedUnpickler(pickle.Unpickler):
    """An unpickler that rebuilds plain containers and numpy arrays, and refuses every other global."""

    def find_class(self, module, name):
        if (module, name) in ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refusing to load {module}.{name} from a dataset file: only numpy arrays, "
                                     "dicts, lists, numbers and bytes are read. The file is damaged or was tampered "
                                     "with; delete it and download it again.")


def loads(data: bytes, encoding: str = "ASCII"):
    """``pickle.loads`` restricted to :data:`ALLOWED`; ``encoding="bytes"`` reads Python 2 pickles."""
    return RestrictedUnpickler(io.BytesIO(data), encoding=encoding).load()


def load_npz(path: str) -> dict:
    """The arrays of an ``.npz`` file as a dict; object arrays through :class:`RestrictedUnpickler`."""
    arrays = {}
    with zipfile.ZipFile(path) as archive:
        for member in archive.namelist():
            if not member.endswith(".npy"):
                continue
            with archive.open(member) as raw:
                buffer = io.BytesIO(raw.read())
            arrays[member[:-4]] = _read_npy(buffer)
    return arrays


def _read_npy(fp) -> np.ndarray:
    version = np.lib.format.read_magic(fp)
    header = np.lib.format.read_array_header_1_0 if version[0] == 1 else np.lib.format.read_array_header_2_0
    shape, fortran, dtype = header(fp)
    if not dtype.hasobject:
        fp.seek(0)
        return np.lib.format.read_array(fp, allow_pickle=False)
    array = RestrictedUnpickler(fp).load()        # an object array is stored as one pickle after the header
    if not isinstance(array, np.ndarray) or array.shape != shape:
        raise ValueError(f"a dataset .npy member holds {type(array).__name__} where its header says an array of "
                         f"shape {shape}; the file is damaged.")
    return array
