"""Results: the printed table, docs/benchmarks.md and docs/benchmarks.png."""
from __future__ import annotations

import datetime
import os
import platform
import subprocess
from dataclasses import dataclass, field

import numpy as np

from .systems import TapecFunction, TapecTFIdiom
from .timing import format_ratio, format_seconds


@dataclass
class Cell:
    """One system's measurement of one case."""
    seconds: float | None = None
    status: str = ""        # "" ok, "n/a", "error", "wrong" (result differs), "noisy"
    reference: float | None = None   # NumPy's time, measured interleaved with this one
    info: dict = field(default_factory=dict)   # counts beside the time: {"compiles": 3}

    def ratio(self, numpy_seconds=None):
        """seconds / the NumPy time measured with it (else `numpy_seconds`)."""
        numpy_seconds = self.reference or numpy_seconds
        if self.seconds is None or not numpy_seconds:
            return None
        return self.seconds / numpy_seconds

    def ratio_text(self, numpy_seconds) -> str:
        if self.status in ("n/a", "error"):
            return self.status
        return format_ratio(self.ratio(numpy_seconds)) + self._mark()

    def _mark(self) -> str:
        return {"wrong": " ✗", "noisy": " ~"}.get(self.status, "")

    def seconds_text(self, reference=False) -> str:
        """'1.2 ms', with ' (NumPy 0.5 ms)' after it when `reference`."""
        if self.status in ("n/a", "error"):
            return self.status
        text = format_seconds(self.seconds)
        if reference and self.reference:
            text += f" ({format_seconds(self.reference)})"
        return text + self._mark()


@dataclass
class Row:
    id: str
    workload: str
    title: str
    numpy: Cell
    tapec: Cell
    others: dict = field(default_factory=dict)     # label -> Cell
    first_call: bool = False                        # a "first" row (compile included)
    params: dict = field(default_factory=dict)      # the case's sizes: {"N": .., "ops": ..}

    def tapec_ratio(self):
        return self.tapec.ratio(self.numpy.seconds)


@dataclass
class Results:
    rows: list
    labels: list            # other systems' column labels, in order
    systems: dict           # label -> "version" or "not installed: ..." note
    notes: dict             # label -> how the system is run
    problems: list          # "row / system: message"
    settings: dict          # scale, quick, command


