"""The Keras `Layer` base class."""

__all__: list[str] = []
