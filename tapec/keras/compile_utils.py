"""What `Model.compile` builds from its arguments: the compiled loss (one loss or one per
output, weighted and summed) and the metrics, resolved by name ("accuracy") from the
loss and the shapes of the first batch."""
from __future__ import annotations

from .. import nest
from . import losses as losses_module
from . import metrics as metrics_module

__all__ = ["CompiledLoss", "aligned", "output_layer_names", "metric_list", "resolve_metric"]


# --- the compiled loss ---------------------------------------------------------------------

class CompiledLoss:
    """compile's loss: one loss for one output, or one per output (a list in the outputs'
    order, or a dict keyed by output layer name; a single loss serves every output),
    weighted by `loss_weights` and summed. Names such as "crossentropy" are resolved on
    the first call, from the shapes of the labels and predictions (keras.losses.resolve)."""

    def __init__(self, loss, loss_weights):
        self.spec, self.weight_spec = loss, loss_weights
        self.losses = self.weights = None

    def _resolve(self, trues, preds, y_pred, names):
        count = len(preds)
        given = aligned(self.spec, y_pred, names, "loss")
        if len(given) not in (1, count):
            raise ValueError(f"compile received {len(given)} losses for a model with "
                             f"{count} outputs")
        given = given * count if len(given) == 1 else given
        self.losses = [losses_module.resolve(spec, tuple(true.shape), tuple(pred.shape))
                       for spec, true, pred in zip(given, trues, preds)]
        if self.weight_spec is not None:
            weights = aligned(self.weight_spec, y_pred, names, "loss_weights")
            if len(weights) not in (1, count):
                raise ValueError(f"compile: loss_weights has {len(weights)} entries for "
                                 f"{count} outputs")
            self.weights = weights * count if len(weights) == 1 else weights

    def __call__(self, y_true, y_pred, sample_weight=None, output_names=None):
        preds = nest.flatten(y_pred)
        trues = aligned(y_true, y_pred, output_names, "y")
        if len(trues) != len(preds):
            raise ValueError(f"the model has {len(preds)} outputs but y holds {len(trues)} "
                             "targets")
        if self.losses is None:
            self._resolve(trues, preds, y_pred, output_names)
        sample_weights = aligned(sample_weight, y_pred, output_names, "sample_weight")
        if len(sample_weights) == 1:
            sample_weights = sample_weights * len(preds)
        total = None
        for i, (loss, true, pred) in enumerate(zip(self.losses, trues, preds)):
            value = loss(true, pred, sample_weight=sample_weights[i])
            if self.weights is not None:
                value = value * self.weights[i]
            total = value if total is None else total + value
        return total


def aligned(structure, y_pred, names, what) -> list:
    """`structure` (targets, losses, weights) flattened in the order of the flattened
    predictions: a dict for a model whose outputs are a list is read by output name."""
    if isinstance(structure, dict) and not isinstance(y_pred, dict) and nest.is_nested(y_pred):
        if names is None:
            raise ValueError(f"{what} is a dict, but the model's outputs have no names to "
                             "match its keys with; give a list in the outputs' order")
        if set(structure) != set(names):
            raise ValueError(f"{what} has keys {sorted(structure)}, the model's outputs are "
                             f"named {names}")
        return [structure[name] for name in names]
    return nest.flatten(structure)


def output_layer_names(model) -> list | None:
    """The names of the layers that make a functional model's outputs (Keras 3's
    `output_names`), or None."""
    outputs = getattr(model, "outputs", None)
    if not outputs:
        return None
    histories = [getattr(t, "_keras_history", None) for t in nest.flatten(outputs)]
    if any(h is None for h in histories):
        return None
    return [h[0].name for h in histories]


# --- metrics --------------------------------------------------------------------------------

def metric_list(metrics, what) -> list:
    if metrics is None:
        return []
    if isinstance(metrics, dict) or (isinstance(metrics, (list, tuple)) and
                                     any(isinstance(m, (list, tuple, dict)) for m in metrics)):
        raise NotImplementedError(f"compile: {what} per output (nested lists or dicts) are not "
                                  "supported; give one flat list")
    return list(metrics) if isinstance(metrics, (list, tuple)) else [metrics]


def resolve_metric(spec, loss, y, y_pred):
    """A Metric for compile's `spec`: "accuracy"/"acc" become the accuracy that fits the
    loss and the label shape, as Keras does."""
    return metrics_module.resolve(spec, loss=loss, y_true_shape=tuple(y.shape),
                                  y_pred_shape=tuple(y_pred.shape))
