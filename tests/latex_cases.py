"""A table of derivative programs for the LaTeX printer: scalar, vector and matrix
functions and their Hessians, each with the string tapec prints and a textbook form.

`CASES[name]()` records the program and returns `(tape, target, sources, names)`;
`PRINTED[name]` is the exact string `tape.latex(target, sources, names)` gives,
`TEXTBOOK[name]` the form a textbook (or the Matrix Cookbook) writes, and
`VERDICT[name]` our judgement of the printed form beside it: "ideal" (reads as the
textbook does, up to naming and the order of terms), "cluttered" (right, but a reader
must work to see the textbook form), or "wrong" (a symbol undefined, or a meaning
other than the value's). The gallery (docs/latex_gallery.md) shows the same table.
"""
import numpy as np

import tapec as tf

RNG_SEED = 20


def _rng():
    return np.random.default_rng(RNG_SEED)


def _c(shape, low=0.5, high=1.5):
    return tf.constant(_rng().uniform(low, high, size=shape))


def _scalar(fn, value=0.7):
    x = tf.constant(value, dtype=tf.float64)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = fn(x)
    return tape, y, x, [(x, "x")]


def _vector(fn, shape=(3, 1), named=()):
    x = _c(shape)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = fn(x)
    return tape, y, x, [(x, "X" if len([s for s in shape if s != 1]) > 1 else "x"), *named]


def _hessian(fn, shape=(3, 1), named=(), x=None):
    """The outer tape of a Hessian: the jacobian of the inner gradient of fn(x)."""
    x = _c(shape) if x is None else x
    with tf.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = fn(x)
        g = inner.gradient(y, x)
    return outer, g, x, [(x, "x"), *named]


def _matrices():
    rng = _rng()
    return (tf.constant(rng.uniform(0.5, 1.5, size=(3, 3))),
            tf.constant(rng.uniform(0.5, 1.5, size=(4, 3))),
            tf.constant(rng.uniform(0.5, 1.5, size=(3, 1))),
            tf.constant(rng.uniform(0.5, 1.5, size=(4, 1))))


A, R, a, b = _matrices()
SPD = tf.constant(np.eye(3) * 3 + _rng().uniform(0, 0.3, size=(3, 3)))
SPD = tf.constant((SPD.numpy() + SPD.numpy().T) / 2)
X5 = tf.constant(_rng().normal(size=(5, 3)))
LABELS = tf.constant(_rng().uniform(size=(5, 1)))


def _mlp():
    rng = np.random.default_rng(3)
    x = tf.constant(rng.normal(size=(3, 1)))
    W1 = tf.Variable(rng.normal(size=(4, 3)), name="W1")
    b1 = tf.Variable(rng.normal(size=(4, 1)), name="b1")
    W2 = tf.Variable(rng.normal(size=(1, 4)), name="W2")
    with tf.GradientTape(persistent=True) as tape:
        loss = tf.reduce_sum(tf.square(W2 @ tf.tanh(W1 @ x + b1) - 1.0))
    return tape, loss, [W1, b1, W2], [(x, "x"), (loss, "L")]


def _attention():
    rng = np.random.default_rng(4)
    Q = tf.constant(rng.normal(size=(4, 3)))
    K = tf.constant(rng.normal(size=(5, 3)))
    V = tf.constant(rng.normal(size=(5, 2)))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(Q)
        out = tf.reduce_sum(tf.nn.softmax(Q @ tf.transpose(K)) @ V)
    return tape, out, Q, [(Q, "Q"), (K, "K"), (V, "V")]


def logistic(X, labels, w):
    """(outer tape, loss, inner gradient) of the mean logistic loss of `w` on `X`,
    `labels`: the outer tape records the loss and, op by op, its inner gradient."""
    with tf.GradientTape(persistent=True) as outer:
        with tf.GradientTape() as inner:
            p = tf.sigmoid(X @ w)
            loss = tf.reduce_mean(-(labels * tf.math.log(p) +
                                    (1 - labels) * tf.math.log(1 - p)))
        g = inner.gradient(loss, w)
    return outer, loss, g


def _logistic(hessian):
    w = tf.Variable(np.random.default_rng(5).normal(size=(3, 1)), name="w")
    names = [(X5, "X"), (LABELS, "y")]
    outer, loss, g = logistic(X5, LABELS, w)
    if hessian:
        return outer, g, w, names + [(g, "L")]
    return outer, loss, w, names + [(loss, "L")]


def _logdet():
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(SPD)
        y = tf.math.log(tf.linalg.det(SPD))
    return tape, y, SPD, [(SPD, "X")]


