"""Tokens and the refusal to serve a network unprotected: the pure checks behind `serve`'s security flags."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from simhash_server.rpc.security import Tokens, check_exposure, is_loopback


def test_weak_or_malformed_tokens_are_refused_at_start(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="shorter than 16"):
        Tokens([("read", "short")])
    with pytest.raises(ValueError, match="unknown role 'admin'"):
        Tokens.parse("admin " + "a" * 20, "SIMHASH_TOKENS")
    path = tmp_path / "tokens"
    path.write_text("# callers\nread " + "r" * 20 + "\nwrite\n")
    with pytest.raises(ValueError, match=f"{path}: entry 3: expected 'ROLE TOKEN'"):
        Tokens.from_file(path)


@pytest.mark.parametrize(
    ("address", "loopback"),
    [
        ("127.0.0.1:50051", True),
        ("127.8.9.10:1", True),
        ("localhost:50051", True),
        ("[::1]:50051", True),
        ("0.0.0.0:50051", False),
        ("[::]:50051", False),
        (":50051", False),
        ("10.0.0.5:50051", False),
        ("example.com:50051", False),
    ],
)
def test_what_counts_as_loopback(address: str, loopback: bool) -> None:
    assert is_loopback(address) is loopback


def test_a_network_address_needs_tls_or_tokens_unless_insecure(caplog) -> None:
    check_exposure("127.0.0.1:1", None, None, insecure=False)  # loopback needs nothing
    with pytest.raises(ValueError, match=r"refusing to serve 0\.0\.0\.0:1 without TLS or tokens"):
        check_exposure("0.0.0.0:1", None, None, insecure=False)
    with caplog.at_level(logging.WARNING):
        check_exposure("0.0.0.0:1", None, None, insecure=True)
        check_exposure("0.0.0.0:1", None, Tokens([("read", "r" * 20)]), insecure=False)
    assert "neither TLS nor tokens (--insecure)" in caplog.text
    assert "tokens cross the network in clear text" in caplog.text
