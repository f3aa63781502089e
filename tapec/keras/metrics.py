"""Keras metrics (`tf.keras.metrics`): stateful `update_state` / `result` / `reset_state`."""

__all__: list[str] = []
