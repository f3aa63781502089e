"""The other systems: TensorFlow (eager and tf.function), JAX (jit), PyTorch (eager),
HIPS autograd, and, when tapec has `tapec.function`, tapec's functional forms and the
TensorFlow idiom (the tape step inside `tapec.function`).

Each system is optional: `load()` imports it (ImportError or any failure: the system
is skipped with a note). `build(case)` returns a zero-argument callable that computes
the case's derivative from `case.data` (inputs converted to the system's arrays outside
the timed call) and returns it, or None when the system has no version of the case.
`reset()` clears the system's compile caches before a first-call measurement. The
training loops' versions (W9, W10) are in `training.py`; W11 is W2's code at a small size.
"""
from __future__ import annotations

import os

import numpy as np

from . import steps
from .training import AutogradTraining, JaxTraining, TensorFlowTraining, TorchTraining


class System:
    key = ""          # name on the command line (--systems)
    label = ""        # column header
    note = ""         # how it is run, for the report

    def load(self) -> str:
        """Import the system; return its version string."""
        raise NotImplementedError

    def build(self, case):
        return getattr(self, "_" + case.workload.lower())(case)

    def runs(self, case) -> bool:
        """Whether this system has a version of `case` (tapec-only cases: tapec's)."""
        return not case.tapec_only

    def reset(self) -> None:
        pass


def threads() -> int:
    """Threads each system may use: $TAPEC_BENCH_THREADS (set by `--threads`), else
    the machine's cores."""
    value = os.environ.get("TAPEC_BENCH_THREADS", "")
    if value.isdigit() and int(value) > 0:
        return int(value)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


# --- tapec (the tape path) --------------------------------------------------------------
class TapecTape(System):
    key, label = "tapec", "tapec"
    note = "record inside `GradientTape`, then `gradient` / `jacobian` (cache hit)"
    functions = ()      # the tapec.function objects the last build runs (their traces)

    def load(self) -> str:
        import tapec
        self.tapec = tapec
        return tapec.__version__

    def build(self, case):
        self.functions = ()
        return lambda: case.tapec(*case.tapec_args)

    def runs(self, case) -> bool:
        return True

    def reset(self) -> None:
        self.tapec.clear_cache()

    def compile_counts(self) -> tuple:
        """(compile-cache misses, traces of the tapec.function objects the last build
        runs) so far."""
        return (self.tapec.cache_info().misses,
                sum(f.experimental_get_tracing_count() for f in self.functions))


# --- tapec.function ---------------------------------------------------------------------
class TapecFunction(TapecTape):
    key, label = "function", "tapec.function"
    note = ("tapec's functional forms (`tapec.grad` / `hessian` / `jacobian`) on the same "
            "arguments (W9, W10: their loops with `tapec.value_and_grad` / `grad` and NumPy "
            "updates); W7a and W7b, which have none, are `tapec.function` of the tape step")

    def load(self) -> str:
        import tapec
        if not hasattr(tapec, "function"):
            raise ImportError("n/a: tapec has no `function` yet")
        self.tapec = tapec
        return tapec.__version__

    def runs(self, case) -> bool:
        return case.tf_body

    def build(self, case):
        fn = case.functional or self.tapec.function(case.tapec)
        self.functions = getattr(fn, "functions", [fn] if isinstance(
            fn, self.tapec.Function) else [])
        args = case.tapec_args
        return lambda: fn(*args)


class TapecTFIdiom(TapecFunction):
    """The body a TensorFlow user writes (forward pass recorded inside `GradientTape`,
    nested tapes for Hessians, `tape.jacobian` / `batch_jacobian`) under `tf.function`,
    which is `tapec.function` after `import tapec as tf`: the code a TF user brings,
    compared with the tape (eager) and the functional forms."""
    key, label = "tf-idiom", "tapec tf.function (TF body)"
    note = ("the tape step of the `tapec` column (the TensorFlow body as written) inside "
            "`tapec.function` (`tf.function` under `import tapec as tf`), on every "
            "workload")

    def build(self, case):
        # A new wrapper per build: a first-call measurement traces it afresh. A training
        # loop (W9, W10) keeps its loop in Python and calls its step under tf.function.
        if case.tf_idiom is not None:
            fn = case.tf_idiom(self.tapec.function)
            self.functions = fn.functions
        else:
            fn = self.tapec.function(case.tapec)
            self.functions = [fn]
        args = case.tapec_args
        return lambda: fn(*args)


