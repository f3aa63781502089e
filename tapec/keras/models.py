"""Keras models: `Sequential`, the functional `Model(inputs, outputs)` with `keras.Input`, and subclassed models."""

__all__: list[str] = []
