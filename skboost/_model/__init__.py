"""The model layer: the trained ensemble (``booster.Booster``, a leaf that
knows no estimator and no file format), the boosting loop that builds it
(``booster.train``), and what reads a fitted model (importances,
explanations, export)."""
