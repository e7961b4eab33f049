"""``tf.device`` and ``tf.config``'s device functions, as on a CPU-only TensorFlow (which is what this is).

Everything here runs on the CPU with numpy, so the answers are the ones a TensorFlow without a GPU gives:
``list_physical_devices("GPU") == []``, one CPU device, ``with adv.device("/GPU:0"):`` a block that changes
nothing (TensorFlow's soft placement does the same when the device is missing). The common "use a GPU if
there is one" cell runs as written::

    gpus = adv.config.list_physical_devices("GPU")
    for gpu in gpus:
        adv.config.experimental.set_memory_growth(gpu, True)
    with adv.device("/GPU:0" if gpus else "/CPU:0"):
        ...

``DeviceSettings`` holds ``tf.config``'s functions; the package's ``adv.config`` (its switchboard,
``capture_locations``) is one of them, so ``adv.config.list_physical_devices`` reads as in TensorFlow.
"""
from __future__ import annotations

import contextlib
from collections import namedtuple

PhysicalDevice = namedtuple("PhysicalDevice", "name device_type")
LogicalDevice = namedtuple("LogicalDevice", "name device_type")
LogicalDeviceConfiguration = namedtuple("LogicalDeviceConfiguration", "memory_limit experimental_priority "
                                        "experimental_device_ordinal", defaults=(None, None, 0))

_CPU = PhysicalDevice("/physical_device:CPU:0", "CPU")


def _kind(device_type):
    return None if device_type is None else str(device_type).upper()


@contextlib.contextmanager
def device(device_name):
    """``tf.device(name)``: a block that runs where it always runs (the CPU); any device string is accepted,
    as TensorFlow's soft placement accepts a missing GPU."""
    if device_name is not None and not isinstance(device_name, str):
        raise TypeError(f"device: expected a device string such as '/CPU:0', got {device_name!r}.")
    yield


class _Experimental:
    """``tf.config.experimental``: memory growth and limits have nothing to set on the CPU; they are accepted."""

    def __init__(self, settings):
        self._settings = settings
        self._growth = {}

    def list_physical_devices(self, device_type=None):
        return self._settings.list_physical_devices(device_type)

    def list_logical_devices(self, device_type=None):
        return self._settings.list_logical_devices(device_type)

    def set_memory_growth(self, device, enable):
        self._growth[device] = bool(enable)

    def get_memory_growth(self, device):
        return self._growth.get(device, False)

    def set_visible_devices(self, devices, device_type=None):
        self._settings.set_visible_devices(devices, device_type)

    def get_visible_devices(self, device_type=None):
        return self._settings.get_visible_devices(device_type)

    def get_device_details(self, device):
        return {}

    def get_memory_info(self, device):
        return {"current": 0, "peak": 0}

    def reset_memory_stats(self, device):
        return None

    def set_virtual_device_configuration(self, device, logical_devices):
        return None

    def enable_op_determinism(self):
        return None


class _Threading:
    """``tf.config.threading``: thread counts (numpy's BLAS decides its own; the settings are kept)."""

    def __init__(self):
        self.intra, self.inter = 0, 0

    def get_intra_op_parallelism_threads(self):
        return self.intra

    def set_intra_op_parallelism_threads(self, num_threads):
        self.intra = int(num_threads)

    def get_inter_op_parallelism_threads(self):
        return self.inter

    def set_inter_op_parallelism_threads(self, num_threads):
        self.inter = int(num_threads)


class DeviceSettings:
    """``tf.config``'s functions for a machine with one CPU and no accelerator."""

    def __getattr__(self, name):
        from .tf_surface import out_of_scope_message
        message = out_of_scope_message(f"tf.config.{name}", "autodiff_viz.config")
        raise AttributeError(message or f"{type(self).__name__!r} object has no attribute {name!r}")

    PhysicalDevice, LogicalDevice, LogicalDeviceConfiguration = PhysicalDevice, LogicalDevice, \
        LogicalDeviceConfiguration

    @property
    def experimental(self):
        if "_experimental" not in self.__dict__:
            self.__dict__["_experimental"] = _Experimental(self)
        return self.__dict__["_experimental"]

    @property
    def threading(self):
        if "_threading" not in self.__dict__:
            self.__dict__["_threading"] = _Threading()
        return self.__dict__["_threading"]

    def list_physical_devices(self, device_type=None):
        """``tf.config.list_physical_devices``: the CPU (``[]`` for ``"GPU"`` or ``"TPU"``)."""
        return [_CPU] if _kind(device_type) in (None, "CPU") else []

    def list_logical_devices(self, device_type=None):
        return [LogicalDevice("/device:CPU:0", "CPU")] if _kind(device_type) in (None, "CPU") else []

    def get_visible_devices(self, device_type=None):
        return self.list_physical_devices(device_type)

    def set_visible_devices(self, devices, device_type=None):
        return None

    def get_logical_device_configuration(self, device):
        return None

    def set_logical_device_configuration(self, device, logical_devices):
        return None

    def get_soft_device_placement(self):
        return True

    def set_soft_device_placement(self, enabled):
        return None

    def functions_run_eagerly(self):
        """True: there is no ``tf.function`` here; everything runs eagerly."""
        return True

    experimental_functions_run_eagerly = functions_run_eagerly

    def run_functions_eagerly(self, run_eagerly):
        return None

    experimental_run_functions_eagerly = run_functions_eagerly

