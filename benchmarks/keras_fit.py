"""`python -m benchmarks.keras_fit`: one epoch of `tf.keras` `Model.fit` in tapec, against
the same epoch written by hand in NumPy (forward pass, backpropagation and Adam by hand)
and, when TensorFlow is installed, against TensorFlow's Keras.

The model is an MLP (inputs - hidden relu - classes, logits) trained with Adam on the
mean sparse softmax cross-entropy, float32, batches of 32 in a fixed order (no shuffle),
every system from the same initial weights. Rows: the first epoch (tapec: tracing and
compiling the train step included; TensorFlow: its tf.function tracing included) and
the steady-state epoch (the median of the later ones). The NumPy loop's epoch losses
are checked against fit's before anything is timed. Not part of `python -m benchmarks`
(one run takes several seconds and needs no other system).
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

#: Problem size at scale 1.
SAMPLES, INPUTS, HIDDEN, CLASSES, BATCH, LEARNING_RATE = 8192, 64, 128, 10, 32, 1e-3
BETA_1, BETA_2, EPSILON = 0.9, 0.999, 1e-7          # Keras's Adam defaults


def make_data(samples: int, seed: int = 0):
    """(X float32 [samples, INPUTS], y int64 labels of a random linear teacher)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(samples, INPUTS)).astype(np.float32)
    teacher = rng.normal(size=(INPUTS, CLASSES))
    return X, np.argmax(X @ teacher, axis=1).astype(np.int64)


def initial_weights(seed: int = 1) -> list:
    """[W1, b1, W2, b2]: Glorot-uniform matrices and zero biases, float32."""
    rng = np.random.default_rng(seed)

    def glorot(n_in, n_out):
        limit = np.sqrt(6.0 / (n_in + n_out))
        return rng.uniform(-limit, limit, size=(n_in, n_out)).astype(np.float32)
    return [glorot(INPUTS, HIDDEN), np.zeros(HIDDEN, np.float32),
            glorot(HIDDEN, CLASSES), np.zeros(CLASSES, np.float32)]


# --- NumPy, by hand -----------------------------------------------------------------------

class NumpyMLP:
    """The MLP with its gradient and Adam written out: what fit computes, by hand."""

    def __init__(self, weights: list):
        self.weights = [w.copy() for w in weights]
        self.m = [np.zeros_like(w) for w in weights]
        self.v = [np.zeros_like(w) for w in weights]
        self.step = 0

    def train_batch(self, X, y) -> float:
        W1, b1, W2, b2 = self.weights
        n = len(y)
        pre = X @ W1 + b1
        h = np.maximum(pre, 0)
        logits = h @ W2 + b2
        shifted = logits - logits.max(axis=1, keepdims=True)
        exp = np.exp(shifted)
        total = exp.sum(axis=1, keepdims=True)
        loss = float(np.mean(np.log(total[:, 0]) - shifted[np.arange(n), y]))
        # d loss / d logits = (softmax - onehot) / n; then back through the layers.
        d_logits = exp / total
        d_logits[np.arange(n), y] -= 1
        d_logits /= np.float32(n)
        d_h = (d_logits @ W2.T) * (pre > 0)
        grads = [X.T @ d_h, d_h.sum(axis=0), h.T @ d_logits, d_logits.sum(axis=0)]
        self.adam(grads)
        return loss

    def adam(self, grads: list) -> None:
        """Keras 3's Adam: alpha = lr sqrt(1 - b2^t) / (1 - b1^t); w -= alpha m / (sqrt(v) + eps)."""
        self.step += 1
        t = np.float32(self.step)
        alpha = np.float32(LEARNING_RATE) * np.sqrt(1 - np.float32(BETA_2) ** t) / \
            (1 - np.float32(BETA_1) ** t)
        for w, g, m, v in zip(self.weights, grads, self.m, self.v):
            m += (g - m) * np.float32(1 - BETA_1)
            v += (g * g - v) * np.float32(1 - BETA_2)
            w -= (m * alpha) / (np.sqrt(v) + np.float32(EPSILON))

    def epoch(self, X, y, batch: int = BATCH) -> float:
        """One pass in order; returns the epoch's loss as fit logs it (the mean over
        samples of the batch losses)."""
        total = 0.0
        for start in range(0, len(y), batch):
            rows = slice(start, start + batch)
            total += self.train_batch(X[rows], y[rows]) * len(y[rows])
        return total / len(y)


