"""The evaluation's clusterings (benchmarks/eval_clusters.py): chains join, centres do not."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from eval_clusters import centres, components, mixed, pairs_of, sizes


def test_components_join_a_chain_and_centres_keep_only_what_links_to_the_centre() -> None:
    # 0-1-2-3 is a chain: 0 and 3 are not linked, yet the components join them
    scored = {(0, 1): 0.95, (1, 2): 0.9, (2, 3): 0.8}
    assert components(scored, 5) == [0, 0, 0, 0, 4]
    assert pairs_of(components(scored, 5)) == {(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)}
    # CENTER: the most similar link (0, 1) makes 0 a centre and 1 its member; 2 links to 1, a member, so it
    # is left for the next link, (2, 3), and becomes a centre of its own
    labels = centres(scored, 5)
    assert labels == [0, 0, 2, 2, 4]
    assert pairs_of(labels) == {(0, 1), (2, 3)}


def test_a_document_linked_to_a_centre_joins_it_whatever_the_order_given() -> None:
    scored = {(1, 3): 0.8, (0, 1): 0.9, (0, 2): 0.85}
    assert centres(scored, 4) == [0, 0, 0, 3]
    assert centres(dict(reversed(list(scored.items()))), 4) == centres(scored, 4)
    assert centres(scored, 4)[3] == 3  # 3 is linked to a member (1), never to the centre 0


def test_given_the_ids_centres_order_as_the_job_does() -> None:
    # Equal at four decimals, so the ends' ids decide: ("a", "b") before ("b", "z"), and "a" (2) becomes the
    # centre with "b" (1) its member; by similarity and index, (0, 1) comes first and makes 0 the centre.
    scored = {(0, 1): 0.90001, (1, 2): 0.9}
    ids = ["z", "b", "a"]
    assert centres(scored, 3) == [0, 0, 2]
    assert centres(scored, 3, ids) == [0, 2, 2]
    # Index 3 ("y") is the first end of the most similar link, but "b" (2) is the smaller id: the centre.
    ids = ["z", "a", "b", "y"]
    assert centres({(3, 2): 1.0, (3, 0): 0.8}, 4) == [3, 1, 3, 3]
    assert centres({(3, 2): 1.0, (3, 0): 0.8}, 4, ids) == [0, 1, 2, 2]


def test_stars_merge_only_when_each_centre_is_linked_to_every_member_of_the_other() -> None:
    # (0, 1) and (2, 3) pair off first: two stars.  0 and 2 are each linked to both members of the other's
    # star, so 0's takes in 2's; as the job's Center does.
    scored = {(0, 1): 0.99, (2, 3): 0.98, (0, 2): 0.9, (0, 3): 0.85, (1, 2): 0.8}
    assert centres(scored, 4) == [0, 0, 0, 0]
    # Without (1, 2), 2 is not linked to 1, a member of 0's star: the stars stay apart.
    del scored[(1, 2)]
    assert centres(scored, 4) == [0, 0, 2, 2]


def test_sizes_and_mixed_clusters() -> None:
    labels = [0, 0, 0, 3, 3, 5]
    assert sizes(labels) == [3, 2]
    assert mixed(labels, ["a", "a", "b", "c", "c", "d"]) == 1