CASES = {
    # scalar functions
    "S1 x^4": lambda: _scalar(lambda x: x ** 4),
    "S2 sin x e^x": lambda: _scalar(lambda x: tf.sin(x) * tf.exp(x)),
    "S3 sigmoid": lambda: _scalar(lambda x: 1 / (1 + tf.exp(-x))),
    "S4 softplus": lambda: _scalar(lambda x: tf.math.log(1 + tf.exp(x))),
    "S5 tanh^2": lambda: _scalar(lambda x: tf.tanh(x) ** 2),
    "S6 log(1+x^2)/5": lambda: _scalar(lambda x: tf.math.log(1 + x * x) / 5),
    "S7 x log x": lambda: _scalar(lambda x: x * tf.math.log(x)),
    "S8 Hess sin x^2": lambda: _hessian(lambda x: tf.sin(x * x),
                                        x=tf.constant(0.7, dtype=tf.float64)),
    # vector functions
    "V1 a^T x": lambda: _vector(lambda x: tf.reduce_sum(a * x), named=[(a, "a")]),
    "V2 ||x||": lambda: _vector(lambda x: tf.norm(x)),
    "V3 ||x||^2": lambda: _vector(lambda x: tf.reduce_sum(x * x)),
    "V4 sigmoid jacobian": lambda: _vector(lambda x: tf.sigmoid(x)),
    "V5 softplus sum": lambda: _vector(lambda x: tf.reduce_sum(tf.nn.softplus(x))),
    "V6 softmax jacobian": lambda: _vector(lambda x: tf.nn.softmax(x), shape=(3,)),
    "V7 logsumexp": lambda: _vector(lambda x: tf.reduce_logsumexp(x), shape=(3,)),
    "V8 x^T A x": lambda: _vector(lambda x: tf.transpose(x) @ A @ x, named=[(A, "A")]),
    "V9 ||Ax-b||^2": lambda: _vector(lambda x: tf.reduce_sum(tf.square(R @ x - b)),
                                     named=[(R, "A"), (b, "b")]),
    "V10 tanh(Ax) jacobian": lambda: _vector(lambda x: tf.tanh(R @ x), named=[(R, "A")]),
    "V11 sigmoid(a^T x)": lambda: _vector(lambda x: tf.sigmoid(tf.transpose(a) @ x),
                                          named=[(a, "a")]),
    "V12 mean of squares": lambda: _vector(lambda x: tf.reduce_mean(x * x)),
    "V13 exp jacobian": lambda: _vector(lambda x: tf.exp(x)),
    # matrix functions
    "M1 tr X": lambda: _vector(lambda x: tf.linalg.trace(x), shape=(3, 3), named=[]),
    "M2 tr(AX)": lambda: _vector(lambda x: tf.linalg.trace(A @ x), shape=(3, 3),
                                 named=[(A, "A")]),
    "M3 log det X": _logdet,
    "M4 X^T X jacobian": lambda: _vector(lambda x: tf.transpose(x) @ x, shape=(4, 3)),
    "M5 ||X||_F^2": lambda: _vector(lambda x: tf.reduce_sum(x * x), shape=(3, 3)),
    "M6 row-wise logsumexp": lambda: _vector(
        lambda x: tf.reduce_sum(tf.reduce_logsumexp(x, axis=1)), shape=(4, 3)),
    "M7 MLP": _mlp,
    "M8 attention softmax": _attention,
    "M9 logistic loss": lambda: _logistic(False),
    # Hessians
    "H1 Hess x^T A x": lambda: _hessian(lambda x: tf.transpose(x) @ A @ x, named=[(A, "A")]),
    "H2 Hess ||Ax-b||^2": lambda: _hessian(lambda x: tf.reduce_sum(tf.square(R @ x - b)),
                                           named=[(R, "A"), (b, "b")]),
    "H3 Hess logistic": lambda: _logistic(True),
    "H4 Hess logsumexp": lambda: _hessian(lambda x: tf.reduce_logsumexp(x), shape=(3,)),
    "H5 Hess sum exp": lambda: _hessian(lambda x: tf.reduce_sum(tf.exp(x))),
    "H6 Hess ||x||^2/2": lambda: _hessian(lambda x: tf.reduce_sum(x * x) / 2),
}


