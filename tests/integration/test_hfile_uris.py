"""`simhash-index hfile-load` of URI inputs on the real HBase, with Hadoop's LocalJobRunner: the files are
listed by the job and read by its map tasks, which run the project's own Python (bulk/file_task.py), so
texts are fingerprinted and sketched there and this process reads no record.  What is stored must be, cell
for cell, what `bulk-load` stores for the same lines; and sketches made by `simhash-index fingerprint
--sketch` must travel through both load paths and verify."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_hfile_load import assert_same_tables, cells, cli
from truth import mixed_input

from simhash_client import SimHashClient

CLI = str(Path(sys.executable).with_name("simhash-index"))


@pytest.fixture(autouse=True)
def _launcher_only(hbase) -> None:
    if hbase.local is None:  # the job's HBase client needs ZooKeeper and region servers the host can reach
        pytest.skip("the HFile job reaches the local launcher's ZooKeeper")


def _split(lines: list[str], folder: Path) -> list[Path]:
    """The lines over three files, in the order a sorted listing of ``folder`` gives them: plain, gzip, and
    one in a subdirectory; then a file whose format no name tells."""
    third = len(lines) // 3
    parts = [folder / "part-0.jsonl", folder / "part-1.jsonl.gz", folder / "sub" / "part-2.ndjson"]
    (folder / "sub").mkdir(parents=True)
    chunks = [lines[:third], lines[third : 2 * third], lines[2 * third :]]
    for path, chunk in zip(parts, chunks, strict=True):
        data = "".join(line + "\n" for line in chunk).encode()
        path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
    (folder / "sub" / "notes").write_text("what is this?\n")
    return parts


@pytest.mark.slow("5,000 lines from file URIs through the HFile job's local MapReduce, beside a Thrift load")
def test_uri_inputs_are_read_in_the_tasks_and_store_what_bulk_load_stores(make_index, hbase, tmp_path: Path) -> None:
    thrift, hfiles = make_index(regions=4), make_index(regions=4)
    source = tmp_path / "mixed.jsonl"
    mixed_input(source, seed=17, docs=2000, records=3000, shared=800)
    by_thrift = cli(thrift, hbase, "bulk-load", str(source), "--rejects", str(tmp_path / "a.rejects"))
    assert by_thrift.returncode == 3, by_thrift.stderr

    folder = tmp_path / "corpus"
    parts = _split(source.read_text().splitlines(), folder)
    staging = tmp_path / "staging"
    by_tasks = cli(
        hfiles, hbase, "hfile-load", f"file://{folder}/", "--staging", str(staging), "--keep-staging", "--parallel", "2"
    )
    assert by_tasks.returncode == 3, by_tasks.stderr
    # 3,001 lines of the parts and the unreadable file's one: the bad line and that file are rejected.
    assert "lines read 3,002; records 3,000" in by_tasks.stdout and "rejected 2" in by_tasks.stdout, by_tasks.stdout
    assert not (staging / "input").exists()  # nothing was normalised here: the tasks read the files
    assert_same_tables(thrift, hfiles, hbase)
    assert any(value for _, _, value in cells(hfiles, hbase)["fp2docs"])  # texts brought their sketches

    rejects_dir = tmp_path / "corpus.rejects"  # beside the input, on its filesystem
    rejects = sorted(
        line.split("\t")[:3] for part in rejects_dir.glob("part-*") for line in part.read_text().splitlines()
    )
    (thrift_reject,) = (tmp_path / "a.rejects").read_text().splitlines()
    _, line, reason, _ = thrift_reject.split("\t")
    third = 3001 // 3  # lines per part, as _split cut them
    part = min((int(line) - 1) // third, 2)
    unreadable = f"file:{folder / 'sub' / 'notes'}"
    assert rejects == sorted([[f"file:{parts[part]}", str(int(line) - part * third), reason], rejects[-1]])
    assert rejects[-1][:2] == [unreadable, "0"] and "cannot tell the format" in rejects[-1][2]


def test_a_uri_input_must_exist_and_inputs_are_uris_or_paths(make_index, hbase, tmp_path: Path) -> None:
    store = make_index(regions=1)
    missing = cli(store, hbase, "hfile-load", f"file://{tmp_path}/none/*.jsonl", "--staging", str(tmp_path / "s"))
    assert missing.returncode == 1
    assert "matches 0 files" in missing.stderr or "does not exist" in missing.stderr, missing.stderr[-2000:]
    (tmp_path / "a.jsonl").write_text('{"doc_id": "a", "simhash": "0"}\n')
    mixed = cli(store, hbase, "hfile-load", f"file://{tmp_path}/a.jsonl", str(tmp_path / "a.jsonl"))
    assert mixed.returncode != 0 and "give every input as a URI, or none" in mixed.stderr


def _fingerprint(texts: dict[str, str], tmp_path: Path) -> Path:
    made = subprocess.run(
        [CLI, "fingerprint", "--sketch"],
        input="".join(json.dumps({"id": d, "text": t}, ensure_ascii=False) + "\n" for d, t in texts.items()),
        capture_output=True,
        text=True,
        check=True,
    )
    out = tmp_path / "fingerprints.jsonl"
    out.write_text(made.stdout)
    return out


ARTICLE = (
    "海量数据的相似度计算是搜索引擎和推荐系统里的基础问题。SimHash 把一篇文章变成六十四位的指纹，相似的文章得到"
    "相近的指纹，汉明距离小于等于三就认为是近似重复。为了在几十亿条指纹里快速查找，我们把指纹分成五段，任意两段"
    "组合成一个抽屉，一共十个抽屉。查询时只需要扫描十个前缀，然后计算异或和比特数。"
)
OTHER = (
    "The region server keeps a write-ahead log on HDFS; a crash replays it before the regions open again, so "
    "every acknowledged write survives. Compactions merge store files in the background."
)


@pytest.mark.slow("both loads (Thrift, and the HFile job's local MapReduce) and a server to verify through")
def test_sketches_made_elsewhere_travel_through_both_loads_and_verify(
    make_index, hbase, spawn_server, tmp_path: Path
) -> None:
    fingerprints = _fingerprint({"article": ARTICLE, "other": OTHER}, tmp_path)
    records = [json.loads(line) for line in fingerprints.read_text().splitlines()]
    assert all(len(r["sketch"]) > 600 for r in records)  # base64 of the recipe's 517 bytes

    thrift, hfiles = make_index(regions=2), make_index(regions=2)
    loaded = cli(thrift, hbase, "bulk-load", str(fingerprints), "--rejects", str(tmp_path / "a.rejects"))
    assert loaded.returncode == 0, loaded.stderr
    by_tasks = cli(hfiles, hbase, "hfile-load", f"file://{fingerprints}", "--staging", str(tmp_path / "st"))
    assert by_tasks.returncode == 0, by_tasks.stderr
    assert_same_tables(thrift, hfiles, hbase)  # so the server's answer below is bulk-load's too
    _, target = spawn_server(hfiles.config.table_prefix, "--metrics-address", "")
    with SimHashClient(target) as client:
        hits = client.query(text=ARTICLE + "（本文转载自技术博客）", min_similarity=0.75)
        assert [(h.doc_id, h.verified) for h in hits] == [("article", True)]


def test_a_bad_sketch_is_a_reject_naming_it(make_index, hbase, tmp_path: Path) -> None:
    store = make_index(regions=1)
    source = tmp_path / "bad.jsonl"
    source.write_text(
        json.dumps({"doc_id": "short", "simhash": "00000000000000ff", "sketch": "AwAAAA=="})
        + "\n"
        + json.dumps({"doc_id": "fine", "simhash": "00000000000000fe"})
        + "\n"
    )
    env_rejects = tmp_path / "bad.rejects"
    done = cli(
        store,
        hbase,
        "hfile-load",
        f"file://{source}",
        "--staging",
        str(tmp_path / "st"),
        "--rejects",
        f"file://{env_rejects}",
    )
    assert done.returncode == 3, done.stderr
    (line,) = [ln for p in env_rejects.glob("part-*") for ln in p.read_text().splitlines()]
    assert line.split("\t")[1] == "1" and "sketch is 4 bytes of format 3" in line
