"""Normalization layers: BatchNormalization (moving statistics) and LayerNormalization."""

__all__: list[str] = []
