"""TLS, mutual TLS, bearer tokens with roles, the non-loopback refusal and limits, on real servers and HBase."""

from __future__ import annotations

import datetime
import ipaddress
import logging
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from grpc_health.v1 import health_pb2, health_pb2_grpc

from simhash_client import PermissionDenied, ResourceExhausted, SimHashClient, Unauthenticated, Unavailable
from simhash_deploy import Ports
from simhash_server.rpc.limits import Limits
from simhash_server.rpc.security import TLSConfig, Tokens
from simhash_server.rpc.server import ServerConfig, SimHashServer

READ_TOKEN = "read-" + "r" * 27
WRITE_TOKEN = "write-" + "w" * 26
CLI = str(Path(sys.executable).with_name("simhash-index"))


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _cert(subject: str, key, issuer_name: x509.Name, issuer_key, *, ca: bool, san: bool = False):
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if san:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
    return builder.sign(issuer_key, hashes.SHA256())


def _pem(obj) -> bytes:
    if hasattr(obj, "private_bytes"):
        return obj.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    return obj.public_bytes(serialization.Encoding.PEM)


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> dict[str, Path]:
    """A CA; a server certificate for 127.0.0.1 it signed; a client certificate it signed; a stranger CA."""
    d = tmp_path_factory.mktemp("pki")
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _cert("test CA", ca_key, _name("test CA"), ca_key, ca=True)
    server_key = ec.generate_private_key(ec.SECP256R1())
    server = _cert("127.0.0.1", server_key, ca.subject, ca_key, ca=False, san=True)
    client_key = ec.generate_private_key(ec.SECP256R1())
    client = _cert("a caller", client_key, ca.subject, ca_key, ca=False)
    other_key = ec.generate_private_key(ec.SECP256R1())
    other = _cert("stranger CA", other_key, _name("stranger CA"), other_key, ca=True)
    files = {
        "ca": ca,
        "server": server,
        "server_key": server_key,
        "client": client,
        "client_key": client_key,
        "other_ca": other,
    }
    paths = {}
    for name, obj in files.items():
        paths[name] = d / f"{name}.pem"
        paths[name].write_bytes(_pem(obj))
    return paths


def _serve(make_index, **config) -> SimHashServer:
    store = make_index(regions=1)
    base = {"address": "127.0.0.1:0", "metrics_address": None, "health_interval_seconds": 0.5}
    srv = SimHashServer(ServerConfig(**base, store=store.config, **config))
    srv.start()
    return srv


@pytest.fixture(scope="module")
def tls_token_server(make_index, pki):
    srv = _serve(
        make_index,
        tls=TLSConfig(pki["server"], pki["server_key"]),
        tokens=Tokens([("read", READ_TOKEN), ("write", WRITE_TOKEN)]),
    )
    yield srv
    srv.stop(grace=0)


def tls_client(srv: SimHashServer, pki, token: str | None = None, **kw) -> SimHashClient:
    return SimHashClient(
        f"127.0.0.1:{srv.port}",
        timeout=10,
        retries=0,
        root_certificates=pki["ca"].read_bytes(),
        token=token,
        **kw,
    )


