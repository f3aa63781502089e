"""Keras initializers (`tf.keras.initializers`), seeded as Keras 3 seeds them."""

__all__: list[str] = []
