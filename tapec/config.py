"""Process-wide settings: how much the simplifier does, how many threads compiled code uses,
and TensorFlow's `tf.config` functions.

    tapec.set_simplify("off" | "fast" | "full")     # default "full"
    with tapec.simplify_mode("off"): ...            # for one block
    tapec.set_num_threads(1)                        # default: $TAPEC_NUM_THREADS or all cores
    tapec.set_native(False)                         # default: on unless $TAPEC_NATIVE=0
    tapec.config.set_call_sites(True)               # default: off

    tf.config.list_physical_devices()               # [PhysicalDevice('/physical_device:CPU:0')]
    tf.config.run_functions_eagerly(True)           # tapec.function runs the Python body

tapec computes with NumPy on the CPU: there is one device, CPU:0, and no GPU. The
device functions answer as TensorFlow does on a machine without accelerators, so
programs that look for GPUs (and configure them when found) run unchanged.

The mode is part of every compile-cache key, so changing it never reuses code compiled
under another mode. The thread count is read at every call of compiled code (it only
decides how a large fused kernel's blocks are shared out, and how many threads numexpr
uses for a kernel printed for it), so it is not in the key. Nor is the native tier
(codegen/native.py), which changes how fast a 0-d float64 program runs, never what it
computes.
"""
from __future__ import annotations

import contextlib
import os
import re
import threading
import types
from collections.abc import Iterator, Sequence
from typing import NamedTuple

__all__ = ["MODES", "set_simplify", "simplify_mode", "simplify_setting", "num_threads",
           "set_num_threads", "native_enabled", "set_native", "call_sites_enabled",
           "set_call_sites", "PhysicalDevice",
           "LogicalDevice", "list_physical_devices", "list_logical_devices",
           "get_visible_devices", "set_visible_devices", "run_functions_eagerly",
           "functions_run_eagerly", "experimental", "device"]

MODES = ("off", "fast", "full")
_lock = threading.Lock()
_simplify = "full"


def simplify_setting() -> str:
    """The simplification mode newly compiled derivatives get."""
    return _simplify


def set_simplify(mode: str) -> None:
    """Choose the simplification applied to newly compiled derivatives."""
    global _simplify
    if mode not in MODES:
        raise ValueError(f"set_simplify: mode must be one of {MODES}, got {mode!r}")
    with _lock:
        _simplify = mode


@contextlib.contextmanager
def simplify_mode(mode: str) -> Iterator[None]:
    """Use `mode` inside the block, then restore the previous setting."""
    previous = _simplify
    set_simplify(mode)
    try:
        yield
    finally:
        set_simplify(previous)


def _default_threads() -> int:
    text = os.environ.get("TAPEC_NUM_THREADS", "")
    if text.strip():
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"TAPEC_NUM_THREADS must be a positive integer, got {text!r}") \
                from None
        if value < 1:
            raise ValueError(f"TAPEC_NUM_THREADS must be a positive integer, got {text!r}")
        return value
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        (os.cpu_count() or 1)


_threads = None     # resolved on first use, so a bad environment variable fails there


def num_threads() -> int:
    """Threads a large fused elementwise kernel is evaluated on, blocked or by numexpr
    (docs/simplifier.md)."""
    global _threads
    if _threads is None:
        _threads = _default_threads()
    return _threads


def set_num_threads(n: int) -> None:
    """Use `n` threads (1: the calling thread only) for large fused kernels, numexpr's
    included (set on numexpr when compiled code next calls it)."""
    global _threads
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"set_num_threads: n must be a positive int, got {n!r}")
    _threads = n


_call_sites = False


def call_sites_enabled() -> bool:
    """Whether tapes made from now on record where user code called each op."""
    return _call_sites


def set_call_sites(enabled: bool) -> None:
    """Record, on tapes made from now on, the file and line of every op, so generated
    code says where each statement comes from (`# from: tanh at train.py:12`) and names
    values after the variables they were assigned to (docs/reading-generated-code.md).

    Off by default: finding the caller's frame costs about a microsecond per recorded op,
    a tenth of a small training step. It applies to `tapec.function` traces too;
    `tapec.export` always records call sites (it records once, to print). A derivative
    compiled before the setting changed is served from the cache as it was:
    `tapec.clear_cache()` recompiles."""
    global _call_sites
    if not isinstance(enabled, bool):
        raise TypeError(f"set_call_sites: enabled must be a bool, got {enabled!r}")
    _call_sites = enabled


_native = None      # resolved on first use, from $TAPEC_NATIVE


def native_enabled() -> bool:
    """Whether long-running 0-d float64 programs are compiled to C (codegen/native.py)."""
    global _native
    if _native is None:
        text = os.environ.get("TAPEC_NATIVE", "").strip().lower()
        if text not in ("", "0", "1", "false", "true", "off", "on"):
            raise ValueError(f"TAPEC_NATIVE must be 0 or 1, got {text!r}")
        _native = text not in ("0", "false", "off")
    return _native


def set_native(enabled: bool) -> None:
    """Turn the native tier of 0-d float64 programs on or off. Off, programs built later
    stay in Python; ones already running in C go on."""
    global _native
    if not isinstance(enabled, bool):
        raise TypeError(f"set_native: enabled must be a bool, got {enabled!r}")
    _native = enabled


