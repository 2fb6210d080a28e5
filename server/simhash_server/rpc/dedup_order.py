"""Whether Deduplicate queries before it takes its claims (docs/dedup.md), by the duplicates it has met.

A duplicate found by a query made before the claims is answered without them: one query, no claim.  A new
document then pays for that query on top of the claims and the query under them.  Which order costs less
depends on how many of the documents sent are duplicates, so ``auto`` asks first while the recent share of
duplicates is at least BREAK_EVEN, and claims first below it.
"""

from __future__ import annotations

import threading

from simhash_server import metrics

__all__ = ["BREAK_EVEN", "MODES", "DedupOrder"]

MODES = ("auto", "ask-first", "claim-first")
# The share of duplicates at which both orders cost the same CPU a document: about 0.25 for single calls and
# 0.4 for batches in docs/benchmarks.md (bench-grpc with every document new, then with 3 in 4 duplicates).
BREAK_EVEN = 1 / 3
_WINDOW = 200  # documents the share mostly reflects (its weights fall by 1/e over this many)


class DedupOrder:
    def __init__(self, mode: str = "auto") -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        self.mode = mode
        self._share = 1.0  # until duplicates are counted, ask first: a wrong guess costs one query each
        self._lock = threading.Lock()
        metrics.DEDUP_DUPLICATE_SHARE.set(self._share)

    @property
    def share(self) -> float:
        """The recent share of duplicates among the documents decided (weighted toward the latest)."""
        return self._share

    def ask_first(self) -> bool:
        if self.mode != "auto":
            return self.mode == "ask-first"
        return self._share >= BREAK_EVEN

    def record(self, duplicates: int, documents: int) -> None:
        """Count the decisions of one call: ``duplicates`` of its ``documents`` were not stored."""
        if not 0 <= duplicates <= documents:
            raise ValueError(f"duplicates must be within 0 and documents ({documents}), got {duplicates}")
        if documents == 0:
            return
        kept = (1 - 1 / _WINDOW) ** documents  # the old share's weight after this many more documents
        with self._lock:
            self._share = self._share * kept + duplicates / documents * (1 - kept)
            metrics.DEDUP_DUPLICATE_SHARE.set(self._share)
