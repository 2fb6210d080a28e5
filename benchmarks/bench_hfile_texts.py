"""hfile-load of texts that live on a cluster filesystem, fingerprinted and sketched in the job's map tasks:
the local runner (file:// inputs, Hadoop's LocalJobRunner beside a standalone HBase) and YARN (hdfs://
inputs, the container cluster of deploy/cluster.yaml, three times: the cluster's first load, then a later one,
both driven from a YARN application of their own (`--driver cluster`), then one driven from a JVM on this
machine, `--driver client`) side by side in one run, each loading the same N pages into a fresh index.
Beside them, `simhash-index fingerprint --workers 1 --sketch` on the same texts: the fingerprinting's own
cost, against which the tasks' CPU per document is set.

Pages: the evaluation corpus's Chinese and English pages (benchmarks/corpus.py, chunked to about 4,000
characters), repeated with four characters changed where the corpus is smaller than N, in 8 JSON-lines
files.  Per runner: documents/s end to end, and CPU seconds by place: the submitting machine (the command
and, on YARN, its submitting JVM), the tasks (on YARN every container, the driver's among them), the region
servers.

    make bench-hfile BENCH_ARGS='--texts'          # 2x10^5 pages
    .venv/bin/python benchmarks/bench_hfile_texts.py --n 2e4 --runners local
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import time
from pathlib import Path
from typing import Any

from _common import CLI, children, cluster_client, cpu_seconds, own_cpu, reaped_cpu, tree_cpu
from corpus import CHUNK_CHARS, edit_chars, load_corpus

from simhash_deploy import LocalHBase, Ports
from simhash_deploy.stack import Stack
from simhash_schema import apply_schema, connect, index_tables

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "var" / "bench-hfile-texts"
FILES = 8
# The HDFS and YARN daemons the job also works (on a real cluster a DataNode sits beside each NodeManager).
DAEMONS = ("namenode", "datanode", "resourcemanager")
IDLE_S = 30.0
YARN_LOADS = ("yarn", "yarn, again", "yarn, client driver")


def write_pages(n: int) -> Path:
    folder, done = WORK / f"pages-{n}", WORK / f"pages-{n}.done"  # the marker outside: the input is every file
    if done.exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    docs = load_corpus()
    rng = random.Random(n)
    sinks = [open(folder / f"part-{k}.jsonl", "w", encoding="utf-8") for k in range(FILES)]  # noqa: SIM115
    try:
        for i in range(n):
            doc = docs[i % len(docs)]
            text = doc.text if i < len(docs) else edit_chars(doc, rng)
            sinks[i * FILES // n].write(json.dumps({"id": f"p{i}", "text": text}, ensure_ascii=False) + "\n")
    finally:
        for sink in sinks:
            sink.close()
    done.touch()
    return folder


def fingerprint_alone(folder: Path, n: int, at_once: int = 1) -> dict[str, float]:
    """`fingerprint --workers 1` over every file: one process at a time, or ``at_once`` side by side (as the
    job's tasks run, one per core: two busy cores may each do less per CPU second than one alone)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.monotonic()
    parts = sorted(folder.glob("part-*.jsonl"))
    for start in range(0, len(parts), at_once):
        running = [
            subprocess.Popen([CLI, "fingerprint", "--workers", "1", "--sketch", "-i", str(part), "-o", os.devnull])
            for part in parts[start : start + at_once]
        ]
        if any(proc.wait() != 0 for proc in running):
            raise SystemExit("simhash-index fingerprint failed")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return {"n": n, "elapsed": time.monotonic() - began, "cpu": cpu}


def on_local(folder: Path, n: int) -> dict[str, float]:
    """The local runner: the command (Python), its job JVM, the tasks' Python processes (the JVM's children),
    and the standalone HBase."""
    local = LocalHBase(var_dir=ROOT / "var" / "bench-hbase", ports=Ports.free(), master_heap_mb=4096)
    local.stop()
    local.start()
    try:
        prefix = f"bench_texts_{time.strftime('%H%M%S')}"
        client = connect("127.0.0.1", local.ports.thrift2, 60_000)
        apply_schema(client, index_tables(prefix, drawer_regions=4))
        client.close()
        master = local.status()["master"]["pid"]
        hbase_before = cpu_seconds(master)
        command = [
            CLI, "hfile-load", f"file://{folder}/", "--staging", str(WORK / f"{prefix}.staging"), "--new-ids-only",
            "--table-prefix", prefix, "--thrift-port", str(local.ports.thrift), "--thrift2-port",
            str(local.ports.thrift2), "--zookeeper", f"127.0.0.1:{local.ports.zookeeper}", "--parallel", "2",
            "--rejects", f"file://{WORK / prefix}.rejects", "--quiet",
        ]  # fmt: skip
        began = time.monotonic()
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        loader = jvm = tasks_reaped = 0.0
        live: dict[int, float] = {}
        while proc.poll() is None:
            loader = max(loader, own_cpu(proc.pid))
            for java in children(proc.pid):
                jvm, tasks_reaped = max(jvm, own_cpu(java)), max(tasks_reaped, reaped_cpu(java))
                for task in children(java):
                    live[task] = max(live.get(task, 0.0), cpu_seconds(task))
            time.sleep(0.5)
        elapsed = time.monotonic() - began
        out, err = proc.communicate()
        if proc.returncode != 0:
            raise SystemExit(f"hfile-load failed ({proc.returncode}): {out}\n{err[-3000:]}")
        print(out.strip(), flush=True)
        # A finished task's Python was reaped by the JVM: its CPU is in the JVM's children account.
        tasks = max(tasks_reaped, sum(live.values()))
        return {
            "n": n, "elapsed": elapsed, "cpu_submitting": loader + jvm, "cpu_python_loader": loader,
            "cpu_job_jvm": jvm, "cpu_tasks_python": tasks,
            "cpu_parse_python": _seconds(out, "the parse tasks' Python CPU "),
            "cpu_region_servers": cpu_seconds(master) - hbase_before,
        }  # fmt: skip
    finally:
        local.stop()


def _seconds(out: str, label: str) -> float:
    """A figure the command printed as ``LABEL 12.3 s``; 0 where it printed none."""
    return float(out.split(label, 1)[1].split(" s", 1)[0]) if label in out else 0.0


def on_yarn(folder: Path, n: int) -> list[dict[str, float]]:
    """YARN: the pages put on the cluster's HDFS first, then loaded from there three times, each time into a
    fresh index: the cluster's first load (which also places the jars and the PEX in its shared directory, and
    has each NodeManager localise the PEX) and a later one, as a cluster used before sees it, both with the
    driver in the cluster, then a later one driven from this machine.  The parse job's
    tasks' CPU is YARN's account (CPU_MILLISECONDS: each task's process tree, sampled every few seconds, its
    Python included up to the last sample); the Python processes' own CPU as each reports it, beside."""
    stack = Stack.on_free_ports(f"simhashbenchtexts{os.getpid()}")
    home = WORK / stack.project
    home.mkdir(parents=True, exist_ok=True)
    up = stack.run("up", "-d", timeout=900)
    try:
        if up.returncode != 0:
            raise SystemExit(f"the cluster did not start: {up.stderr[-3000:]}")
        for service in ("thrift", "regionserver1", "regionserver2", "resourcemanager", "nodemanager1", "nodemanager2"):
            stack.healthy(service, timeout=600)
        for part in sorted(folder.glob("part-*.jsonl")):
            stack.hdfs_put(f"/bench-texts/{part.name}", part.read_bytes())
        loads = []
        for tag, driver in (("first", "cluster"), ("again", "cluster"), ("client", "client")):
            loads.append(_yarn_load(stack, home, n, tag, driver))
            print(json.dumps(loads[-1]), flush=True)
        return loads
    finally:
        stack.run("down", "-v", timeout=600)


def _yarn_load(stack: Stack, home: Path, n: int, tag: str, driver: str) -> dict[str, Any]:
    prefix = f"bench_texts_{tag}_{time.strftime('%H%M%S')}"
    conf, env = cluster_client(stack, home, prefix)
    subprocess.run([CLI, "schema", "apply", "--regions", "4"], env=env, check=True)
    busy = ("regionserver1", "regionserver2", "nodemanager1", "nodemanager2", *DAEMONS)
    # Each service's CPU while nothing runs (heartbeats, timers), over IDLE_S, to tell the load's own from it.
    before = {s: stack.cpu_seconds(s) for s in busy}
    time.sleep(IDLE_S)
    idle_rate = {s: (stack.cpu_seconds(s) - before[s]) / IDLE_S for s in busy}
    before = {s: stack.cpu_seconds(s) for s in busy}
    command = [
        CLI, "hfile-load", "hdfs://namenode:8020/bench-texts/", "--new-ids-only", "--runner", "yarn",
        "--conf-dir", str(conf), "--staging", str(home / f"staging-{tag}"), "--staging-uri",
        f"hdfs://namenode:8020/bench-texts-staging-{tag}", "--driver", driver, "--quiet",
    ]  # fmt: skip
    began = time.monotonic()
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    client = 0.0
    jvms: dict[int, tuple[str, float]] = {}  # the submitting JVMs, each by the command it runs
    while proc.poll() is None:
        client = max(client, tree_cpu(proc.pid))
        for java in children(proc.pid):
            step, seen = jvms.get(java) or (_job_command(java), 0.0)
            jvms[java] = (step, max(seen, cpu_seconds(java)))
        time.sleep(0.5)
    elapsed = time.monotonic() - began
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"hfile-load --runner yarn failed ({proc.returncode}): {out}\n{err[-3000:]}")
    print(out.strip(), flush=True)
    used = {s: stack.cpu_seconds(s) - before[s] for s in busy}
    return {
        "n": n, "elapsed": elapsed, "cpu_submitting": client, "cpu_nodemanagers": used["nodemanager1"] +
        used["nodemanager2"], "cpu_parse_tasks": _seconds(out.split("tasks' CPU ", 1)[-1], "parse "),
        "cpu_parse_python": _seconds(out, "the parse tasks' Python CPU "),
        "cpu_region_servers": used["regionserver1"] + used["regionserver2"],
        "cpu_daemons": sum(used[d] for d in DAEMONS), "cpu_idle": elapsed * sum(idle_rate.values()),
        "cpu_submitting_jvms": {step: sum(c for st, c in jvms.values() if st == step) for step, _ in
                                jvms.values()},
    }  # fmt: skip


