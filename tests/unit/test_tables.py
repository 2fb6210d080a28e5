"""The index's tables as data: region splits and the eager checks of index_tables."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simhash_schema import DRAWER_REGIONS, index_tables


def test_a_new_index_gets_the_default_drawer_regions_and_a_quarter_as_many_fp2docs() -> None:
    tables = index_tables("t")
    assert len(tables.drawers.split_keys) + 1 == DRAWER_REGIONS
    assert len(tables.fp2docs.split_keys) + 1 == max(1, DRAWER_REGIONS // 4)
    assert tables.docs.split_keys == ()


@given(st.integers(1, 4096))
def test_split_keys_are_sorted_distinct_and_even_over_uniform_keys(regions: int) -> None:
    keys = index_tables("t", drawer_regions=regions).drawers.split_keys
    assert len(keys) == regions - 1
    assert list(keys) == sorted(set(keys))
    bounds = [0, *(int.from_bytes(k, "big") for k in keys), 65536]
    widths = [b - a for a, b in itertools.pairwise(bounds)]
    assert max(widths) - min(widths) <= 1  # each region holds an equal share of uniform 2-byte key prefixes


@pytest.mark.parametrize("regions", [0, 4097, -1])
def test_drawer_regions_out_of_range_are_refused_by_name(regions: int) -> None:
    with pytest.raises(ValueError, match=r"drawer_regions must be 1\.\.4096"):
        index_tables("t", drawer_regions=regions)


@pytest.mark.parametrize("prefix", ["", "a b", "a:b:c", "x/y"])
def test_bad_prefixes_are_refused(prefix: str) -> None:
    with pytest.raises(ValueError, match="table prefix"):
        index_tables(prefix)


@pytest.mark.parametrize("compression", ["NONE", "LZ4", "ZSTD"])
def test_compression_reaches_fp2docs_and_docs_while_drawer_blocks_stay_uncompressed_fast_diff_4k(
    compression: str,
) -> None:
    tables = index_tables("t", compression=compression)
    drawers = tables.drawers.family
    assert (drawers.compression, drawers.encoding, drawers.block_size) == ("NONE", "FAST_DIFF", 4096)
    assert tables.fp2docs.family.compression == tables.docs.family.compression == compression
    assert tables.fp2docs.family.block_size == tables.docs.family.block_size == 8192  # read by single rows
