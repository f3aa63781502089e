"""LaTeX notation beyond matrices: index notation for results of more than two axes
(checked by evaluating the printed terms), Hessian left-hand sides, named reductions and
functions, the printing identities, and rendered width."""
import numpy as np
import pytest

import tapec as tf
from helpers import katex, symbols
from tapec.export.latex import index as index_module
from tapec.export.latex.width import rendered_width


def latex(tape, target, sources=None, names=None):
    tex = tape.latex(target, sources, names)
    if katex.available():
        katex.assert_parses(tex)
    symbols.assert_defined(tex, symbols.inputs_of(tape, names, target, sources))
    return tex


def printed_terms_value(monkeypatch, tape, target, sources, names, values):
    """Print, capture the index terms the printer collected, and evaluate them with
    einsum: the value the printed formula states, in the axes of the derivative."""
    captured = []
    original = index_module.collected

    def spy(terms, sizes):
        result = original(terms, sizes)
        captured.append((result, dict(sizes)))
        return result
    monkeypatch.setattr(index_module, "collected", spy)
    tape.latex(target, sources, names)
    (terms, sizes), = captured
    source_shape = tuple(np.shape(values[names[-1][1]])) if sources is not None else ()
    shape = tuple(target.shape) + source_shape
    letters = "".join(c for c in "ijklmn"[:len([s for s in shape if s != 1])])
    total = np.zeros([sizes[c] for c in letters])
    for t in terms:
        operands, subscripts = [], []
        for name, ls in t.factors:
            operands.append(np.asarray(values[name]).reshape([sizes[c] for c in ls]))
            subscripts.append(ls)
        for a, b in t.deltas:
            operands.append(np.eye(sizes[a]))
            subscripts.append(a + b)
        free = [c for c in letters if not any(c in s for s in subscripts)]
        value = np.einsum(",".join(subscripts) + "->" + "".join(
            c for c in letters if c not in free), *operands) if operands else np.asarray(1.0)
        for c in free:                         # an index no factor uses: constant along it
            value = np.expand_dims(value, letters.index(c))
        total = total + float(t.coefficient) * np.broadcast_to(value, total.shape)
    return total.reshape(shape)


def test_jacobian_of_xtx_in_index_notation(monkeypatch):
    X = tf.constant(np.random.default_rng(0).normal(size=(4, 3)))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(X)
        y = tf.transpose(X) @ X
    names = [(X, "X")]
    assert latex(tape, y, X, names) == \
        r"\frac{\partial f_{ij}}{\partial X_{kl}} = \delta_{jl} X_{ki} + \delta_{il} X_{kj}"
    value = printed_terms_value(monkeypatch, tape, y, X, names, {"X": X.numpy()})
    np.testing.assert_allclose(value, tape.jacobian(y, X).numpy(), atol=1e-12)


def test_hessian_by_a_matrix_in_index_notation(monkeypatch):
    rng = np.random.default_rng(1)
    X, A = tf.constant(rng.normal(size=(2, 3))), tf.constant(rng.normal(size=(2, 2)))
    with tf.GradientTape(persistent=True) as outer:
        outer.watch(X)
        with tf.GradientTape() as inner:
            inner.watch(X)
            f = tf.linalg.trace(tf.transpose(X) @ A @ X)
        g = inner.gradient(f, X)
    names = [(A, "A"), (X, "X")]
    # The inner gradient's identity (an unrecorded eye) prints as a delta, not a symbol.
    assert latex(outer, g, X, names) == (
        r"\frac{\partial^{2} f}{\partial X_{ij} \, \partial X_{kl}} = "
        r"\delta_{jl} A_{ik} + \delta_{jl} A_{ki}")
    value = printed_terms_value(monkeypatch, outer, g, X, names,
                                {"A": A.numpy(), "X": X.numpy()})
    np.testing.assert_allclose(value, outer.jacobian(g, X).numpy(), atol=1e-12)