# --- TensorFlow -------------------------------------------------------------------------
class TensorFlow(TensorFlowTraining, System):
    key, label = "tf", "TF eager"
    note = "TensorFlow eager `GradientTape` (the code tapec runs, on `import tensorflow`)"
    compiled = False

    def load(self) -> str:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow
        tensorflow.get_logger().setLevel("ERROR")     # retracing warnings of first calls
        if os.environ.get("TAPEC_BENCH_THREADS"):
            tensorflow.config.threading.set_intra_op_parallelism_threads(threads())
            tensorflow.config.threading.set_inter_op_parallelism_threads(threads())
        self.tf = tensorflow
        return tensorflow.__version__

    #: Workloads whose version decorates its train step itself (a zero-argument run).
    LOOPS = ("W9", "W10")

    def build(self, case):
        if case.workload in self.LOOPS:
            return super().build(case)
        step, args = super().build(case)
        if self.compiled:
            step = self.tf.function(step)
        return lambda: step(*args)

    def _w1(self, case):
        tf = self.tf
        return steps.w1(tf), (tf.constant(3.0),)

    def _w2(self, case):
        tf, d = self.tf, case.data
        params = [tf.Variable(d[k]) for k in ("W1", "b1", "W2", "b2")]
        step = steps.w2(tf)
        return step, (tf.constant(d["X"]), tf.constant(d["Y"]), *params)

    def _w3(self, case):
        tf = self.tf
        return steps.w3(tf), (tf.constant(case.data["x"]),)

    def _w4(self, case):
        tf = self.tf
        return steps.w4(tf), (tf.constant(case.data["A"]), tf.constant(case.data["x"]))

    def _w5(self, case):
        tf, d = self.tf, case.data
        step = steps.w5(tf)
        return step, tuple(tf.constant(d[k]) for k in ("X", "y", "w"))

    def _w6(self, case):
        tf = self.tf
        return steps.w6(tf), (tf.constant(case.data["W"]), tf.constant(case.data["x"]))

    def _w7a(self, case):
        tf = self.tf
        return steps.w7a(tf), (tf.constant(case.data["x"]),)

    def _w7b(self, case):
        tf = self.tf
        return steps.w7b(tf), (tf.constant(case.data["x"]), tf.constant(case.data["M"]))

    def _w8(self, case):
        tf, n = self.tf, case.params["N"]
        step = steps.w8(tf, n)
        return step, (tf.constant(case.data["x"], dtype=tf.float64),)

    _w11 = _w2      # W2's code at a small size, timed in a fresh process


class TensorFlowFunction(TensorFlow):
    key, label = "tf.function", "TF function"
    note = ("the same TensorFlow step inside `tf.function` (graph mode, traced once); W9 "
            "and W10: the train step under `tf.function`, the loop in Python (W10 with a "
            "Python float beta retraces for each new value, by design)")
    compiled = True


