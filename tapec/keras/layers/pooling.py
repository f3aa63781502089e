"""Pooling layers: Max/Average pooling 1D and 2D, global average pooling."""

__all__: list[str] = []
