"""The data `Model.fit`, `evaluate` and `predict` take, as batches for their steps.

Arrays (NumPy arrays, tapec tensors, pandas objects, or lists / tuples / dicts of them
for models with several inputs or outputs) are cut into batches of `batch_size` along
their first axis; with `shuffle`, each epoch takes its order from
`tapec.random.shuffle(tapec.range(n))`, so a run after `tf.random.set_seed(s)` repeats
exactly. Floating arrays are cast to float32 (Keras's floatx), as Keras 3 does;
integer and bool arrays keep their dtype. A `tapec.data.Dataset` gives its elements
as they are: each is one batch; a Python generator too (its arrays converted as above). A batch reaches a step as the tuple `(x, y,
sample_weight)`, shortened to `(x, y)` or `(x,)` when the last parts are None.
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from .. import nest
from .. import random as tf_random
from ..data import Dataset
from ..ops.shape import range as tf_range
from ..tensor import Tensor, convert_to_tensor

__all__ = ["unpack_x_y_sample_weight", "pack_x_y_sample_weight", "ArrayBatches",
           "DatasetBatches", "GeneratorBatches", "EpochIterator", "batches_of", "executions",
           "train_validation_split"]

FLOATX = np.dtype(np.float32)


def unpack_x_y_sample_weight(data: Any) -> tuple:
    """(x, y, sample_weight) from a step's data: a tuple of 1 to 3 parts, or x alone."""
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if len(data) == 1:
        return data[0], None, None
    if len(data) == 2:
        return data[0], data[1], None
    if len(data) == 3:
        return data
    raise ValueError("Data is expected to be in format `x`, `(x,)`, `(x, y)`, or "
                     f"`(x, y, sample_weight)`, found a tuple of {len(data)} parts")


def pack_x_y_sample_weight(x: Any, y: Any = None, sample_weight: Any = None) -> tuple:
    """The tuple a step receives: (x,), (x, y) or (x, y, sample_weight)."""
    if y is None:
        return (x,)
    if sample_weight is None:
        return (x, y)
    return (x, y, sample_weight)


def _array(value: Any, what: str) -> np.ndarray:
    """One input as a NumPy array, floats as float32."""
    if isinstance(value, Tensor):
        value = value.numpy()
    elif hasattr(value, "to_numpy"):          # pandas DataFrame / Series
        value = value.to_numpy()
    array = np.asarray(value)
    if array.dtype.kind not in "biuf" or array.ndim == 0:
        raise TypeError(f"{what}: expected a NumPy array or tensor with a batch axis, got "
                        f"{type(value).__name__} of dtype {array.dtype} and shape "
                        f"{array.shape}")
    if array.dtype.kind == "f" and array.dtype != FLOATX:
        array = array.astype(FLOATX)
    return array


def _arrays(structure: Any, what: str) -> Any:
    if structure is None:
        return None
    return nest.map_structure(lambda leaf: _array(leaf, what), structure)


def _length(arrays: Any) -> int:
    lengths = {leaf.shape[0] for leaf in nest.flatten(arrays) if leaf is not None}
    if len(lengths) != 1:
        raise ValueError(f"Data cardinality is ambiguous: the arrays given have "
                         f"{sorted(lengths)} samples. Make sure all arrays contain the same "
                         "number of samples.")
    return lengths.pop()


def train_validation_split(arrays: tuple, validation_split: float) -> tuple:
    """(train, validation): the last `validation_split` of the samples (before any
    shuffling) are the validation data, as Keras."""
    n = _length(arrays)
    split_at = int(math.floor(n * (1.0 - validation_split)))
    if split_at == 0 or split_at == n:
        raise ValueError(f"Training data contains {n} samples, which is not sufficient to "
                         "split it into a validation and training set as specified by "
                         f"`validation_split={validation_split}`. Either provide more data, or "
                         "a different value for the `validation_split` argument.")

    def part(start, stop):
        return nest.map_structure(lambda a: None if a is None else a[start:stop], arrays)
    return part(0, split_at), part(split_at, n)


def class_sample_weights(y: np.ndarray, class_weight: dict) -> np.ndarray:
    """The weight of each sample's class: `y` holds class indices, or one-hot rows."""
    labels = np.argmax(y, axis=-1) if y.ndim > 1 and y.shape[-1] > 1 else y.reshape(len(y))
    labels = labels.astype(np.int64)
    missing = set(np.unique(labels).tolist()) - set(class_weight)
    if missing:
        raise ValueError(f"class_weight has no weight for classes {sorted(missing)} "
                         f"present in y (it has {sorted(class_weight)})")
    weights = np.array([class_weight[k] for k in labels.tolist()], dtype=FLOATX)
    return weights.reshape(len(labels))


