"""`simhash-index fingerprint` on JSON lines: order, bad lines, exit status, workers."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from simhash_server.cli import main

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
sys.path.insert(0, str(GOLDEN))
from texts import golden_texts  # noqa: E402

VECTORS = {
    name: json.loads((GOLDEN / f"vectors{suffix}.json").read_text(encoding="utf-8"))
    for name, suffix in (("v1", ""), *((v, f"-{v}") for v in ("v2", "v3", "v4", "v4-nofold", "v5", "v6", "v7")))
}


def _invoke(stdin: str, *args: str):
    return CliRunner().invoke(main, ["fingerprint", *args], input=stdin)


@pytest.mark.parametrize(
    ("args", "version"),
    [
        ((), "v7"),
        (("--fingerprint-version", "v6"), "v6"),
        (("--fingerprint-version", "v5"), "v5"),
        (("--fingerprint-version", "v4"), "v4"),
        (("--fingerprint-version", "v4-nofold"), "v4-nofold"),
        (("--fingerprint-version", "v3"), "v3"),
        (("--fingerprint-version", "v2"), "v2"),
        (("--fingerprint-version", "v1"), "v1"),
    ],
)
def test_good_lines_come_out_in_order_with_the_golden_fingerprints(args: tuple[str, ...], version: str) -> None:
    """The command's output is checked against tests/golden (fixed values), not against the code it runs."""
    names = [name for name, text in golden_texts().items() if len(text) < 5_000]
    texts = golden_texts()
    stdin = "".join(json.dumps({"id": name, "text": texts[name]}, ensure_ascii=False) + "\n" for name in names)
    result = _invoke(stdin, *args)
    assert result.exit_code == 0, result.output
    out = [json.loads(line) for line in result.stdout.splitlines()]
    assert [o["id"] for o in out] == names
    stored = VECTORS[version]
    for record in out:
        golden = stored["vectors"][record["id"]]
        assert record == {
            "id": record["id"],
            "simhash": golden["simhash"],
            "features": golden["features"],
            "fingerprint_version": stored["version"],
        }


def test_an_unknown_version_is_named() -> None:
    result = _invoke('{"id": 1, "text": "x"}\n', "--fingerprint-version", "v9")
    assert result.exit_code == 2 and "'v9': choose one of v1, v2" in result.output


def test_bad_lines_are_reported_by_number_and_the_rest_processed() -> None:
    stdin = (
        "\n".join(
            [
                '{"id": "a", "text": "好"}',
                "{not json",
                '{"id": "b"}',
                '{"id": "c", "text": 42}',
                '["id", "text"]',
                '{"text": "no id"}',
                '{"id": "d", "text": "fine"}',
            ]
        )
        + "\n"
    )
    result = _invoke(stdin)
    assert result.exit_code == 1
    assert [json.loads(line)["id"] for line in result.stdout.splitlines()] == ["a", "d"]
    err = result.stderr
    assert "line 2: not JSON" in err
    assert 'line 3: no "text" field' in err
    assert 'line 4: "text" must be a string, got int' in err
    assert "line 5: expected a JSON object, got list" in err
    assert 'line 6: no "id" field' in err
    assert "5 bad line(s)" in err


def test_workers_keep_input_order_and_give_the_same_fingerprints(tmp_path) -> None:
    lines = [
        json.dumps({"id": n, "text": f"第{n}篇文档，内容编号{n * 37}。document {n}"}, ensure_ascii=False)
        for n in range(1500)
    ]
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    one = _invoke("", "--input", str(source))
    many = _invoke("", "--input", str(source), "--workers", "3")
    assert one.exit_code == many.exit_code == 0
    assert one.stdout == many.stdout
    assert [json.loads(line)["id"] for line in many.stdout.splitlines()] == list(range(1500))


def test_sketch_writes_each_texts_sketch_as_bulk_load_takes_it(tmp_path: Path) -> None:
    import base64

    from simhash_server.bulk.input import InputSource, Record
    from simhash_server.fingerprint import FINGERPRINT_VERSION, fingerprint

    text = "近似重复检测：把文本切词、加权，再算出六十四位的指纹。"
    result = _invoke(json.dumps({"id": "a", "text": text}, ensure_ascii=False) + "\n", "--sketch")
    assert result.exit_code == 0, result.output
    (line,) = result.output.splitlines()
    made = fingerprint(text, FINGERPRINT_VERSION, sketch=True)
    assert base64.b64decode(json.loads(line)["sketch"]) == made.sketch
    path = tmp_path / "fp.jsonl"
    path.write_text(line + "\n")
    (item,) = [i for i, _, _ in InputSource.detect(str(path), None, None, "auto").records()]
    assert item == Record(1, "a", made.value, None, None, made.sketch)
    plain = _invoke(json.dumps({"id": "a", "text": text}, ensure_ascii=False) + "\n")
    assert "sketch" not in json.loads(plain.output)
