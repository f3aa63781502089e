"""Saving and loading Keras model weights."""

__all__: list[str] = []
