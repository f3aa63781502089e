"""Values computed outside the recording print by what they are: a tape notes the ops it
saw run on values it does not watch (tapec/ir/provenance.py), and the LaTeX printer
shows them as the expression that computed them (`1 - y`, not `c_{1}`). Then sums of
diagonals are collected and elementwise fractions cancelled (export/latex/collect.py),
so the logistic loss's derivatives read as the textbook writes them."""
import gc
import weakref

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tapec as tf
from tapec.ir import provenance
from helpers import katex, symbols
from latex_cases import logistic
from test_latex import assert_printed_formulas_compute


def _column(n, seed=0):
    return tf.constant(np.random.default_rng(seed).uniform(0.5, 1.5, size=(n, 1)))


def test_an_unwatched_difference_prints_as_it_was_computed():
    x, y = _column(3), _column(3, seed=1)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        f = tf.reduce_sum(x * (1 - y))
    tex = tape.latex(f, x, [(y, "y")])
    assert tex == "1 - y"
    np.testing.assert_allclose(tape.gradient(f, x).numpy(), 1 - y.numpy())


def test_an_unnamed_constant_behind_it_keeps_a_default_name():
    x, y = _column(3), _column(3, seed=1)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        f = tf.reduce_sum(x * tf.exp(-y))
    tex = tape.latex(f, x)
    assert tex == r"\exp\left(-c_{1}\right)"
    symbols.assert_defined(tex, symbols.inputs_of(tape, None, f, x))


def test_a_value_computed_before_the_tape_started_is_an_input_of_its_own():
    """The documented limit: only ops run while the tape records are noted."""
    x, y = _column(3), _column(3, seed=1)
    z = 1 - y
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        f = tf.reduce_sum(x * z)
    assert tape.latex(f, x, [(y, "y")]) == "c_{1}"


def test_a_watched_value_prints_by_its_name_however_it_was_computed():
    x = _column(3, seed=1)
    with tf.GradientTape(persistent=True) as tape:
        z = 2.0 * x                 # unrecorded (nothing watched yet), then watched
        tape.watch(z)
        f = tf.reduce_sum(z * z)
    assert tape.latex(f, z, [(x, "x"), (z, "z")]) == "2 z"


def test_provenance_keeps_no_array_alive_and_stays_bounded():
    with tf.GradientTape(persistent=True) as tape:
        y = tf.constant(np.ones(4))
        z = 2.0 * y
        gone = weakref.ref(y)
        table = tape.recorded.unrecorded
        assert list(table) == [z._id]
        computed = provenance.computed(table, z._id)
        del y, z
        gc.collect()
        assert gone() is None
        assert computed.op.name == "multiply" and computed.shape == (4,)
        assert provenance.tensor_of(computed, 1) is None        # held weakly
        assert float(provenance.tensor_of(computed, 0).numpy()) == 2.0   # the literal
        w = tf.constant(1.0, dtype=tf.float64)
        for _ in range(provenance.LIMIT + 10):
            w = w + 1.0
    assert len(tape.recorded.unrecorded) <= provenance.LIMIT


def test_a_lone_non_persistent_tape_notes_too():
    """A training step's tape (not persistent, not beside another) notes what it saw
    computed as well; a value computed before it started recording stays an input."""
    x, y = _column(3), _column(3, seed=1)
    before = 1 - y
    with tf.GradientTape() as tape:
        tape.watch(x)
        f = tf.reduce_sum(x * (1 - y)) + tf.reduce_sum(x * before)
    assert tape.recorded.unrecorded is not None
    assert tape.latex(f, x, [(y, "y")]) == "c_{1} + 1 - y"
    np.testing.assert_allclose(tape.gradient(f, x).numpy(), 2 * (1 - y.numpy()))


def _logistic(n, d, seed):
    rng = np.random.default_rng(seed)
    X = tf.constant(rng.normal(size=(n, d)))
    labels = tf.constant(rng.uniform(size=(n, 1)))
    w = tf.Variable(rng.normal(size=(d, 1)), name="w")
    return (*logistic(X, labels, w), w, [(X, "X"), (labels, "y")])


@settings(max_examples=6, deadline=None)
@given(n=st.integers(2, 6), d=st.integers(2, 4), seed=st.integers(0, 100))
def test_the_logistic_gradient_and_hessian_read_as_the_textbook_and_compute(n, d, seed):
    outer, loss, g, w, names = _logistic(n, d, seed)
    gradient = outer.latex(loss, w, names)
    hessian = outer.latex(g, w, names)
    assert gradient == rf"\frac{{1}}{{{n}}} X^{{T}} \left(\sigma\left(X w\right) - y\right)"
    assert hessian == (
        r"\frac{\partial^{2} f}{\partial w \, \partial w^{T}} = "
        rf"\frac{{1}}{{{n}}} X^{{T}} \operatorname{{diag}}\left(\sigma\left(X w\right) "
        r"\circ \left(1 - \sigma\left(X w\right)\right)\right) X \in "
        rf"\mathbb{{R}}^{{{d} \times {d}}}")
    for tex, target in ((gradient, loss), (hessian, g)):
        symbols.assert_defined(tex, symbols.inputs_of(outer, names, target, w))


