"""Fingerprint versions side by side: an index records its recipe and the server answers with it.

An index created with v1 or v2 (as every index made before v3 was) keeps its version's answers under the new
server; a new index gets v5; asking an existing index for another version is refused.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from simhash_client import FailedPrecondition, SimHashClient
from simhash_schema import VersionMismatch, connect, index_tables, read_meta
from simhash_server.fingerprint import FINGERPRINT_VERSION, V1, V2, V3, V4, V6, V7, fingerprint, recipe_of, short_name
from simhash_server.index.store import IndexStore
from simhash_server.rpc.server import ServerConfig, SimHashServer

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
VECTORS = {
    version: json.loads((GOLDEN / f"vectors{suffix}.json").read_text(encoding="utf-8"))
    for version, suffix in ((V1, ""), (V2, "-v2"), (V3, "-v3"))
}
sys.path.insert(0, str(GOLDEN))
from texts import golden_texts  # noqa: E402

CLI = str(Path(sys.executable).with_name("simhash-index"))


@pytest.fixture(scope="module", params=[V1, V2, V3], ids=short_name)
def old_server(request, make_index) -> Iterator[SimHashServer]:
    # what `schema apply --fingerprint-version v1` (or v2, v3) makes, as every index before v4 was made
    store = make_index(regions=1, fingerprint_version=request.param)
    assert store.meta.fingerprint_version == request.param
    unspecified = replace(store.config, fingerprint_version=None)  # the server is not told: it reads the index
    srv = SimHashServer(ServerConfig(address="127.0.0.1:0", metrics_address=None, store=unspecified))
    srv.start()
    yield srv
    srv.stop(grace=0)


def test_the_new_server_answers_an_old_index_with_its_version(old_server) -> None:
    texts = golden_texts()
    with SimHashClient(f"127.0.0.1:{old_server.port}", timeout=30) as client:
        version = client.stats().fingerprint_version
        assert version in (V1, V2, V3)
        for name in ("zh-seed0-article", "en-paragraph", "mixed-fullwidth-latin"):
            expected = VECTORS[version]["vectors"][name]
            made = client.fingerprint(texts[name])
            assert (f"{made.simhash:016x}", made.features, made.fingerprint_version) == (
                expected["simhash"],
                expected["features"],
                version,
            )
            assert client.index(f"old-{name}", text=texts[name]) == int(expected["simhash"], 16)
        article = texts["zh-seed4-article"]
        copy = article + "（本文转载自技术博客，版权归原作者所有）"
        client.index("old-article", text=article)
        verified = client.query(text=copy, min_similarity=0.8)  # sketches of the version's format on both sides
        assert [(h.doc_id, h.verified) for h in verified] == [("old-article", True)]
        # Without min_similarity a v1-v3 index answers a text with its fingerprint: nothing about sketches
        plain = client.query(text=copy)
        assert [(h.doc_id, h.similarity, h.verified) for h in plain] == [("old-article", None, None)]
        assert recipe_of(version).dedup_floor < 0.95
        dedup = client.deduplicate("old-copy", text=copy)  # the default floor, the version's
        assert not dedup.stored and [h.doc_id for h in dedup.hits] == ["old-article"]
        with pytest.raises(FailedPrecondition, match="differs from the index's"):
            client.query(simhash=1, fingerprint_version=V4)
        paragraph = int(VECTORS[version]["vectors"]["en-paragraph"]["simhash"], 16)
        assert client.query(simhash=paragraph, fingerprint_version=version)


def test_a_new_index_gets_v7_and_an_existing_one_keeps_its_version(make_index, hbase) -> None:
    fresh = make_index(regions=1)
    assert fresh.meta.fingerprint_version == FINGERPRINT_VERSION == V7
    old = make_index(regions=1, fingerprint_version=V1)
    asked_v6 = IndexStore(replace(old.config, fingerprint_version=V6), old.tables)
    with pytest.raises(VersionMismatch, match=r"not the .* asked for"):
        asked_v6.open()
    asked_v6.close()
    env = {
        "PATH": str(Path(sys.executable).parent),
        "SIMHASH_HBASE_HOST": hbase.host,
        "SIMHASH_HBASE_THRIFT_PORT": str(hbase.thrift_port),
        "SIMHASH_HBASE_THRIFT2_PORT": str(hbase.thrift2_port),
        "SIMHASH_TABLE_PREFIX": old.config.table_prefix,
    }
    refused = subprocess.run(
        [CLI, "schema", "apply", "--regions", "1", "--fingerprint-version", "v4"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode == 1 and "refusing to mix them" in refused.stderr and "Traceback" not in refused.stderr
    kept = subprocess.run(
        [CLI, "schema", "apply", "--regions", "1"], env=env, capture_output=True, text=True, timeout=120
    )
    assert kept.returncode == 0, kept.stderr
    assert f"fingerprint version: {V1}" in kept.stdout
    text = golden_texts()["zh-seed0-article"]
    assert len({fingerprint(text, v).value for v in (V1, V2, V3, V4)}) == 4


def test_schema_apply_creates_a_v1_index_on_request(hbase, drop) -> None:

    prefix = f"v1cli{uuid.uuid4().hex[:8]}"
    env = {
        "PATH": str(Path(sys.executable).parent),
        "SIMHASH_HBASE_HOST": hbase.host,
        "SIMHASH_HBASE_THRIFT_PORT": str(hbase.thrift_port),
        "SIMHASH_HBASE_THRIFT2_PORT": str(hbase.thrift2_port),
    }
    try:
        made = subprocess.run(
            [CLI, "schema", "apply", "--regions", "1", "--table-prefix", prefix, "--fingerprint-version", "v1"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert made.returncode == 0, made.stderr
        client = connect(hbase.host, hbase.thrift2_port)
        try:
            assert read_meta(client, index_tables(prefix).meta).fingerprint_version == V1
        finally:
            client.close()
    finally:
        drop(index_tables(prefix))
