"""hfile-load of texts that live on the cluster's HDFS, fingerprinted and sketched in YARN's map tasks
(`--runner yarn hdfs://...`): the tasks run the project's Python from a PEX in the distributed cache, so
this machine reads no record.  Chinese and English pages with planted near-duplicates (re-templated, edited)
and bad lines; the NodeManager running the load's driver (its YARN application, `--driver cluster`) and a
parse task is killed mid-job: YARN starts the driver again on the other node, which kills the jobs the first
attempt submitted and runs them again.

- Every stored fingerprint and sketch is what `simhash-index fingerprint --sketch` makes of its text here:
  the tables equal, cell for cell, a bulk-load of that output through Thrift.
- The rejects are on HDFS, each with its input, line and reason.
- The same HDFS input through the local runner, into the launcher's HBase on this machine, gives the same
  tables' digests.
- A server replica's verified Query finds the planted copies VERIFIED, with exactly the hits a brute force
  over the local fingerprints and sketches gives.
- `clusters --runner yarn --min-similarity 0.75 --read snapshot`, interrupted (SIGINT) while a phase after
  pairs runs on YARN (its application ends killed) and run again (it resumes from the finished phases),
  finds exactly the verified pairs of a brute force over the same fingerprints and sketches (with the parts
  a v5 sketch carries, which the parts step meets with the drawer rows), and groups them into exactly the
  stars around a centre: the tasks read the tables' snapshots, restored on HDFS beside the cluster's
  hbase.rootdir (from the copied hbase-site.xml), and the sketches in fp2docs with them; the snapshots are
  deleted afterwards.  Records of a fingerprint and sketch planted in one prefix group make it hot, so the
  pairs step compares it in tiles.
- A later load trusts the nodes the first one checked: when their Python has gone, its parse tasks fail
  naming the node, and the next load checks them again.  These later loads, and the first one the check
  refuses, are driven from a JVM here (`--driver client`); the killed load's driver is a YARN application."""

from __future__ import annotations

import base64
import gzip
import json
import random
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from truth import brute_pairs, centre_clusters, components, digest, read_parts, shares_a_drawer
from yarn_client import CLI, STAGING, YarnClient, cells, replica, task_running, until

from simhash_client import SimHashClient
from simhash_server.fingerprint.sketch import similarity
from simhash_server.fingerprint.sketch_format import comparable, stored_parts
from simhash_server.index.keys import drawer_prefixes
from simhash_server.index.model import VERIFY_MAX_DISTANCE

pytestmark = pytest.mark.slow("loads and clusters run as YARN applications, one with a NodeManager killed")

ROOT = Path(__file__).resolve().parents[2]
FLOOR = 0.75  # v4's own
MARKS = "/tmp/hadoop-yarn/staging/hbase/simhash-index-shared/checked-nodes"  # beside the user's staging area
BASES = 2000  # pages of each language
COPIES = 500  # planted near-duplicates of each language
HOT = 60  # records of a fingerprint and sketch, all in one prefix group of drawer 0: over BUDGET's tile
BUDGET = 1_000  # comparisons per clusters task, the least it takes: a group of more than 45 is cut into tiles
TEMPLATES = (
    (
        "首页 | 新闻 | 科技 | 联系我们\n本站文章均来自网络，仅供学习交流。\n",
        "\n版权所有 © 2026 某某科技网 京ICP备000000号",
    ),
    (
        "Home | News | Tech | Contact\nShared from around the web.\n",
        "\nCopyright 2026 Example Media. All rights reserved.",
    ),
)


def _sentences() -> dict[str, list[str]]:
    excerpts = json.loads((ROOT / "tests" / "golden" / "zh_excerpts.json").read_text(encoding="utf-8"))
    zh = [s.strip() + "。" for text in excerpts.values() for s in text.replace("\n", "。").split("。") if len(s) > 12]
    words = (ROOT / "README.md").read_text(encoding="utf-8").split()
    rng = random.Random(3)
    en = [" ".join(rng.choice(words) for _ in range(rng.randint(10, 18))) + "." for _ in range(3000)]
    return {"zh": zh, "en": en}


