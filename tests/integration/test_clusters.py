"""`simhash-index clusters` on the real HBase with HBase's MapReduce tooling in local mode, checked against
brute force: planted clusters (chains and stars at distances 1-3, decoys at 4-6, documents sharing a
fingerprint, deleted documents whose drawer rows stay) among random fingerprints, and one hot drawer
prefix compared in tiles.  Every pair of live fingerprints is compared by brute force (numpy); the pairs
must be exactly those the job found, and the clusters exactly a union-find's over them.

SIMHASH_CLUSTERS_N sets the number of documents, SIMHASH_CLUSTERS_HOT those of the hot prefix among them
and SIMHASH_CLUSTERS_BUDGET the job's comparisons per task (make test: 10,000, 1,000 and 20,000, so the
hot group's half million comparisons are cut into tiles; make bench-clusters: 200,000, 100,000 and the
default 5*10^7).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from truth import (
    Planted,
    brute_pairs,
    centre_clusters,
    components,
    expected_clusters,
    flip,
    plant,
    read_parts,
    shares_a_drawer,
    unescape,
)

from simhash_server.fingerprint import V7, fingerprint
from simhash_server.fingerprint.sketch import similarity
from simhash_server.fingerprint.sketch_format import comparable, format_of, parts_end, parts_trailer, stored_parts
from simhash_server.index.keys import PAIRS, SEGMENTS, drawer_keys
from simhash_server.index.model import Document
from simhash_server.index.store import IndexStore

CLI = str(Path(sys.executable).with_name("simhash-index"))
N = int(os.environ.get("SIMHASH_CLUSTERS_N", "10000"))
HOT = int(os.environ.get("SIMHASH_CLUSTERS_HOT", str(N // 10)))  # fingerprints in the hot prefix group
BUDGET = int(os.environ.get("SIMHASH_CLUSTERS_BUDGET", "20000"))  # comparisons per task: HOT^2/2 is over it


@pytest.fixture(autouse=True, scope="module")
def _launcher_only(hbase) -> None:
    if hbase.local is None:  # the job's HBase client needs ZooKeeper and region servers the host can reach
        pytest.skip("the clusters job reaches the local launcher's ZooKeeper")


def job_env(store: IndexStore, hbase) -> dict[str, str]:
    return {
        **os.environ,
        "SIMHASH_HBASE_THRIFT_PORT": str(store.config.thrift_port),
        "SIMHASH_HBASE_THRIFT2_PORT": str(store.config.thrift2_port),
        "SIMHASH_TABLE_PREFIX": store.config.table_prefix,
        "SIMHASH_ZOOKEEPER": f"127.0.0.1:{hbase.local.ports.zookeeper}",
    }


@dataclass
class Run:
    planted: Planted
    live: dict[str, int]
    output: Path
    summary: dict[str, object]
    stderr: str
    regions: int  # of the drawers table, after the splits inside two prefix groups
    split_pair: tuple[int, int]  # the small group's pair the split falls between


def _segment_mask(i: int) -> int:
    shift = 64 - sum(SEGMENTS[: i + 1])
    return ((1 << SEGMENTS[i]) - 1) << shift


def split_key(pair: tuple[int, int]) -> bytes:
    """The drawer row of the pair's larger fingerprint in the drawer that reports the pair: the group's rows
    are prefix + fingerprint, so a split there puts the smaller one before it and the larger one at it."""
    a, b = sorted(pair)
    flag = next(f for f, (i, j) in enumerate(PAIRS) if not ((a ^ b) & (_segment_mask(i) | _segment_mask(j))))
    return drawer_keys(b)[flag]


def split_between(hbase, table: str, key: bytes) -> int:
    """Split the drawers table at ``key`` (HBase's Admin.split, by jshell); returns the table's regions."""
    script = Path(__file__).with_name("split.jsh")
    done = subprocess.run(
        [
            "jshell",
            f"-R-Dtable={table}",
            f"-R-Dkey={key.hex()}",
            f"-R-Dhbase.log.dir={hbase.local.log_dir}",
            "-R-Dhbase.log.file=split.log",
            "--class-path",
            f"{hbase.local.conf_dir}:{hbase.local.lib_dir}/*",
            str(script),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("split ")]
    assert done.returncode == 0 and lines, done.stdout[-2000:] + done.stderr[-2000:]
    return int(lines[0].split()[1])


@pytest.fixture(scope="module")
def run(make_index, hbase, tmp_path_factory) -> Run:
    store: IndexStore = make_index(regions=4)
    planted = plant(N, seed=20261123, hot=HOT)
    items = list(planted.documents.items())
    for start in range(0, len(items), 5_000):
        store.index_many(items[start : start + 5_000])
    store.delete(sorted(planted.deleted))
    # Two splits inside prefix groups, between the rows of a near pair: a small group's and the hot group's,
    # in two of the 4 pre-split regions (a daughter region cannot split again before it is compacted).
    hot_key = split_key(planted.hot_pairs[0])
    chain = next(pair for pair in planted.chain_pairs if split_key(pair)[0] // 64 != hot_key[0] // 64)
    split_between(hbase, store.tables.drawers.name, split_key(chain))
    regions = split_between(hbase, store.tables.drawers.name, hot_key)
    live = {doc: fp for doc, fp in planted.documents.items() if doc not in planted.deleted}
    output = tmp_path_factory.mktemp("clusters") / "out"
    args = [CLI, "clusters", str(output), "--budget", str(BUDGET), "--heap-mb", "1024", "--sort-mb", "64"]
    done = subprocess.run(args, env=job_env(store, hbase), capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    if report := os.environ.get("SIMHASH_CLUSTERS_REPORT"):  # bench-clusters keeps the run's summary
        Path(report).write_text((output / "summary.json").read_text())
    summary = json.loads((output / "summary.json").read_text())
    return Run(planted, live, output, summary, done.stderr, regions, chain)


@pytest.fixture(scope="module")
def truth(run: Run) -> set[tuple[int, int]]:
    fps = np.unique(np.fromiter(run.live.values(), dtype=np.uint64, count=len(run.live)))
    return brute_pairs(fps, 3)


def test_every_pair_found_once_and_none_extra(run: Run, truth: set[tuple[int, int]]) -> None:
    found = [(int(a, 16), int(b, 16), int(d)) for a, b, d in read_parts(run.output / "pairs")]
    pairs = {(a, b) for a, b, _ in found}
    assert len(found) == len(pairs), "a pair was reported twice"
    assert pairs - truth == set(), "pairs that are not within distance 3 (or whose ends have no documents)"
    assert truth - pairs == set(), "pairs within distance 3 that the job missed"
    assert all(d == (a ^ b).bit_count() for a, b, d in found)
    assert run.summary["pairs"] == len(truth)
    assert len(truth) > N // 10  # the planted clusters are there: the comparison is not vacuous


def test_clusters_are_the_components_of_the_pairs(run: Run, truth: set[tuple[int, int]]) -> None:
    got = {unescape(doc): unescape(cluster) for doc, cluster in read_parts(run.output / "clusters")}
    want = expected_clusters(run.live, truth)
    assert got == want
    assert set(got) & run.planted.deleted == set()
    assert got["a\tb"] == "Zebra"  # b"Z" < b"a" < b"b" < "文"
    sizes = {unescape(c): int(n) for c, n in read_parts(run.output / "sizes")}
    assert sizes == {c: list(want.values()).count(c) for c in set(want.values())}
    assert run.summary["clusters"] == len(sizes)
    assert run.summary["clustered_documents"] == len(want)
    assert run.summary["documents"] == len(run.live)
    largest = run.summary["largest_clusters"]
    assert [c["documents"] for c in largest] == sorted(sizes.values(), reverse=True)[: len(largest)]


def test_deleted_documents_do_not_bridge(run: Run) -> None:
    got = {unescape(doc): unescape(cluster) for doc, cluster in read_parts(run.output / "clusters")}
    ends = sorted(d for d in run.live if d.startswith("end-"))
    assert ends, "no bridge case planted"
    # each pair of ends was 4 apart through a deleted middle: apart unless chance joined them
    bridged = sum(1 for a, b in zip(ends[::2], ends[1::2], strict=True) if a in got and got.get(a) == got.get(b))
    assert bridged == 0
    assert run.summary["fingerprints_without_documents"] >= 1


def test_hot_prefix_is_compared_in_tiles(run: Run) -> None:
    assert run.regions == 6
    summary = run.summary
    assert summary["hot_groups"] >= 1
    assert summary["tiles"] > 1
    blocks = -(-summary["hot_group_fingerprints"] // int(BUDGET**0.5))
    assert summary["tiles"] == blocks * (blocks + 1) // 2  # every pair of blocks, each once
    biggest = summary["largest_prefix_groups"][0]
    assert biggest["flag"] == 0 and biggest["fingerprints"] >= HOT - 40  # the planted group (and its copies)
    hot = [fp for doc, fp in run.live.items() if doc.startswith("hot-")]
    found = {(int(a, 16), int(b, 16)) for a, b, _ in read_parts(run.output / "pairs")}
    inside = {(a, b) for a, b in found if a >> 38 == b >> 38 == hot[0] >> 38}
    assert len(inside) >= 30  # the 40 planted near pairs inside the group (a few may coincide)
    assert tuple(sorted(run.planted.hot_pairs[0])) in found  # the pair across a region boundary


def test_pairs_across_a_region_boundary_are_found(run: Run) -> None:
    """Two region boundaries fall inside prefix groups (split.jsh), between the rows of a near pair, as
    HBase's own size-based splits can fall: map tasks start and end on prefix boundaries, so each group is
    read whole by one task."""
    found = {(int(a, 16), int(b, 16)) for a, b, _ in read_parts(run.output / "pairs")}
    assert tuple(sorted(run.split_pair)) in found
    assert tuple(sorted(run.planted.hot_pairs[0])) in found


def test_a_second_run_refuses_the_same_output(run: Run) -> None:
    done = subprocess.run([CLI, "clusters", str(run.output)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "already holds clusters" in done.stderr


# -- snapshot read (--read snapshot) ----------------------------------------------------------------------------
def _rootdir(hbase) -> Path:
    """The launcher's hbase.rootdir (simhash_deploy.site.standalone_properties)."""
    return hbase.local.var_dir / "data"


def _clusters_of_snapshot(
    env: dict[str, str], hbase, output: Path, rootdir: str | None = None
) -> subprocess.CompletedProcess[str]:
    rootdir = rootdir or _rootdir(hbase).as_uri()
    args = [CLI, "clusters", str(output), "--read", "snapshot", "--budget", str(BUDGET), "--heap-mb", "1024"]
    args += ["--sort-mb", "64", "-D", f"hbase.rootdir={rootdir}"]
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=1800)


