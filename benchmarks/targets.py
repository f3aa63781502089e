"""The report's target tables: the targets per workload, compile throughput (W8 first
calls in ops/s), the Python-scalar loop (W10: time per step and compiles) and the first
gradient in a fresh process (W11).

The two TF idioms are the tape (`Row.tapec`) and the TF body under `tf.function` (the
`IDIOM` column). A ratio target names two numbers: the better idiom's ratio to NumPy
must be at most the first, the worse idiom's at most the second (twice the first).
"""
from __future__ import annotations

from dataclasses import dataclass

from .report import IDIOM, Results, Row
from .timing import format_ratio, format_seconds

#: Ratio targets: workload -> (better idiom / NumPy at most, worse idiom / NumPy at most).
RATIO_TARGETS = {"W2": (1.10, 2.2), "W3": (0.40, 1.0), "W4": (1.5, 3.0), "W5": (1.15, 2.3),
                 "W6": (1.15, 2.3), "W7a": (1.3, 2.6), "W7b": (2.5, 5.0), "W9": (1.3, 2.6)}
W1_SECONDS = 12e-6            # the tape's record + gradient of x*x
W8_FIRST_SECONDS = 0.5        # first call of the N=2000 loop (8,000 ops), both idioms
W8_FIRST_SIZE = 2000
W8_TF_IDIOM_RATIO = 0.3       # the W8 loop under tf.function, steady state, over NumPy
OPS_PER_SECOND = 25_000       # compile throughput: recorded ops over first-call seconds
TORCH = "PyTorch"
JAX = "JAX jit"
_USABLE = ("", "noisy")


@dataclass
class Target:
    what: str           # the workload or case
    target: str         # the target, in words
    better: str         # the better idiom's number
    worse: str          # the worse idiom's number
    meets: bool | None  # the better idiom meets the target (None: not measured)
    within: bool | None  # the worse idiom is within twice the target


def idioms(row: Row) -> list:
    """[(idiom name, Cell)] of the two TF idioms that ran and did not fail."""
    cells = [("tape", row.tapec), ("tf.function", row.others.get(IDIOM))]
    return [(name, cell) for name, cell in cells
            if cell is not None and cell.status in _USABLE and cell.seconds]


def _rows(results: Results, workload, **params) -> list:
    return [row for row in results.rows if row.workload == workload
            and all(row.params.get(k) == v for k, v in params.items())]


def _pair(values, lower_is_better=True):
    """(better, worse) of [(name, value)]: each (name, value), or None when absent."""
    if not values:
        return None, None
    ordered = sorted(values, key=lambda nv: nv[1], reverse=not lower_is_better)
    return ordered[0], (ordered[-1] if len(ordered) > 1 else None)


def _text(pair, fmt) -> str:
    return "—" if pair is None else f"{fmt(pair[1])} ({pair[0]})"


def ratio_target(row: Row, first: float, second: float) -> Target:
    values = [(name, cell.ratio(row.numpy.seconds)) for name, cell in idioms(row)]
    better, worse = _pair(values)
    return Target(row.id, f"≤ {first:g}× / {second:g}× NumPy", _text(better, format_ratio),
                  _text(worse, format_ratio), better and better[1] <= first,
                  worse and worse[1] <= second)


def seconds_target(row: Row, first: float, second: float, what: str) -> Target:
    values = [(name, cell.seconds) for name, cell in idioms(row)]
    better, worse = _pair(values)
    return Target(row.id, what, _text(better, format_seconds), _text(worse, format_seconds),
                  better and better[1] <= first, worse and worse[1] <= second)


def all_targets(results: Results) -> list:
    """Every target whose rows ran, in workload order."""
    out = []
    for row in _rows(results, "W1"):
        tape = row.tapec.seconds if row.tapec.status in _USABLE else None
        out.append(Target(row.id, f"tape ≤ {format_seconds(W1_SECONDS)}",
                          _text(("tape", tape) if tape else None, format_seconds), "—",
                          None if tape is None else tape <= W1_SECONDS, None))
    for workload, (first, second) in RATIO_TARGETS.items():
        for row in _rows(results, workload):
            if not row.first_call:
                out.append(ratio_target(row, first, second))
        if workload == "W7b":
            out += _w8_targets(results)
    out += _throughput_targets(results) + _scalar_targets(results) + _fresh_targets(results)
    return out