# --- TensorFlow's tf.config ---------------------------------------------------------------

class PhysicalDevice(NamedTuple):
    """A device of the machine (TensorFlow's `tf.config.PhysicalDevice`)."""
    name: str
    device_type: str


class LogicalDevice(NamedTuple):
    """A device as the runtime sees it (TensorFlow's `tf.config.LogicalDevice`)."""
    name: str
    device_type: str


_CPU = PhysicalDevice(name="/physical_device:CPU:0", device_type="CPU")
_CPU_LOGICAL = LogicalDevice(name="/device:CPU:0", device_type="CPU")


def _of_type(devices, device_type):
    return [d for d in devices if device_type is None or d.device_type == device_type]


def list_physical_devices(device_type: str | None = None) -> list[PhysicalDevice]:
    """The machine's devices (of `device_type`, "CPU" or "GPU", case-sensitive as in
    TensorFlow): the CPU only; the GPU list is empty."""
    return _of_type([_CPU], device_type)


def list_logical_devices(device_type: str | None = None) -> list[LogicalDevice]:
    """The runtime's devices: "/device:CPU:0" only."""
    return _of_type([_CPU_LOGICAL], device_type)


def get_visible_devices(device_type: str | None = None) -> list[PhysicalDevice]:
    """The devices the runtime may use: the CPU."""
    return _of_type([_CPU], device_type)


def set_visible_devices(devices: PhysicalDevice | Sequence[PhysicalDevice],
                        device_type: str | None = None) -> None:
    """Accept TensorFlow's call when it changes nothing: the CPU stays visible (it is
    the only device; hiding it, or making a device of another machine visible, is a
    ValueError, as TensorFlow refuses to hide every CPU)."""
    listed = [devices] if isinstance(devices, PhysicalDevice) else list(devices)
    for d in listed:
        if d != _CPU:
            raise ValueError(f"set_visible_devices: unknown device {d!r}; tapec has one "
                             f"device, {_CPU!r}")
    if device_type in (None, "CPU") and _CPU not in listed:
        raise ValueError("set_visible_devices: tapec computes on the CPU, which cannot be "
                         "hidden (TensorFlow too requires a visible CPU)")


def _set_memory_growth(device: PhysicalDevice, enable: bool) -> None:
    """TensorFlow's `tf.config.experimental.set_memory_growth`: GPUs only, which tapec
    has none of (for the CPU TensorFlow raises this ValueError too)."""
    raise ValueError("Cannot set memory growth on non-GPU and non-Pluggable devices")


def _get_memory_growth(device: PhysicalDevice) -> bool:
    """TensorFlow's `tf.config.experimental.get_memory_growth`: GPUs only."""
    raise ValueError("get_memory_growth: tapec has no GPU devices")


experimental = types.SimpleNamespace(
    set_memory_growth=_set_memory_growth, get_memory_growth=_get_memory_growth,
    list_physical_devices=list_physical_devices, list_logical_devices=list_logical_devices,
    get_visible_devices=get_visible_devices, set_visible_devices=set_visible_devices)
"""`tf.config.experimental`: the device functions TensorFlow keeps there."""

_run_eagerly = False


def run_functions_eagerly(run_eagerly: bool) -> None:
    """With True, every `tapec.function` call runs the decorated Python function eagerly,
    op by op, instead of replaying a compiled trace (TensorFlow's debugging switch):
    Python code inside runs at every call, breakpoints and prints work. Derivative
    functions (`tapec.grad`, `jacobian`, ...) are not affected."""
    global _run_eagerly
    if not isinstance(run_eagerly, bool):
        raise TypeError(f"run_functions_eagerly: expected a bool, got {run_eagerly!r:.60}")
    _run_eagerly = run_eagerly


def functions_run_eagerly() -> bool:
    """Whether `run_functions_eagerly(True)` is in effect."""
    return _run_eagerly


_DEVICE_NAME = re.compile(
    r"^(/job:[^/]+)?(/replica:\d+)?(/task:\d+)?"
    r"(/?(device:)?(CPU|GPU|TPU|cpu|gpu|tpu)(:(\d+|\*))?)?$")


@contextlib.contextmanager
def device(device_name: str | None) -> Iterator[None]:
    """TensorFlow's `tf.device`: a context manager for op placement. tapec computes
    everything on the CPU; any well-formed device name is accepted ("/CPU:0",
    "/device:GPU:0", "/job:localhost/replica:0/task:0/device:CPU:0", "" or None), and ops
    run on the CPU, as TensorFlow's soft placement does on a machine without that
    device. A malformed name is a ValueError, as in TensorFlow."""
    if device_name is not None:
        if not isinstance(device_name, str):
            raise TypeError(f"device: device_name must be a string or None, got "
                            f"{type(device_name).__name__}")
        if not _DEVICE_NAME.match(device_name):
            raise ValueError(f"device: cannot parse the device name {device_name!r}")
    yield


from .namespaces._names import namespace_getattr as _namespace_getattr  # noqa: E402

# A missing name says what tapec does not implement (tapec/namespaces/_names.py).
__getattr__ = _namespace_getattr(__name__, "config")