TEXTBOOK = {
    "S1 x^4": r"4 x^{3}",
    "S2 sin x e^x": r"e^{x} (\sin x + \cos x)",
    "S3 sigmoid": r"\sigma(x) (1 - \sigma(x))",
    "S4 softplus": r"\sigma(x)",
    "S5 tanh^2": r"2 \tanh x \, (1 - \tanh^{2} x)",
    "S6 log(1+x^2)/5": r"\frac{2 x}{5 (1 + x^{2})}",
    "S7 x log x": r"1 + \log x",
    "S8 Hess sin x^2": r"f'' = 2 \cos(x^{2}) - 4 x^{2} \sin(x^{2})",
    "V1 a^T x": r"a",
    "V2 ||x||": r"\frac{x}{\lVert x \rVert}",
    "V3 ||x||^2": r"2 x",
    "V4 sigmoid jacobian": r"\operatorname{diag}(\sigma(x) \circ (1 - \sigma(x)))",
    "V5 softplus sum": r"\sigma(x)",
    "V6 softmax jacobian": r"\operatorname{diag}(s) - s s^{T}, \; s = \operatorname{softmax}(x)",
    "V7 logsumexp": r"\operatorname{softmax}(x)",
    "V8 x^T A x": r"(A + A^{T}) x",
    "V9 ||Ax-b||^2": r"2 A^{T} (A x - b)",
    "V10 tanh(Ax) jacobian": r"\operatorname{diag}(1 - \tanh^{2}(A x)) A",
    "V11 sigmoid(a^T x)": r"\sigma(a^{T} x) (1 - \sigma(a^{T} x)) a",
    "V12 mean of squares": r"\frac{2}{n} x",
    "V13 exp jacobian": r"\operatorname{diag}(e^{x})",
    "M1 tr X": r"I",
    "M2 tr(AX)": r"A^{T}",
    "M3 log det X": r"X^{-T}",
    "M4 X^T X jacobian": r"\frac{\partial (X^{T} X)_{ij}}{\partial X_{kl}} = "
                         r"\delta_{jl} X_{ki} + \delta_{il} X_{kj}",
    "M5 ||X||_F^2": r"2 X",
    "M6 row-wise logsumexp": r"\operatorname{softmax}_{\text{row}}(X)",
    "M7 MLP": r"\delta = 2 (W_{2} h - 1) W_{2}^{T} \circ (1 - h^{\circ 2}), \; "
              r"\frac{\partial L}{\partial W_{1}} = \delta x^{T}",
    "M8 attention softmax": r"(S \circ (G - (G \circ S) \mathbf{1} \mathbf{1}^{T})) K, \; "
                            r"S = \operatorname{softmax}_{\text{row}}(Q K^{T})",
    "M9 logistic loss": r"\frac{1}{n} X^{T} (\sigma(X w) - y)",
    "H1 Hess x^T A x": r"A + A^{T}",
    "H2 Hess ||Ax-b||^2": r"2 A^{T} A",
    "H3 Hess logistic": r"\frac{1}{n} X^{T} \operatorname{diag}(p \circ (1 - p)) X",
    "H4 Hess logsumexp": r"\operatorname{diag}(s) - s s^{T}",
    "H5 Hess sum exp": r"\operatorname{diag}(e^{x})",
    "H6 Hess ||x||^2/2": r"I",
}

# Every case reads as its textbook form. The logistic loss and its Hessian compute 1 - y
# (and, inside the inner gradient, (1 - y) / n and y / n) from an unwatched constant:
# the tape noted those unrecorded ops (tapec/ir/provenance.py), so they print as what they
# are, and the fractions they enter cancel (the gradient's (s - y) / n, the Hessian's
# X^T diag(s (1 - s)) X / n). Attention's upstream gradient 1 1^T V^T, used twice, is a
# definition: the G of the textbook form.
VERDICT = {name: "ideal" for name in TEXTBOOK}

