"""hfile-load's URI inputs, before any job: which inputs are URIs, where their rejects go, what the tasks'
PEX needs of a NodeManager, and the Python task's frames on a file's bytes (no HBase, no Hadoop)."""

from __future__ import annotations

import io
import json
import os
import struct
import sys
import zipfile
from pathlib import Path

import pytest

from simhash_server.bulk.checkpoint import BulkLoadError
from simhash_server.bulk.cluster_inputs import default_rejects_uri, is_uri, task_env_needs
from simhash_server.bulk.file_task import run
from simhash_server.bulk.input import InputSource
from simhash_server.fingerprint import FINGERPRINT_VERSION, fingerprint
from simhash_server.fingerprint.versions import NAMES


@pytest.mark.parametrize(
    ("path", "uri"),
    [
        ("hdfs://nn:8020/data", True),
        ("file:///tmp/a.jsonl", True),
        ("s3a://bucket/x", True),
        ("/tmp/a", False),
        ("a.jsonl", False),
        ("-", False),
        ("c:/x", False),
    ],
)
def test_uris_are_told_from_local_paths(path: str, uri: bool) -> None:
    assert is_uri(path) is uri


@pytest.mark.parametrize(
    ("first", "rejects"),
    [
        ("hdfs://nn:8020/data/pages/", "hdfs://nn:8020/data/pages.rejects"),
        ("hdfs://nn:8020/data/pages/*.jsonl.gz", "hdfs://nn:8020/data/pages.rejects"),
        ("hdfs://nn:8020/data/part-{0,1}/x", "hdfs://nn:8020/data.rejects"),
        ("file:///tmp/a.jsonl", "file:///tmp/a.jsonl.rejects"),
    ],
)
def test_rejects_go_beside_the_first_input_without_its_glob(first: str, rejects: str) -> None:
    assert default_rejects_uri(first) == rejects


def test_the_pex_says_which_python_the_nodemanagers_need(tmp_path: Path) -> None:
    pex = tmp_path / "env.pex"
    with zipfile.ZipFile(pex, "w") as archive:
        wheels = {"numpy-2.4.6-cp311-cp311-manylinux_2_28_x86_64.whl": "x", "six-1.17.0-py2.py3-none-any.whl": "y"}
        archive.writestr("PEX-INFO", json.dumps({"distributions": wheels}))
    assert task_env_needs(pex).startswith("python3.11 on the PATH of every NodeManager")
    bad = tmp_path / "bad.pex"
    bad.write_text("#!/bin/sh\n")
    with pytest.raises(BulkLoadError, match="is not a PEX"):
        task_env_needs(bad)


def test_the_task_frames_records_and_rejects_of_a_file_as_the_local_path_reads_it() -> None:
    text = "海量数据的相似度计算是搜索引擎和推荐系统里的基础问题。"
    data = (
        json.dumps({"doc_id": "t", "text": text}, ensure_ascii=False) + "\n"
        "not json\n" + json.dumps({"doc_id": "f", "simhash": "00000000000000ff", "indexed_at": 1.5}) + "\n"
    ).encode()
    source = InputSource("-", "jsonl", "none")
    out = io.BytesIO()
    stdin, sys.stdin = sys.stdin, io.TextIOWrapper(io.BytesIO(data))
    try:
        assert run(source, FINGERPRINT_VERSION, out) == (3, 2, 1)
    finally:
        sys.stdin = stdin
    frames = out.getvalue()
    made = fingerprint(text, FINGERPRINT_VERSION, sketch=True)
    assert frames[0:1] == b"R"
    seq, fp, seen, id_length, sketch_length = struct.unpack(">QQqHH", frames[1:29])
    assert (seq, fp, seen, id_length) == (1, made.value, -1, 1)
    assert frames[29 : 30 + sketch_length] == b"t" + made.sketch
    rest = frames[30 + sketch_length :]
    assert rest[:1] == b"X" and struct.unpack(">QI", rest[1:13])[0] == 2
    end = rest[-33:]
    assert end[:1] == b"E" and struct.unpack(">QQQ", end[1:25]) == (3, 2, 1)
    assert 0 < struct.unpack(">Q", end[25:])[0] <= 1000 * sum(os.times()[:4]) + 1  # this process's CPU, ms


