"""The gRPC server's event loop: uvloop by default, asyncio's own on request, anything else refused."""

from __future__ import annotations

import asyncio

import pytest
import uvloop
from click.testing import CliRunner

from simhash_server.cli import main
from simhash_server.rpc.event_loop import new_event_loop
from simhash_server.rpc.server import ServerConfig, SimHashServer


@pytest.mark.parametrize(("kind", "loop_type"), [("uvloop", uvloop.Loop), ("asyncio", asyncio.BaseEventLoop)])
def test_each_kind_gives_its_loop_and_it_runs_a_coroutine(kind: str, loop_type: type) -> None:
    loop = new_event_loop(kind)
    try:
        assert isinstance(loop, loop_type)
        assert loop.run_until_complete(asyncio.sleep(0, result="ran")) == "ran"
    finally:
        loop.close()


def test_an_unknown_loop_is_refused_by_name_before_anything_starts() -> None:
    with pytest.raises(ValueError, match="event_loop must be one of uvloop, asyncio, got 'trio'"):
        new_event_loop("trio")
    with pytest.raises(ValueError, match="event_loop must be one of uvloop, asyncio, got 'trio'"):
        SimHashServer(ServerConfig(event_loop="trio"))  # before it opens a connection to HBase


def test_serve_defaults_to_uvloop_as_the_config_does() -> None:
    result = CliRunner().invoke(main, ["serve", "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "--event-loop [uvloop|asyncio]" in result.output
    assert "[default: uvloop]" in " ".join(result.output.split("--event-loop")[1].split("--")[0].split())
    assert ServerConfig().event_loop == "uvloop"
