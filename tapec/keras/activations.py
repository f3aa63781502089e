"""Keras activations (`tf.keras.activations`): functions by name, as Keras 3 defines them."""

__all__: list[str] = []