# --- printed table ----------------------------------------------------------------------
def text_table(results: Results) -> str:
    head = ["workload", "tapec", "NumPy", "ratio"] + results.labels
    lines = [head]
    for row in results.rows:
        lines.append([row.id, row.tapec.seconds_text(), row.numpy.seconds_text(),
                      row.tapec.ratio_text(row.numpy.seconds)]
                     + [row.others[label].ratio_text(row.numpy.seconds)
                        for label in results.labels])
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    out = []
    for line in lines:
        out.append("  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                             for i, (cell, w) in enumerate(zip(line, widths))))
    idiom = idiom_ratios(results)
    if idiom:
        out += ["", f"TF idiom / best tapec form (target <= {IDIOM_TARGET}x): "
                + ", ".join(f"{row.id} {_idiom_text(row, label, ratio)}"
                            for row, label, ratio in idiom)]
    from . import targets
    summary = targets.summary_line(results)
    return "\n".join(out + (["", summary] if summary else []))


# --- the TF idiom against the best tapec form -------------------------------------------
#: The column of the TF body inside `tapec.function`, and the columns of tapec's other
#: forms besides the tape (`Row.tapec`) that it is held against.
IDIOM, FORMS = TapecTFIdiom.label, (TapecFunction.label,)

#: The target: on every workload the TF idiom runs within this factor of the best form.
IDIOM_TARGET = 1.3

_USABLE = ("", "noisy")      # statuses of a cell whose time counts (not wrong, not failed)


def idiom_ratios(results: Results) -> list:
    """[(row, label of the fastest tapec form, TF idiom / that form)] for the steady-state
    rows; [] when the TF-idiom column was not run. Ratio None when the TF idiom or every
    form failed. Times are compared as ratios to the NumPy reference measured beside
    each (in its own process), so that a busy spell in one process does not skew them."""
    if IDIOM not in results.labels:
        return []
    out = []
    for row in results.rows:
        if row.first_call:
            continue
        forms = [("tapec", row.tapec)] + [(label, row.others[label]) for label in FORMS
                                          if label in results.labels]
        ratios = [(cell.ratio(row.numpy.seconds), label) for label, cell in forms
                  if cell.status in _USABLE and cell.ratio(row.numpy.seconds)]
        idiom = row.others[IDIOM]
        mine = idiom.ratio(row.numpy.seconds) if idiom.status in _USABLE else None
        best, label = min(ratios) if ratios else (None, None)
        out.append((row, label, mine / best if mine and best else None))
    return out


def _best_cell(row: Row, label) -> Cell | None:
    return row.tapec if label == "tapec" else row.others.get(label)


def _idiom_noisy(row: Row, label) -> bool:
    """Whether the TF idiom's time or the best form's stayed noisy (marked ~)."""
    best = _best_cell(row, label)
    return "noisy" in (row.others[IDIOM].status, best.status if best else "")


def _idiom_text(row: Row, label, ratio) -> str:
    if ratio is None:
        return "—"
    return (format_ratio(ratio) + (" ~" if _idiom_noisy(row, label) else "")
            + ("" if ratio <= IDIOM_TARGET else " (over)"))


# --- machine ----------------------------------------------------------------------------
def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:          # not Linux
        return os.cpu_count() or 1


def _git_commit() -> str:
    """The commit of the tapec being measured (not of these benchmarks: they may come from
    another checkout than the installed tapec)."""
    import tapec
    here = os.path.dirname(os.path.abspath(tapec.__file__))
    try:
        out = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def load_average() -> str:
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except (AttributeError, OSError):
        return "unknown"


def machine() -> dict:
    import tapec
    commit = _git_commit()
    return {"nproc": cores(), "cpu": cpu_model(), "python": platform.python_version(),
            "numpy": np.__version__, "load": load_average(),
            "tapec": tapec.__version__ + (f" (git {commit})" if commit else ""),
            "date": datetime.datetime.now(datetime.timezone.utc)
                                     .strftime("%Y-%m-%d %H:%M UTC")}


# --- Markdown ---------------------------------------------------------------------------
def markdown(results: Results, descriptions: dict) -> str:
    s = results.settings
    m = s.get("machine") or machine()
    lines = [
        "# Benchmarks",
        "",
        (f"Generated by `{s['command']}` on {m['date']}; re-run it to refresh this page "
         "and `benchmarks.png` (do not edit by hand)."),
        "",
        ("To run the suite: in a source checkout, `pip install -e \".[test,bench]\"` "
         "(plus any of TensorFlow, JAX, PyTorch, autograd to compare them: `.[dev]`), then "
         "`python -m benchmarks` or `tapec bench`; both write `benchmarks.md` and "
         "`benchmarks.png` into the checkout's `docs/` unless `--out DIR` says where. "
         "`--quick --scale 0.01 --systems none --no-write` is a smoke run; `--help` lists "
         "the options. The code is in `benchmarks/`, outside the installed package."),
        "",
        (f"- **Machine:** {m['nproc']} cores (nproc), {m['cpu']}; Python {m['python']}, "
         f"NumPy {m['numpy']}, tapec {m['tapec']}; load average {m['load']} at the start, "
         f"{s.get('load_end', '?')} at the end (a shared machine: compare ratios, not "
         "seconds)."),
        ("- **Method:** each time is the median over repeats (7 by default, at least 3 "
         "for calls slower than ~1 s; a repeat loops a call for ≥ 0.1 s) after one "
         "warm-up call and, for tapec, 100 more calls (0.2-10 s) and the C builds they "
         "start (a scalar program that has run 0.05 s in Python floats is compiled to C "
         "in the background, docs/simplifier.md), so tapec runs in steady state: the "
         "forward pass is recorded on a tape every call and the derivative is a cache "
         "hit. Ratios are a system's time "
         "over the hand-written NumPy reference (forward pass + analytic derivative, "
         "written as an expert would) measured in the same run; below 1 is faster than "
         "NumPy. Each system's repeats are interleaved with repeats of the NumPy "
         "reference in the same process, and its ratio divides by that NumPy time, so a "
         "busy spell of a shared machine falls on both (the NumPy column is the time "
         "measured alongside tapec). Each system, tapec included, runs in a process of "
         "its own, so no framework's thread pools run beside another's."),
        *_tapec_columns(results),
        ("- **Threads:** " + (f"{s['threads']} per system (OMP/OPENBLAS/MKL_NUM_THREADS, "
                              "`TAPEC_NUM_THREADS`, `torch.set_num_threads`, TensorFlow "
                              "intra/inter-op, XLA)"
                              if s.get("threads") else
                              "the libraries' defaults (all cores; tapec evaluates large "
                              "fused elementwise kernels in blocks on `tapec.num_threads()` "
                              "threads); PyTorch `set_num_threads(nproc)`") + "."),
        ("- **Checks:** every result, tapec's and each other system's, is compared with "
         "the NumPy reference (rtol 1e-6 for float64, 1e-4 for float32, absolute "
         "tolerance rtol × max |reference|); ✗ marks a result that differs, `error` a "
         "system that raised (see Problems). A measurement whose NumPy reference ran "
         "more than 2.5x slower than that case's fastest NumPy time in any process (a "
         "busy spell: multi-threaded BLAS stalls when a core is taken away) is taken "
         "again, twice at most; ~ marks one that stayed noisy."),
        ("- **First calls:** `first` rows time one call right after clearing the compile "
         "caches, median of up to 3: tapec after `tapec.clear_cache()` in a warm process "
         "(SymPy imported, per-op derivative rules already derived; it drops "
         "`tapec.function` traces too, and the TF-body column wraps the step in a new "
         "`tapec.function`, so both trace again), JAX after "
         "`jax.clear_caches()` with a new `jit` (includes XLA compilation), TensorFlow "
         "with a new `tf.function` (includes tracing); eager systems have nothing to "
         "compile. Their NumPy column is the steady-state reference. W11 is a first call "
         "too, each in a new process (its own table). The compile throughput (W8 first "
         "calls in ops/s), the Python-scalar loop's compiles (W10) and the targets per "
         "workload have tables of their own below the seconds."),
    ]
    if s.get("quick") or s.get("scale", 1.0) != 1.0:
        lines.append(f"- **Settings:** quick={s.get('quick')}, size scale={s.get('scale')} "
                     "(reduced run: sizes in the titles below).")
    lines += ["", "## Ratio to hand-written NumPy (lower is better)", ""]
    head = ["workload", "tapec", "NumPy", "tapec / NumPy"] + results.labels
    lines.append("| " + " | ".join(head) + " |")
    lines.append("| --- " * 1 + "| ---: " * (len(head) - 1) + "|")
    for row in results.rows:
        cells = [row.id, row.tapec.seconds_text(), row.numpy.seconds_text(),
                 _bold(row.tapec.ratio_text(row.numpy.seconds))]
        cells += [row.others[label].ratio_text(row.numpy.seconds) for label in results.labels]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "## Seconds per call", "",
              ("In parentheses: the NumPy reference timed alongside, in the same "
               "process (the ratios above divide by it)."), ""]
    head = ["workload", "NumPy", "tapec"] + results.labels
    lines.append("| " + " | ".join(head) + " |")
    lines.append("| --- " + "| ---: " * (len(head) - 1) + "|")
    for row in results.rows:
        cells = [row.id, row.numpy.seconds_text(), row.tapec.seconds_text()]
        cells += [row.others[label].seconds_text(reference=True) for label in results.labels]
        lines.append("| " + " | ".join(cells) + " |")
    lines += _idiom_section(results)
    lines += exported_section(results)
    from . import targets        # (it builds on this module's Row and IDIOM)
    lines += targets.targets_section(results) + targets.throughput_section(results)
    lines += targets.scalar_section(results) + targets.fresh_section(results)
    lines += ["", "## Workloads", ""]
    seen = set()
    for row in results.rows:
        if row.workload not in seen:
            seen.add(row.workload)
            lines.append(f"- **{row.workload}** {descriptions.get(row.workload, '')}.")
    lines.append("")
    lines.append("Row titles as run:")
    lines.append("")
    for row in results.rows:
        lines.append(f"- {row.id}: {row.title}")
    lines += ["", "## Systems", ""]
    for label in results.labels:
        lines.append(f"- **{label}** {results.systems.get(label, '')}: "
                     f"{results.notes.get(label, '')}")
    if results.problems:
        lines += ["", "## Problems", ""]
        lines += [f"- {p}" for p in results.problems]
    lines += ["", "![ratios](benchmarks.png)", ""]
    return "\n".join(lines)