# --- JAX --------------------------------------------------------------------------------
class Jax(JaxTraining, System):
    key, label = "jax", "JAX jit"
    note = ("`jax.jit` of `grad` / `hessian` / `jacrev` / `vmap(jacrev)`, float64 enabled, "
            "`block_until_ready`; W8 uses `lax.fori_loop` (traced once, not unrolled); W9 "
            "and W10: the whole run under `jit`, its steps in `lax.fori_loop`")

    def load(self) -> str:
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        self.jax, self.jnp = jax, jnp
        return jax.__version__

    def reset(self) -> None:
        self.jax.clear_caches()

    def build(self, case):
        fn, args = super().build(case)
        fn = self.jax.jit(fn)
        block = self.jax.block_until_ready
        return lambda: block(fn(*args))

    def _w1(self, case):
        jax, jnp = self.jax, self.jnp
        return jax.grad(lambda x: x * x), (jnp.asarray(case.data["x"]),)

    def _w2(self, case):
        jax, jnp, d = self.jax, self.jnp, case.data

        def loss(params, X, Y):
            W1, b1, W2, b2 = params
            h = jnp.tanh(X @ W1 + b1)
            logits = h @ W2 + b2
            return -jnp.mean(jnp.sum(Y * jax.nn.log_softmax(logits), axis=1))
        params = tuple(jnp.asarray(d[k]) for k in ("W1", "b1", "W2", "b2"))
        return jax.grad(loss), (params, jnp.asarray(d["X"]), jnp.asarray(d["Y"]))

    def _w3(self, case):
        jax, jnp = self.jax, self.jnp

        def f(x):
            return jnp.sum(jnp.sin(x) * jnp.exp(-x ** 2) + jnp.log1p(x ** 2) * jnp.tanh(x)
                           + jnp.sqrt(1 + x ** 2))
        return jax.grad(f), (jnp.asarray(case.data["x"]),)

    def _w4(self, case):
        jax, jnp = self.jax, self.jnp
        return (jax.hessian(lambda x, A: x @ (A @ x)),
                (jnp.asarray(case.data["x"]), jnp.asarray(case.data["A"])))

    def _w5(self, case):
        jax, jnp, d = self.jax, self.jnp, case.data

        def loss(w, X, y):
            return jnp.mean(jnp.log(1 + jnp.exp(-y * (X @ w))))
        return jax.hessian(loss), tuple(jnp.asarray(d[k]) for k in ("w", "X", "y"))

    def _w6(self, case):
        jax, jnp = self.jax, self.jnp
        return (jax.jacrev(lambda x, W: jnp.tanh(W @ x)),
                (jnp.asarray(case.data["x"]), jnp.asarray(case.data["W"])))

    def _w7a(self, case):
        jax, jnp = self.jax, self.jnp
        return jax.vmap(jax.jacrev(lambda r: r * r)), (jnp.asarray(case.data["x"]),)

    def _w7b(self, case):
        jax, jnp = self.jax, self.jnp
        jac = jax.vmap(jax.jacrev(lambda r, M: jnp.tanh(r @ M)), in_axes=(0, None))
        return jac, (jnp.asarray(case.data["x"]), jnp.asarray(case.data["M"]))

    def _w8(self, case):
        jax, jnp, n = self.jax, self.jnp, case.params["N"]

        def f(x):
            return jax.lax.fori_loop(0, n, lambda i, y: jnp.sin(y) * 0.5 + y * 0.3, x)
        return jax.grad(f), (jnp.asarray(case.data["x"], dtype=jnp.float64),)

    _w11 = _w2      # W2's code at a small size, timed in a fresh process


# --- PyTorch ----------------------------------------------------------------------------
class Torch(TorchTraining, System):
    key, label = "torch", "PyTorch"
    note = ("eager `torch.autograd.grad`; `torch.func.hessian` / `jacrev` / "
            "`vmap(jacrev)` for Hessians and jacobians; `torch.set_num_threads` = cores "
            "(or `--threads`)")

    def load(self) -> str:
        import torch
        import torch.func
        torch.set_num_threads(threads())
        self.torch = torch
        return torch.__version__

    def _t(self, value, grad=False):
        return self.torch.tensor(value, requires_grad=grad)

    def _w1(self, case):
        torch = self.torch
        x = self._t(case.data["x"], grad=True)

        def step():
            y = x * x
            return torch.autograd.grad(y, x)[0]
        return step

    def _w2(self, case):
        torch, d = self.torch, case.data
        F = torch.nn.functional
        params = [self._t(d[k], grad=True) for k in ("W1", "b1", "W2", "b2")]
        W1, b1, W2, b2 = params
        X, Y = self._t(d["X"]), self._t(d["Y"])

        def step():
            h = torch.tanh(X @ W1 + b1)
            loss = F.cross_entropy(h @ W2 + b2, Y)     # class-probability targets, mean
            return list(torch.autograd.grad(loss, params))
        return step

    def _w3(self, case):
        torch = self.torch
        x = self._t(case.data["x"], grad=True)

        def step():
            y = (torch.sin(x) * torch.exp(-x ** 2) + torch.log1p(x ** 2) * torch.tanh(x)
                 + torch.sqrt(1 + x ** 2)).sum()
            return torch.autograd.grad(y, x)[0]
        return step

    def _w4(self, case):
        torch = self.torch
        A, x = self._t(case.data["A"]), self._t(case.data["x"])
        hessian = torch.func.hessian(lambda x: x @ (A @ x))
        return lambda: hessian(x)

    def _w5(self, case):
        torch, d = self.torch, case.data
        X, y, w = self._t(d["X"]), self._t(d["y"]), self._t(d["w"])
        hessian = torch.func.hessian(lambda w: torch.log(1 + torch.exp(-y * (X @ w))).mean())
        return lambda: hessian(w)

    def _w6(self, case):
        torch = self.torch
        W, x = self._t(case.data["W"]), self._t(case.data["x"])
        jac = torch.func.jacrev(lambda x: torch.tanh(W @ x))
        return lambda: jac(x)

    def _w7a(self, case):
        torch = self.torch
        x = self._t(case.data["x"])
        jac = torch.func.vmap(torch.func.jacrev(lambda r: r * r))
        return lambda: jac(x)

    def _w7b(self, case):
        torch = self.torch
        x, M = self._t(case.data["x"]), self._t(case.data["M"])
        jac = torch.func.vmap(torch.func.jacrev(lambda r: torch.tanh(r @ M)))
        return lambda: jac(x)

    def _w8(self, case):
        torch, n = self.torch, case.params["N"]
        x = torch.tensor(case.data["x"], dtype=torch.float64, requires_grad=True)

        def step():
            y = x
            for _ in range(n):
                y = torch.sin(y) * 0.5 + y * 0.3
            return torch.autograd.grad(y, x)[0]
        return step

    _w11 = _w2      # W2's code at a small size, timed in a fresh process


