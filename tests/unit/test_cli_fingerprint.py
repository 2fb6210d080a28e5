"""`simhash-index fingerprint` on JSON lines: order, bad lines, exit status, workers."""

from __future__ import annotations

import json

from click.testing import CliRunner

from simhash_server.cli import main
from simhash_server.fingerprint import fingerprint


def _invoke(stdin: str, *args: str):
    return CliRunner().invoke(main, ["fingerprint", *args], input=stdin)


def test_good_lines_come_out_in_order_with_hex_and_feature_count() -> None:
    texts = ["我们今天在北京大学的计算机实验室里讨论了相似度问题。", "The quick brown fox.", ""]
    stdin = "".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in enumerate(texts))
    result = _invoke(stdin)
    assert result.exit_code == 0, result.output
    out = [json.loads(line) for line in result.stdout.splitlines()]
    assert [o["id"] for o in out] == [0, 1, 2]
    for record, text in zip(out, texts, strict=True):
        fp = fingerprint(text)
        assert record == {"id": record["id"], "simhash": fp.hex, "features": fp.features}


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