def _tapec_columns(results: Results) -> list:
    """The Method bullet that tells tapec's three columns apart (when the TF-idiom column
    ran: otherwise the Systems notes say it)."""
    if IDIOM not in results.labels:
        return []
    return [("- **tapec columns:** `tapec` runs the tape step eagerly: the body as a "
             "TensorFlow user writes it (forward pass inside `GradientTape`, nested tapes "
             f"for Hessians, `tape.jacobian` / `batch_jacobian`). `{IDIOM}` runs that same "
             "body, unchanged, inside `tapec.function`, which is `tf.function` under "
             f"`import tapec as tf`: the TF idiom. `{FORMS[0]}` runs tapec's functional "
             "forms (`tapec.grad` / `hessian` / `jacobian`; W7a and W7b have none and run "
             "the TF body under `tapec.function` there too). In the training loops (W9, "
             "W10) the TF idiom is the train step under `tf.function`, called once per "
             "step from a Python loop. The goal is a TF idiom within "
             f"{IDIOM_TARGET}x of the best tapec form on every workload (table below the "
             "seconds).")]


def _idiom_section(results: Results) -> list:
    """The table of the TF idiom's time over the best tapec form's, row by row."""
    idiom = idiom_ratios(results)
    if not idiom:
        return []
    lines = ["", "## TF idiom against the best tapec form", "",
             (f"`{IDIOM}` over the faster of `tapec` (tape) and `{FORMS[0]}` (functional "
              "forms), steady-state rows. Each process's times are compared as their "
              "ratios to the NumPy reference measured beside them (the first table's "
              "numbers, repeated here), not as seconds taken in different processes; ~: "
              f"one of the two stayed noisy. Target: at most {IDIOM_TARGET} on every "
              "workload."), "",
             "| workload | TF idiom / NumPy | best tapec form / NumPy | TF idiom / best "
             f"| ≤ {IDIOM_TARGET} |",
             "| --- | ---: | ---: | ---: | :---: |"]
    for row, label, ratio in idiom:
        best = _best_cell(row, label)
        best_text = (f"{best.ratio_text(row.numpy.seconds)} ({label})" if best is not None
                     else "—")
        verdict = "—" if ratio is None else ("yes" if ratio <= IDIOM_TARGET else "**no**")
        mark = " ~" if ratio is not None and _idiom_noisy(row, label) else ""
        lines.append(f"| {row.id} | {row.others[IDIOM].ratio_text(row.numpy.seconds)} | "
                     f"{best_text} | {format_ratio(ratio)}{mark} | {verdict} |")
    return lines