def _w8_targets(results: Results) -> list:
    out = []
    for row in _rows(results, "W8", size=W8_FIRST_SIZE):
        if row.first_call:
            limit = format_seconds(W8_FIRST_SECONDS)
            out.append(seconds_target(row, W8_FIRST_SECONDS, W8_FIRST_SECONDS,
                                      f"both idioms ≤ {limit} (8,000 ops)"))
    steady = [row for row in _rows(results, "W8") if not row.first_call]
    if steady:
        out.append(_w8_tape_against_torch(steady))
        out.append(_w8_tf_idiom_ratio(steady))
    return out


def _w8_tape_against_torch(rows) -> Target:
    """The tape faster than PyTorch on the issue's loop (N=2000, as the first-call
    target); the worst of the other sizes is shown beside it."""
    # As ratios to the NumPy time measured beside each (different processes).
    pairs = [(row, row.tapec_ratio() / row.others[TORCH].ratio(row.numpy.seconds))
             for row in rows if row.tapec.status in _USABLE and row.tapec_ratio()
             and row.others.get(TORCH) is not None and row.others[TORCH].status in _USABLE
             and row.others[TORCH].ratio(row.numpy.seconds)]
    return _at_target_size("tape faster than PyTorch (tape / PyTorch < 1)", pairs,
                           lambda ratio: ratio < 1)


def _w8_tf_idiom_ratio(rows) -> Target:
    """The TF body under tf.function at most W8_TF_IDIOM_RATIO of NumPy on the N=2000
    loop; the worst of the other sizes is shown beside it."""
    pairs = [(row, cell.ratio(row.numpy.seconds)) for row in rows
             for name, cell in idioms(row) if name == "tf.function"
             and cell.ratio(row.numpy.seconds)]
    return _at_target_size(f"tf.function ≤ {W8_TF_IDIOM_RATIO}× NumPy", pairs,
                           lambda ratio: ratio <= W8_TF_IDIOM_RATIO)


def _at_target_size(what, pairs, meets) -> Target:
    """A W8 steady target judged on the N=W8_FIRST_SIZE row of (row, ratio) `pairs`."""
    at_size = [(row, ratio) for row, ratio in pairs if row.params.get("size") == W8_FIRST_SIZE]
    if not at_size:
        return Target("W8 steady", what, "—", "—", None, None)
    row, ratio = at_size[0]
    worst_row, worst = max(pairs, key=lambda rp: rp[1])
    aside = "" if worst_row is row else f"; worst size {format_ratio(worst)} ({worst_row.id})"
    return Target("W8 steady", f"{what}, N={W8_FIRST_SIZE} loop",
                  f"{format_ratio(ratio)} ({row.id}{aside})", "—", meets(ratio), None)


# --- compile throughput (W8 first calls) ------------------------------------------------
def ops_per_second(row: Row, cell) -> float | None:
    if cell is None or cell.status not in _USABLE or not cell.seconds:
        return None
    return row.params["ops"] / cell.seconds


def _throughput_targets(results: Results) -> list:
    out = []
    for row in _rows(results, "W8", compile_throughput=True):
        values = [(name, ops_per_second(row, cell)) for name, cell in idioms(row)]
        better, worse = _pair(values, lower_is_better=False)
        out.append(Target(f"{row.id} ({row.params['ops']:,} ops)",
                          f"≥ {OPS_PER_SECOND:,} ops/s", _text(better, _ops_text),
                          _text(worse, _ops_text), better and better[1] >= OPS_PER_SECOND,
                          worse and worse[1] >= OPS_PER_SECOND / 2))
    return out


def _ops_text(value) -> str:
    return f"{value:,.0f} ops/s"