def test_no_token_and_a_wrong_token_are_unauthenticated(tls_token_server, pki, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    with tls_client(tls_token_server, pki) as client, pytest.raises(Unauthenticated, match="no bearer token"):
        client.query(simhash=1)
    wrong = "wrong-" + "x" * 30
    with tls_client(tls_token_server, pki, wrong) as client, pytest.raises(Unauthenticated, match="invalid"):
        client.query(simhash=1)
    with tls_client(tls_token_server, pki, READ_TOKEN[:-1]) as client, pytest.raises(Unauthenticated):
        client.query(simhash=1)
    assert wrong not in caplog.text and READ_TOKEN not in caplog.text
    assert READ_TOKEN not in repr(tls_token_server.config)


def test_a_read_token_reads_and_may_not_write(tls_token_server, pki) -> None:
    with tls_client(tls_token_server, pki, READ_TOKEN) as client:
        assert client.query(simhash=1) == []
        assert client.fingerprint("近似重复").fingerprint_version
        for write in (
            lambda: client.index("r1", simhash=1),
            lambda: client.deduplicate("r1", simhash=1),
            lambda: client.delete(["r1"]),
            lambda: client.index_batch([{"doc_id": "r1", "simhash": 1}]),
        ):
            with pytest.raises(PermissionDenied, match="a read token may not call"):
                write()


def test_a_write_token_writes_and_reads(tls_token_server, pki) -> None:
    with tls_client(tls_token_server, pki, WRITE_TOKEN) as client:
        client.index("w1", simhash=0xABCDEF)
        assert [h.doc_id for h in client.query(simhash=0xABCDEF)] == ["w1"]
        assert client.get("w1") == 0xABCDEF


def test_health_needs_no_token_and_reflection_does(tls_token_server, pki) -> None:
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    creds = grpc.ssl_channel_credentials(pki["ca"].read_bytes())
    with grpc.secure_channel(f"127.0.0.1:{tls_token_server.port}", creds) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        answer = health.Check(health_pb2.HealthCheckRequest(), timeout=10)
        assert answer.status == health_pb2.HealthCheckResponse.SERVING
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        with pytest.raises(grpc.RpcError) as info:
            next(stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")])))
        assert info.value.code() is grpc.StatusCode.UNAUTHENTICATED


def test_plaintext_and_untrusting_clients_cannot_reach_a_tls_server(tls_token_server, pki) -> None:
    plain = SimHashClient(f"127.0.0.1:{tls_token_server.port}", timeout=5, retries=0, token=WRITE_TOKEN)
    with plain, pytest.raises(Unavailable):
        plain.query(simhash=1)
    stranger = SimHashClient(
        f"127.0.0.1:{tls_token_server.port}",
        timeout=5,
        retries=0,
        root_certificates=pki["other_ca"].read_bytes(),
        token=WRITE_TOKEN,
    )
    with stranger, pytest.raises(Unavailable):
        stranger.query(simhash=1)


def test_mutual_tls_wants_a_client_certificate_its_ca_signed(make_index, pki) -> None:
    srv = _serve(make_index, tls=TLSConfig(pki["server"], pki["server_key"], pki["ca"]))
    try:
        with tls_client(srv, pki) as anonymous, pytest.raises(Unavailable):
            anonymous.query(simhash=1)
        with tls_client(
            srv, pki, client_certificate=pki["client"].read_bytes(), client_key=pki["client_key"].read_bytes()
        ) as client:
            assert client.query(simhash=1) == []
    finally:
        srv.stop(grace=0)


def test_tokens_over_loopback_plaintext_go_as_a_header(make_index) -> None:
    srv = _serve(make_index, tokens=Tokens([("write", WRITE_TOKEN)]))
    try:
        with SimHashClient(f"127.0.0.1:{srv.port}", timeout=10, token=WRITE_TOKEN) as client:
            client.index("p1", simhash=77)
        with SimHashClient(f"127.0.0.1:{srv.port}", timeout=10) as client, pytest.raises(Unauthenticated):
            client.get("p1")
    finally:
        srv.stop(grace=0)


def test_a_network_address_without_tls_or_tokens_is_refused_unless_insecure(make_index, caplog) -> None:
    store = make_index(regions=1)
    with pytest.raises(ValueError, match=r"refusing to serve 0\.0\.0\.0:0 without TLS or tokens"):
        SimHashServer(ServerConfig(address="0.0.0.0:0", metrics_address=None, store=store.config))
    result = subprocess.run(
        [CLI, "serve", "--address", "0.0.0.0:0", "--metrics-address", ""], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1 and "--insecure" in result.stderr and "Traceback" not in result.stderr
    with caplog.at_level(logging.WARNING):
        srv = SimHashServer(ServerConfig(address="0.0.0.0:0", metrics_address=None, store=store.config, insecure=True))
    srv.stop(grace=0)
    assert "with neither TLS nor tokens (--insecure)" in caplog.text


def test_message_size_and_concurrency_limits_answer_resource_exhausted(make_index) -> None:
    srv = _serve(make_index, limits=Limits(max_message_bytes=1 << 20, max_concurrent_calls=2, workers=2))
    try:
        with SimHashClient(f"127.0.0.1:{srv.port}", timeout=30, retries=0) as client:
            with pytest.raises(ResourceExhausted, match="larger than max"):
                client.fingerprint("x" * (2 << 20))
            text = "近似重复检测" * 15_000  # ~270 KB: tens of milliseconds each

            def call(_: int) -> str:
                try:
                    client.fingerprint(text)
                    return "ok"
                except ResourceExhausted:
                    return "exhausted"

            with ThreadPoolExecutor(12) as pool:
                outcomes = list(pool.map(call, range(24)))
            assert "exhausted" in outcomes and "ok" in outcomes
            assert client.query(simhash=1) == []  # and it still serves
    finally:
        srv.stop(grace=0)


def test_serve_with_tls_and_tokens_from_the_command_line(make_index, pki, tmp_path: Path) -> None:
    store = make_index(regions=1)
    tokens = tmp_path / "tokens"
    tokens.write_text(f"write {WRITE_TOKEN}\n")
    port = Ports.free().thrift
    env = {
        "SIMHASH_HBASE_THRIFT_PORT": str(store.config.thrift_port),
        "SIMHASH_HBASE_THRIFT2_PORT": str(store.config.thrift2_port),
        "SIMHASH_TABLE_PREFIX": store.config.table_prefix,
    }
    proc = subprocess.Popen(
        [
            CLI,
            "serve",
            "--address",
            f"0.0.0.0:{port}",
            "--metrics-address",
            "",
            "--tls-cert",
            str(pki["server"]),
            "--tls-key",
            str(pki["server_key"]),
            "--tokens-file",
            str(tokens),
        ],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        client = SimHashClient(
            f"127.0.0.1:{port}", timeout=5, retries=0, root_certificates=pki["ca"].read_bytes(), token=WRITE_TOKEN
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                client.index("cli1", simhash=5)
                break
            except Unavailable:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.5)
        assert client.get("cli1") == 5
        client.close()
    finally:
        proc.terminate()
        output = proc.communicate(timeout=60)[0]
    assert WRITE_TOKEN not in output


# -- credentials that rotate without a restart (rpc/rotation.py) ----------------------------------------------
KEPT_TOKEN, OLD_TOKEN, NEW_TOKEN = "kept-" + "k" * 27, "old-" + "o" * 28, "new-" + "n" * 28


def _new_authority(directory: Path) -> dict[str, Path]:
    """Another CA, and a certificate for 127.0.0.1 it signed: what a certificate manager renews to."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _cert("renewed CA", ca_key, _name("renewed CA"), ca_key, ca=True)
    server_key = ec.generate_private_key(ec.SECP256R1())
    server = _cert("127.0.0.1", server_key, ca.subject, ca_key, ca=False, san=True)
    paths = {"ca": directory / "renewed-ca.pem", "server": directory / "renewed.pem", "key": directory / "renewed.key"}
    for name, obj in (("ca", ca), ("server", server), ("key", server_key)):
        paths[name].write_bytes(_pem(obj))
    return paths


def test_tokens_and_certificate_rotate_under_traffic_without_a_restart(make_index, pki, tmp_path, caplog) -> None:
    caplog.set_level(logging.INFO, logger="simhash_server.rpc.rotation")
    cert, key, tokens = tmp_path / "server.pem", tmp_path / "server.key", tmp_path / "tokens"
    cert.write_bytes(pki["server"].read_bytes())
    key.write_bytes(pki["server_key"].read_bytes())
    tokens.write_text(f"write {KEPT_TOKEN}\nwrite {OLD_TOKEN}\n")
    renewed = _new_authority(tmp_path)
    srv = _serve(
        make_index,
        tls=TLSConfig(cert, key),
        tokens=Tokens.from_file(tokens),
        tokens_file=tokens,
        credentials_check_seconds=0.2,
    )

    def client(token: str, ca: Path) -> SimHashClient:
        return SimHashClient(
            f"127.0.0.1:{srv.port}", timeout=10, retries=0, root_certificates=ca.read_bytes(), token=token
        )

    try:
        # Traffic on a connection opened before the rotation, with a token both files hold: none may fail.
        failures: list[BaseException] = []
        calls = 0
        stop = threading.Event()

        def traffic() -> None:
            nonlocal calls
            with client(KEPT_TOKEN, pki["ca"]) as kept:
                while not stop.is_set():
                    try:
                        kept.index(f"rotation-{calls % 50}", simhash=calls)
                        kept.query(simhash=calls, max_distance=0)
                    except Exception as exc:  # noqa: BLE001 - every failure is the test's finding
                        failures.append(exc)
                    calls += 1

        with client(OLD_TOKEN, pki["ca"]) as old:
            old.query(simhash=1)  # the old token and certificate work before
        worker = threading.Thread(target=traffic)
        worker.start()
        try:
            # A bad tokens file and a key of another certificate are refused: what is in use stays.
            tokens.write_text("write too-short\n")
            key.write_bytes(renewed["key"].read_bytes())
            assert srv.rotation.reload("a bad rotation") is False
            with client(OLD_TOKEN, pki["ca"]) as old:
                old.query(simhash=2)
            # The real rotation, files rewritten in place and found by the file check: the tokens first (the
            # key still mismatched, so the certificate in use stays), then the certificate of the new key.
            generation = srv.rotation.generation
            tokens.write_text(f"write {KEPT_TOKEN}\nwrite {NEW_TOKEN}\n")
            assert srv.rotation.wait_generation(generation + 1, timeout=60)
            cert.write_bytes(renewed["server"].read_bytes())
            assert srv.rotation.wait_generation(generation + 2, timeout=60)
        finally:
            stop.set()
            worker.join(60)
        assert calls > 0 and failures == []
        with client(OLD_TOKEN, renewed["ca"]) as old, pytest.raises(Unauthenticated):
            old.query(simhash=3)
        with client(NEW_TOKEN, renewed["ca"]) as new:
            new.query(simhash=4)  # the new token, over a connection that verified the new certificate
        with client(NEW_TOKEN, pki["ca"]) as untrusting, pytest.raises(Unavailable):
            untrusting.query(simhash=5)  # a new connection no longer gets the old certificate
        assert "the tokens file was refused" in caplog.text and "the TLS files were refused" in caplog.text
        assert "credential files changed: reloaded tokens and TLS certificate" in caplog.text
    finally:
        srv.stop(grace=0)
