"""Learning-rate schedules (`tf.keras.optimizers.schedules`)."""

__all__: list[str] = []
