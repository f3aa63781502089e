"""`Model.compile` / `fit` / `evaluate` / `predict`: a train step traced once by tapec.function."""

__all__: list[str] = ["Trainer"]


class Trainer:
    """The training loop that `keras.Model` inherits (compile, fit, evaluate, predict)."""