@pytest.mark.parametrize("hessian", [False, True], ids=["gradient", "hessian"])
def test_the_logistic_formulas_compute_tapecs_values(hessian, monkeypatch):
    outer, loss, g, w, names = _logistic(5, 3, seed=7)
    expected = outer.jacobian(g, w).numpy().reshape(3, 3) if hessian else \
        outer.gradient(loss, w).numpy()
    assert_printed_formulas_compute(monkeypatch, outer, g if hessian else loss, w,
                                    [expected], names)


def test_the_printed_forms_parse_with_katex():
    outer, loss, g, w, names = _logistic(4, 2, seed=1)
    katex.assert_parses(outer.latex(loss, w, names), outer.latex(g, w, names))


def test_a_number_in_a_shared_product_leaves_the_fraction_it_divides(monkeypatch):
    """c = y / 3, used twice, stays one product; where a fraction holds it, its number
    joins the fraction's: 3 / y, not 1 / ((1/3) y)."""
    x, y = _column(3), _column(3, seed=1)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        c = y / 3.0
        f = x / c + c / (1 + x)
    tex = tape.latex(f, x, [(y, "y")])
    assert tex == (r"\frac{\partial f}{\partial x} = \operatorname{diag}\left(\frac{3}{y} - "
                   r"\frac{y}{3 \left(1 + x\right)^{\circ 2}}\right) \in \mathbb{R}^{3 \times 3}")
    assert_printed_formulas_compute(monkeypatch, tape, f, x,
                                    [tape.jacobian(f, x).numpy().reshape(3, 3)], [(y, "y")])


def test_a_cluster_that_does_not_shorten_keeps_its_form():
    """sigma (1 - sigma) is already shortest: cancel's -s^2 + s is not taken."""
    x = _column(3)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.sigmoid(x)
    assert tape.latex(y, x) == (
        r"\frac{\partial f}{\partial x} = \operatorname{diag}\left(\sigma\left(x\right) "
        r"\circ \left(1 - \sigma\left(x\right)\right)\right) \in \mathbb{R}^{3 \times 3}")


def test_diagonals_are_collected_only_between_equal_factors(monkeypatch):
    """A diag(u) B + A diag(v) B is A diag(u + v) B; A diag(u) + B diag(v) stays."""
    rng = np.random.default_rng(2)
    A = tf.constant(rng.normal(size=(3, 4)))
    B = tf.constant(rng.normal(size=(3, 4)))
    x = _column(4)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        same = A @ (tf.exp(x) * x)
        other = A @ tf.exp(x) + B @ tf.sin(x)
    names = [(A, "A"), (B, "B")]
    tex = tape.latex(same, x, names)
    assert tex.count(r"\operatorname{diag}") == 1, tex
    assert tape.latex(other, x, names).count(r"\operatorname{diag}") == 2
    for target in (same, other):
        assert_printed_formulas_compute(monkeypatch, tape, target, x,
                                        [tape.jacobian(target, x).numpy().reshape(3, 4)],
                                        names)


_UNRECORDED = [lambda y: 1 - y, lambda y: y / 3.0, lambda y: y * y + 1.0]
_TERMS = [lambda x, c: x / c, lambda x, c: c / (1 + x), lambda x, c: x * c,
          lambda x, c: tf.exp(x) / c, lambda x, c: tf.sigmoid(x) * c * (1 - tf.sigmoid(x)),
          lambda x, c: (x - c) / (x * c)]


@settings(max_examples=12, deadline=None)
@given(made=st.sampled_from(range(len(_UNRECORDED))),
       terms=st.lists(st.sampled_from(range(len(_TERMS))), min_size=1, max_size=3),
       summed=st.booleans())
def test_printed_formulas_over_unrecorded_values_compute_tapecs_derivatives(made, terms,
                                                                             summed):
    """Whatever provenance expands, diagonals collect and fractions cancel, the printed
    formula computes the gradient (or jacobian) tapec computes, from defined symbols."""
    x, y = _column(3), _column(3, seed=1)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        c = _UNRECORDED[made](y)
        f = _TERMS[terms[0]](x, c)
        for k in terms[1:]:
            f = f + _TERMS[k](x, c)
        target = tf.reduce_sum(f) if summed else f
    expected = tape.gradient(target, x) if summed else tape.jacobian(target, x)
    names = [(y, "y")]
    symbols.assert_defined(tape.latex(target, x, names),
                           symbols.inputs_of(tape, names, target, x))
    with pytest.MonkeyPatch.context() as patch:
        assert_printed_formulas_compute(patch, tape, target, x,
                                        [expected.numpy().reshape(3, -1)], names)