# --- Keras models ---------------------------------------------------------------------------

def keras_model(keras, weights: list):
    """The MLP in `keras` (tapec's or TensorFlow's), compiled with Adam, at `weights`."""
    model = keras.Sequential([keras.Input(shape=(INPUTS,)),
                              keras.layers.Dense(HIDDEN, activation="relu"),
                              keras.layers.Dense(CLASSES)])
    model.set_weights(weights)
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=LEARNING_RATE),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def fit_epochs(model, X, y, epochs: int) -> tuple[list, list]:
    """(seconds of each epoch, loss of each epoch), one fit call per epoch."""
    seconds, losses = [], []
    for _ in range(epochs):
        start = time.perf_counter()
        history = model.fit(X, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
        seconds.append(time.perf_counter() - start)
        losses.append(history.history["loss"][0])
    return seconds, losses


def numpy_epochs(weights, X, y, epochs: int) -> tuple[list, list]:
    model = NumpyMLP(weights)
    seconds, losses = [], []
    for _ in range(epochs):
        start = time.perf_counter()
        losses.append(model.epoch(X, y))
        seconds.append(time.perf_counter() - start)
    return seconds, losses


def run(samples: int = SAMPLES, epochs: int = 5, with_tensorflow: bool = True,
        out=print) -> dict:
    """Times every system; returns {system: (seconds per epoch, losses per epoch)}."""
    import tapec
    X, y = make_data(samples)
    weights = initial_weights()
    results = {"NumPy by hand": numpy_epochs(weights, X, y, epochs)}
    tapec.clear_cache()
    results["tapec fit"] = fit_epochs(keras_model(tapec.keras, weights), X, y, epochs)
    if with_tensorflow:
        try:
            import tensorflow as tf_real
        except ImportError:
            out("TensorFlow is not installed: its row is left out")
        else:
            tf_real.config.threading.set_inter_op_parallelism_threads(1)
            results["TensorFlow Keras fit"] = fit_epochs(keras_model(tf_real.keras, weights),
                                                         X, y, epochs)
    return results


def report(results: dict, samples: int) -> str:
    steps = -(-samples // BATCH)
    numpy_steady = statistics.median(results["NumPy by hand"][0][1:])
    lines = [f"MLP {INPUTS}-{HIDDEN}-{CLASSES}, Adam, batch {BATCH}, {samples} samples "
             f"({steps} steps per epoch), float32", "",
             "| system | first epoch | steady epoch | per step | steady / NumPy | "
             "final epoch loss |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for system, (seconds, losses) in results.items():
        steady = statistics.median(seconds[1:])
        lines.append(f"| {system} | {seconds[0] * 1e3:.1f} ms | {steady * 1e3:.1f} ms | "
                     f"{steady / steps * 1e6:.0f} us | {steady / numpy_steady:.2f} | "
                     f"{losses[-1]:.6f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.keras_fit",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=SAMPLES,
                        help=f"training samples (default {SAMPLES})")
    parser.add_argument("--epochs", type=int, default=5,
                        help="epochs timed per system (at least 2; default 5)")
    parser.add_argument("--no-tensorflow", action="store_true",
                        help="leave TensorFlow out even when it is installed")
    args = parser.parse_args(argv)
    if args.epochs < 2:
        parser.error("--epochs must be at least 2 (the first epoch is reported apart)")
    results = run(args.samples, args.epochs, not args.no_tensorflow)
    mismatch = max(abs(a - b) for a, b in zip(results["NumPy by hand"][1],
                                              results["tapec fit"][1]))
    print(report(results, args.samples))
    print(f"\nlargest difference of tapec fit's epoch losses from NumPy's: {mismatch:.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
