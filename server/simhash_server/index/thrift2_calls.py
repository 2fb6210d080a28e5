"""Thrift2 calls in halves, for the query path: a request written, then its reply read.

Doing the halves apart lets one thread keep calls on several connections in flight at once (the gateway
serves each connection on its own thread), with no thread hand-offs in this process (scans.py).  thriftpy2's
TClient has the halves as ``_send`` and ``_recv`` but does not make them public, so they are reached only
here.
"""

from __future__ import annotations

from typing import Any

__all__ = ["receive_reply", "send_request"]


def send_request(client: Any, api: str, **arguments: Any) -> None:
    """The first half of ``client.<api>(**arguments)``: the request, written and flushed."""
    client._send(api, **arguments)


def receive_reply(client: Any, api: str) -> Any:
    """The second half: the reply to the request ``send_request`` wrote (or the exception it carries)."""
    return client._recv(api)
