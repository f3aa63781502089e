"""`Model.compile` / `fit` / `evaluate` / `predict`: a train step traced once by tapec.function."""

__all__: list[str] = []