def _job_command(pid: int) -> str:
    """The hfile job command a submitting JVM runs (the first argument after its main class and -D options)."""
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    except OSError:
        return "?"
    rest = args[next((i + 1 for i, a in enumerate(args) if a.startswith("io.simhashindex.")), len(args)) :]
    return next((a for a in rest if not a.startswith("-D")), "?")


def report(results: dict[str, dict[str, float]]) -> None:
    alone = results["fingerprint"]
    per_doc = alone["cpu"] / alone["n"]
    print(f"\n{os.cpu_count()} cores; {alone['n']:,} pages of about {CHUNK_CHARS:,} characters (zh and en)")
    rate = alone["n"] / alone["elapsed"]
    print(f"`fingerprint --workers 1 --sketch`: {rate:,.0f} pages/s, {1e3 * per_doc:.3f} ms CPU per page")
    pair = results.get("fingerprint2", alone)
    per_doc2 = pair["cpu"] / pair["n"]
    print(f"two of them at once, one per core: {1e3 * per_doc2:.3f} ms CPU per page")
    print(
        "| runner | elapsed s | pages/s | CPU s: submitting machine | tasks | region servers | HDFS and YARN "
        "daemons | submitting share: of the first three; of all; of all above idle | tasks' CPU per page / "
        "fingerprint's (alone; two at once) | their Python's |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for runner in ("local", *YARN_LOADS):
        if runner not in results:
            continue
        r = results[runner]
        tasks = r["cpu_tasks_python"] if runner == "local" else r["cpu_nodemanagers"]
        parse = r["cpu_tasks_python"] if runner == "local" else r["cpu_parse_tasks"]
        total = r["cpu_submitting"] + tasks + r["cpu_region_servers"]
        python = r.get("cpu_parse_python", 0.0) / r["n"]
        daemons, shares = "-", f"{r['cpu_submitting'] / total:.1%}"
        if "cpu_daemons" in r:
            every = total + r["cpu_daemons"]
            daemons = f"{r['cpu_daemons']:,.1f}"
            shares += f"; {r['cpu_submitting'] / every:.1%}; {r['cpu_submitting'] / (every - r['cpu_idle']):.1%}"
        print(
            f"| {runner} | {r['elapsed']:,.0f} | {r['n'] / r['elapsed']:,.0f} | {r['cpu_submitting']:,.1f} | "
            f"{tasks:,.1f} | {r['cpu_region_servers']:,.1f} | {daemons} | {shares} | "
            f"{parse / r['n'] / per_doc:.2f}x; {parse / r['n'] / per_doc2:.2f}x | "
            f"{python / per_doc:.2f}x; {python / per_doc2:.2f}x |"
        )
    for runner in YARN_LOADS:
        if runner not in results:
            continue
        jvms = results[runner].get("cpu_submitting_jvms", {})
        rest = results[runner]["cpu_submitting"] - sum(jvms.values())
        shown = ", ".join(f"{step} {cpu:.1f}" for step, cpu in jvms.items())
        print(f"{runner}'s submitting machine, CPU s: the command {rest:.1f}; its JVMs, by job command: {shown}")
    print(
        "local: the submitting machine is the command and its job JVM (which also runs every task's Java side); "
        "tasks, the tasks' Python.  yarn: the cluster's first load; yarn, again: a second load of the same pages "
        "into a fresh index on the same cluster, both with the driver in the cluster (its application's master "
        "among the NodeManagers' containers); yarn, client driver: a third, driven from a JVM on this machine.  "
        "All: tasks, the NodeManagers' containers; the ratio, the parse "
        "job's own account (CPU_MILLISECONDS: the tasks' process trees, sampled).  Their Python's: the parse tasks' "
        "Python processes' own CPU, as each reports it at its end.  HDFS and YARN daemons: the NameNode, the "
        "DataNode and the ResourceManager (with the history server); above idle: less every service's CPU at rest "
        f"(measured over {IDLE_S:.0f} s before the load) for the load's duration."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=lambda s: int(float(s)), default=200_000)
    parser.add_argument("--runners", default="local,yarn")
    args = parser.parse_args()
    folder = write_pages(args.n)
    results = {"fingerprint": fingerprint_alone(folder, args.n), "fingerprint2": fingerprint_alone(folder, args.n, 2)}
    print(json.dumps(results["fingerprint"]), flush=True)
    for runner in args.runners.split(","):
        if runner == "local":
            results[runner] = on_local(folder, args.n)
            print(json.dumps(results[runner]), flush=True)
        else:
            results.update(zip(YARN_LOADS, on_yarn(folder, args.n), strict=True))
    (WORK / "results.json").write_text(json.dumps(results, indent=1))
    report(results)


if __name__ == "__main__":
    main()