#: The workload of exported modules' per-call time (benchmarks/exported.py).
EXPORTED = "W12"


def exported_section(results: Results) -> list:
    """The table of W12: an exported module's gradient per call against the same
    gradient written by hand, in the namespace of its arrays."""
    rows = [row for row in results.rows if row.workload == EXPORTED]
    if not rows:
        return []
    lines = ["", "## Exported modules per call", "",
             ("The `grad_` function of a module written by `tapec.export` (a None batch "
              "dimension; imported and called as a user does) against the same gradient "
              "written by hand with the same namespace's functions, their repeats "
              "interleaved in one process. At these sizes the difference is what the "
              "module adds to each call: checking its arguments, finding their namespace "
              "(NumPy arrays skip that: a test of plain comparisons), one statement per "
              "op. The tapec and NumPy columns above hold the same two times."), "",
             "| case | arrays | module | by hand | module / by hand | module − by hand |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]
    for row in rows:
        cell = row.tapec
        usable = cell.status in _USABLE and cell.seconds and cell.reference
        extra = (f"{(cell.seconds - cell.reference) * 1e6:+.1f} µs" if usable else "—")
        lines.append(f"| {row.id} | {row.params.get('namespace', '?')} | "
                     f"{cell.seconds_text()} | {format_seconds(cell.reference)} | "
                     f"{cell.ratio_text(row.numpy.seconds)} | {extra} |")
    return lines


def _bold(text: str) -> str:
    return f"**{text}**" if text not in ("—", "n/a", "error") else text


# --- plot -------------------------------------------------------------------------------
COLORS = {"tapec": "tab:blue", IDIOM: "tab:olive", "tapec.function": "tab:cyan",
          "TF eager": "tab:orange", "TF function": "tab:brown", "JAX jit": "tab:green",
          "PyTorch": "tab:red", "autograd": "tab:purple"}

def plot(results: Results, path: str) -> str | None:
    """Write the bar chart; return None, or a note when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed: skipped the plot (pip install matplotlib)"
    series = [("tapec", [r.tapec_ratio() for r in results.rows])]
    for label in results.labels:
        values = [r.others[label].ratio(r.numpy.seconds) for r in results.rows]
        if any(v is not None for v in values):
            series.append((label, values))
    n_rows, n_series = len(results.rows), len(series)
    width = 0.8 / n_series
    fig, ax = plt.subplots(figsize=(min(16.0, max(8.0, 0.15 * n_rows * n_series + 3)), 6.0))
    x = np.arange(n_rows)
    for i, (label, values) in enumerate(series):
        heights = [v if v is not None else np.nan for v in values]
        ax.bar(x - 0.4 + width * (i + 0.5), heights, width, label=label,
               color=COLORS.get(label),
               edgecolor="black" if label == "tapec" else None, linewidth=0.6)
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    ax.set_yscale("log")
    ax.set_xticks(x)
    ax.set_xticklabels([r.id for r in results.rows], rotation=45, ha="right")
    ax.set_ylabel("time / hand-written NumPy (log scale; 1 = NumPy)")
    ax.set_title("tapec and other systems relative to hand-written NumPy (lower is better)")
    ax.grid(axis="y", which="both", alpha=0.3)
    ax.legend(fontsize="small", ncol=min(n_series, 7), loc="upper center",
              bbox_to_anchor=(0.5, -0.22), frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None
