"""ConnectionPool: which failures are retried on a fresh connection, and what each ends as."""

from __future__ import annotations

import time

import pytest
from thriftpy2.thrift import TException
from thriftpy2.transport import TTransportException

from simhash_server.index.errors import DeadlineExceeded, Rejected, Unavailable
from simhash_server.index.pool import ConnectionPool


class TIOError(TException):  # named as HBase's Thrift2 IDL names them: the pool sorts by name
    pass


class TIllegalArgument(TException):
    pass


class AlreadyExists(TException):  # Thrift1's spelling
    pass


class Connections:
    """Numbered connections; remembers which were closed."""

    def __init__(self) -> None:
        self.made = 0
        self.closed: list[int] = []

    def open(self) -> int:
        self.made += 1
        return self.made

    def close(self, conn: int) -> None:
        self.closed.append(conn)


def _failing(errors: list[BaseException], seen: list[int]):
    def call(conn: int) -> str:
        seen.append(conn)
        if errors:
            raise errors.pop(0)
        return f"answered on {conn}"

    return call


def test_a_transport_error_is_retried_on_a_fresh_connection_and_the_broken_one_closed() -> None:
    conns, seen = Connections(), []
    pool = ConnectionPool("t", conns.open, conns.close, size=2, retries=2)
    assert pool.run(_failing([TTransportException(message="read 0 bytes")], seen)) == "answered on 2"
    assert seen == [1, 2] and conns.closed == [1]
    assert pool.run(_failing([], seen)) == "answered on 2"  # the good one is reused


def test_an_hbase_io_error_is_retried_then_unavailable() -> None:
    conns, seen = Connections(), []
    pool = ConnectionPool("t", conns.open, conns.close, size=1, retries=2)
    with pytest.raises(Unavailable, match="did not answer after 3 attempt"):
        pool.run(_failing([TIOError(), TIOError(), TIOError()], seen))
    assert len(seen) == 3


@pytest.mark.parametrize("refusal", [TIllegalArgument(), AlreadyExists()])
def test_a_refusal_is_not_retried(refusal: TException) -> None:
    conns, seen = Connections(), []
    pool = ConnectionPool("t", conns.open, conns.close, size=1, retries=5)
    with pytest.raises(Rejected, match="HBase refused the request"):
        pool.run(_failing([refusal], seen))
    assert len(seen) == 1 and conns.closed == []  # the connection itself is fine


def test_a_non_idempotent_call_is_tried_once() -> None:
    conns, seen = Connections(), []
    pool = ConnectionPool("t", conns.open, conns.close, size=1, retries=5)
    with pytest.raises(Unavailable, match="after 1 attempt"):
        pool.run(_failing([TTransportException()], seen), idempotent=False)
    assert len(seen) == 1


def test_a_passed_deadline_stops_before_calling() -> None:
    conns, seen = Connections(), []
    pool = ConnectionPool("t", conns.open, conns.close, size=1)
    with pytest.raises(DeadlineExceeded):
        pool.run(_failing([], seen), deadline=time.monotonic() - 1)
    assert seen == []


def test_errors_of_the_callers_own_code_pass_through_untouched() -> None:
    conns, seen = Connections(), []
    pool = ConnectionPool("t", conns.open, conns.close, size=1)
    with pytest.raises(KeyError):
        pool.run(_failing([KeyError("bug")], seen))
    assert len(seen) == 1


def test_after_a_dropped_connection_the_retry_opens_a_fresh_one_instead_of_another_idle_one() -> None:
    """A gateway's idle timeout closes every idle connection at once: taking the next idle one would meet
    the same fate on each attempt (the flaky test_pooled_connections_survive_the_gateways_idle_timeout)."""
    conns = Connections()
    pool = ConnectionPool("t", conns.open, conns.close, size=8)
    held = [conns.open() for _ in range(5)]  # 5 idle connections, all dropped by the gateway meanwhile
    for conn in held:
        pool._idle.put(conn)
    dead = set(held)

    def call(conn: int) -> int:
        if conn in dead:
            raise TTransportException(message="TSocket read 0 bytes")
        return conn

    assert pool.run(call) == 6  # one stale connection met, then a new one
    assert conns.closed == [5]


def test_held_takes_only_the_slots_that_are_free_and_gives_them_back() -> None:
    conns = Connections()
    pool = ConnectionPool("t", conns.open, conns.close, size=3, acquire_timeout=0.01)
    with pool.held(5) as outer:
        assert outer == [1, 2, 3]  # as many as the pool has, not as many as asked for
        with pytest.raises(Unavailable), pool.held(1):  # none left: the first slot is the only one waited for
            pass
    with pool.held(2) as again:
        assert len(again) == 2 and set(again) <= {1, 2, 3}  # returned to the idle connections, reused
    assert conns.closed == []


def test_held_discards_every_connection_when_the_block_fails() -> None:
    conns = Connections()
    pool = ConnectionPool("t", conns.open, conns.close, size=2)
    with pytest.raises(TTransportException), pool.held(2) as held:
        assert held == [1, 2]
        raise TTransportException(message="read 0 bytes")  # a reply may be left unread on either
    assert sorted(conns.closed) == [1, 2]
    with pool.held(2) as fresh:
        assert fresh == [3, 4]
