"""`tf.saved_model.save` and `tf.saved_model.load`: a Module as a directory of NumPy code.

    tf.saved_model.save(model, "saved")      # model: a tf.Module with tf.function methods
    loaded = tf.saved_model.load("saved")
    loaded(x)                                # the saved __call__, a tapec tensor

The directory holds, and needs nothing but NumPy to use:

* one standalone module per saved function and traced signature, written by
  `tapec.export` (value only): `<function>_<k>.py`;
* `variables.npz`: the Module's variables (`np.savez`, no pickles);
* `manifest.json`: the functions, their input signatures, the serving signatures and
  the variables' names;
* `saved_model.py`: a fixed loader (no user text) whose `load()` returns the object;
  tapec's `load` imports that same file and converts the results to tapec tensors.

The saved functions are a snapshot: the exported modules embed the Variables' values
(as `tapec.export` does), so the loaded variables are read-only. docs/export.md has
the rules (what is saved, what raises).
"""
from __future__ import annotations

import importlib.util
import inspect
import itertools
import json
import os
import re

import numpy as np

from .. import nest
from ..function import Function
from ..tensor import Tensor, Variable, constant
from .layout import ExportError
from .module import _write
from .naming import identifier
from .sizes import SIZES

__all__ = ["save", "load", "LOADER"]

FORMAT = "tapec.saved_model"
VERSION = 1
DEFAULT_SERVING = "serving_default"
# Attributes of the loaded object; a saved function may not take these names.
RESERVED = frozenset({"variables", "trainable_variables", "non_trainable_variables",
                      "signatures", "functions", "directory", "variable_names"})
_ATTRIBUTE = re.compile(r"^(?:__call__|[A-Za-z][A-Za-z0-9_]{0,79})$")
_loads = itertools.count()


def save(obj, export_dir, signatures=None, options=None):
    """Write `obj` (a `tf.Module`) to the directory `export_dir` (TensorFlow's
    `tf.saved_model.save`).

    Saved: every Variable of `obj` (`obj.variables`, into variables.npz) and every
    `tf.function` attribute of `obj` itself (methods included, `__call__` too) for each
    signature it has: a fully defined `input_signature`, else the signatures it was
    traced with. A function that was never traced (and has no complete input_signature)
    is skipped, as TensorFlow skips it. `signatures` is a tf.function (saved as
    "serving_default") or a dict of signature name to tf.function; None picks the one
    tf.function attribute with an input_signature, if there is exactly one.

    Raises ValueError for a function traced with Python-value (non-tensor), keyword or
    nested arguments, for a signature whose result nests, and ExportError for a function
    that assigns Variables (a saved function is pure: save the update elsewhere).
    `options` is accepted and must be None. An input_signature with None dimensions is
    saved as one module for every size (tapec.export's TensorSpec arguments)."""
    from ..namespaces.module import Module
    if not isinstance(obj, Module):
        raise TypeError(f"tf.saved_model.save: expected a tf.Module, got {type(obj).__name__}")
    if options is not None:
        raise ValueError("tf.saved_model.save: options are not supported (pass None)")
    if not isinstance(export_dir, (str, os.PathLike)):
        raise TypeError(f"tf.saved_model.save: export_dir must be a str or os.PathLike, got "
                        f"{type(export_dir).__name__}")
    directory = os.fspath(export_dir)
    functions = _functions_of(obj)
    chosen = _signatures(obj, functions, signatures)
    os.makedirs(directory, exist_ok=True)

    manifest = {"format": FORMAT, "version": VERSION, "functions": {}, "signatures": {},
                "variables": []}
    files = set()
    for attribute, function in functions.items():
        entries = _save_function(attribute, function, directory, files)
        if entries:
            manifest["functions"][attribute] = entries
    for key, function in chosen.items():
        attribute = _attribute_of(function, functions)
        if attribute is None:            # a signature function that is not an attribute
            attribute = f"_signature_{identifier(key, 'signature')}"
            manifest["functions"][attribute] = _save_function(attribute, function,
                                                              directory, files)
        if not manifest["functions"].get(attribute):
            raise ValueError(f"tf.saved_model.save: signature {key!r} names a tf.function "
                             "with no input_signature and no traced signature; give it "
                             "an input_signature or call it once before saving")
        _check_signature_outputs(key, function, manifest["functions"][attribute])
        manifest["signatures"][key] = {"function": attribute}

    arrays = {}
    for k, variable in enumerate(obj.variables):
        key = f"v{k}"
        arrays[key] = np.asarray(variable.numpy())      # a 0-d value is a NumPy scalar
        manifest["variables"].append({
            "key": key, "name": str(variable.name), "shape": list(arrays[key].shape),
            "dtype": arrays[key].dtype.name, "trainable": bool(variable.trainable)})
    np.savez(os.path.join(directory, "variables.npz"), **arrays)
    with open(os.path.join(directory, "manifest.json"), "w", encoding="utf-8") as handle:
        json.dump(manifest, handle, indent=1, sort_keys=True)
    with open(os.path.join(directory, "saved_model.py"), "w", encoding="utf-8") as handle:
        handle.write(LOADER)


