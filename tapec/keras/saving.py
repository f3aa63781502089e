"""Saving and loading Keras model weights (filled below)."""

__all__: list[str] = []
