"""`tapec.experimental`: TensorFlow's `tf.experimental` names tapec has (`dlpack`)."""
from . import dlpack

__all__ = ["dlpack"]
