"""examples/keras_digits.py: `model.fit` and the hand-written tf.function loop (same seed,
same shuffled batches, same Adam) agree epoch for epoch, and the model learns the digits."""
import importlib.util
import pathlib

import numpy as np
import pytest

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "keras_digits.py"


@pytest.fixture(scope="module")
def example():
    pytest.importorskip("sklearn")
    spec = importlib.util.spec_from_file_location("keras_digits", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fit_and_the_hand_written_loop_agree(example, monkeypatch):
    monkeypatch.setattr(example, "EPOCHS", 6)
    x_train, x_test, y_train, y_test = example.load_data()
    example.tf.random.set_seed(5)
    by_fit, by_hand = example.make_model(), example.make_model()
    by_hand.set_weights(by_fit.get_weights())
    fit_losses = example.train_with_fit(by_fit, x_train, y_train)
    hand_losses = example.train_by_hand(by_hand, x_train, y_train)
    np.testing.assert_allclose(fit_losses, hand_losses, rtol=0, atol=2e-6)
    assert fit_losses[-1] < 0.5 * fit_losses[0]
    for a, b in zip(by_fit.get_weights(), by_hand.get_weights()):
        np.testing.assert_allclose(a, b, atol=1e-5)
    assert example.accuracy(by_fit, x_test, y_test) > 0.9
    assert example.accuracy(by_hand, x_test, y_test) > 0.9
