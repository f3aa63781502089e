"""Keras optimizers (`tf.keras.optimizers`), with Keras 3's update formulas and defaults."""
from . import schedules  # noqa: F401
