"""TensorFlow-style namespaces: `tf.math`, `tf.nn`, `tf.linalg`."""

__all__ = ["linalg", "math", "nn"]
