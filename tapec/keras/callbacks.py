"""Keras callbacks (`tf.keras.callbacks`): History, EarlyStopping, LambdaCallback and the progress bar."""

__all__: list[str] = []