def load(export_dir, tags=None, options=None):
    """The object saved in `export_dir` (TensorFlow's `tf.saved_model.load`).

    Its attributes are the saved functions, called with tapec tensors or NumPy arrays
    whose shapes and dtypes match a saved signature (ValueError otherwise) and returning
    tapec tensors; `signatures["serving_default"](**inputs)` returns a dict of outputs
    (`output_0`, ...), as TensorFlow; `variables` / `trainable_variables` hold the saved
    values as (immutable) tensors. The functions are NumPy code: they have no gradient,
    and calling one on a tensor a GradientTape is recording raises ValueError."""
    if tags is not None or options is not None:
        raise ValueError("tf.saved_model.load: tags and options are not supported (pass None)")
    if not isinstance(export_dir, (str, os.PathLike)):
        raise TypeError(f"tf.saved_model.load: export_dir must be a str or os.PathLike, got "
                        f"{type(export_dir).__name__}")
    directory = os.fspath(export_dir)
    path = os.path.join(directory, "saved_model.py")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"tf.saved_model.load: {directory!r} holds no "
                                "saved_model.py; it was not written by tf.saved_model.save")
    # The loader is tapec's own fixed text; refuse a directory whose loader was changed.
    with open(path, encoding="utf-8") as handle:
        if handle.read() != LOADER:
            raise ValueError(f"tf.saved_model.load: {path} is not the loader this tapec "
                             "writes (edited, or saved by another version); save again")
    spec = importlib.util.spec_from_file_location(f"_tapec_saved_model_{next(_loads)}", path)
    loader = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loader)
    return loader.load(directory, convert=_to_tensors, check=_not_recorded)


def _to_tensors(value):
    return nest.map_structure(lambda v: constant(np.asarray(v)), value)


def _not_recorded(args):
    from ..function import _recording_tapes
    if _recording_tapes() and any(isinstance(a, Tensor) for a in nest.flatten(list(args))):
        raise ValueError("tf.saved_model: a loaded function is NumPy code without a "
                         "gradient; call it outside a recording GradientTape (or with "
                         "NumPy arrays, as a constant)")


# --- what is saved ---------------------------------------------------------------------

def _functions_of(obj) -> dict:
    """{attribute name: the bound tf.function} for obj's tf.function attributes."""
    found = {}
    names = {n for klass in type(obj).__mro__ for n, v in vars(klass).items()
             if isinstance(v, Function)}
    names |= {n for n, v in vars(obj).items() if isinstance(v, Function)}
    for name in sorted(names):
        if name.startswith("_") and name != "__call__":
            continue        # private attributes are not saved (documented)
        if not _ATTRIBUTE.match(name) or name in RESERVED:
            raise ValueError(f"tf.saved_model.save: the tf.function attribute {name!r:.60} "
                             f"cannot be saved under that name (reserved or too long)")
        found[name] = getattr(obj, name)
    return found


def _signatures(obj, functions, signatures) -> dict:
    if signatures is None:
        with_spec = [f for f in functions.values() if f.input_signature is not None]
        return {DEFAULT_SERVING: with_spec[0]} if len(with_spec) == 1 else {}
    if isinstance(signatures, Function):
        signatures = {DEFAULT_SERVING: signatures}
    if not isinstance(signatures, dict):
        raise TypeError(f"tf.saved_model.save: signatures must be a tf.function or a dict of "
                        f"them, got {type(signatures).__name__}")
    for key, function in signatures.items():
        if not isinstance(key, str) or not _ATTRIBUTE.match(key):
            raise ValueError(f"tf.saved_model.save: signature key {key!r:.60} must be an "
                             "identifier")
        if not isinstance(function, Function):
            raise TypeError(f"tf.saved_model.save: signature {key!r} must be a tf.function, "
                            f"got {type(function).__name__}")
    return dict(signatures)


def _check_signature_outputs(key, function, entries):
    """As TensorFlow: a signature returns a tensor, a flat sequence of tensors or a dict
    of str to tensor. The function is pure (its export succeeded): run it on zeros."""
    for entry in entries:
        result = function(*[np.zeros([SIZES[0] if d is None else d for d in s["shape"]],
                                     s["dtype"]) for s in entry["inputs"]])
        items = result.items() if isinstance(result, dict) else \
            enumerate(result) if isinstance(result, (tuple, list)) else [(0, result)]
        for name, value in items:
            if not isinstance(value, (Tensor, np.ndarray, np.generic)) or (
                    isinstance(result, dict) and not isinstance(name, str)):
                raise ValueError(f"tf.saved_model.save: signature {key!r} returns "
                                 f"{type(value).__name__} at {name!r}; a signature must "
                                 "return a tensor, a flat list or tuple of tensors, or a "
                                 "dict from str to tensor")