@pytest.mark.slow("snapshots taken, restored and read by the MapReduce jobs, then deleted")
def test_a_snapshot_read_finds_exactly_the_pairs_and_clusters_and_leaves_no_snapshot(
    make_index, hbase, tmp_path: Path
) -> None:
    """The jobs read HBase snapshots of the tables from the launcher's root directory, not the region
    server: the same exactness as the scan read (a hot prefix in tiles, deleted documents' drawer rows)."""
    store: IndexStore = make_index(regions=4)
    planted = plant(N // 4, seed=20261127, hot=HOT // 4)
    items = list(planted.documents.items())
    for start in range(0, len(items), 5_000):
        store.index_many(items[start : start + 5_000])
    store.delete(sorted(planted.deleted))
    live = {doc: fp for doc, fp in planted.documents.items() if doc not in planted.deleted}
    output = tmp_path / "snap"
    done = _clusters_of_snapshot(job_env(store, hbase), hbase, output)
    assert done.returncode == 0, done.stderr[-3000:]

    truth = brute_pairs(np.unique(np.fromiter(live.values(), dtype=np.uint64, count=len(live))), 3)
    found = [(int(a, 16), int(b, 16)) for a, b, _ in read_parts(output / "pairs")]
    assert len(found) == len(set(found)) and set(found) == truth and len(truth) > N // 50
    got = {unescape(doc): unescape(cluster) for doc, cluster in read_parts(output / "clusters")}
    assert got == expected_clusters(live, truth)
    summary = json.loads((output / "summary.json").read_text())
    assert summary["read"] == "snapshot" and summary["tiles"] > 1 and summary["documents"] == len(live)
    snapshots = _rootdir(hbase) / ".hbase-snapshot"
    assert not [p for p in snapshots.glob("*") if "-clusters-" in p.name]  # deleted once the run succeeded
    assert list((_rootdir(hbase).parent / "simhash-restore").glob("*")) == []


def _run_env(run: Run, hbase) -> dict[str, str]:
    env = {**os.environ, "SIMHASH_TABLE_PREFIX": str(run.summary["index"])}
    env["SIMHASH_ZOOKEEPER"] = f"127.0.0.1:{hbase.local.ports.zookeeper}"
    env["SIMHASH_HBASE_THRIFT_PORT"], env["SIMHASH_HBASE_THRIFT2_PORT"] = (
        str(hbase.thrift_port),
        str(hbase.thrift2_port),
    )
    return env


def test_a_snapshot_read_refuses_a_table_split_inside_a_prefix_group(run: Run, hbase, tmp_path: Path) -> None:
    """A map task of a snapshot reads its one region, so a region boundary inside a prefix group (the
    fixture's two) would lose the pairs across it: refused, naming the way that reads them, and no snapshot
    is kept."""
    done = _clusters_of_snapshot(_run_env(run, hbase), hbase, tmp_path / "refused")
    assert done.returncode == 1
    assert "2 region boundaries inside a prefix group" in done.stderr and "--read scan" in done.stderr
    assert not [p for p in (_rootdir(hbase) / ".hbase-snapshot").glob("*") if "-clusters-" in p.name]


def test_a_snapshot_read_given_another_root_directory_names_the_setting(run: Run, hbase, tmp_path: Path) -> None:
    """The HMaster writes a snapshot under its own hbase.rootdir; a job given another (a client's default)
    cannot read it: refused naming hbase.rootdir and how to give it, with no snapshot kept and no output."""
    elsewhere = (tmp_path / "not-the-root").as_uri()
    done = _clusters_of_snapshot(_run_env(run, hbase), hbase, tmp_path / "out", rootdir=elsewhere)
    assert done.returncode == 1
    assert "is not under the HBase root directory" in done.stderr and "hbase.rootdir" in done.stderr
    assert not [p for p in (_rootdir(hbase) / ".hbase-snapshot").glob("*") if "-clusters-" in p.name]
    assert not (tmp_path / "out" / "summary.json").exists()


# -- verified (--min-similarity) ----------------------------------------------------------------------------
FLOOR = 0.9


def near_sketch(base: bytes, changed: int, rng: random.Random) -> bytes:
    """``base`` (a stored sketch) with ``changed`` of its value bytes altered: format 1 then estimates
    (255 - changed) / 255.  A format-3 sketch keeps its header (code and count) but may get another count,
    so its containment differs from its Jaccard estimate."""
    values = bytearray(base)
    header = 5 if base[0] == 3 else 1
    for i in rng.sample(range(header, len(base)), changed):
        values[i] = (values[i] + 1 + rng.randrange(255)) % 256
    if header == 5:
        values[1:5] = rng.choice([1000, 1200, 1500, 2600, 5000]).to_bytes(4, "big")
    return bytes(values)


def flip_in_segments(fp: int, rng: random.Random, bits: int, segments: list[int]) -> int:
    """fp with ``bits`` distinct random bits flipped, at least one in each of ``segments`` (indexes into
    SEGMENTS) and none outside them."""
    positions = [b for i in segments for b in range(64) if _segment_mask(i) >> b & 1]
    chosen = {rng.choice([b for b in positions if _segment_mask(i) >> b & 1]) for i in segments}
    chosen |= set(rng.sample(sorted(set(positions) - chosen), bits - len(chosen)))
    for bit in chosen:
        fp ^= 1 << bit
    return fp


def plant_sketched(groups: int, seed: int) -> dict[str, Document]:
    """Near fingerprints with sketches from very similar to not similar (k altered bins: 0..60, the floor
    at 25), documents sharing a fingerprint, documents without a sketch or with one of the other format, and
    groups of two pairs whose stars merge.
    Some members are 4-8 bits away: in 3 segments (they share a drawer, so a verified query reads them), or in
    4 (no drawer shared: nothing reads them)."""
    rng = random.Random(seed)
    out: dict[str, Document] = {}
    for g in range(groups):
        fp = rng.getrandbits(64)
        # A third of the groups carry v4's counted sketches (format 3, containment), the rest format 1.
        base = (
            bytes([3]) + (1000).to_bytes(4, "big") + rng.randbytes(512)
            if g % 3 == 0
            else bytes([1]) + rng.randbytes(256)
        )
        out[f"v{g}-base"] = Document(f"v{g}-base", fp, base)
        for m in range(rng.randint(1, 5)):
            far = rng.random()
            if far < 0.15:
                near = flip_in_segments(fp, rng, rng.randint(4, 8), rng.sample(range(len(SEGMENTS)), 3))
            elif far < 0.25:
                near = flip_in_segments(fp, rng, rng.randint(4, 8), rng.sample(range(len(SEGMENTS)), 4))
            else:
                near = flip(fp, rng, rng.randint(0, 3))  # 0: the same fingerprint
            kind = rng.random()
            if kind < 0.1:
                sketch = b""  # unverifiable
            elif kind < 0.2:
                sketch = bytes([2]) + rng.randbytes(512)  # format 2: comparable with neither
            else:
                sketch = near_sketch(base, rng.choice([0, 3, 12, 24, 25, 26, 40, 60]), rng)
            out[f"v{g}-{m}"] = Document(f"v{g}-{m}", near, sketch)
    for g in range(groups // 20):
        # Two pairs of copies at one fingerprint: each pair (similarity 1) makes a star before the links
        # across (0.95) come, and each centre is linked to both of the other star's documents, so they merge.
        fp, base = rng.getrandbits(64), bytes([1]) + rng.randbytes(256)
        edited = near_sketch(base, 12, rng)
        for name, sketch in (("a", base), ("b", base), ("c", edited), ("d", edited)):
            out[f"w{g}-{name}"] = Document(f"w{g}-{name}", fp, sketch)
    for i in range(groups * 2):
        out[f"lone-{i}"] = Document(f"lone-{i}", rng.getrandbits(64), bytes([1]) + rng.randbytes(256))
    return out


@pytest.mark.slow("two verified `clusters` runs (stars and components), each MapReduce jobs in a JVM of their own")
def test_verified_clusters_link_only_documents_whose_sketches_agree(make_index, hbase, tmp_path: Path) -> None:
    """Verified, the candidates are a verified query's (within 3, or within 8 sharing a drawer), and the
    clusters are stars around a centre by default, and connected components when asked: both runs (about
    15 s each) over one index, against brute force."""
    store: IndexStore = make_index(regions=4)
    documents = plant_sketched(300, seed=7)
    store.index_many(list(documents.values()))
    output = tmp_path / "verified"
    args = [CLI, "clusters", str(output), "--min-similarity", str(FLOOR), "--heap-mb", "1024", "--sort-mb", "64"]
    done = subprocess.run(args, env=job_env(store, hbase), capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]

    # Brute force over every pair of documents, with the service's own sketch comparison.
    docs = sorted(documents.values())
    want: dict[frozenset[str], tuple[int, float]] = {}
    unread = 0  # pairs that would verify, but no drawer reads them: not in want
    for i, a in enumerate(docs):
        for b in docs[i + 1 :]:
            d = (a.fingerprint ^ b.fingerprint).bit_count()
            if d <= 8 and a.sketch and comparable(a.sketch, b.sketch):
                s = similarity(a.sketch, b.sketch)
                if s < FLOOR:
                    continue
                if d <= 3 or shares_a_drawer(a.fingerprint, b.fingerprint):
                    want[frozenset((a.doc_id, b.doc_id))] = (d, s)
                else:
                    unread += 1
    got = {frozenset((a, b)): (int(d), float(s)) for a, b, d, s in read_parts(output / "pairs")}
    assert set(got) == set(want)
    assert all(got[k][0] == want[k][0] and abs(got[k][1] - want[k][1]) < 1e-4 for k in want)
    assert any(d == 0 for d, _ in want.values())  # documents of one fingerprint were verified too
    assert sum(d > 3 for d, _ in want.values()) > 10  # and pairs beyond 3 that share a drawer
    assert unread > 5  # and pairs that would verify beyond 3 without a shared drawer, left out as want leaves them
    counted = [k for k in want if any(documents[doc].sketch[:1] == b"\x03" for doc in k)]
    assert len(counted) > 20  # containment pairs were compared, and Java scored them as Python does
    assert len(want) > 100

    scored = [(a, b, s) for a, b, _, s in read_parts(output / "pairs")]
    stars = centre_clusters(scored)
    clusters = {doc: cluster for doc, cluster in read_parts(output / "clusters")}
    assert clusters == stars
    assert len(set(stars.values())) < len(set(centre_clusters(scored, merge=False).values()))  # stars merged
    assert all(clusters[f"w{g}-{name}"] == f"w{g}-a" for g in range(300 // 20) for name in "abcd")
    links = [tuple(("doc", doc) for doc in pair) for pair in want]
    expected = components(links, documents)  # type: ignore[arg-type]
    assert len(set(stars.values())) > len(set(expected.values()))  # some chains were cut into stars
    summary = json.loads((output / "summary.json").read_text())
    assert summary["clustering"] == "centres" and summary["centres"] == len(set(stars.values()))

    chained = tmp_path / "components"
    args = [CLI, "clusters", str(chained), "--min-similarity", str(FLOOR), "--clustering", "components"]
    args += ["--heap-mb", "1024", "--sort-mb", "64"]
    done = subprocess.run(args, env=job_env(store, hbase), capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    assert {doc: cluster for doc, cluster in read_parts(chained / "clusters")} == expected
    summary = json.loads((chained / "summary.json").read_text())
    assert summary["min_similarity"] == FLOOR
    assert summary["document_pairs_below_the_floor"] > 0
    assert summary["document_pairs_without_comparable_sketches"] > 0


@pytest.mark.slow("a whole `clusters` run, MapReduce jobs in a JVM of their own, however little it finds")
def test_an_index_without_near_duplicates_gives_empty_clusters(make_index, hbase, tmp_path: Path) -> None:
    store: IndexStore = make_index(regions=2)
    rng = random.Random(3)
    store.index_many([(f"r{i}", rng.getrandbits(64)) for i in range(500)])  # 500 random: no pair within 3
    output = tmp_path / "none"
    done = subprocess.run(
        [CLI, "clusters", str(output), "--heap-mb", "1024", "--sort-mb", "64"],
        env=job_env(store, hbase),
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((output / "summary.json").read_text())
    assert (summary["documents"], summary["pairs"], summary["clusters"]) == (500, 0, 0)
    assert list(read_parts(output / "clusters")) == [] and list(read_parts(output / "pairs")) == []
    assert not (output / "work").exists()  # removed once the output is complete


@pytest.mark.slow("two `clusters` runs, the first failing on a table taken offline and brought back")
def test_a_failed_run_continues_from_its_last_finished_step(make_index, hbase, tmp_path: Path) -> None:
    """fp2docs offline: the join step fails after the pairs step; the same command, once the table is back,
    continues with the join (the drawer table is not read again) and gives the whole answer."""
    store: IndexStore = make_index(regions=2)
    planted = plant(3_000, seed=11, hot=300)
    store.index_many(list(planted.documents.items()))
    output = tmp_path / "resumed"
    args = [CLI, "clusters", str(output), "--budget", str(BUDGET), "--heap-mb", "1024", "--sort-mb", "64"]
    args += ["-D", "hbase.client.retries.number=1"]
    fp2docs = store.tables.fp2docs.name

    def admin(call: str) -> None:  # a connection each: the gateway closes idle ones during the job
        conn = hbase.connection()
        try:
            getattr(conn, call)(fp2docs)
        finally:
            conn.close()

    admin("disable_table")
    try:
        failed = subprocess.run(args, env=job_env(store, hbase), capture_output=True, text=True, timeout=1800)
    finally:
        admin("enable_table")
    assert failed.returncode == 1 and "run again to continue" in failed.stderr, failed.stderr[-2000:]
    assert (output / "work" / "done-pairs").exists() and not (output / "work" / "done-join").exists()
    done = subprocess.run(args, env=job_env(store, hbase), capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "pairs: " not in done.stderr and "join: " in done.stderr  # the pairs step was not run again
    fps = np.unique(np.fromiter(planted.documents.values(), dtype=np.uint64))
    truth = brute_pairs(fps, 3)
    found = {(int(a, 16), int(b, 16)) for a, b, _ in read_parts(output / "pairs")}
    assert found == truth
    got = {unescape(doc): unescape(cluster) for doc, cluster in read_parts(output / "clusters")}
    assert got == expected_clusters(planted.documents, truth)
    summary = json.loads((output / "summary.json").read_text())
    assert summary["drawer_rows"] > 0 and summary["documents"] == len(planted.documents)  # both runs' counters


# -- --keep: which document names its cluster ----------------------------------------------------------------
def plant_kept(groups: int, seed: int) -> dict[str, Document]:
    """Groups of near documents (one fingerprint apart or sharing one), each with its own indexed_at, and
    the same counted sketch bins under different distinct-shingle counts (within 2x of each other, so any two
    of a group verify at 1.0), some with an uncounted format-1 sketch; the earliest and the longest are
    rarely the smallest id, and some ties fall to it."""
    rng = random.Random(seed)
    now = int(time.time() * 1000)
    out: dict[str, Document] = {}
    for g in range(groups):
        fp = rng.getrandbits(64)
        bins = rng.randbytes(512)
        stamp = now - rng.randrange(10**6)
        for _ in range(rng.randint(2, 5)):
            doc = f"k{g}-{rng.randrange(10**6):06d}"
            count = rng.choice([1000, 1400, 1900])  # ties: the smallest id wins
            sketch = bytes([3]) + count.to_bytes(4, "big") + bins
            if rng.random() < 0.15:
                sketch = bytes([1]) + rng.randbytes(256)  # no count: after every counted one
            at = stamp - rng.choice([0, 0, 1, 5000, 99_000])  # ties: the smallest id wins
            out[doc] = Document(doc, flip(fp, rng, rng.randint(0, 1)), sketch, at)
    for i in range(groups):
        out[f"lone-{i}"] = Document(f"lone-{i}", rng.getrandbits(64), bytes([1]) + rng.randbytes(256), now)
    return out


def kept_by(rule: str, members: list[Document]) -> str:
    def rank(doc: Document) -> tuple[int, bytes]:
        if rule == "earliest":
            first = doc.indexed_at_ms or 0
        else:
            counted = doc.sketch[:1] == b"\x03"
            first = -int.from_bytes(doc.sketch[1:5], "big") if counted else 2**63 - 1
        return first, doc.doc_id.encode()

    return min(members, key=rank).doc_id


@pytest.mark.slow("three `clusters` runs (one per --keep rule), each MapReduce jobs in a JVM of their own")
def test_clusters_keep_the_earliest_or_the_longest_document(make_index, hbase, tmp_path: Path) -> None:
    """--keep earliest (unverified: members by fingerprint) and --keep longest (unverified, and verified:
    members by document), the sketches fetched for the members only, against brute force over the same
    documents.  Each group's verified links form a clique, so its star around a centre is its component.
    Three runs, about 15 s each: each rule's ranks come from another place (the keys, or the sketches read for
    ranking alone, or those read to verify too)."""
    store: IndexStore = make_index(regions=2)
    documents = plant_kept(150, seed=5)
    store.index_many(list(documents.values()))
    docs = sorted(documents.values())
    for rule, extra in (("earliest", []), ("longest", []), ("longest", ["--min-similarity", "0.9"])):
        output = tmp_path / f"{rule}{len(extra)}"
        args = [CLI, "clusters", str(output), "--keep", rule, *extra, "--heap-mb", "1024", "--sort-mb", "64"]
        done = subprocess.run(args, env=job_env(store, hbase), capture_output=True, text=True, timeout=1800)
        assert done.returncode == 0, done.stderr[-3000:]
        links = []
        for i, a in enumerate(docs):
            for b in docs[i + 1 :]:
                near = (a.fingerprint ^ b.fingerprint).bit_count() <= 3
                if near and (not extra or (comparable(a.sketch, b.sketch) and similarity(a.sketch, b.sketch) >= 0.9)):
                    links.append((("doc", a.doc_id), ("doc", b.doc_id)))
        groups: dict[str, list[Document]] = {}
        for doc, root in components(links, documents).items():
            groups.setdefault(root, []).append(documents[doc])
        expected = {d.doc_id: kept_by(rule, members) for members in groups.values() for d in members}
        got = {doc: cluster for doc, cluster in read_parts(output / "clusters")}
        assert got == expected
        assert sum(1 for members in groups.values() if kept_by(rule, members) != min(d.doc_id for d in members)) > 20
        sizes = {cluster: int(n) for cluster, n in read_parts(output / "sizes")}
        assert sizes == {kept: list(expected.values()).count(kept) for kept in set(expected.values())}
        assert json.loads((output / "summary.json").read_text())["keep"] == rule


# -- v5, v6: the parts a document's sketch carries meet the drawer rows -----------------------------------------
def _line(rng: random.Random, base: int) -> str:
    return "".join(chr(base + rng.randrange(3000)) for _ in range(rng.randint(18, 30))) + "。"


def plant_parts(groups: int, seed: int) -> dict[str, Document]:
    """Per group a page of 40 sentence lines, the same page inside another site's 6-line header and footer,
    and its first 24 lines (a truncated copy); and pages alone.  Their fingerprints mostly lie further apart
    than the drawers reach, their sketches agree, and a part of the larger is near the smaller's."""
    rng = random.Random(seed)
    texts: dict[str, str] = {}
    for g in range(groups):
        lines = [_line(rng, 0x4E00) for _ in range(40)]
        header, footer = ([_line(rng, 0x5E00) for _ in range(6)] for _ in range(2))
        texts[f"p{g}-page"] = "\n".join(lines)
        texts[f"p{g}-templated"] = "\n".join(header + lines + footer)
        texts[f"p{g}-truncated"] = "\n".join(lines[:24])
        texts[f"p{g}-other"] = "\n".join(_line(rng, 0x4E00) for _ in range(30))
    return {
        doc: Document(doc, (made := fingerprint(text, V7, sketch=True)).value, made.sketch)
        for doc, text in texts.items()
    }


def plant_hot_parts(members: int, owners: int, seed: int) -> dict[str, Document]:
    """A hot prefix group for the parts step: ``members`` fingerprints sharing drawer 0's two segments, and
    ``owners`` documents elsewhere, each storing one part 1-8 bits from a member with those segments kept.
    Every sketch has one text's bins, so each pair the rule reaches is a verified pair."""
    rng = random.Random(seed)
    alone = fingerprint("一段只在这里出现的文字，用来做所有文档共同的草图。", V7, sketch=True).sketch
    form = format_of(alone)
    assert form is not None and stored_parts(alone) == ()  # one line: no parts
    bins, words = alone[: form.size], alone[parts_end(alone, form) :]  # its renames follow its parts
    assert words == b"\x00"  # and it repeats no word
    kept = _segment_mask(0) | _segment_mask(1)
    free = [bit for bit in range(64) if not kept >> bit & 1]
    shared = rng.getrandbits(64) & kept
    fps = [shared | (rng.getrandbits(64) & ~kept) for _ in range(members)]
    documents = {f"hot{i}": Document(f"hot{i}", fp, bins + parts_trailer(()) + words) for i, fp in enumerate(fps)}
    for k in range(owners):
        part = rng.choice(fps)
        for bit in rng.sample(free, rng.randint(1, 8)):
            part ^= 1 << bit
        documents[f"owner{k}"] = Document(f"owner{k}", rng.getrandbits(64), bins + parts_trailer((part,)) + words)
    return documents


@pytest.mark.slow("a verified `clusters` run with the parts step's two MapReduce jobs")
def test_a_v7_index_clusters_copies_that_only_a_stored_part_reaches(make_index, hbase, tmp_path: Path) -> None:
    """On a v7 index, as on a v5 or v6 one (sketches with their text's parts), verified clusters also pair a
    document with another one whose fingerprint a part of it reaches, as a verified query of it would; brute
    force over the same rule agrees pair by pair, in a hot prefix group cut into tiles too.  The index's own
    part rows (v7: index/keys.py) are skipped, every one of them.  One run, about 20 s: the two jobs of the
    parts step are the difference."""
    store: IndexStore = make_index(regions=2)
    assert store.recipe.version == V7  # a new index's
    documents = plant_parts(40, seed=11) | plant_hot_parts(120, 60, seed=12)
    store.index_many(list(documents.values()))
    output = tmp_path / "parts"
    # A budget of 1,000 comparisons makes the 120 fingerprints of one prefix a hot group, in 4 x 4 tiles.
    args = [CLI, "clusters", str(output), "--min-similarity", "0.75", "--clustering", "components",
            "--budget", "1000", "--heap-mb", "1024", "--sort-mb", "64"]  # fmt: skip
    done = subprocess.run(args, env=job_env(store, hbase), capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]

    def reaches(x: int, y: int) -> bool:
        return (x ^ y).bit_count() <= 3 or ((x ^ y).bit_count() <= 8 and shares_a_drawer(x, y))

    docs = sorted(documents.values())
    want: dict[frozenset[str], tuple[int, float]] = {}
    through_parts = 0
    for i, a in enumerate(docs):
        for b in docs[i + 1 :]:
            s = similarity(a.sketch, b.sketch)
            if s < 0.75:
                continue
            whole = reaches(a.fingerprint, b.fingerprint)
            parts = any(reaches(p, b.fingerprint) for p in stored_parts(a.sketch)) or any(
                reaches(p, a.fingerprint) for p in stored_parts(b.sketch)
            )
            if whole or parts:
                want[frozenset((a.doc_id, b.doc_id))] = ((a.fingerprint ^ b.fingerprint).bit_count(), s)
                through_parts += not whole
    got = {frozenset((a, b)): (int(d), float(s)) for a, b, d, s in read_parts(output / "pairs")}
    assert set(got) == set(want)
    assert all(got[k][0] == want[k][0] and abs(got[k][1] - want[k][1]) < 1e-4 for k in want)
    assert through_parts > 20  # the parts step is what found these
    assert not any(k & {f"p{g}-other"} for k in want for g in range(40))  # a page alone stays alone
    summary = json.loads((output / "summary.json").read_text())
    assert summary["pairs_through_parts"] >= through_parts and summary["document_parts"] > 0
    assert summary["hot_groups"] >= 1 and summary["part_tiles"] >= 16
    firsts = {(stored_parts(d.sketch)[0], d.fingerprint) for d in documents.values() if stored_parts(d.sketch)}
    assert len(firsts) > 100 and summary["part_rows_skipped"] == 10 * len(firsts)
    assert summary["drawer_rows"] == 10 * len({d.fingerprint for d in documents.values()})
    owners = {k for k in want if any(doc.startswith("owner") for doc in k)}
    assert len(owners) >= 60  # each owner's part reached its member in a tile
    links = [tuple(("doc", doc) for doc in pair) for pair in want]
    assert {doc: c for doc, c in read_parts(output / "clusters")} == components(links, documents)  # type: ignore[arg-type]