class ArrayBatches:
    """Batches of in-memory arrays: `num_batches` per epoch, the last one partial."""

    def __init__(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False,
                 class_weight=None, what="fit"):
        if x is None:
            raise ValueError(f"{what}: x must be given (NumPy arrays, tensors or a "
                             "tapec.data.Dataset)")
        batch_size = 32 if batch_size is None else batch_size
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
                or batch_size < 1:
            raise ValueError(f"{what}: batch_size must be a positive int, got {batch_size!r}")
        if not isinstance(shuffle, bool):
            raise ValueError(f"{what}: shuffle must be True or False, got {shuffle!r} "
                             "(shuffle='batch' is not supported)")
        self.data = (_arrays(x, what), _arrays(y, what), _arrays(sample_weight, what))
        if class_weight is not None:
            if y is None or sample_weight is not None or nest.is_nested(self.data[1]):
                raise ValueError(f"{what}: class_weight needs a single y and no sample_weight")
            self.data = (self.data[0], self.data[1],
                         class_sample_weights(self.data[1], class_weight))
        self.size = _length(self.data)
        self.batch_size, self.shuffle = int(batch_size), shuffle
        self.num_batches = math.ceil(self.size / self.batch_size)

    def __iter__(self) -> Iterator[tuple]:
        """One epoch of batches, in a new order when shuffling."""
        order = None
        if self.shuffle:
            order = tf_random.shuffle(tf_range(self.size, dtype="int64")).numpy()
        for start in range(0, self.size, self.batch_size):
            rows = slice(start, start + self.batch_size) if order is None else \
                order[start:start + self.batch_size]
            yield pack_x_y_sample_weight(*(
                None if part is None else
                nest.map_structure(lambda a: convert_to_tensor(a[rows]), part)
                for part in self.data))


class DatasetBatches:
    """The elements of a Dataset, each one batch."""

    def __init__(self, dataset: Dataset, what="fit"):
        self.dataset = dataset
        cardinality = int(dataset.cardinality())
        self.num_batches = cardinality if cardinality >= 0 else None
        self.what = what

    def __iter__(self) -> Iterator[tuple]:
        for element in self.dataset:
            yield element if isinstance(element, tuple) else (element,)


class GeneratorBatches:
    """The batches a Python generator (or any iterator) yields: `x`, `(x,)`, `(x, y)` or
    `(x, y, sample_weight)`, floating arrays as float32. A generator runs once: its
    batches are read as they come, across epochs, and never again once it is exhausted."""

    num_batches = None

    def __init__(self, iterator: Iterator, what="fit"):
        self.iterator, self.what = iterator, what

    def __iter__(self) -> Iterator[tuple]:
        for element in self.iterator:
            parts = unpack_x_y_sample_weight(element)
            yield pack_x_y_sample_weight(*(
                None if part is None else
                nest.map_structure(convert_to_tensor, _arrays(part, self.what))
                for part in parts))


def is_generator(x) -> bool:
    """A Python generator or iterator (Keras 3 reads both as a stream of batches)."""
    return isinstance(x, Iterator) and not isinstance(x, (Dataset, np.ndarray, Tensor))


def batches_of(x, y=None, sample_weight=None, batch_size=None, shuffle=False,
               class_weight=None, what="fit"):
    """ArrayBatches, DatasetBatches or GeneratorBatches for what `fit` / `evaluate` /
    `predict` received."""
    if isinstance(x, Dataset) or is_generator(x):
        kind = "a Dataset" if isinstance(x, Dataset) else "a generator"
        given = [name for name, value in (("y", y), ("sample_weight", sample_weight),
                                          ("batch_size", batch_size),
                                          ("class_weight", class_weight)) if value is not None]
        if given:
            raise ValueError(f"{what}: when x is {kind} it holds the batches: "
                             f"{', '.join(given)} must not be given (got {given[0]}); "
                             "make it yield (x, y) or (x, y, sample_weight) batches")
        return DatasetBatches(x, what) if isinstance(x, Dataset) else GeneratorBatches(x, what)
    return ArrayBatches(x, y, sample_weight, batch_size, shuffle, class_weight, what)


def executions(batches, steps_per_execution: int):
    """The batches in groups of `steps_per_execution` (compile's): (first step, last step,
    batches), the last group possibly shorter. Callbacks see one step per group."""
    group: list = []
    for step, batch in enumerate(batches):
        group.append(batch)
        if len(group) == steps_per_execution:
            yield step - len(group) + 1, step, group
            group = []
    if group:
        yield step - len(group) + 1, step, group


class EpochIterator:
    """The batches of each epoch. With `steps` (steps_per_epoch), an epoch is that many
    batches drawn from a stream that continues across epochs and starts the data again
    (a new shuffle) when it runs out; without, an epoch is one pass over the data."""

    def __init__(self, batches, steps: int | None = None):
        if steps is not None and (isinstance(steps, bool) or
                                  not isinstance(steps, (int, np.integer)) or steps < 1):
            raise ValueError(f"steps must be a positive int or None, got {steps!r}")
        self.batches, self.steps = batches, steps
        self._stream: Iterator | None = None

    @property
    def num_batches(self) -> int | None:
        return self.steps if self.steps is not None else self.batches.num_batches

    def epoch(self) -> Iterator[tuple]:
        if self.steps is None:
            yield from self.batches
            return
        taken = 0
        restarted = False
        while taken < self.steps:
            if self._stream is None:
                self._stream = iter(self.batches)
            try:
                batch = next(self._stream)
            except StopIteration:
                self._stream = None
                if restarted:           # an empty source: nothing to give
                    return
                restarted = True
                continue
            restarted = False
            taken += 1
            yield batch