def test_hfile_load_refuses_inputs_it_could_not_read_or_would_remove(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from simhash_server.cli import main

    def refused(*args: str) -> str:
        result = CliRunner().invoke(main, ["hfile-load", *args])
        assert result.exit_code != 0
        return result.output

    inside = refused(f"file://{tmp_path}/corpus/", "--staging", str(tmp_path))
    assert "is inside the staging directory" in inside  # a successful load removes its staging directory
    assert "give every input as a URI, or none" in refused(f"file://{tmp_path}/a.jsonl", str(tmp_path / "a.jsonl"))
    yarn = ["--runner", "yarn", "--staging-uri", "hdfs://nn:8020/st"]
    assert "YARN's tasks do not read" in refused(f"file://{tmp_path}/a.jsonl", *yarn)
    no_pex = refused("hdfs://nn:8020/in/", *yarn, "--job-dir", str(tmp_path))
    assert "simhash-index.pex is missing: build it with `make pex`" in no_pex


def test_loading_md_s_own_job_example_makes_lines_both_loads_take_with_their_sketch(tmp_path: Path) -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "loading.md").read_text(encoding="utf-8")
    code = doc.split("**Sketches made elsewhere.**", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, object] = {}
    exec(compile(code, "docs/loading.md", "exec"), namespace)  # the documented example itself
    text = "近似重复检测：把文本切词、加权，再算出六十四位的指纹。"
    path = tmp_path / "out.jsonl"
    path.write_text("".join(line + "\n" for line in namespace["bulk_lines"]([("a", text)])))  # type: ignore[operator]
    (item,) = [i for i, _, _ in InputSource.detect(str(path), None, None, "auto").records()]
    made = fingerprint(text, FINGERPRINT_VERSION, sketch=True)
    assert (item.doc_id, item.simhash, item.sketch) == ("a", made.value, made.sketch)  # type: ignore[union-attr]


def test_the_probe_is_the_recipe_s_own_fingerprint_and_sketch_of_its_text(capsys: pytest.CaptureFixture[str]) -> None:
    """What NodeCheck compares on every NodeManager with the submitting machine's own lines."""
    import hashlib
    import platform

    from simhash_server.bulk.file_task import PROBE_TEXT, main

    assert main(["--probe", "--fingerprint-version", FINGERPRINT_VERSION]) == 0
    made = fingerprint(PROBE_TEXT, FINGERPRINT_VERSION, sketch=True)
    assert capsys.readouterr().out.splitlines() == [
        f"fingerprint {made.value:016x}",
        f"sketch {hashlib.sha256(made.sketch).hexdigest()[:16]}",
        f"python {platform.python_version()}",
    ]
    with pytest.raises(SystemExit):
        main([])  # neither a file's name nor --probe
    assert "give the input file's name, or --probe" in capsys.readouterr().err


@pytest.mark.parametrize("name", list(NAMES))
def test_the_pinned_probe_is_what_this_build_computes(name: str) -> None:
    """The submitting command sends the pinned lines to NodeCheck instead of fingerprinting the probe itself."""
    from simhash_server.bulk.file_task import pinned_probe, probe

    assert pinned_probe(NAMES[name]) == "".join(probe(NAMES[name]).splitlines(keepends=True)[:2])


def test_a_task_whose_python_makes_another_probe_reads_no_record(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A parse task on a node an earlier load checked makes the probe first (NodeCheck remembers nodes)."""
    from simhash_server.bulk.file_task import OTHER_PROBE, main, pinned_probe

    data = json.dumps({"doc_id": "t", "text": "同一篇文章换了页眉页脚。"}, ensure_ascii=False) + "\n"
    version = ["--fingerprint-version", FINGERPRINT_VERSION]

    def task(expect: str) -> tuple[int, bytes]:
        out = io.BytesIO()
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data.encode())))
        monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(out))
        code = main(["part-0.jsonl", *version, "--expect-probe", expect])
        sys.stdout.flush()
        return code, out.getvalue()

    code, frames = task(pinned_probe(FINGERPRINT_VERSION))
    assert code == 0 and frames[:1] == b"R" and frames[-33:-32] == b"E"
    other = pinned_probe(NAMES["v1"])  # as a node whose Python made v1's fingerprints would
    assert other != pinned_probe(FINGERPRINT_VERSION)
    code, frames = task(other)
    assert (code, frames) == (OTHER_PROBE, b"")
    err = capsys.readouterr().err
    assert f"makes another probe than the recipe's ({' '.join(other.split())})" in err
    assert " ".join(pinned_probe(FINGERPRINT_VERSION).split()) in err  # what it made
