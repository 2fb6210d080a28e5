"""The drawer keys: pigeonhole guarantee for k <= 3, codec round trips, spread of the first byte."""

from __future__ import annotations

from collections import Counter
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_server.index.keys import (
    KEY_LENGTH,
    PAIRS,
    PREFIX_LENGTH,
    decode_key,
    drawer_keys,
    drawer_prefixes,
    drawer_prefixes_array,
)

fingerprints = st.integers(min_value=0, max_value=2**64 - 1)


def test_pairs_and_flags_are_lexicographic() -> None:
    assert PAIRS == ((0, 1), (0, 2), (0, 3), (0, 4), (1, 2), (1, 3), (1, 4), (2, 3), (2, 4), (3, 4))


def test_segments_and_left_alignment_by_hand() -> None:
    fp = 0xFFF8_0000_0000_0000  # segment 0 all ones (13 bits), the rest zero
    prefixes = drawer_prefixes(fp)
    assert prefixes[0] == bytes([0xFF, 0xF8, 0x00, 0x00, 0])  # (0,1): seg0 then 13 zero bits, left-aligned
    assert prefixes[3] == bytes([0xFF, 0xF8, 0x00, 0x00, 3])  # (0,4): 25 bits
    assert prefixes[9] == bytes([0, 0, 0, 0, 9])
    low = 0x0000_0000_0000_0FFF  # segment 4 all ones (12 bits)
    # (3,4): 13 zero bits, 12 ones, then 7 padding bits: 0000000000000 111111111111 0000000
    assert drawer_prefixes(low)[9] == bytes([0x00, 0x07, 0xFF, 0x80, 9])


@given(fingerprints)
def test_key_round_trip(fp: int) -> None:
    keys = drawer_keys(fp)
    assert len(keys) == 10 and all(len(k) == KEY_LENGTH for k in keys)
    for flag, key in enumerate(keys):
        value, decoded_flag, decoded_fp = decode_key(key)
        assert (decoded_flag, decoded_fp) == (flag, fp)
        assert key[:PREFIX_LENGTH] == drawer_prefixes(fp)[flag]
        assert value.to_bytes(4, "big") == key[:4]


def _flip(fp: int, bits: tuple[int, ...]) -> int:
    for b in bits:
        fp ^= 1 << b
    return fp


@settings(max_examples=300)
@given(fingerprints, st.lists(st.integers(0, 63), min_size=0, max_size=3, unique=True))
def test_within_distance_3_share_a_drawer(fp: int, bits: list[int]) -> None:
    other = _flip(fp, tuple(bits))
    assert set(drawer_prefixes(fp)) & set(drawer_prefixes(other))


@pytest.mark.parametrize("seed", range(3))
def test_every_flip_of_up_to_3_bits_shares_a_drawer(seed: int) -> None:
    fp = int(np.random.default_rng(seed).integers(0, 2**63)) * 2 + seed % 2
    mine = set(drawer_prefixes(fp))
    for k in (1, 2, 3):
        for bits in combinations(range(64), k):  # 41,664 neighbours at distance 3
            assert mine & set(drawer_prefixes(_flip(fp, bits))), bits


def test_distance_4_can_miss_every_drawer() -> None:
    # One bit in each of 4 segments: only one segment is left intact, so no pair of segments agrees.
    fp = 0
    other = _flip(fp, (63, 50, 37, 24))
    assert not set(drawer_prefixes(fp)) & set(drawer_prefixes(other))


@given(st.lists(fingerprints, min_size=1, max_size=50))
def test_vectorised_prefixes_match_scalar(fps: list[int]) -> None:
    values = drawer_prefixes_array(np.array(fps, dtype=np.uint64))
    for row, fp in zip(values, fps, strict=True):
        assert [int(v).to_bytes(4, "big") + bytes([f]) for f, v in enumerate(row)] == drawer_prefixes(fp)


def test_first_key_byte_is_spread_evenly() -> None:
    fps = np.random.default_rng(1).integers(0, 2**64 - 1, size=20_000, dtype=np.uint64)
    first = Counter(int(v) >> 24 for v in drawer_prefixes_array(fps).ravel())
    assert len(first) == 256
    assert max(first.values()) < 2 * min(first.values())


@pytest.mark.parametrize("bad", [b"", b"\x00" * 12, b"\x00" * 14, b"\x00\x00\x00\x00\x0a" + b"\x00" * 8])
def test_decode_refuses_non_keys(bad: bytes) -> None:
    with pytest.raises(ValueError, match="not a drawer row key"):
        decode_key(bad)