def corpus(seed: int) -> tuple[dict[str, str], dict[str, str]]:
    """(doc id -> text, copy id -> the id of the page it copies): pages of 12-20 sentences, and copies of
    some inside a site's template or with a few characters changed."""
    rng = random.Random(seed)
    pools = _sentences()
    texts: dict[str, str] = {}
    planted: dict[str, str] = {}
    for lang, pool in pools.items():
        joiner = "" if lang == "zh" else " "
        bases = [f"{lang}-{n}" for n in range(BASES)]
        for doc in bases:
            texts[doc] = joiner.join(rng.choice(pool) for _ in range(rng.randint(12, 20)))
        for n in range(COPIES):
            base = rng.choice(bases)
            text = texts[base]
            if n % 2:
                head, foot = TEMPLATES[0 if lang == "zh" else 1]
                copy = head + text + foot
            else:
                chars = list(text)
                for i in rng.sample(range(len(chars)), 3):
                    chars[i] = rng.choice("的一是在不了有和人这中大为上个国我以要他" if lang == "zh" else "etaoinshr")
                copy = "".join(chars)
            texts[f"{lang}-copy-{n}"] = copy
            planted[f"{lang}-copy-{n}"] = base
    return texts, planted


BAD_LINES = [
    ('{"doc_id": "broken", "text": "no end', "not JSON"),
    ('{"doc_id": "no-text"}', 'give exactly one of "simhash" and "text"'),
    (json.dumps({"doc_id": "x" * 5000, "text": "long id"}), "doc_id is 5000 bytes"),
    (json.dumps({"doc_id": "dated", "text": "a date", "indexed_at": "yesterday"}), "is not RFC 3339"),
    (json.dumps({"doc_id": "sk", "simhash": "00000000000000ff", "sketch": "AwAAAA=="}), "sketch is 4 bytes"),
]


class _Laps:
    """Each phase's seconds into var/cluster-results.json (the seconds since the last lap): where this long
    test's time goes, run by run."""

    def __init__(self, cluster) -> None:
        self.cluster, self.last = cluster, time.monotonic()

    def __call__(self, phase: str) -> None:
        now = time.monotonic()
        self.cluster.record(f"texts test: {phase}, seconds", now - self.last)
        self.last = now


