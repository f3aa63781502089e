"""Identifiers in generated code: one `Namer` per generated function or module.

The emitter asks a namer for the name of every value it computes; compiled code uses a
fresh `Namer`, `tapec.export` one it has seeded with names derived from the user's
(parameters, constants, `dloss_dx`, `b_tanh_1`). Either way a namer guarantees:

* uniqueness, also against what generated code reads without defining it: keywords,
  builtins and the globals `compile_function` binds (`np`, `math`, ...);
* room for an op's helper names. A multi-line template (`numpy_lines`) may derive
  `<name>_<suffix>` from its value's name (`logsumexp_1_shift`, `fused_2_0`), so such a
  name is a *stem*: no other name equals `<stem>_...`, and no stem is the start of a
  name already given out (a parameter named `xent_1_shift` keeps `xent_1` from being
  a stem);
* no user text unsanitized: a node's label (the variable the user assigned it to,
  `ir.sites`) becomes a name only through `identifier`; callers pass names they made
  identifiers of.

Values are named after their label (`h`, `b_h` for the cotangent of h, `dloss_dw` for a
result), else after their op, numbered per op from 1: `tanh_2`, `sum_1`, `xent_3`.
"""
from __future__ import annotations

import builtins
import keyword
import re

from . import xp_helpers

# Names generated code reads without defining them: the globals `compile_function`
# binds, the array-API form's namespace and device (array_api.py) and the helpers that
# form defines; a parameter or value named by user text must never shadow them.
GENERATED_GLOBALS = frozenset({"np", "math", "numexpr", "tapec_blocked", "xp", "device"}) \
    | xp_helpers.NAMES

RESERVED = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | \
    frozenset(dir(builtins)) | GENERATED_GLOBALS



def op_base(op) -> str:
    """The stem of the names of `op`'s values: its declared short name (`xent_3`, not
    `softmax_cross_entropy_with_logits_3`), else its name, as an identifier."""
    base = _BASES.get(op)
    if base is None:
        base = re.sub(r"[^A-Za-z0-9_]", "_", op.short or op.name)
        base = _BASES[op] = base if base[:1].isalpha() else f"value{base}"
    return base


_BASES = {}     # op -> op_base(op): asked once per value of a long program


def identifier(text: str, fallback: str = "value") -> str:
    """User text (a variable's name) as an ASCII identifier: other characters become
    `_`; no leading `_` or digit (generated helpers own the first, Python forbids the
    second); `fallback` where nothing is left."""
    cleaned = re.sub(r"\W", "_", str(text), flags=re.ASCII).lstrip("_0123456789")
    return cleaned[:40] or fallback


def derivative_name(target, source) -> str:
    """`d<target>_d<source>`: the name of a derivative result, from the labels of the
    value differentiated and the value it is differentiated by (`f` and `x` unknown)."""
    f = identifier(target, "f") if isinstance(target, str) else "f"
    x = identifier(source, "x") if isinstance(source, str) else "x"
    return f"d{f}_d{x}"


def has_helpers(op) -> bool:
    """Whether `op`'s template may derive helper names `<name>_<suffix>` from its value's."""
    return op.numpy_lines is not None or op.array_api_lines is not None


class Namer:
    """Hands out unique identifiers for one generated function (or module)."""

    def __init__(self, reserved=RESERVED):
        self._taken = set(reserved)
        self._stems = set()         # names whose `<name>_...` belongs to a template
        self._prefixes = set()      # "a" and "a_b" for a taken "a_b_c": never a stem
        self._unsplit = []          # names taken since `_prefixes` was last brought up to date
        self._counters = {}         # base -> last number given by `numbered`
        self._claimed = {}          # base -> the number of its last `claim` (1: itself)
        self._next_parameter = {}   # prefix -> next number `parameter` tries
        self._values = {}           # node -> its name

    # -- the rules --

    def free(self, name: str, stem: bool = False) -> bool:
        """Whether `name` may be given out (as a stem when `stem`)."""
        if name in self._taken or self._under_stem(name):
            return False
        return not (stem and name in self.prefixes())

    def prefixes(self) -> set:
        """"a" and "a_b" for every taken "a_b_c". Only a stem asks, and most functions
        have none, so the names are split when one does, not as they are taken."""
        for name in self._unsplit:
            self._prefixes.update(name[:i] for i, ch in enumerate(name) if ch == "_")
        self._unsplit.clear()
        return self._prefixes

    def _under_stem(self, name: str) -> bool:
        stems = self._stems
        return bool(stems) and any(name[:i] in stems for i, ch in enumerate(name) if ch == "_")

    def take(self, name: str, stem: bool = False) -> str:
        """Record `name`, chosen elsewhere (a given parameter name), as used."""
        self._taken.add(name)
        self._unsplit.append(name)
        if stem:
            self._stems.add(name)
        return name

    # -- names --

    def claim(self, base: str, stem: bool = False) -> str:
        """`base` if free, else `base_2`, `base_3`, ... A name once unfree stays so, so
        a base claimed again (a loop's `y = ...`, thousands of times) resumes its search
        where the last one ended."""
        base = self._outside_stems(base)
        k = self._claimed.get(base, 1)
        candidate = base if k == 1 else f"{base}_{k}"
        while not self.free(candidate, stem):
            k += 1
            candidate = f"{base}_{k}"
        self._claimed[base] = k
        return self.take(candidate, stem)

    def numbered(self, base: str, stem: bool = False) -> str:
        """`base_1`, `base_2`, ...: the next free one for `base`."""
        base = self._outside_stems(base)
        k = self._counters.get(base, 0) + 1
        while not self.free(f"{base}_{k}", stem):
            k += 1
        self._counters[base] = k
        return self.take(f"{base}_{k}", stem)

    def parameter(self, prefix: str) -> str:
        """`prefix0`, `prefix1`, ...: compiled functions' own parameter names."""
        k = self._next_parameter.get(prefix, 0)
        while not self.free(f"{prefix}{k}"):
            k += 1
        self._next_parameter[prefix] = k + 1
        return self.take(f"{prefix}{k}")

    def _outside_stems(self, base: str) -> str:
        # Every numbered form of a base that is a stem, or is under one, is under it
        # too: move the base out.
        while base in self._stems or self._under_stem(base):
            base = f"v{base}"
        return base

    # -- values --

    def value(self, node) -> str:
        """The name of a computed node: given before (`assign`), else after its label
        (the user's variable `h`, `b_h` for the cotangent of h, `dloss_dw`), else after
        its op (`tanh_2`)."""
        name = self._values.get(node)
        if name is None:
            label = node.label
            if label is None:
                name = self.numbered(op_base(node.op), has_helpers(node.op))
            else:
                name = self.claim(self._label_base(label), has_helpers(node.op))
            self._values[node] = name
        return name

    def _label_base(self, label) -> str:
        if isinstance(label, str):
            return identifier(label)
        # The cotangent of a value: b_<that value's name>, as named here where it is.
        of = self._values.get(label)
        if of is None:
            of = identifier(label.label) if isinstance(label.label, str) else op_base(label.op)
        return f"b_{of}"

    def given(self, node, name: str) -> None:
        """Tell the namer that `node` is `name` (a parameter), for `b_<name>`."""
        self._values.setdefault(node, name)

    def named(self, node) -> bool:
        return node in self._values

    def assign(self, node, base: str) -> str:
        """Name `node` `base` (numbered `base_2`... if taken); a name chosen by a caller."""
        name = self._values[node] = self.claim(base, has_helpers(node.op))
        return name
