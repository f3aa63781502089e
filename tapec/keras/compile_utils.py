"""What `Model.compile` builds from its arguments: the compiled loss (one loss or one per
output, weighted and summed) and the metrics, resolved by name ("accuracy") from the
loss and the shapes of the first batch."""
from __future__ import annotations

from .. import nest
from . import losses as losses_module
from . import metrics as metrics_module

__all__ = ["CompiledLoss", "MetricEntry", "aligned", "compiled_metrics", "output_layer_names",
           "metric_list", "resolve_metric"]


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

def metric_list(metrics, what):
    """compile's `metrics` as given: None, one metric, a list, or (for several outputs) a
    list with one entry per output or a dict keyed by output name (checked when the
    outputs are known, on the first batch)."""
    if metrics is None:
        return []
    return metrics if isinstance(metrics, (list, tuple, dict)) else [metrics]


class MetricEntry:
    """One compiled metric: the Metric, whether it takes sample weights, which output it
    watches (an index into the flattened predictions) and its name in the logs."""

    def __init__(self, metric, weighted, output, log_name):
        self.metric, self.weighted, self.output, self.log_name = \
            metric, weighted, output, log_name


def _per_output(specs, count, y_pred, names, what) -> list:
    """Keras 3's forms for several outputs: a list with one entry per output, or a dict
    keyed by output name (outputs left out get none)."""
    flat_outputs = nest.is_nested(y_pred) and len(y_pred) == count
    if flat_outputs and isinstance(specs, (list, tuple)) and len(specs) == count:
        return list(specs)
    if flat_outputs and names and isinstance(specs, dict) and set(specs) <= set(names):
        return [specs.get(name) for name in names]
    raise ValueError(f"Invalid `{what}`. `{what}` should contain metrics objects and "
                     f"either be a dict or a list matching the output names of the model "
                     f"{names} (one entry per output, each a metric or a list of metrics). "
                     f"Received: {what}={specs!r}")


def compiled_metrics(specs, loss, y, y_pred, names) -> list:
    """The MetricEntry list for compile's (metrics, weighted_metrics) on the first batch,
    as Keras 3's CompileMetrics builds it: for one output every metric watches it; for
    several, each output has its own, logged as "<output name>_<metric name>"."""
    preds = nest.flatten(y_pred)
    count = len(preds)
    if count > 1 and isinstance(y_pred, dict):
        names = sorted(y_pred)                 # the flattening order of a dict
    trues = aligned(y, y_pred, names, "y") if count > 1 else [y]
    entries, seen = [], {}
    for given, weighted, what in ((specs[0], False, "metrics"),
                                  (specs[1], True, "weighted_metrics")):
        if not given:
            continue
        per_output = [nest.flatten(given)] if count == 1 else \
            _per_output(given, count, y_pred, names, what)
        for index, output_specs in enumerate(per_output):
            if output_specs is None:
                continue
            if not isinstance(output_specs, (list, tuple)):
                output_specs = [output_specs]
            for spec in output_specs:
                metric = resolve_metric(spec, loss if count == 1 else None, trues[index],
                                        preds[index])
                prefix = "" if count == 1 or not names else f"{names[index]}_"
                log_name = _unique(prefix + metric.name, seen,
                                   prefix + "weighted_" + metric.name if weighted else None)
                entries.append(MetricEntry(metric, weighted, index, log_name))
    return entries


def _unique(name, seen, weighted_name=None):
    """Keras 3's log names: a repeated name gets "_1", "_2", ...; a weighted metric whose
    name is taken is first renamed "weighted_<name>"."""
    if name not in seen:
        seen[name] = 1
        return name
    if weighted_name is not None:
        return _unique(weighted_name, seen)
    seen[name] += 1
    return f"{name}_{seen[name] - 1}"


def resolve_metric(spec, loss, y, y_pred):
    """A Metric for compile's `spec`: "accuracy"/"acc" become the accuracy that fits the
    loss and the label shape, as Keras does."""
    return metrics_module.resolve(spec, loss=loss, y_true_shape=tuple(y.shape),
                                  y_pred_shape=tuple(y_pred.shape))
