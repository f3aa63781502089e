"""TensorFlow-style namespaces: `tf.math`, `tf.nn`, `tf.linalg`."""