def _attribute_of(function, functions):
    for name, candidate in functions.items():
        if candidate is function or candidate._fn == function._fn:
            return name
    return None


def _example_arguments(attribute, function) -> list:
    """One tuple of example arguments per signature to save: zeros, or the TensorSpecs
    of an input_signature with None dimensions (an export for every size)."""
    spec = function.input_signature
    flat = nest.flatten(list(spec)) if spec is not None else []
    if spec is not None and flat == list(spec) and all(s._shape is not None for s in spec):
        if any(None in s._shape for s in spec):    # one module for every size
            return [tuple(spec)]
        return [tuple(np.zeros(s._shape, s._dtype) for s in spec)]
    examples = {}
    for key in function._traces:
        count, *parts = key[1:]
        if not isinstance(count, int):
            raise ValueError(f"tf.saved_model.save: {attribute} was traced with keyword "
                             "or nested (list, tuple or dict) arguments; only positional "
                             "tensor arguments can be saved")
        arrays = []
        for k, part in enumerate(parts):
            if part[0] != "tensor":
                what = "a Variable" if part[0] == "variable" else \
                    f"the Python {part[1]} {part[2]!r:.40}"
                raise ValueError(f"tf.saved_model.save: {attribute} was traced with {what} as "
                                 f"argument {k}; a saved function takes tensors only. Pass "
                                 "tensors (tf.constant) or give it an input_signature")
            arrays.append(np.zeros(part[1], np.dtype(part[2])))
        examples[tuple(parts)] = tuple(arrays)
    return list(examples.values())


def _save_function(attribute, function, directory, files) -> list:
    entries = []
    stem = identifier(attribute, "function")
    names = _parameters(function)
    for example in _example_arguments(attribute, function):
        k = 1
        while f"{stem}_{k}" in files:
            k += 1
        files.add(f"{stem}_{k}")
        try:
            _write(function, example, os.path.join(directory, f"{stem}_{k}.py"), (), False,
                   False, stem, value_only=True)
        except ExportError as error:
            raise ExportError(f"tf.saved_model.save: cannot save {attribute}: {error}") \
                from None
        entries.append({"file": f"{stem}_{k}", "entry": stem, "inputs": [
            {"name": names[i] if i < len(names) else f"arg{i}", "shape": _shape(a),
             "dtype": np.dtype(a.dtype if isinstance(a, np.ndarray) else a._dtype).name}
            for i, a in enumerate(example)]})
    return entries


def _shape(example) -> list:
    """An example argument's shape for the manifest: None (JSON null) for any size."""
    return list(example.shape) if isinstance(example, np.ndarray) else list(example._shape)


def _parameters(function) -> list:
    try:
        parameters = inspect.signature(function._fn).parameters.values()
    except (TypeError, ValueError):
        return []
    return [identifier(p.name, f"arg{i}") for i, p in enumerate(parameters)]


# --- the loader written into every saved directory --------------------------------------