# --- HIPS autograd ----------------------------------------------------------------------
class Autograd(AutogradTraining, System):
    key, label = "autograd", "autograd"
    note = ("HIPS autograd `grad` / `hessian` / `jacobian` (jacobians loop over output "
            "elements; W7a, W7b as the jacobian of the batch sum)")

    def load(self) -> str:
        from importlib.metadata import version

        import autograd
        import autograd.numpy as anp
        from autograd.scipy import special
        self.ag, self.anp, self.special = autograd, anp, special
        return version("autograd")

    def _w1(self, case):
        g, x = self.ag.grad(lambda x: x * x), case.data["x"]
        return lambda: g(x)

    def _w2(self, case):
        ag, anp, d = self.ag, self.anp, case.data
        X, Y = d["X"], d["Y"]
        logsumexp = self.special.logsumexp

        def loss(params):
            W1, b1, W2, b2 = params
            h = anp.tanh(anp.dot(X, W1) + b1)
            logits = anp.dot(h, W2) + b2
            return anp.mean(logsumexp(logits, axis=1) - anp.sum(Y * logits, axis=1))
        g, params = ag.grad(loss), [d[k] for k in ("W1", "b1", "W2", "b2")]
        return lambda: g(params)

    def _w3(self, case):
        ag, anp = self.ag, self.anp

        def f(x):
            return anp.sum(anp.sin(x) * anp.exp(-x ** 2) + anp.log1p(x ** 2) * anp.tanh(x)
                           + anp.sqrt(1 + x ** 2))
        g, x = ag.grad(f), case.data["x"]
        return lambda: g(x)

    def _w4(self, case):
        anp, A, x = self.anp, case.data["A"], case.data["x"]
        h = self.ag.hessian(lambda x: anp.dot(x, anp.dot(A, x)))
        return lambda: h(x)

    def _w5(self, case):
        anp, d = self.anp, case.data
        X, y = d["X"], d["y"]
        h = self.ag.hessian(lambda w: anp.mean(anp.log(1 + anp.exp(-y * anp.dot(X, w)))))
        return lambda: h(d["w"])

    def _w6(self, case):
        anp, W = self.anp, case.data["W"]
        jac, x = self.ag.jacobian(lambda x: anp.tanh(anp.dot(W, x))), case.data["x"]
        return lambda: jac(x)

    def _w7a(self, case):
        # Rows are independent, so d(sum_b y[b, j]) / dx[i, k] = dy[i, j] / dx[i, k].
        jac, x = self.ag.jacobian(lambda x: (x * x).sum(axis=0)), case.data["x"]
        return lambda: np.transpose(jac(x), (1, 0, 2))

    def _w7b(self, case):
        anp, M = self.anp, case.data["M"]
        jac = self.ag.jacobian(lambda x: anp.tanh(anp.dot(x, M)).sum(axis=0))
        x = case.data["x"]
        return lambda: np.transpose(jac(x), (1, 0, 2))

    def _w8(self, case):
        anp, n = self.anp, case.params["N"]

        def f(x):
            y = x
            for _ in range(n):
                y = anp.sin(y) * 0.5 + y * 0.3
            return y
        g, x = self.ag.grad(f), float(case.data["x"])
        return lambda: g(x)

    _w11 = _w2      # W2's code at a small size, timed in a fresh process


TAPEC = TapecTape()
SYSTEMS = [TapecTFIdiom(), TapecFunction(), TensorFlow(), TensorFlowFunction(), Jax(),
           Torch(), Autograd()]


def by_key(key: str) -> System:
    return next(s for s in [TAPEC, *SYSTEMS] if s.key == key)
