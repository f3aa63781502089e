"""Convolution layers: Conv1D and Conv2D."""

__all__: list[str] = []