LOADER = '''\
"""A saved model (tf.saved_model.save): functions as standalone NumPy modules.

Use it with NumPy only:

    import sys; sys.path.insert(0, "path/to/saved")
    import saved_model
    loaded = saved_model.load()
    loaded(x)                                  # the saved __call__
    loaded.signatures["serving_default"](x=x)  # {"output_0": ...}
    loaded.variables                           # read-only NumPy arrays

Each function is saved for the input shapes and dtypes it was traced with (see
manifest.json; a null dimension takes any size); other shapes or dtypes raise
ValueError. The functions embed the
variables' values: the loaded variables are a read-only copy.
"""
import importlib.util
import json
import os
import re

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
_NAME = re.compile(r"^(?:__call__|[A-Za-z_][A-Za-z0-9_]{0,100})$")
_RESERVED = {"variables", "trainable_variables", "non_trainable_variables", "signatures",
             "functions", "directory", "variable_names"}


def _identifier(text, what):
    if not isinstance(text, str) or not _NAME.match(text):
        raise ValueError(f"manifest.json: the {what} {text!r:.60} is not an identifier")
    return text


class SavedFunction:
    """A saved tf.function: one exported module per saved input signature."""

    def __init__(self, name, concretes, convert, check):
        self.name = name
        self._concretes = concretes        # [(input specs, the module's function)]
        self._convert, self._check = convert, check

    @property
    def input_signatures(self):
        """[(name, shape, dtype) per argument] for each saved signature."""
        return [[(s["name"], tuple(s["shape"]), s["dtype"]) for s in specs]
                for specs, _ in self._concretes]

    def __call__(self, *args):
        if self._check is not None:
            self._check(args)
        for specs, function in self._concretes:
            arrays = _matching(specs, args)
            if arrays is not None:
                result = function(*arrays)
                return result if self._convert is None else self._convert(result)
        got = [(np.shape(a), _dtype_name(a)) for a in args]
        raise ValueError(f"{self.name}: no saved signature takes arguments of shape and "
                         f"dtype {got}; saved: {self.input_signatures}")


def _dtype_name(value):
    return np.asarray(value).dtype.name


def _matching(specs, args):
    if len(specs) != len(args):
        return None
    arrays = []
    for spec, value in zip(specs, args):
        array = np.asarray(value)
        dtype = np.dtype(spec["dtype"])
        if array.dtype != dtype:
            # Python numbers and lists take the signature's dtype of their kind (as
            # TensorFlow converts them); arrays and tensors must match exactly.
            if hasattr(value, "dtype") or not np.can_cast(array.dtype, dtype, "same_kind"):
                return None
            array = array.astype(dtype)
        if array.ndim != len(spec["shape"]) or any(
                want is not None and want != got for want, got in zip(spec["shape"], array.shape)):
            return None
        arrays.append(array)
    return arrays


class SavedSignature:
    """A serving signature: keyword arguments in, a dict of outputs out."""

    def __init__(self, function, names):
        self._function, self._names = function, names

    def __call__(self, **inputs):
        if sorted(inputs) != sorted(self._names):
            raise TypeError(f"{self._function.name}: the signature takes the keyword "
                            f"arguments {self._names}, got {sorted(inputs)}")
        result = self._function(*[inputs[n] for n in self._names])
        if isinstance(result, dict):
            return dict(result)
        if isinstance(result, (tuple, list)):
            return {f"output_{k}": v for k, v in enumerate(result)}
        return {"output_0": result}


class Loaded:
    """The loaded object: the saved functions as attributes, `signatures`, `variables`."""

    def __call__(self, *args):
        function = self.__dict__.get("__call__")
        if function is None:
            raise TypeError("this saved object has no __call__")
        return function(*args)


def _load_function(directory, name, entries, convert, check):
    concretes = []
    for entry in entries:
        stem = _identifier(entry["file"], "file name")
        path = os.path.join(directory, stem + ".py")
        spec = importlib.util.spec_from_file_location(f"{__name__}_{stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        concretes.append((entry["inputs"], getattr(module, _identifier(entry["entry"],
                                                                         "function"))))
    return SavedFunction(name, concretes, convert, check)


def load(directory=None, convert=None, check=None):
    """The saved object in `directory` (default: this file's directory).

    `convert` (optional) maps each function's result and each variable's value (tapec
    passes one that makes tensors); `check` (optional) sees each call's arguments."""
    directory = _HERE if directory is None else os.fspath(directory)
    with open(os.path.join(directory, "manifest.json"), encoding="utf-8") as handle:
        manifest = json.load(handle)
    if manifest.get("format") != "tapec.saved_model" or manifest.get("version") != 1:
        raise ValueError(f"{directory}: manifest.json is not a version 1 saved model")
    loaded = Loaded()
    functions = {}
    for name, entries in manifest["functions"].items():
        if _identifier(name, "function name") in _RESERVED:
            raise ValueError(f"manifest.json: the function name {name!r} is reserved")
        functions[name] = _load_function(directory, name, entries, convert, check)
        if not name.startswith("_signature_"):
            setattr(loaded, name, functions[name])
    loaded.functions = {n: f for n, f in functions.items() if not n.startswith("_signature_")}
    loaded.signatures = {}
    for key, signature in manifest["signatures"].items():
        function = functions[_identifier(signature["function"], "function name")]
        names = [spec["name"] for spec in manifest["functions"][signature["function"]][0]
                 ["inputs"]]
        loaded.signatures[_identifier(key, "signature name")] = SavedSignature(function, names)
    with np.load(os.path.join(directory, "variables.npz"), allow_pickle=False) as stored:
        values = []
        for record in manifest["variables"]:
            value = np.array(stored[_identifier(record["key"], "variable key")])
            value.setflags(write=False)
            values.append((record, value if convert is None else convert(value)))
    loaded.variables = tuple(v for _, v in values)
    loaded.trainable_variables = tuple(v for r, v in values if r["trainable"])
    loaded.non_trainable_variables = tuple(v for r, v in values if not r["trainable"])
    loaded.variable_names = tuple(r["name"] for r, _ in values)
    loaded.directory = directory
    return loaded
'''
