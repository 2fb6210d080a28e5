"""Exactness on real HBase: 100,000 random fingerprints plus planted neighbours, checked against brute force."""

from __future__ import annotations

import numpy as np

N_RANDOM = 100_000
N_PROBES = 40


def _flip_bits(rng: np.random.Generator, fp: int, k: int) -> int:
    for bit in rng.choice(64, size=k, replace=False):
        fp ^= 1 << int(bit)
    return fp


def test_drawer_index_finds_exactly_what_brute_force_finds(make_index) -> None:
    store = make_index(regions=8, wal=False, pool_size=8)
    rng = np.random.default_rng(20261121)
    random_fps = [int(v) for v in rng.integers(0, 2**64, size=N_RANDOM, dtype=np.uint64)]
    probes = [int(v) for v in rng.integers(0, 2**64, size=N_PROBES, dtype=np.uint64)]
    planted: dict[str, tuple[int, int]] = {}  # doc id -> (probe index, distance)
    items = [(f"r{i}", fp) for i, fp in enumerate(random_fps)]
    for p, probe in enumerate(probes):
        for distance in (0, 1, 2, 3, 4, 5, 6):
            doc = f"p{p}d{distance}"
            planted[doc] = (p, distance)
            items.append((doc, _flip_bits(rng, probe, distance)))
    for start in range(0, len(items), 5000):
        store.index_many(items[start : start + 5000])

    all_ids = [doc for doc, _ in items]
    all_fps = np.array([fp for _, fp in items], dtype=np.uint64)
    for p, probe in enumerate(probes):
        hits = store.query(probe)
        distances = np.bitwise_count(all_fps ^ np.uint64(probe))
        expected = sorted((int(distances[i]), all_ids[i]) for i in np.nonzero(distances <= 3)[0])
        assert [(h.distance, h.doc_id) for h in hits] == expected
        found = {h.doc_id for h in hits}
        for doc, (q, distance) in planted.items():
            if q == p:
                assert (doc in found) == (distance <= 3), (doc, distance)
    # Random probes against random data: neighbours exist only where planted.
    assert sum(len(store.query(probe, max_distance=3)) for probe in probes) == 4 * N_PROBES + sum(
        1 for p in probes for fp in random_fps if (fp ^ p).bit_count() <= 3
    )
