"""`simhash-index calibrate`: labelled pairs in, precision and recall per setting out, bad lines named."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from click.testing import CliRunner

from simhash_server.cli import main
from simhash_server.fingerprint import V1, fingerprint
from simhash_server.fingerprint.sketch import similarity
from simhash_server.index.calibration import Measured, calibrate, measure

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
sys.path.insert(0, str(GOLDEN))
from texts import golden_texts  # noqa: E402

TEXTS = golden_texts()
ARTICLE = TEXTS["zh-seed4-article"]
COPY = ARTICLE + "（本文转载自技术博客，版权归原作者所有）"
OTHER = TEXTS["zh-seed0-article"]


def test_a_pair_is_measured_as_the_server_would() -> None:
    m = measure(ARTICLE, COPY, True, V1)
    a, b = fingerprint(ARTICLE, V1, sketch=True), fingerprint(COPY, V1, sketch=True)
    assert m.distance == (a.value ^ b.value).bit_count() <= 3
    assert m.similarity == similarity(a.sketch, b.sketch) and m.candidate and m.duplicate
    far = measure(ARTICLE, OTHER, False, V1)
    assert far.distance > 8 and not far.candidate


def test_scores_and_the_recommendation() -> None:
    measured = [
        Measured(True, 0, 0.99, True),
        Measured(True, 2, 0.93, True),
        Measured(True, 5, 0.91, True),  # pushed past 3: only verification finds it
        Measured(False, 3, 0.70, True),  # shares a template
        Measured(False, 20, 0.0, False),
    ]
    result = calibrate(measured, floors=(0.5, 0.9, 0.95))
    k3 = result.by_distance[3]
    assert (k3.predicted, k3.true_positives, k3.positives) == (3, 2, 3)
    assert (round(k3.precision, 3), round(k3.recall, 3)) == (0.667, 0.667)
    assert [(s.setting, s.predicted, s.true_positives) for s in result.by_floor] == [
        (0.5, 4, 3),
        (0.9, 3, 3),
        (0.95, 1, 1),
    ]
    by_k, by_floor = result.recommend(0.97)
    assert by_k.setting == 2 and by_k.recall == 2 / 3  # k=3 lets the template in
    assert by_floor.setting == 0.9 and by_floor.recall == 1.0  # 0.5 keeps the template; 0.95 loses two


def _run(tmp_path: Path, lines: list[str], *args: str):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return CliRunner().invoke(main, ["calibrate", str(pairs), *args])


def test_the_command_reads_texts_ids_and_similarities(tmp_path: Path) -> None:
    texts = tmp_path / "texts.jsonl"
    texts.write_text(
        "".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in (("a", ARTICLE), ("o", OTHER))),
        encoding="utf-8",
    )
    lines = [
        json.dumps({"a_id": "a", "b": COPY, "duplicate": True}, ensure_ascii=False),
        json.dumps({"a_id": "a", "b_id": "o", "similarity": 0.2}),
    ]
    result = _run(tmp_path, lines, "--texts", str(texts), "--json", "--fingerprint-version", "v1")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["pairs"], report["duplicates"], report["fingerprint_version"]) == (2, 1, V1)
    d = report["max_distance"]
    best = min(k for k in range(4) if d[k]["recall"] == 1.0)  # the copy's distance: the first k that finds it
    floors = [f["setting"] for f in report["min_similarity"] if f["recall"] == 1.0 and f["precision"] >= 0.97]
    assert report["recommended"] == {"max_distance": best, "min_similarity": max(floors)}
    assert report["max_distance"][3]["recall"] == 1.0 and report["max_distance"][3]["precision"] == 1.0


def test_bad_lines_are_named_and_left_out(tmp_path: Path) -> None:
    lines = [
        json.dumps({"a": ARTICLE, "b": COPY, "duplicate": True}, ensure_ascii=False),
        "{not json",
        json.dumps({"a": "x", "b": "y"}),
        json.dumps({"a": "x", "b": "y", "duplicate": "yes"}),
        json.dumps({"a": "x", "b_id": "missing", "duplicate": True}),
        json.dumps({"a": "x", "b": "y", "similarity": 1.5}),
    ]
    result = _run(tmp_path, lines)
    assert result.exit_code == 1
    assert "1 pairs, 1 duplicates" in result.stdout
    err = result.stderr
    assert "line 2: not JSON" in err
    assert 'line 3: give exactly one of "duplicate"' in err
    assert 'line 4: "duplicate" must be true or false' in err
    assert "line 5: \"b_id\" 'missing' is not in --texts" in err
    assert 'line 6: "similarity" must be a number in 0..1, got 1.5' in err
    assert "5 bad line(s) left out" in err


def test_nothing_to_calibrate_is_a_clear_error(tmp_path: Path) -> None:
    result = _run(tmp_path, ["{not json"])
    assert result.exit_code == 1 and "no labelled pair to calibrate on" in result.output
