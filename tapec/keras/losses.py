"""Keras losses (`tf.keras.losses`), with Keras 3's reduction rules."""

__all__: list[str] = []