def throughput_section(results: Results) -> list:
    rows = [row for row in results.rows
            if row.workload == "W8" and row.first_call and "ops" in row.params]
    if not rows:
        return []
    lines = ["", "## Compile throughput", "",
             ("Recorded ops over the seconds of the first call after `tapec.clear_cache()` "
              "(record, differentiate, simplify, generate and compile, run): the W8 loop, 4 "
              f"ops per iteration. Target: ≥ {OPS_PER_SECOND:,} ops/s at 48,000 ops "
              "(N = 12,000, measured on tapec only) for the better idiom, and at least half "
              "that for the worse (the Targets table's rule); the last two columns say "
              "whether each idiom reaches the full rate on its own."), "",
             "| case | ops | tape | tape ops/s | tf.function (TF body) | tf.function ops/s "
             f"| better ≥ {OPS_PER_SECOND:,}, worse ≥ {OPS_PER_SECOND // 2:,} "
             f"| tape ≥ {OPS_PER_SECOND:,} | tf.function ≥ {OPS_PER_SECOND:,} |",
             "| --- | ---: | ---: | ---: | ---: | ---: | :---: | :---: | :---: |"]
    for row in rows:
        tf_cell = row.others.get(IDIOM)
        rates = [ops_per_second(row, row.tapec), ops_per_second(row, tf_cell)]
        known = [r for r in rates if r is not None]
        verdict = "—" if not known else _yes(max(known) >= OPS_PER_SECOND and
                                             min(known) >= OPS_PER_SECOND / 2)
        each = " | ".join("—" if r is None else _yes(r >= OPS_PER_SECOND) for r in rates)
        lines.append(f"| {row.id} | {row.params['ops']:,} | {row.tapec.seconds_text()} | "
                     f"{_rate(rates[0])} | "
                     f"{tf_cell.seconds_text() if tf_cell else '—'} | {_rate(rates[1])} | "
                     f"{verdict} | {each} |")
    return lines


def _rate(value) -> str:
    return "—" if value is None else f"{value:,.0f}"


# --- Python-scalar loop (W10) -----------------------------------------------------------
def allowed_compiles(params: dict) -> int:
    """One compile for the fractional betas, plus one for each integer-valued beta of
    the schedule (0 and 1: integer-valued literals may stay structural)."""
    betas = {min(1.0, step / params["anneal"]) for step in range(params["steps"])}
    return 1 + sum(1 for beta in betas if beta == int(beta))


def _scalar_targets(results: Results) -> list:
    out = []
    for row in _rows(results, "W10", tensor_beta=False):
        if row.first_call:
            continue
        allowed = allowed_compiles(row.params)
        values = [(name, cell.info["compiles"]) for name, cell in idioms(row)
                  if "compiles" in cell.info]
        better, worse = _pair(values)
        out.append(Target(row.id, f"compiles once (≤ {allowed}: beta = 0 and 1 may "
                                  "compile apart)", _text(better, str), _text(worse, str),
                          better and better[1] <= allowed, worse and worse[1] <= 2 * allowed))
    return out