PRINTED = {
    'S1 x^4':
        '4 x^{3}',
    'S2 sin x e^x':
        r'e^{x} \sin{\left(x \right)} + e^{x} \cos{\left(x \right)}',
    'S3 sigmoid':
        r'\left(1 - \sigma\left(x\right)\right) \sigma\left(x\right)',
    'S4 softplus':
        r'\sigma\left(x\right)',
    'S5 tanh^2':
        r'2 \left(1 - \tanh^{2}{\left(x \right)}\right) \tanh{\left(x \right)}',
    'S6 log(1+x^2)/5':
        r'\frac{2 x}{5 \left(x^{2} + 1\right)}',
    'S7 x log x':
        r'\log{\left(x \right)} + 1',
    'S8 Hess sin x^2':
        r'\frac{\partial^{2} f}{\partial x^{2}} = - 4 x^{2} \sin{\left(x^{2} \right)} + 2 '
        r'\cos{\left(x^{2} \right)}',
    'V1 a^T x':
        'a',
    'V2 ||x||':
        r'\frac{x}{\left\lVert x \right\rVert}',
    'V3 ||x||^2':
        '2 x',
    'V4 sigmoid jacobian':
        r'\frac{\partial f}{\partial x} = \operatorname{diag}\left(\sigma\left(x\right) '
        r'\circ \left(1 - \sigma\left(x\right)\right)\right) \in \mathbb{R}^{3 \times 3}',
    'V5 softplus sum':
        r'\sigma\left(x\right)',
    'V6 softmax jacobian':
        r'\begin{aligned} t_{1} &= \operatorname{softmax}\left(x\right) \\ \frac{\partial '
        r'f}{\partial x} &= \operatorname{diag}\left(t_{1}\right) - t_{1} t_{1}^{T} \in '
        r'\mathbb{R}^{3 \times 3} \end{aligned}',
    'V7 logsumexp':
        r'\operatorname{softmax}\left(x\right)',
    'V8 x^T A x':
        r'\left(A^{T} + A\right) x',
    'V9 ||Ax-b||^2':
        r'2 A^{T} \left(A x - b\right)',
    'V10 tanh(Ax) jacobian':
        r'\frac{\partial f}{\partial x} = \operatorname{diag}\left(1 - \tanh\left(A '
        r'x\right)^{\circ 2}\right) A \in \mathbb{R}^{4 \times 3}',
    'V11 sigmoid(a^T x)':
        r'\sigma\left(a^{T} x\right) \left(1 - \sigma\left(a^{T} x\right)\right) a',
    'V12 mean of squares':
        r'\frac{2}{3} x',
    'V13 exp jacobian':
        r'\frac{\partial f}{\partial x} = '
        r'\operatorname{diag}\left(\exp\left(x\right)\right) \in \mathbb{R}^{3 \times 3}',
    'M1 tr X':
        'I',
    'M2 tr(AX)':
        'A^{T}',
    'M3 log det X':
        'X^{-T}',
    'M4 X^T X jacobian':
        r'\frac{\partial f_{ij}}{\partial X_{kl}} = \delta_{jl} X_{ki} + \delta_{il} '
        'X_{kj}',
    'M5 ||X||_F^2':
        '2 X',
    'M6 row-wise logsumexp':
        r'\operatorname{softmax}_{\text{row}}\left(X\right)',
    'M7 MLP':
        r'\begin{aligned} t_{1} &= \tanh\left(W_{1} x + b_{1}\right) \\ t_{2} &= 2 '
        r'\left(W_{2} t_{1} - 1\right) \\ t_{3} &= \left(t_{2} W_{2}^{T}\right) \circ '
        r'\left(1 - t_{1}^{\circ 2}\right) \\ \frac{\partial L}{\partial W_{1}} &= t_{3} '
        r'x^{T} \\ \frac{\partial L}{\partial b_{1}} &= t_{3} \\ \frac{\partial '
        r'L}{\partial W_{2}} &= t_{2} t_{1}^{T} \end{aligned}',
    'M8 attention softmax':
        r'\begin{aligned} t_{1} &= \operatorname{softmax}_{\text{row}}\left(Q K^{T}\right) '
        r'\\ t_{2} &= \mathbf{1} \mathbf{1}^{T} V^{T} \\ \frac{\partial f}{\partial Q} &= '
        r'\left(t_{1} \circ \left(t_{2} - \left(t_{2} \circ t_{1}\right) \mathbf{1} '
        r'\mathbf{1}^{T}\right)\right) K \end{aligned}',
    'M9 logistic loss':
        r'\frac{1}{5} X^{T} \left(\sigma\left(X w\right) - y\right)',
    'H1 Hess x^T A x':
        r'\frac{\partial^{2} f}{\partial x \, \partial x^{T}} = A + A^{T} \in '
        r'\mathbb{R}^{3 \times 3}',
    'H2 Hess ||Ax-b||^2':
        r'\frac{\partial^{2} f}{\partial x \, \partial x^{T}} = 2 A^{T} A \in '
        r'\mathbb{R}^{3 \times 3}',
    'H3 Hess logistic':
        r'\frac{\partial^{2} L}{\partial w \, \partial w^{T}} = \frac{1}{5} X^{T} '
        r'\operatorname{diag}\left(\sigma\left(X w\right) \circ \left(1 - \sigma\left(X '
        r'w\right)\right)\right) X \in \mathbb{R}^{3 \times 3}',
    'H4 Hess logsumexp':
        r'\begin{aligned} t_{1} &= \operatorname{softmax}\left(x\right) \\ '
        r'\frac{\partial^{2} f}{\partial x \, \partial x^{T}} &= '
        r'\operatorname{diag}\left(t_{1}\right) - t_{1} t_{1}^{T} \in \mathbb{R}^{3 \times '
        r'3} \end{aligned}',
    'H5 Hess sum exp':
        r'\frac{\partial^{2} f}{\partial x \, \partial x^{T}} = '
        r'\operatorname{diag}\left(\exp\left(x\right)\right) \in \mathbb{R}^{3 \times 3}',
    'H6 Hess ||x||^2/2':
        r'\frac{\partial^{2} f}{\partial x \, \partial x^{T}} = I \in \mathbb{R}^{3 \times '
        '3}',
}


def printed(name):
    """What tapec prints for case `name`."""
    tape, target, sources, names = CASES[name]()
    return tape.latex(target, sources, names)