def test_sums_over_axes_in_index_notation(monkeypatch):
    B = tf.constant(np.random.default_rng(2).normal(size=(4, 2, 3)))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(B)
        z = tf.reduce_sum(B * B, axis=0)
    names = [(B, "B")]
    assert latex(tape, z, names=names) == r"f_{ij} = \sum_{p} B_{pij} B_{pij}"
    assert latex(tape, z, B, names) == \
        r"\frac{\partial f_{ij}}{\partial B_{klm}} = 2 \delta_{il} \delta_{jm} B_{klm}"
    value = printed_terms_value(monkeypatch, tape, z, B, names, {"B": B.numpy()})
    np.testing.assert_allclose(value, tape.jacobian(z, B).numpy(), atol=1e-12)


def test_what_has_no_index_form_is_said_plainly():
    X = tf.constant(np.random.default_rng(3).normal(size=(2, 3)))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(X)
        y = tf.tanh(tf.transpose(X) @ X)
    assert latex(tape, y, X, [(X, "X")]) == (
        r"\frac{\partial f_{ij}}{\partial X_{kl}} = \text{an array of shape } 3 \times 3 "
        r"\times 2 \times 3 \text{, not shown: no index form}")


def test_a_gradient_recorded_before_its_function_is_no_hessian():
    x = tf.constant(0.3, dtype=tf.float64)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        s = tf.sigmoid(x)
        p = tf.nn.softplus(x)        # p' equals s, but p was recorded after s
    assert latex(tape, s, x) == r"\left(1 - \sigma\left(x\right)\right) \sigma\left(x\right)"
    assert latex(tape, p) == r"\operatorname{softplus}\left(x\right)"
    assert latex(tape, p, x) == r"\sigma\left(x\right)"


def test_named_reductions_and_functions():
    rng = np.random.default_rng(4)
    x, a = tf.constant(rng.normal(size=(3, 1))), tf.constant(rng.normal(size=(3, 1)))
    M, Z = tf.constant(rng.normal(size=(3, 3))), tf.constant(rng.normal(size=(4, 3)))
    labels = tf.constant(np.eye(3)[[0, 1, 2, 0]])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, M, Z])
        values = [tf.reduce_sum(a * x), tf.norm(x), tf.linalg.trace(M),
                  tf.reduce_logsumexp(Z, axis=1), tf.nn.softmax(Z),
                  tf.reduce_sum(tf.nn.softmax_cross_entropy_with_logits(labels, Z))]
    names = [(x, "x"), (a, "a"), (M, "M"), (Z, "Z"), (labels, "Y")]
    assert [latex(tape, v, names=names) for v in values] == [
        r"a^{T} x", r"\left\lVert x \right\rVert", r"\operatorname{tr}\left(M\right)",
        r"\operatorname{logsumexp}_{\text{row}}\left(Z\right)",
        r"\operatorname{softmax}_{\text{row}}\left(Z\right)",
        # a template that starts with a sign is parenthesized: never 1^T -\sum
        r"\mathbf{1}^{T} \left(-\sum Y \log \operatorname{softmax}(Z)\right)"]
    assert latex(tape, values[1], x, names) == r"\frac{x}{\left\lVert x \right\rVert}"


def test_quotients_do_not_nest():
    rng = np.random.default_rng(5)
    x, y = tf.constant(rng.uniform(1, 2, size=(3, 1))), tf.constant(rng.uniform(1, 2, (3, 1)))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        q = (x / y) / y / 5.0
    tex = latex(tape, q, names=[(x, "x"), (y, "y")])
    assert r"\frac{\frac" not in tex and tex == r"\frac{x}{5 y^{\circ 2}}"


@pytest.mark.parametrize("tex, width", [
    (r"\operatorname{diag}\left(x\right)", 6.2), (r"x^{T}", 1.7), (r"a + b", 4.0),
    (r"\frac{2 x}{5 \left(x^{2} + 1\right)}", 7.3), (r"\mathbf{1}^{T} x", 2.7)])
def test_rendered_width(tex, width):
    assert rendered_width(tex) == pytest.approx(width)
