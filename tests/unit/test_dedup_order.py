"""Whether Deduplicate asks before it claims, by the share of duplicates it has met (rpc/dedup_order.py)."""

from __future__ import annotations

import pytest

from simhash_server.rpc.dedup_order import BREAK_EVEN, DedupOrder


def test_auto_asks_first_while_duplicates_are_common_and_claims_first_when_they_are_rare() -> None:
    order = DedupOrder()
    assert order.ask_first()  # before anything is counted
    for _ in range(300):
        order.record(0, 1)  # every document new
    assert not order.ask_first() and order.share < 0.25
    order.record(100, 100)  # a batch of duplicates counts as 100 documents, not one call
    assert order.ask_first() and order.share > BREAK_EVEN


def test_a_batch_counts_as_its_documents_one_by_one() -> None:
    one_by_one, batched = DedupOrder(), DedupOrder()
    for n in range(40):
        one_by_one.record(n % 4 == 0, 1)
    batched.record(10, 40)
    assert batched.share == pytest.approx(one_by_one.share, abs=0.02)


def test_forced_orders_never_change_and_bad_input_names_the_argument() -> None:
    ask, claim = DedupOrder("ask-first"), DedupOrder("claim-first")
    for _ in range(500):
        ask.record(0, 1)
        claim.record(1, 1)
    assert ask.ask_first() and not claim.ask_first()
    with pytest.raises(ValueError, match="mode"):
        DedupOrder("sometimes")
    with pytest.raises(ValueError, match="duplicates"):
        DedupOrder().record(3, 2)
