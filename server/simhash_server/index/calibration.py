"""Calibration on a user's own labelled pairs: how "distance <= k" and "similarity >= floor" agree with what
the user calls a duplicate, under one fingerprint recipe.  Pure computation (no HBase): the pairs are
fingerprinted here exactly as the server would, and a verified candidate is what a query would read (within
MAX_DISTANCE, or within VERIFY_MAX_DISTANCE sharing a drawer).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from simhash_server.fingerprint import fingerprint
from simhash_server.fingerprint.sketch import similarity
from simhash_server.index.keys import drawer_prefixes
from simhash_server.index.model import MAX_DISTANCE, VERIFY_MAX_DISTANCE

__all__ = ["FLOORS", "Calibration", "Measured", "Score", "calibrate", "measure"]

FLOORS = (0.5, 0.6, 0.7, 0.8, 0.85, 0.88, 0.9, 0.92, 0.95)


@dataclass(frozen=True, slots=True)
class Measured:
    """One labelled pair as the index sees it."""

    duplicate: bool
    distance: int
    similarity: float
    candidate: bool  # a verified query reads it: within MAX_DISTANCE, or within VERIFY_MAX_DISTANCE sharing a drawer


@dataclass(frozen=True, slots=True)
class Score:
    setting: float  # k, or the floor
    predicted: int
    true_positives: int
    positives: int

    @property
    def precision(self) -> float:
        return self.true_positives / self.predicted if self.predicted else 1.0

    @property
    def recall(self) -> float:
        return self.true_positives / self.positives if self.positives else 1.0


@dataclass(frozen=True)
class Calibration:
    pairs: int
    positives: int
    by_distance: list[Score]  # k = 0..VERIFY_MAX_DISTANCE, unverified
    by_floor: list[Score]  # verified, at each of FLOORS

    def recommend(self, target_precision: float) -> tuple[Score | None, Score | None]:
        """The k (at most MAX_DISTANCE: what the index answers exactly) and the floor with the highest recall
        whose precision reaches the target; on a tie the stricter one (smaller k, higher floor).  None where
        no setting does."""

        def best(scores: Iterable[Score], strict: int) -> Score | None:
            good = [s for s in scores if s.predicted and s.precision >= target_precision]
            return max(good, key=lambda s: (s.recall, s.precision, strict * s.setting), default=None)

        return best((s for s in self.by_distance if s.setting <= MAX_DISTANCE), -1), best(self.by_floor, 1)


def measure(a: str, b: str, duplicate: bool, version: str) -> Measured:
    fa, fb = fingerprint(a, version, sketch=True), fingerprint(b, version, sketch=True)
    distance = (fa.value ^ fb.value).bit_count()
    shares = bool(set(drawer_prefixes(fa.value)) & set(drawer_prefixes(fb.value)))
    candidate = distance <= MAX_DISTANCE or (distance <= VERIFY_MAX_DISTANCE and shares)
    return Measured(duplicate, distance, similarity(fa.sketch, fb.sketch), candidate)


def calibrate(measured: Sequence[Measured], floors: Sequence[float] = FLOORS) -> Calibration:
    positives = sum(m.duplicate for m in measured)

    def score(setting: float, chosen: list[Measured]) -> Score:
        return Score(setting, len(chosen), sum(m.duplicate for m in chosen), positives)

    by_distance = [score(k, [m for m in measured if m.distance <= k]) for k in range(VERIFY_MAX_DISTANCE + 1)]
    by_floor = [score(f, [m for m in measured if m.candidate and m.similarity >= f]) for f in floors]
    return Calibration(len(measured), positives, by_distance, by_floor)
