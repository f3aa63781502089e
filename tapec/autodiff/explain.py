"""Why a gradient is None: `GradientTape.explain(target, source)`.

`explain(tape, target, source)` reads what the tape recorded and returns one message
saying why `tape.gradient(target, source)` is None (zeros with
`unconnected_gradients='zero'`), or, when the gradient is connected, through how many
recorded ops it flows. The reasons, in the order they are checked:

  * the source has an integer or bool dtype (only floating tensors carry gradients);
  * the tape was already used (a non-persistent tape releases its recording);
  * the target has an integer or bool dtype;
  * the target is the source itself (connected: its gradient is the seed, even when the
    tape does not watch it, as TensorFlow);
  * the source is not watched by the tape (never passed to `watch`, passed to `watch`
    while the tape was not recording, a non-trainable Variable,
    `watch_accessed_variables=False`, a Variable never read while recording). As
    `gradient` and TensorFlow, a tensor the tape saw only as an unwatched input of an op
    it recorded (because another input was watched) is not watched;
  * the target was not recorded (computed inside `stop_recording()`, outside the `with`
    block, or from values the tape does not watch);
  * the target was recorded but does not depend on the source (its recorded inputs are
    named);
  * every recorded path from the source to the target goes through `stop_gradient`.

Tensor ids grow in creation order and the tape remembers the id windows during which
it was not recording (`stop_recording()`, after its `with` block), so a target created
in such a window is identified as such. `explain` only reads the tape: it records
nothing, creates no tensor and never consumes a non-persistent tape.
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import nest
from ..ops.shape import PLACEHOLDER, READ_VARIABLE, STOP_GRADIENT
from ..tensor import Tensor, Variable

_ZERO = "(zeros with unconnected_gradients='zero')"
_NO_GRADIENT_OPS = "floor, round, argmax, comparisons"


def describe(t, adjective="") -> str:
    """A short name for a Tensor or Variable: the Variable's name, or the tensor's value
    (when small), dtype and shape. `adjective` qualifies a tensor ('unwatched')."""
    shape = tuple(t._shape)
    if isinstance(t, Variable):
        return f"Variable {t.name!r} ({t._dtype.name}, shape {shape})"
    tensor = f"{adjective} tensor" if adjective else "tensor"
    value = getattr(t, "_value", None)
    if value is not None and value.size <= 4:
        shown = repr(value.item()) if value.ndim == 0 else \
            np.array2string(value, separator=", ").replace("\n", "")
        return f"the {tensor} {shown} ({t._dtype.name}, shape {shape})"
    article = "an" if tensor[0] in "aeiou" else "a"
    return f"{article} {t._dtype.name} {tensor} of shape {shape}"


def explain(tape, target, source) -> str:
    """Why `tape.gradient(target, source)` is None, or how it is connected (see the module
    docstring). `target` is a Tensor, a Variable or a nested list of them (summed, as
    `gradient` does); `source` one Tensor or Variable. Reads the tape only."""
    if target is None:
        raise TypeError("explain: target must be a Tensor, a Variable or a nested list of "
                        "them, got None")
    targets = nest.flatten(target)
    for t in targets:
        if not isinstance(t, (Tensor, Variable)):
            raise TypeError(f"explain: target must be a Tensor, a Variable or a nested list "
                            f"of them, got {type(t).__name__} {t!r:.60}")
    if not isinstance(source, (Tensor, Variable)):
        raise TypeError(f"explain: source must be a Tensor or a Variable, got "
                        f"{type(source).__name__} {source!r:.60}")
    return _Explainer(tape, targets, source).run()


class _Explainer:
    """The checks of `explain`, in order; each returns a message or None."""

    def __init__(self, tape, targets, source):
        self.tape, self.targets, self.source = tape, targets, source
        self.graph = tape.recorded.graph
        self.name = describe(source)
        self.source_id = source._handle_id if isinstance(source, Variable) else source._id
        self.head = f"The gradient with respect to {self.name} is None {_ZERO}. Reason: "

    def run(self) -> str:
        if not self.targets:
            return self.head + "the target is an empty list, so there is nothing to " \
                "differentiate."
        for check in (self.dtype, self.used, self.target_dtype, self.identity, self.watched,
                      self.recorded, self.depends, self.stopped):
            message = check()
            if message is not None:
                return message
        return self.connected()

    # --- (b) dtypes, (f) a used tape -----------------------------------------------------
    def dtype(self):
        dtype = self.source._dtype
        if dtype.kind in "fc":
            return None
        return (self.head + f"the source has dtype {dtype.name}, and only floating "
                "(and complex) tensors carry gradients. Cast it to a floating dtype, e.g. "
                "tf.cast(x, tf.float32), watch the cast tensor and compute the target from "
                "it.")

    def used(self):
        if not self.tape.recorded.used:
            return None
        return (f"The gradient with respect to {self.name} cannot be computed by this tape. "
                "Reason: the tape was already used: a non-persistent GradientTape allows one "
                "gradient() or jacobian() call and then releases everything it recorded, so "
                "another call raises RuntimeError. Create it with "
                "tf.GradientTape(persistent=True) to compute several gradients.")

    def target_dtype(self):
        ints = [t for t in self.targets if t._dtype.kind not in "fc"]
        if len(ints) < len(self.targets):
            return None
        return (self.head + f"the target, {describe(ints[0])}, has dtype "
                f"{ints[0]._dtype.name}: ops with integer or bool results are never "
                "recorded and carry no gradient. Keep the computation in a floating dtype "
                "(cast integer inputs with tf.cast(x, tf.float32) instead of the result).")

    # --- (a) watching ----------------------------------------------------------------------
    def watched(self):
        tape, source = self.tape, self.source
        if self.source_id in tape.recorded.live:
            return None
        head = self.head + "the source is not watched by this tape: "
        if self.source_id in tape.recorded.ignored:
            return (head + "it was passed to tape.watch() while the tape was not recording "
                    "(inside tape.stop_recording() or outside its with block), which has no "
                    "effect. Call tape.watch() inside the with block, outside "
                    "stop_recording().")
        if isinstance(source, Variable):
            if not source.trainable:
                return (head + "it is a non-trainable Variable (trainable=False), and tapes "
                        "only watch trainable Variables automatically. Call tape.watch(v) "
                        "inside the tape's with block before using it.")
            if not tape.recorded.watches_accessed_variables:
                return (head + "the tape was created with watch_accessed_variables=False, so "
                        "it watches only what is passed to tape.watch(). Call tape.watch(v) "
                        "before using it.")
            hint = (" If it was used only inside tape.stop_recording(), that is the likely "
                    "cause: move the op out of stop_recording()." if self._paused_since(0)
                    else "")
            return (head + "it was never used while the tape was recording (a trainable "
                    "Variable is watched when it is first read inside the tape's with block, "
                    "outside stop_recording()). Use it inside the with block." + hint)
        if source._value is None:
            return head + "it is symbolic (built while differentiating) and cannot be watched."
        made = self._made_while_paused(source._id)
        if made:
            return (head + f"it was produced {made}, so the op that produced it was not "
                    "recorded and the tape does not know it. Compute it while the tape is "
                    "recording, or call tape.watch(x) on it.")
        fed = ""
        if self.source_id in self.graph:
            users = sorted({self.graph[i].op.name for i in self.graph
                            if self.source_id in self.graph[i].inputs})
            fed = (f" The tape saw it only as an unwatched input of {', '.join(users)} "
                   "(recorded because another input is watched), and, as in TensorFlow, an "
                   "unwatched input gets no gradient.")
        return (head + "it was never passed to tape.watch() and was not produced by an op "
                "this tape recorded." + fed + " Call tape.watch(x) inside the tape's with "
                "block before computing the target from it (or make it a tf.Variable, which "
                "is watched automatically).")

    # --- the target ------------------------------------------------------------------------
    def _target_ids(self):
        return [t._handle_id if isinstance(t, Variable) else t._id for t in self.targets]

    def identity(self):
        if self.source_id not in self._target_ids():
            return None
        return (f"The gradient with respect to {self.name} is connected: the target is the "
                "source itself, so its gradient is the seed (ones, or output_gradients).")

    def recorded(self):
        ids = [i for i in self._target_ids() if i in self.graph]
        if ids:
            return None
        target = self.targets[0]
        if isinstance(target, Variable):
            return (self.head + f"the target is {describe(target)} itself, a value of its "
                    "own that does not depend on the source.")
        head = self.head + f"the target, {describe(target)}, was not recorded by this tape: "
        made = self._made_while_paused(target._id, before=True)
        if made == "inside tape.stop_recording()":
            return (head + "it was computed inside tape.stop_recording(). Most likely it "
                    "depends on the source through ops that ran there, and ops are not "
                    "recorded while recording is stopped: move them out of the "
                    "stop_recording() block.")
        if made:
            return (head + f"it was computed {made}, when the tape records nothing. "
                    "Compute it inside the tape's with block.")
        converted = self._conversion()
        if converted:
            return head + converted
        hint = ""
        if self._paused_since(self.source_id):
            hint = (" Since this tape stopped recording (tape.stop_recording()) after the "
                    "source was created, a likely cause is that the target was computed "
                    "from a value produced inside stop_recording(): move those ops out of the "
                    "stop_recording() block.")
        return (head + "none of the ops that produced it had an input the tape watches. "
                "This happens when it is computed from tensors that were never watched, from "
                "values taken out with .numpy() or np.asarray(), through integer or bool "
                f"intermediate results, or through ops without a gradient ({_NO_GRADIENT_OPS})."
                + hint)

    def depends(self):
        if self.source_id in self._ancestors(gated=False):
            return None
        ids = [i for i in self._target_ids() if i in self.graph]
        record = self.graph[ids[0]]
        if record.inputs:
            names = [self._node(i) for i in dict.fromkeys(record.inputs)]
            inputs = names[0] if len(names) == 1 else \
                ", ".join(names[:-1]) + " and " + names[-1]
            what = f"its recorded input{'s are' if len(names) > 1 else ' is'} {inputs}"
        else:
            what = f"it is a leaf of the recording ({self._node(ids[0])})"
        message = (self.head + f"the target ({record.op.name}, {record.dtype.name}, shape "
                   f"{record.shape}) is not on any recorded path from the source: {what}.")
        converted = self._conversion()
        if converted:
            return message + " " + converted
        paused = self._paused_leaves(self._ancestors(gated=False))
        if paused:
            return (message + f" A value it was computed from, {self._node(paused[0])}, was "
                    "computed inside tape.stop_recording(): if it depends on the source, "
                    "that is the likely cause; move the op out of stop_recording().")
        return message + (" Use the source in the computation of the target while the tape "
                          "is recording.")

    def stopped(self):
        if self._connected_nodes():
            return None
        descendants = self._descendants()
        cuts = [i for i in sorted(self._ancestors(gated=False))
                if self.graph[i].op is STOP_GRADIENT
                and any(j in descendants for j in self.graph[i].inputs)]
        if cuts:
            named = ", ".join(self._stop(i) for i in cuts[:3])
            return (self.head + "every recorded path from the source to the target goes "
                    f"through tf.stop_gradient, which lets no gradient through: {named}. "
                    "Remove the stop_gradient (or differentiate with respect to a value "
                    "after it) if the gradient should flow.")
        blocked = sorted({self.graph[i].op.name for i in self._ancestors(gated=False)
                          if self._blocks(i)})
        return (self.head + "every recorded path from the source to the target goes "
                f"through ops without a gradient ({', '.join(blocked)}).")

    def connected(self):
        nodes = sorted(self._connected_nodes() - {self.source_id})
        names = [self.graph[i].op.name for i in nodes]
        shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
        message = (f"The gradient with respect to {self.name} is connected through "
                   f"{len(nodes)} "
                   f"recorded op{'s' if len(nodes) != 1 else ''} ({shown}).")
        notes = []
        descendants = self._descendants()
        if any(self.graph[i].op is STOP_GRADIENT for i in self._ancestors(gated=False)
               if any(j in descendants for j in self.graph[i].inputs)):
            notes.append("some paths go through tf.stop_gradient and contribute nothing")
        paused = self._paused_leaves(self._ancestors(gated=True))
        if paused:
            notes.append(f"the value {self._node(paused[0])}, which the target was "
                         "computed from, was computed inside tape.stop_recording(), so any "
                         "dependence of it on the source is not included")
        return message + "".join(f" Note: {n}." for n in notes)

    # --- graph walks -------------------------------------------------------------------
    def _blocks(self, node_id) -> bool:
        """No gradient flows from this node to its inputs."""
        op = self.graph[node_id].op
        return bool(self.graph[node_id].inputs) and (
            op is STOP_GRADIENT or op.vjp is None or not op.differentiable)

    def _ancestors(self, gated):
        """Recorded ancestors of the targets (themselves included); `gated`: not walking
        past nodes that let no gradient through."""
        return self.graph.ancestors(
            [i for i in self._target_ids() if i in self.graph],
            (lambda node_id: not self._blocks(node_id)) if gated else None)

    def _descendants(self):
        """Recorded nodes that depend on the source (through any op)."""
        found = {self.source_id}
        for node_id in sorted(i for i in self.graph if i > self.source_id):
            if any(i in found for i in self.graph[node_id].inputs):
                found.add(node_id)
        return found

    def _connected_nodes(self):
        """Nodes on a path from the source to a target along which gradients flow."""
        upstream = self._ancestors(gated=True)
        if self.source_id not in upstream:
            return set()
        on = {self.source_id}
        for node_id in sorted(i for i in upstream if i > self.source_id):
            if not self._blocks(node_id) and any(i in on for i in self.graph[node_id].inputs):
                on.add(node_id)
        return on

    # --- windows without recording -------------------------------------------------------
    def _conversion(self) -> str | None:
        """The last place, before the target was made, where Python turned a value
        computed from the source into plain data (np.asarray, np.array of a list of
        tensors, .numpy(), float()), as a sentence."""
        made = max(self._target_ids(), default=None)
        for tensor_id, how, where, when in reversed(self.tape.recorded.conversions):
            if made is not None and when > made:
                continue
            if self.source_id in self.graph.ancestors([tensor_id]):
                what = "the source" if tensor_id == self.source_id else \
                    f"{self._node(tensor_id)}, computed from the source,"
                return (f"{how} at {where} turned {what} into plain data, and what was "
                        "computed from that is not recorded. Compute it with tensor ops "
                        "instead (tf.stack rather than np.array of a list, tf.reduce_mean "
                        "rather than np.mean of a list).")
        return None

    def _made_while_paused(self, node_id, before=False):
        """Where a tensor with this id was created, if the tape was not recording then
        (inside stop_recording(), after the with block; `before`: also before it began)."""
        tape = self.tape
        why = None
        for start, reason, end in tape.recorded.gaps:
            if start < node_id < end:
                why = reason
        if why is None and tape.recorded.gap is not None and node_id > tape.recorded.gap[0]:
            why = tape.recorded.gap[1]
        if why is None and before and (tape.recorded.started is None or node_id < tape.recorded.started):
            why = "before"
        return {"stop_recording": "inside tape.stop_recording()",
                "exit": "after the tape's with block ended",
                "before": "before the tape started recording"}.get(why)

    def _paused_since(self, node_id) -> bool:
        """Whether the tape was inside stop_recording() after `node_id` was created."""
        tape = self.tape
        windows = [(s, r) for s, r, _ in tape.recorded.gaps] + ([tape.recorded.gap] if tape.recorded.gap else [])
        return any(r == "stop_recording" and s > node_id for s, r in windows)

    def _paused_leaves(self, node_ids):
        """The unwatched inputs among `node_ids` created inside stop_recording()."""
        return [i for i in sorted(node_ids)
                if self.graph[i].op is PLACEHOLDER and self.graph[i].attrs.get("kind") ==
                "input" and self._made_while_paused(i) == "inside tape.stop_recording()"]

    # --- naming nodes --------------------------------------------------------------------

    def _node(self, node_id) -> str:
        r = self.graph[node_id]
        held = self.tape.recorded.tensors.get(node_id)
        if r.op is PLACEHOLDER:
            kind = r.attrs.get("kind")
            if kind == "variable" and node_id in self.tape.recorded.variables:
                return describe(self.tape.recorded.variables[node_id])
            adjective = "watched" if kind == "watched" else "unwatched"
            if held is not None:
                return describe(held, adjective)
            return f"a {adjective} {r.dtype.name} tensor of shape {r.shape}"
        if r.op is READ_VARIABLE:
            variable = self.tape.recorded.variables.get(r.inputs[0])
            return f"a read of {describe(variable)}" if variable is not None else "a read"
        if r.op.name == "constant":
            return f"the constant {r.attrs['value']!r}"
        return f"the output of {r.op.name} ({r.dtype.name}, shape {r.shape})"

    def _stop(self, node_id) -> str:
        r = self.graph[node_id]
        return f"stop_gradient of {self._node(r.inputs[0])}"


def warn_not_differentiable(what, t):
    """Warn that `what` (watch) was given `t`, whose dtype carries no gradient."""
    warnings.warn(f"{what}: {describe(t)} has dtype {t._dtype.name}, which carries no "
                  f"gradient (only floating tensors do); cast it to a floating dtype, e.g. "
                  f"tf.cast(x, tf.float32), and use the cast tensor", UserWarning,
                  stacklevel=3)


def warn_integer_sources(flat_sources, dtypes, what="gradient"):
    """One warning per call naming the integer or bool sources (their gradient is None);
    `dtypes` are the sources' (as the tape described them)."""
    for dtype in dtypes:            # a loop, not a list: nearly every call is all floating
        if dtype.kind not in "fc":
            break
    else:
        return
    names = "; ".join(describe(s) for s, dtype in zip(flat_sources, dtypes)
                      if dtype.kind not in "fc")
    warnings.warn(f"{what}: the gradient with respect to an integer or bool source is "
                  f"always None: {names}. Cast the source to a floating dtype, e.g. "
                  f"tf.cast(x, tf.float32), before using it", UserWarning, stacklevel=3)
