"""Credentials that rotate without a restart: the tokens file, and the TLS certificate and key.

They are reread on SIGHUP and when one of their files changes (checked every few seconds: a certificate
manager renews them in place, or swaps a symlink).  New tokens apply to the next call; a new certificate to
the next connection (gRPC asks ``_fetch`` before each handshake), so calls in flight, and connections already
open, are not dropped.  A file that does not parse, or a key that does not match its certificate, is refused
with an error in the log, and the credentials in use stay.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import ssl
import threading
from pathlib import Path

import grpc

from simhash_server.rpc.security import AuthInterceptor, TLSConfig, Tokens

__all__ = ["Rotation"]

log = logging.getLogger(__name__)

Signature = bytes | None  # a digest of a file's content; None if it cannot be read


def _signature(path: Path) -> Signature:
    """What the file holds now (through symlinks): content, not timestamps, which some filesystems keep
    coarsely and a rewrite in the same second would not move."""
    try:
        return hashlib.sha256(path.read_bytes()).digest()
    except OSError:
        return None


class Rotation:
    """The server's rotating credentials: ``tls`` and the tokens ``auth`` checks, read from ``tokens_file``."""

    def __init__(self, tls: TLSConfig | None, tokens_file: Path | None, auth: AuthInterceptor | None) -> None:
        if tokens_file is not None and auth is None:
            raise ValueError("a tokens file needs the interceptor that checks its tokens")
        self.tls = tls
        self.tokens_file = tokens_file
        self.auth = auth
        self.generation = 0  # one more for every reload that changed a credential
        self._changed = threading.Condition()
        self._pending: grpc.ServerCertificateConfiguration | None = None
        self._seen = self._signatures()

    @property
    def files(self) -> list[Path]:
        tls = [] if self.tls is None else [self.tls.cert_file, self.tls.key_file, self.tls.client_ca_file]
        return [p for p in [*tls, self.tokens_file] if p is not None]

    def _signatures(self) -> list[Signature]:
        return [_signature(path) for path in self.files]

    # -- TLS ------------------------------------------------------------------------------------------------
    def server_credentials(self) -> grpc.ServerCredentials:
        """Credentials whose certificate can change: ValueError if the files are unreadable or do not match."""
        assert self.tls is not None
        return grpc.dynamic_ssl_server_credentials(
            self._certificate_configuration(),
            self._fetch,
            require_client_authentication=self.tls.client_ca_file is not None,
        )

    def _certificate_configuration(self) -> grpc.ServerCertificateConfiguration:
        assert self.tls is not None
        tls = self.tls
        try:
            cert, key = tls.cert_file.read_bytes(), tls.key_file.read_bytes()
            client_ca = tls.client_ca_file.read_bytes() if tls.client_ca_file else None
            checked = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            checked.load_cert_chain(tls.cert_file, tls.key_file)  # the key is the certificate's
            if tls.client_ca_file is not None:
                checked.load_verify_locations(tls.client_ca_file)
        except OSError as exc:  # ssl.SSLError included
            what = exc.filename or exc.strerror or exc
            raise ValueError(f"TLS: {what}: {exc.strerror or exc}") from exc
        return grpc.ssl_server_certificate_configuration([(key, cert)], root_certificates=client_ca)

    def _fetch(self) -> grpc.ServerCertificateConfiguration | None:
        """Asked by gRPC before each handshake: a new certificate once after a reload, else None (keep)."""
        with self._changed:
            pending, self._pending = self._pending, None
        return pending

    # -- reloading ------------------------------------------------------------------------------------------
    def reload(self, why: str) -> bool:
        """Reread every credential file; apply what parses, keep the rest.  True if anything changed."""
        self._seen = self._signatures()
        applied = []
        if self.tokens_file is not None and self.auth is not None:
            try:
                self.auth.tokens = Tokens.from_file(self.tokens_file)
                applied.append("tokens")
            except ValueError as exc:
                log.error("%s: the tokens file was refused, the tokens in use stay: %s", why, exc)
        if self.tls is not None:
            try:
                configuration = self._certificate_configuration()
                with self._changed:
                    self._pending = configuration
                applied.append("TLS certificate")
            except ValueError as exc:
                log.error("%s: the TLS files were refused, the certificate in use stays: %s", why, exc)
        if applied:
            with self._changed:
                self.generation += 1
                self._changed.notify_all()
            log.info("%s: reloaded %s", why, " and ".join(applied))
        return bool(applied)

    def wait_generation(self, generation: int, timeout: float) -> bool:
        """Block until ``generation`` reloads have applied (or ``timeout``); for callers that rotate files."""
        with self._changed:
            return self._changed.wait_for(lambda: self.generation >= generation, timeout)

    async def watch(self, interval: float) -> None:
        """Reload whenever a credential file changes; checked every ``interval`` seconds."""
        while True:
            await asyncio.sleep(interval)
            if self._signatures() != self._seen:
                self.reload("credential files changed")
