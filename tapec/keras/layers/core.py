"""Core Keras layers: Dense, Flatten, Reshape, Lambda, Activation, Dropout, Embedding."""

__all__: list[str] = []