def test_texts_on_hdfs_are_fingerprinted_in_yarn_tasks_as_here_with_a_nodemanager_killed(
    cluster, yarn: YarnClient, hbase, tmp_path: Path
) -> None:
    texts, planted = corpus(seed=71)
    lap = _Laps(cluster)
    # Here: the same texts through `fingerprint --sketch`, then bulk-load through Thrift.
    local = tmp_path / "texts.jsonl"
    local.write_text("".join(json.dumps({"id": d, "text": t}, ensure_ascii=False) + "\n" for d, t in texts.items()))
    made = tmp_path / "fingerprints.jsonl"
    with open(local) as source, open(made, "w") as sink:
        subprocess.run([CLI, "fingerprint", "--sketch", "--workers", "2"], stdin=source, stdout=sink, check=True)
    records = {r["id"]: r for r in map(json.loads, made.read_text().splitlines())}
    hot = _hot_records(records["zh-0"])
    with open(made, "a") as sink:
        sink.writelines(json.dumps(record) + "\n" for record in hot)
    records |= {r["id"]: r for r in hot}
    lap("fingerprint --sketch here")

    lines = [json.dumps({"doc_id": doc, "text": text}, ensure_ascii=False) for doc, text in texts.items()]
    lines += [json.dumps(record) for record in hot]
    random.Random(72).shuffle(lines)
    for n, (bad, _) in enumerate(BAD_LINES):
        lines.insert(1 + n * len(lines) // len(BAD_LINES), bad)
    quarter = -(-len(lines) // 4)
    folder = "/simhash-tests/texts"
    parts = []
    for n in range(4):  # two plain, two gzip: each file one map task
        name = f"{folder}/part-{n}.jsonl" + (".gz" if n % 2 else "")
        data = "".join(line + "\n" for line in lines[n * quarter : (n + 1) * quarter]).encode()
        cluster.hdfs_put(name, gzip.compress(data) if n % 2 else data)
        parts.append(name)
    yarn.schema("textsthrift")
    yarn.schema("textsyarn", "--regions", "2")
    by_thrift = subprocess.run(
        [CLI, "bulk-load", str(made), "--rejects", str(tmp_path / "a.rejects"), "--quiet"],
        env=yarn.env("textsthrift"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert by_thrift.returncode == 0, by_thrift.stderr
    lap("HDFS put, schemas, bulk-load through Thrift")

    uri = f"hdfs://namenode:8020{folder}/"
    # Before the parse job, a task on each NodeManager starts the tasks' Python: one they lack stops the load.
    # Driven from a JVM here (--driver client), as the later loads are: the main load's driver is YARN's.
    lacking = yarn.command("hfile-load", uri, "--staging", str(tmp_path / "lacking"), "--staging-uri",
                           f"{STAGING}/lacking", "--task-python", "python3.99", "--driver", "client",
                           "--quiet")  # fmt: skip
    refused = subprocess.run(lacking, env=yarn.env("textsyarn"), capture_output=True, text=True, timeout=600)
    assert refused.returncode == 1, refused.stderr[-3000:]
    assert "cannot start python3.99, the Python the tasks' PEX needs" in refused.stderr, refused.stderr[-3000:]
    assert "NodeManager nodemanager" in refused.stderr, refused.stderr[-3000:]
    assert [a["name"] for a in yarn.applications() if "parse" in str(a["name"])] == []  # none was submitted
    lap("a load refused by the NodeManagers' check")

    command = yarn.command(
        "hfile-load",
        uri,
        "--staging",
        str(tmp_path / "staging"),
        "--staging-uri",
        f"{STAGING}/texts-staging",
        "--quiet",
    )
    load = subprocess.Popen(
        command, env=yarn.env("textsyarn"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        # Killed while a parse task's Python reads a file there (after the NodeManagers' check), the node that
        # runs the driver too.
        until(lambda: _driver_node(yarn) is not None or load.poll() is not None, "the driver's application")
        victim = _driver_node(yarn)
        assert victim in ("nodemanager1", "nodemanager2"), victim
        parsing = f"{uri}part-"  # the file's name is the Python's argument (the PEX's venv re-executes it)
        until(lambda: task_running(cluster, victim, parsing) or load.poll() is not None, "a parse task")
        assert load.poll() is None, f"the load ended before any parse task ran on {victim}"
        cluster.docker("kill", cluster.container(victim))
        killed = time.monotonic()
        stdout, stderr = load.communicate(timeout=1200)
    finally:
        if load.poll() is None:
            load.kill()
    cluster.record("hfile-load of texts on YARN, seconds after a NodeManager was killed", time.monotonic() - killed)
    assert load.returncode == 3, stderr[-3000:]
    assert "they need python3.11 on the PATH of every NodeManager" in stderr
    documents = len(records)
    assert f"lines read {documents + len(BAD_LINES):,}; records {documents:,}" in stdout, stdout
    assert f"rejected {len(BAD_LINES)}" in stdout and f"see {uri.rstrip('/')}.rejects" in stderr
    # The driver's second attempt found one node running, remembered by the first attempt's check.
    assert "NodeManagers checked 1 (1 remembered from an earlier load)" in stdout, stdout
    # The load step holds each table's hand-over, though the driver's lines arrive a poll at a time.
    step = re.search(r"; generate [\d.]+ s, load ([\d.]+) s", stdout)
    handed = [float(s) for s in re.findall(r"load (?:drawers|docs|fp2docs) ([\d.]+) s", stdout)]
    assert step and len(handed) == 3 and float(step.group(1)) >= max(handed) - 0.1, stdout
    assert "not checked" not in stderr
    drivers = [a for a in yarn.applications() if str(a["name"]).startswith("simhash-index hfile-load: driver")]
    last = max(drivers, key=lambda a: str(a["id"]))
    assert (last["state"], last["finalStatus"]) == ("FINISHED", "SUCCEEDED"), last
    assert len(_attempts(yarn, str(last["id"]))) == 2  # the first attempt's node was lost
    lap("hfile-load on YARN, a NodeManager killed")

    # Each reject on HDFS, with its input, line and reason.
    rejects = sorted(
        line.split("\t", 3)
        for name in yarn.hdfs_list(f"{folder}.rejects")
        for line in cluster.hdfs_read(f"{folder}.rejects/{name}").decode().splitlines()
    )
    assert len(rejects) == len(BAD_LINES)
    for bad, reason in BAD_LINES:
        (where,) = [r for r in rejects if r[3] == bad]
        part = next(p for p in parts if where[0].endswith(p))
        data = cluster.hdfs_read(part)
        kept = (gzip.decompress(data) if part.endswith(".gz") else data).decode().splitlines()
        assert kept[int(where[1]) - 1] == bad and reason in where[2]

    expected, got = cells(cluster, "textsthrift"), cells(cluster, "textsyarn")
    differ = {t: len(set(got[t]) ^ set(expected[t])) for t in expected if digest(got[t]) != digest(expected[t])}
    assert differ == {}, f"cells differing per table: {differ}"
    assert len(expected["docs"]) == documents
    lap("rejects and tables compared")

    cluster.docker("start", cluster.container(victim))
    by_local = _local_runner_cells(hbase, yarn, uri, tmp_path)
    assert {t: digest(c) for t, c in by_local.items()} == {t: digest(c) for t, c in got.items()}
    lap("hfile-load by the local runner")
    fps = {doc: int(r["simhash"], 16) for doc, r in records.items()}
    sketches = {doc: base64.b64decode(r["sketch"]) for doc, r in records.items()}
    _verified_queries_answer_as_brute_force(yarn, texts, planted, fps, sketches)
    lap("verified queries")
    cluster.healthy(victim)
    yarn.refresh()
    _verified_clusters_resume_and_equal_brute_force(yarn, fps, sketches, tmp_path)
    lap("clusters on YARN, interrupted and resumed")
    _a_later_load_asks_no_remembered_node(cluster, yarn, texts, tmp_path)
    lap("two later loads")


def _hot_records(base: dict[str, object]) -> list[dict[str, object]]:
    """HOT records of ``base``'s fingerprint with 1-6 of its low 38 bits flipped, and its sketch: one prefix
    group of drawer 0 (its first two segments kept), too big for one clusters task at BUDGET, whose members
    within the verified reach of each other are verified pairs."""
    rng = random.Random(73)
    fp = int(str(base["simhash"]), 16)
    records = []
    for n in range(HOT):
        near = fp
        for bit in rng.sample(range(38), rng.randint(1, 6)):
            near ^= 1 << bit
        records.append({**base, "id": f"hot-{n}", "simhash": f"{near:016x}"})
    return records


def _attempts(yarn: YarnClient, app: str) -> list[dict[str, object]]:
    """An application's attempts (the ResourceManager's REST API)."""
    url = f"http://{yarn.resourcemanager}:8088/ws/v1/cluster/apps/{app}/appattempts"
    with urllib.request.urlopen(url, timeout=10) as reply:
        return list((json.load(reply).get("appAttempts") or {}).get("appAttempt") or [])


def _driver_node(yarn: YarnClient) -> str | None:
    """The NodeManager whose container runs the running load's driver, once YARN has started it."""
    for app in yarn.applications():
        if str(app["name"]).startswith("simhash-index hfile-load: driver") and app["state"] == "RUNNING":
            host = str(app.get("amHostHttpAddress") or "")
            if host:
                return host.split(":")[0]
    return None


def _a_later_load_asks_no_remembered_node(cluster, yarn: YarnClient, texts: dict[str, str], tmp_path: Path) -> None:
    """Both nodes passed the check in the first load: a later load with the same PEX and Python submits no
    check job, and its tasks make the probe themselves.  So when the nodes' Python has gone since, its parse
    tasks fail naming the node, store nothing, and each node that ran one loses its mark; the next load checks
    it again, and stores what `fingerprint` made here."""
    sample = sorted(texts)[:: len(texts) // 40]
    name = "/simhash-tests/texts-again/part-0.jsonl"
    lines = [json.dumps({"doc_id": doc, "text": texts[doc]}, ensure_ascii=False) for doc in sample]
    cluster.hdfs_put(name, "".join(line + "\n" for line in lines).encode())
    checks = len([a for a in yarn.applications() if "check the NodeManagers" in str(a["name"])])
    assert checks >= 1  # the first load's
    (key,) = [k for k in yarn.hdfs_list(MARKS) if yarn.hdfs_list(f"{MARKS}/{k}")]  # python3's (python3.99 has none)
    assert yarn.hdfs_list(f"{MARKS}/{key}") == ["nodemanager1", "nodemanager2"]

    nodes = [cluster.container(n) for n in ("nodemanager1", "nodemanager2")]
    for node in nodes:
        cluster.docker("exec", "-u", "root", node, "mv", "/usr/bin/python3", "/usr/bin/python3.away")
    try:
        yarn.schema("textsgone")
        command = yarn.command("hfile-load", f"hdfs://namenode:8020{name}", "--staging", str(tmp_path / "gone"),
                               "--staging-uri", f"{STAGING}/gone-staging", "--driver", "client",
                               "--quiet")  # fmt: skip
        gone = subprocess.run(command, env=yarn.env("textsgone"), capture_output=True, text=True, timeout=900)
    finally:
        for node in nodes:
            cluster.docker("exec", "-u", "root", node, "mv", "/usr/bin/python3.away", "/usr/bin/python3")
    assert gone.returncode == 1, gone.stderr[-3000:]
    # The parse tasks' own probe failed (a check job's failure names "the Python the tasks' PEX needs").
    assert "cannot start python3 on NodeManager nodemanager" in gone.stderr, gone.stderr[-3000:]
    assert len([a for a in yarn.applications() if "check the NodeManagers" in str(a["name"])]) == checks
    assert cells(cluster, "textsgone") == {"drawers": [], "fp2docs": [], "docs": []}
    left = yarn.hdfs_list(f"{MARKS}/{key}")
    assert len(left) < 2 and all(f"NodeManager {n}" not in gone.stderr for n in left)

    again = subprocess.run(command, env=yarn.env("textsgone"), capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "NodeManagers checked 2" in again.stdout, again.stdout
    assert (f"({len(left)} remembered from an earlier load)" in again.stdout) == bool(left), again.stdout
    assert yarn.hdfs_list(f"{MARKS}/{key}") == ["nodemanager1", "nodemanager2"]
    stored = cells(cluster, "textsgone")["docs"]  # each document's fingerprint and sketch
    rows = {row for row, _, _ in stored}
    assert len(rows) == len(sample)
    assert stored == [cell for cell in cells(cluster, "textsthrift")["docs"] if cell[0] in rows]


def _local_runner_cells(hbase, yarn: YarnClient, uri: str, tmp_path: Path) -> dict[str, list]:
    """The same HDFS files loaded by the local runner (its tasks' Python is this machine's) into the
    launcher's HBase here; that index's cells."""
    if hbase.local is None:
        raise AssertionError("the local runner's check needs the launcher's HBase: unset SIMHASH_TEST_HBASE")
    env = yarn.env("textslocal") | {
        "SIMHASH_HBASE_THRIFT_PORT": str(hbase.thrift_port),
        "SIMHASH_HBASE_THRIFT2_PORT": str(hbase.thrift2_port),
        "SIMHASH_ZOOKEEPER": f"127.0.0.1:{hbase.local.ports.zookeeper}",
    }
    schema = subprocess.run([CLI, "schema", "apply", "--regions", "2"], env=env, capture_output=True, text=True)
    assert schema.returncode == 0, schema.stderr
    rejects = tmp_path / "local.rejects"
    command = [CLI, "hfile-load", uri, "--staging", str(tmp_path / "local-staging"), "--rejects", f"file://{rejects}"]
    done = subprocess.run([*command, "--quiet"], env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 3, done.stderr[-3000:]
    assert sum(len(p.read_text().splitlines()) for p in rejects.glob("part-*")) == len(BAD_LINES)
    return cells(None, "textslocal", hbase.thrift_port)


def _brute_links(fps: dict[str, int], sketches: dict[str, bytes]) -> dict[frozenset[str], float]:
    by_fp: dict[int, list[str]] = {}
    for doc, fp in fps.items():
        by_fp.setdefault(fp, []).append(doc)
    unique = np.fromiter(by_fp, dtype=np.uint64, count=len(by_fp))
    # A verified query's reach, which verified clusters share: within 8 bits through a shared drawer; on a v5
    # index also from the parts a document's sketch carries to another fingerprint (PartsJob).
    reached = {(a, b) for a, b in brute_pairs(unique, VERIFY_MAX_DISTANCE) if shares_a_drawer(a, b)}
    for doc, fp in fps.items():
        for part in stored_parts(sketches[doc]):
            near = unique[np.bitwise_count(unique ^ np.uint64(part)) <= VERIFY_MAX_DISTANCE]
            reached |= {(fp, int(b)) for b in near if int(b) != fp and shares_a_drawer(part, int(b))}
    pairs = reached | {(fp, fp) for fp, docs in by_fp.items() if len(docs) > 1}
    links: dict[frozenset[str], float] = {}
    for a, b in pairs:
        for x in by_fp[a]:
            for y in by_fp[b]:
                if x != y and comparable(sketches[x], sketches[y]):
                    score = similarity(sketches[x], sketches[y])
                    if score >= FLOOR:
                        links[frozenset((x, y))] = score
    return links


def _verified_queries_answer_as_brute_force(
    yarn: YarnClient, texts: dict[str, str], planted: dict[str, str], fps: dict[str, int], sketches: dict[str, bytes]
) -> None:
    with replica(yarn, "textsyarn") as address:
        sample = random.Random(9).sample(sorted(planted), 60)
        prefixes = {doc: drawer_prefixes(fp) for doc, fp in fps.items()}
        found = 0
        with SimHashClient(address, retries=0) as client:
            client.wait_until_serving(timeout=120)
            for copy in sample:
                hits = client.query(text=texts[copy], min_similarity=FLOOR, limit=100)
                # A verified query's reach: within 8 bits through a shared drawer (VERIFY_MAX_DISTANCE).
                mine = set(prefixes[copy])
                want = {
                    doc
                    for doc in fps
                    if (fps[doc] ^ fps[copy]).bit_count() <= VERIFY_MAX_DISTANCE
                    and mine.intersection(prefixes[doc])
                    and similarity(sketches[copy], sketches[doc]) >= FLOOR
                }
                assert {h.doc_id for h in hits} == want and all(h.verified for h in hits), copy
                found += planted[copy] in want
        assert found >= 0.9 * len(sample)  # the planted copies are found, verified


def _interruptible() -> None:
    """SIGINT as a terminal delivers it: a test run in the background (nohup, `make ... &`) inherits SIGINT
    ignored, and Python then installs no KeyboardInterrupt handler, so the Ctrl-C below would be lost."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _verified_clusters_resume_and_equal_brute_force(
    yarn: YarnClient, fps: dict[str, int], sketches: dict[str, bytes], tmp_path: Path
) -> None:
    """Interrupted (SIGINT) while a phase after pairs runs on YARN, whose application must end killed; run
    again, it resumes from the finished phases, and its pairs and stars are exactly brute force's."""
    output = tmp_path / "clusters"
    command = yarn.command(
        "clusters",
        str(output),
        "--min-similarity",
        str(FLOOR),
        "--read",
        "snapshot",
        "--budget",
        str(BUDGET),
        "--staging-uri",
        f"{STAGING}/texts-clusters",
        "--fetch-output",
    )
    since = time.time() * 1000 - 60_000  # the ResourceManager's clock is this machine's

    def ours() -> list[tuple[str, str, str]]:
        """(phase, state, final status) of each clusters application since: a MapReduce job killed through its
        application master ends FINISHED, with the final status KILLED."""
        apps = [
            app
            for app in yarn.applications()
            if str(app["name"]).startswith("simhash-index clusters: ") and int(app["startedTime"]) >= since
        ]
        return [
            (str(app["name"]).split(": ", 1)[1].split(" (")[0], str(app["state"]), str(app["finalStatus"]))
            for app in apps
        ]

    first = subprocess.Popen(
        command,
        env=yarn.env("textsyarn"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_interruptible,
    )
    interrupted: set[str] = set()

    def running_after_pairs() -> bool:
        interrupted.update(phase for phase, state, _ in ours() if phase != "pairs" and state == "RUNNING")
        return bool(interrupted) or first.poll() is not None

    try:
        until(running_after_pairs, "a clusters phase after pairs running on YARN", seconds=600)
        assert first.poll() is None, first.communicate()[1][-3000:]
        first.send_signal(signal.SIGINT)  # as Ctrl-C
        first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode != 0
    finished = list(json.loads((output / "work" / "finished.json").read_text())["phases"])
    assert "pairs" in finished and not interrupted & set(finished), (finished, interrupted)
    # The submitter has exited: the application it was running ends (its master unregisters a moment after the
    # kill), killed; had the kill not reached it, it would have ended SUCCEEDED.
    until(lambda: all(state in ("FINISHED", "KILLED", "FAILED") for _, state, _ in ours()), "every application ended")
    states = ours()
    assert [final for phase, _, final in states if phase in interrupted] == ["KILLED"], states

    done = subprocess.run(command, env=yarn.env("textsyarn"), capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    runs = [phase for phase, _, _ in ours()]
    assert runs.count("pairs") == 1 and all(runs.count(p) <= 1 for p in finished), runs  # resumed, not redone
    links = _brute_links(fps, sketches)
    got = {frozenset((a, b)) for a, b, _, _ in read_parts(output / "pairs")}
    assert got == set(links)
    # Stars around a centre (the verified default), over the job's own pairs and their printed similarities.
    stars = centre_clusters((a, b, s) for a, b, _, s in read_parts(output / "pairs"))
    assert {doc: c for doc, c in read_parts(output / "clusters")} == stars
    chained = components([tuple(("doc", d) for d in pair) for pair in links], fps)  # type: ignore[arg-type]
    assert set(stars) <= set(chained)  # a star is within a component
    assert len(links) > 300
    summary = json.loads((output / "summary.json").read_text())
    assert summary["read"] == "snapshot" and summary["documents"] == len(fps)
    assert summary["tiles"] > 1  # the hot records' group, compared in tiles by the pairs step's second job
    # The parts step ran on YARN (its two jobs), equal to the brute force with parts above.  These pages' parts
    # fingerprint as the pages do (a template's menu lines weigh little), so none is stored and none pairs.
    assert {"part rows", "parts"} <= set(summary["seconds"])
    assert not [name for name in yarn.hdfs_list("/hbase/.hbase-snapshot") if "-clusters-" in name]  # deleted
    assert yarn.hdfs_list("/simhash-restore") == []  # the restored snapshots too