def scalar_section(results: Results) -> list:
    rows = {row.id: row for row in results.rows if row.workload == "W10"}
    steady = [row for row in rows.values() if not row.first_call]
    if not steady:
        return []
    labels = ["tapec"] + [label for label in (IDIOM, "tapec.function")
                          if label in results.labels]
    lines = ["", "## Python-scalar loop", "",
             ("W10: per step, the steady-state time (warm cache) and the first run's "
              "(from `tapec.clear_cache()`, compiles included), and what one run compiles "
              "from a cold cache: compiles (compile-cache misses: a retrace that builds "
              "the same program finds it compiled), then misses / traces (TensorFlow's rule "
              "retraces `tf.function` for each new Python float). Target: compiles once "
              "(beta = 0 and beta = 1 may compile apart while integer-valued literals stay "
              "structural)."), "",
             "| case | column | per step | first run, per step | compiles | misses / "
             "traces |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]
    for row in steady:
        first = rows.get(row.id + " first")
        steps = row.params["steps"]
        for label in labels:
            cell = row.tapec if label == "tapec" else row.others[label]
            first_cell = None if first is None else (
                first.tapec if label == "tapec" else first.others[label])
            info = cell.info
            lines.append(
                f"| {row.id} | {label} | {_per_step(cell, steps)} | "
                f"{_per_step(first_cell, steps)} | {info.get('compiles', '—')} | "
                f"{info.get('misses', '—')} / {info.get('traces', '—')} |")
    return lines


def _per_step(cell, steps) -> str:
    if cell is None or cell.status not in _USABLE or not cell.seconds:
        return "—" if cell is None else (cell.status or "—")
    return format_seconds(cell.seconds / steps)


# --- first gradient in a fresh process (W11) --------------------------------------------
def _fresh_targets(results: Results) -> list:
    out = []
    for row in _rows(results, "W11"):
        jax = row.others.get(JAX)
        limit = jax.seconds if jax is not None and jax.status in _USABLE else None
        values = [(name, cell.seconds) for name, cell in idioms(row)]
        better, worse = _pair(values)
        if limit is None:
            out.append(Target(row.id, "≤ JAX's first jit (JAX not run)",
                              _text(better, format_seconds), _text(worse, format_seconds),
                              None, None))
            continue
        out.append(Target(row.id, f"≤ JAX's first jit ({format_seconds(limit)})",
                          _text(better, format_seconds), _text(worse, format_seconds),
                          better and better[1] <= limit, worse and worse[1] <= 2 * limit))
    return out


def fresh_section(results: Results) -> list:
    rows = [row for row in results.rows if row.workload == "W11"]
    if not rows:
        return []
    lines = ["", "## First gradient in a fresh process", "",
             ("W11: the first gradient call in a new Python process (imports and input "
              "conversion not timed), median of 3 processes; tapec's persistent compile "
              "cache off. Target: tapec ≤ JAX's first `jit(grad)` call."), "",
             "| case | column | first gradient | / JAX jit |", "| --- | --- | ---: | ---: |"]
    for row in rows:
        jax = row.others.get(JAX)
        jax_seconds = jax.seconds if jax is not None and jax.status in _USABLE else None
        for label in ["tapec"] + results.labels:
            cell = row.tapec if label == "tapec" else row.others[label]
            ratio = (cell.seconds / jax_seconds if jax_seconds and cell.seconds
                     and cell.status in _USABLE else None)
            lines.append(f"| {row.id} | {label} | {cell.seconds_text()} | "
                         f"{format_ratio(ratio)} |")
    return lines


# --- the Targets table ------------------------------------------------------------------
def targets_section(results: Results) -> list:
    targets = all_targets(results)
    if not targets:
        return []
    lines = ["", "## Targets", "",
             ("Per workload: the better of the two TF idioms (the tape, and the TF body "
              "under `tf.function`) must meet the target, the worse must be within twice "
              "it (ratio targets name both numbers: better / worse; \"both idioms\": the "
              "worse must meet the target too). Seconds, ratios to NumPy (paired, as in "
              "the first table), ops/s or compiles as the target says; the idiom in "
              "parentheses."), "",
             "| case | target | better idiom | worse idiom | better meets | worse within "
             "bound |",
             "| --- | --- | ---: | ---: | :---: | :---: |"]
    for t in targets:
        lines.append(f"| {t.what} | {t.target} | {t.better} | {t.worse} | {_verdict(t.meets)} "
                     f"| {_verdict(t.within)} |")
    return lines


def _verdict(value) -> str:
    return "—" if value is None else _yes(bool(value))


def _yes(ok: bool) -> str:
    return "yes" if ok else "**no**"


def summary_line(results: Results) -> str:
    """One printed line: the targets missed, for the text table."""
    targets = all_targets(results)
    missed = [t.what + " (" + t.target + ")" for t in targets if t.meets is False
              or t.within is False]
    if not targets:
        return ""
    return ("Targets: all met" if not missed else
            f"Targets missed ({len(missed)} of {len(targets)}): " + "; ".join(missed))
