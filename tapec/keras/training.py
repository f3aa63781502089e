"""`Model.compile` / `fit` / `evaluate` / `predict`: a train step traced once by tapec.function."""

__all__ = ["Trainer"]


class Trainer:
    """Training half of `keras.Model`: compile, fit, evaluate, predict."""
