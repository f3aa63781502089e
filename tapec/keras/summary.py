"""`Model.summary()`: Keras 3's table of layers, output shapes and parameter counts.

The table is drawn with the same box characters and column widths as Keras 3's (76
characters wide by default); a cell too long for its column wraps at spaces, and a
word too long for a line is cut with "…". Functional models whose layers do not form
a single chain get a "Connected to" column naming each input as layer[node][tensor].
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["print_summary"]

_WIDTH = 76


def _format_shape(shape: Any) -> str:
    if shape is None:
        return "?"
    if isinstance(shape, tuple) and all(d is None or isinstance(d, int) for d in shape):
        return "(" + ", ".join(str(d) for d in shape) + ")"
    if isinstance(shape, dict):
        return "{" + ", ".join(f"{k}: {_format_shape(v)}" for k, v in shape.items()) + "}"
    return "[" + ", ".join(_format_shape(s) for s in shape) + "]"


def readable_memory_size(size: float) -> str:
    """Bytes in B, KB, MB, ... (powers of 1024), two decimals, as Keras prints them."""
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if size / 1024 < 1:
            return f"{size:.2f} {unit}"
        size /= 1024
    return f"{size:.2f} EB"


def _wrap(text: str, width: int) -> list[str]:
    """Greedy word wrap; a word longer than the line is cut with an ellipsis."""
    lines, line = [], ""
    for word in text.split(" "):
        if len(word) > width:
            word = word[:width - 1] + "…"
        if line and len(line) + 1 + len(word) <= width:
            line += " " + word
        else:
            if line:
                lines.append(line)
            line = word
    lines.append(line)
    return lines


# Keras 3's column text widths in its default 76-character table.
_COLUMN_WIDTHS = {(False, False): (31, 22, 13), (True, False): (19, 17, 10, 17),
                  (False, True): (27, 21, 10, 5), (True, True): (16, 15, 9, 15, 5)}


def _widths(connected: bool, trainable: bool, line_length: int | None) -> list[int]:
    """Each column's text width (without its padding and borders), scaled to
    `line_length`; the Trainable column keeps its 5."""
    widths = list(_COLUMN_WIDTHS[connected, trainable])
    if not line_length or line_length == _WIDTH:
        return widths
    fixed = 5 if trainable else 0
    scalable = widths[:-1] if trainable else widths
    room = line_length - (len(widths) + 1) - 2 * len(widths) - fixed
    scaled = [max(4, int(w * room / sum(scalable))) for w in scalable]
    scaled[0] += room - sum(scaled)
    return scaled + ([fixed] if trainable else [])


def _row(cells: list[list[str]], widths: list[int], aligns: str) -> list[str]:
    height = max(len(c) for c in cells)
    out = []
    for k in range(height):
        parts = []
        for lines, width, align in zip(cells, widths, aligns):
            text = lines[k] if k < len(lines) else ""
            text = {"l": text.ljust, "r": text.rjust, "c": text.center}[align](width)
            parts.append(f" {text} ")
        out.append("│" + "│".join(parts) + "│")
    return out


def _rule(widths, left, middle, right, fill):
    return left + middle.join(fill * (w + 2) for w in widths) + right


def _chain_like(model) -> bool:
    """Keras prints a functional model like a Sequential one when every depth of its
    graph holds one node reading at most one tensor, and no layer is called twice."""
    graph = model._graph
    if graph is None:
        return True
    nodes = []
    for at_depth in graph.nodes_by_depth().values():
        if len(at_depth) > 1 or len(at_depth[0].input_tensors()) > 1:
            return False
        nodes += at_depth
    layers = [id(node.layer) for node in nodes]
    return len(set(layers)) == len(layers)


def _connections(layer, graph) -> list[str]:
    names = []
    for node in graph.nodes:
        if node.layer is layer and node.inputs is not None:
            for tensor in node.input_tensors():
                source, node_index, tensor_index = tensor._keras_history
                names.append(f"{source.name}[{node_index}][{tensor_index}]")
    return names


def _output_shape(layer, graph):
    if graph is not None:
        for node in graph.nodes:
            if node.layer is layer:
                shapes = [t.shape for t in node.output_tensors()]
                return shapes[0] if len(shapes) == 1 else shapes
    return layer._output_shape


def _parameter_count(weights) -> int:
    return int(sum(np.prod(w.shape, dtype=np.int64) for w in weights))


def _memory(weights) -> int:
    return int(sum(np.prod(w.shape, dtype=np.int64) * w.dtype.as_numpy_dtype().itemsize
                   for w in weights))


def print_summary(model: Any, line_length: int | None = None,
                  print_fn: Callable | None = None, show_trainable: bool = False) -> None:
    """Print (or pass to `print_fn`, as one string) the summary table of `model`."""
    from .models import Sequential
    graph = model._graph
    connected = not isinstance(model, Sequential) and not _chain_like(model)
    headers = ["Layer (type)", "Output Shape", "Param #"]
    aligns = "llr"
    if connected:
        headers.append("Connected to")
        aligns += "l"
    if show_trainable:
        headers.append("Trainable")
        aligns += "c"
    widths = _widths(connected, show_trainable, line_length)
    lines = [f'Model: "{model.name}"', _rule(widths, "┏", "┳", "┓", "━")]
    lines += [line.replace("│", "┃") for line in
              _row([_wrap(h, w) for h, w in zip(headers, widths)], widths, aligns)]
    lines.append(_rule(widths, "┡", "╇", "┩", "━"))
    layers = model.layers
    for k, layer in enumerate(layers):
        count = f"{_parameter_count(layer.weights):,}" if layer.built else "0 (unbuilt)"
        cells = [_wrap(f"{layer.name} ({type(layer).__name__})", widths[0]),
                 _wrap(_format_shape(_output_shape(layer, graph)), widths[1]),
                 [count]]
        if connected:
            names = _connections(layer, graph)
            text = ", ".join(names) if names else "-"
            cells.append(_wrap(text, widths[3]))
        if show_trainable:
            cells.append(["Y" if layer.trainable else "N"])
        lines += _row(cells, widths, aligns)
        if k < len(layers) - 1:
            lines.append(_rule(widths, "├", "┼", "┤", "─"))
    lines.append(_rule(widths, "└", "┴", "┘", "─"))
    trainable, frozen = model.trainable_weights, model.non_trainable_weights
    total = trainable + frozen
    lines.append(f" Total params: {_parameter_count(total):,} "
                 f"({readable_memory_size(_memory(total))})")
    lines.append(f" Trainable params: {_parameter_count(trainable):,} "
                 f"({readable_memory_size(_memory(trainable))})")
    lines.append(f" Non-trainable params: {_parameter_count(frozen):,} "
                 f"({readable_memory_size(_memory(frozen))})")
    text = "\n".join(lines)
    (print_fn or print)(text)
