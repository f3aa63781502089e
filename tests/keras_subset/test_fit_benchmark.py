"""benchmarks/keras_fit.py at a tiny size: its NumPy loop (forward pass, backpropagation
and Adam written by hand) trains exactly as tapec's fit does, epoch for epoch, and its
report is written. No timing is asserted."""
import numpy as np

from benchmarks import keras_fit


def test_hand_written_numpy_epochs_match_fit():
    results = keras_fit.run(samples=100, epochs=3, with_tensorflow=False)
    numpy_losses = results["NumPy by hand"][1]
    np.testing.assert_allclose(results["tapec fit"][1], numpy_losses, rtol=1e-5)
    assert numpy_losses[-1] < numpy_losses[0]
    table = keras_fit.report(results, 100)
    assert "| tapec fit |" in table and "(4 steps per epoch)" in table
