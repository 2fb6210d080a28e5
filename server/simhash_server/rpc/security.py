"""Who may call: server TLS (optionally mutual), bearer tokens with a role, and the refusal to serve a
network address with neither.

Tokens come from a file (or the SIMHASH_TOKENS environment variable) of ``ROLE TOKEN`` lines, ROLE being
``read`` (Fingerprint, Query, Get, Stats) or ``write`` (those and Index, IndexBatch, Deduplicate, Delete);
blank lines and ``#`` comments are skipped.  A caller sends ``authorization: Bearer TOKEN``; it is compared
with every configured token in constant time.  Health checks need no token; everything else does.
Tokens never reach a log: Tokens' repr shows only how many there are.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

__all__ = [
    "READ_METHODS",
    "ROLES",
    "WRITE_METHODS",
    "AuthInterceptor",
    "TLSConfig",
    "Tokens",
    "check_exposure",
    "is_loopback",
]

log = logging.getLogger(__name__)
SERVICE = "/simhash_index.v1.SimHashIndex/"
READ_METHODS = frozenset({"Fingerprint", "Query", "Get", "Stats"})
WRITE_METHODS = frozenset({"Index", "IndexBatch", "Deduplicate", "Delete"})
ROLES = {"read": READ_METHODS, "write": READ_METHODS | WRITE_METHODS}
OPEN_PREFIXES = ("/grpc.health.v1.Health/",)  # reachable without a token: load balancers probe it
MIN_TOKEN_CHARS = 16


@dataclass(frozen=True)
class TLSConfig:
    cert_file: Path
    key_file: Path
    client_ca_file: Path | None = None  # set: clients must present a certificate it signed (mutual TLS)
    # rotation.py reads them, at start and whenever they change


class Tokens:
    """The configured bearer tokens and their roles."""

    def __init__(self, entries: list[tuple[str, str]]) -> None:
        if not entries:
            raise ValueError("tokens: none given")
        for role, token in entries:
            if role not in ROLES:
                raise ValueError(f"tokens: unknown role {role!r}; roles are {', '.join(ROLES)}")
            if len(token) < MIN_TOKEN_CHARS:
                raise ValueError(f"tokens: a {role} token is shorter than {MIN_TOKEN_CHARS} characters")
        self._entries = [(role, token.encode()) for role, token in entries]

    @classmethod
    def parse(cls, text: str, source: str) -> Tokens:
        entries = []
        for number, line in enumerate(text.replace(",", "\n").splitlines(), start=1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split()
            if len(parts) != 2:
                raise ValueError(f"{source}: entry {number}: expected 'ROLE TOKEN'")
            entries.append((parts[0], parts[1]))
        try:
            return cls(entries)
        except ValueError as exc:
            raise ValueError(f"{source}: {exc}") from None

    @classmethod
    def from_file(cls, path: Path) -> Tokens:
        try:
            return cls.parse(path.read_text(), str(path))
        except OSError as exc:
            raise ValueError(f"tokens file {path}: {exc.strerror}") from exc

    def role(self, presented: bytes) -> str | None:
        """The role of a presented token, or None; every token is compared, so timing tells nothing."""
        found = None
        for role, token in self._entries:
            if hmac.compare_digest(presented, token) and found is None:
                found = role
        return found

    def __repr__(self) -> str:
        return f"Tokens({len(self._entries)} configured)"


def _terminator(handler: Any, code: grpc.StatusCode, details: str) -> Any:
    """A handler of the same kind as ``handler`` that only aborts the call."""

    async def abort(_request: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort(code, details)

    if handler is None or handler.unary_unary is not None:
        return grpc.unary_unary_rpc_method_handler(abort)
    if handler.unary_stream is not None:
        return grpc.unary_stream_rpc_method_handler(abort)
    if handler.stream_unary is not None:
        return grpc.stream_unary_rpc_method_handler(abort)
    return grpc.stream_stream_rpc_method_handler(abort)


class AuthInterceptor(grpc.aio.ServerInterceptor):
    """UNAUTHENTICATED without a valid bearer token; PERMISSION_DENIED for a write with a read token."""

    def __init__(self, tokens: Tokens) -> None:
        self.tokens = tokens

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> Any:
        refusal = self._refusal(details)
        handler = await continuation(details)
        return handler if refusal is None else _terminator(handler, *refusal)

    def _refusal(self, details: grpc.HandlerCallDetails) -> tuple[grpc.StatusCode, str] | None:
        method: str = details.method
        if method.startswith(OPEN_PREFIXES):
            return None
        header = next((v for k, v in details.invocation_metadata or () if k == "authorization"), None)
        if header is None:
            return grpc.StatusCode.UNAUTHENTICATED, "no bearer token"
        scheme, _, token = (header.decode("latin-1") if isinstance(header, bytes) else header).partition(" ")
        role = self.tokens.role(token.strip().encode()) if scheme.lower() == "bearer" else None
        if role is None:
            return grpc.StatusCode.UNAUTHENTICATED, "invalid bearer token"
        name = method.removeprefix(SERVICE)
        if method.startswith(SERVICE) and name not in ROLES[role]:
            return grpc.StatusCode.PERMISSION_DENIED, f"a {role} token may not call {name}"
        return None


def is_loopback(address: str) -> bool:
    host = address.rsplit(":", 1)[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name or a wildcard ('', 0.0.0.0, [::]) reaches the network


def check_exposure(address: str, tls: TLSConfig | None, tokens: Tokens | None, insecure: bool) -> None:
    """Refuse a network address with neither TLS nor tokens, unless ``insecure``; then warn."""
    if is_loopback(address):
        return
    if tls is None and tokens is None:
        if not insecure:
            raise ValueError(
                f"refusing to serve {address} without TLS or tokens: anyone on the network could read and write "
                "the index.  Give --tls-cert/--tls-key and/or --tokens-file, or --insecure to do it anyway"
            )
        log.warning("serving %s with neither TLS nor tokens (--insecure): anyone who reaches it may write", address)
    elif tls is None:
        log.warning("serving %s with tokens but without TLS: tokens cross the network in clear text", address)
