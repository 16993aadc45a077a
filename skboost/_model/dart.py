"""DART: dropouts in the boosting rounds (XGBoost's ``booster="dart"``).

Rashmi & Gilad-Bachrach (2015), as XGBoost implements it. Every tree has a
weight (1 for a plain model). In a DART round:

1. some earlier trees are *dropped*: each with probability ``rate_drop``
   (``sample_type="weighted"``: in proportion to its weight), at least one
   with ``one_drop``, none at all with probability ``skip_drop``;
2. the gradients are taken at the margins without the dropped trees;
3. the round's new trees are grown and weighted, and the dropped ones
   rescaled, so that the new trees do not overshoot what the dropped ones
   already explain: with ``k`` dropped trees and ``lr`` the round's
   learning rate divided by its number of new trees, ``normalize_type=
   "tree"`` gives the new trees ``1 / (k + lr)`` and scales the dropped
   ones by ``k / (k + lr)``; ``"forest"`` uses ``1 / (1 + lr)`` for both.
   A round that drops nothing adds its trees at weight 1, as ``gbtree``
   does, so ``rate_drop=0`` is exactly the ``gbtree`` model.

The drops are drawn from a random stream of their own (seeded from the
fit's seed), so the row and column samples are those of ``gbtree``, and
the model does not depend on the number of threads.
"""

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DartParams:
    """DART's parameters (XGBoost's names and defaults)."""

    rate_drop: float = 0.0
    one_drop: bool = False
    skip_drop: float = 0.0
    sample_type: str = "uniform"
    normalize_type: str = "tree"


class Dropout:
    """The trees each round drops, and the weights after the round.

    Parameters
    ----------
    params : DartParams
    seed : int or sequence of int
        Of the drops' own random stream.
    """

    def __init__(self, params, seed):
        self.params = params
        self.rng = np.random.default_rng(seed)

    def choose(self, weights):
        """Indices (sorted) of the trees of ``weights`` dropped this round."""
        p, n = self.params, len(weights)
        none = np.zeros(0, dtype=np.int64)
        if p.skip_drop > 0.0 and self.rng.random() < p.skip_drop:
            return none
        if n == 0 or (p.rate_drop == 0.0 and not p.one_drop):
            return none
        weights = np.asarray(weights, dtype=np.float64)
        if p.sample_type == "weighted":
            chance = p.rate_drop * n * weights / weights.sum()
        else:
            chance = np.full(n, p.rate_drop)
        dropped = np.flatnonzero(self.rng.random(n) < chance)
        if p.one_drop and dropped.size == 0:
            pick = (self.rng.choice(n, p=weights / weights.sum())
                    if p.sample_type == "weighted" else self.rng.integers(n))
            dropped = np.array([pick], dtype=np.int64)
        return dropped

    def factors(self, n_dropped, n_new, learning_rate):
        """(scale of the dropped trees, weight of each new tree) of a round
        that drops ``n_dropped`` trees and adds ``n_new`` at the round's
        ``learning_rate``."""
        if n_dropped == 0:
            return 1.0, 1.0
        lr = learning_rate / n_new
        if self.params.normalize_type == "forest":
            factor = 1.0 / (1.0 + lr)
            return factor, factor
        return n_dropped / (n_dropped + lr), 1.0 / (n_dropped + lr)


def dart_params(estimator):
    """The DartParams of an estimator with ``booster="dart"``, else None."""
    if getattr(estimator, "booster", "gbtree") != "dart":
        return None
    return DartParams(rate_drop=float(estimator.rate_drop),
                      one_drop=bool(estimator.one_drop),
                      skip_drop=float(estimator.skip_drop),
                      sample_type=estimator.sample_type,
                      normalize_type=estimator.normalize_type)
