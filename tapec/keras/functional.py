"""The graph of a functional model: the layer calls between `keras.Input`s and outputs.

`FunctionalGraph(inputs, outputs)` walks the nodes (keras/keras_tensor.py) back from
the outputs, orders them so every node follows the nodes it reads, and `run` replays
them on real tensors: each layer is called again, so its weights are shared between
the graph and any other use of the layer.
"""
from __future__ import annotations

from typing import Any

from .. import nest
from .keras_tensor import KerasTensor

__all__ = ["FunctionalGraph"]


def _is_input(tensor: KerasTensor) -> bool:
    node = tensor.node
    return node is not None and node.inputs is None


class FunctionalGraph:
    """The layer calls from `inputs` to `outputs` (each a KerasTensor, or a list or dict
    of them), in an order that can be replayed."""

    def __init__(self, inputs: Any, outputs: Any) -> None:
        for name, structure in (("inputs", inputs), ("outputs", outputs)):
            bad = [x for x in nest.flatten(structure) if not isinstance(x, KerasTensor)]
            if bad or not nest.flatten(structure):
                raise ValueError(f"Model: all {name} must be KerasTensors (from keras.Input "
                                 f"and layer calls), got {structure!r:.200}")
        for x in nest.flatten(inputs):
            if not _is_input(x):
                raise ValueError(f"Model: every input must come directly from keras.Input, "
                                 f"got {x!r} (made by layer {x._keras_history[0].name!r})")
        self.inputs, self.outputs = inputs, outputs
        self.nodes = self._ordered_nodes()
        self._layers = None

    def _ordered_nodes(self) -> list:
        """Every node the outputs depend on, each after the nodes that feed it."""
        given = {id(x) for x in nest.flatten(self.inputs)}
        order, done, active = [], set(), set()

        def visit(tensor):
            node = tensor.node
            if id(node) in done:
                return
            if id(node) in active:
                raise ValueError("Model: the layer graph has a cycle")
            if node.inputs is None and id(tensor) not in given:
                raise ValueError(f"Graph disconnected: cannot obtain value for tensor "
                                 f"{tensor!r} at layer {node.layer.name!r}: it comes from an "
                                 f"Input that is not among the model's inputs")
            active.add(id(node))
            for parent in node.input_tensors():
                visit(parent)
            active.discard(id(node))
            done.add(id(node))
            order.append(node)

        for tensor in nest.flatten(self.inputs) + nest.flatten(self.outputs):
            visit(tensor)
        return order

    def _depths(self):
        """Keras 3's layout of the graph: each node's depth (the outputs' nodes 0, a
        node one more than the deepest node it feeds) and each layer's first-visit
        index in a walk back from the outputs."""
        given = {id(x) for x in nest.flatten(self.inputs)}
        order, index, done = [], {}, set()

        def visit(tensor):
            node = tensor.node
            if id(node) in done:
                return
            index.setdefault(id(node.layer), len(index))
            if node.inputs is not None and id(tensor) not in given:
                for parent in node.input_tensors():
                    visit(parent)
            done.add(id(node))
            order.append(node)

        for tensor in nest.flatten(self.outputs):
            visit(tensor)
        node_depth, layer_depth = {}, {}
        for node in reversed(order):
            depth = max(node_depth.setdefault(id(node), 0), layer_depth.get(id(node.layer), 0))
            layer_depth[id(node.layer)] = node_depth[id(node)] = depth
            if node.inputs is not None:
                for parent in node.input_tensors():
                    parent_node = parent.node
                    node_depth[id(parent_node)] = max(depth + 1,
                                                      node_depth.get(id(parent_node), 0))
        for tensor in nest.flatten(self.inputs):    # inputs the outputs do not use
            if id(tensor.node.layer) not in layer_depth:
                layer_depth[id(tensor.node.layer)], index[id(tensor.node.layer)] = 0, -1
                node_depth[id(tensor.node)] = 0
                order.append(tensor.node)
        return order, node_depth, layer_depth, index

    @property
    def layers(self) -> list:
        """The layers called in the graph, each once, in Keras 3's order: deepest first
        (the inputs), ties in the order a walk back from the outputs meets them."""
        if self._layers is None:
            order, _, layer_depth, index = self._depths()
            layers = {id(node.layer): node.layer for node in order}
            self._layers = sorted(layers.values(), key=lambda layer: (-layer_depth[id(layer)],
                                                                     index[id(layer)]))
        return list(self._layers)

    def nodes_by_depth(self) -> dict[int, list]:
        """depth -> the nodes at that depth (Keras' `_nodes_by_depth`)."""
        order, node_depth, _, _ = self._depths()
        found: dict[int, list] = {}
        for node in order:
            found.setdefault(node_depth[id(node)], []).append(node)
        return found

    def _bind_inputs(self, values: Any) -> dict[int, Any]:
        """KerasTensor id -> the tensor given for it: the same structure as `inputs`, or a
        dict keyed by the inputs' names, or a single tensor for a single input."""
        flat_inputs = nest.flatten(self.inputs)
        if isinstance(values, dict) and not isinstance(self.inputs, dict):
            by_name = {x.name: x for x in flat_inputs}
            missing = [name for name in by_name if name not in values]
            if missing:
                raise ValueError(f"Model: missing inputs {missing} (expected the keys "
                                 f"{sorted(by_name)}, got {sorted(values)})")
            return {id(by_name[name]): values[name] for name in by_name}
        if len(flat_inputs) == 1 and not isinstance(values, (dict, list, tuple)):
            return {id(flat_inputs[0]): values}
        flat_values = nest.flatten(values) if isinstance(values, (dict, list, tuple)) \
            else [values]
        if len(flat_values) != len(flat_inputs):
            raise ValueError(f"Model: expected {len(flat_inputs)} inputs, got "
                             f"{len(flat_values)}")
        return {id(x): v for x, v in zip(flat_inputs, flat_values)}

    def run(self, values: Any) -> Any:
        """The outputs for real `values` of the inputs."""
        computed = self._bind_inputs(values)

        def value_of(x):
            return computed[id(x)] if isinstance(x, KerasTensor) else x

        for node in self.nodes:
            if node.inputs is None:
                continue
            inputs, args, kwargs = nest.map_structure(value_of,
                                                      (node.inputs, node.args, node.kwargs))
            outputs = node.layer(inputs, *args, **kwargs)
            for tensor, value in zip(node.output_tensors(), nest.flatten(outputs)):
                computed[id(tensor)] = value
        return nest.map_structure(value_of, self.outputs)
