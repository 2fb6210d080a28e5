"""Golden vectors: the same text gives the same 64 bits forever, unless FINGERPRINT_VERSION says otherwise."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
sys.path.insert(0, str(GOLDEN))

from make_vectors import sketch_digest  # noqa: E402
from texts import golden_texts  # noqa: E402

from simhash_server.fingerprint import FINGERPRINT_VERSION, fingerprint  # noqa: E402
from simhash_server.fingerprint.sketch import SKETCH_FORMAT  # noqa: E402

STORED = json.loads((GOLDEN / "vectors.json").read_text(encoding="utf-8"))
SKETCHES = json.loads((GOLDEN / "sketches.json").read_text(encoding="utf-8"))
TEXTS = golden_texts()


def test_vectors_belong_to_this_version() -> None:
    assert STORED["version"] == FINGERPRINT_VERSION, (
        "FINGERPRINT_VERSION changed: regenerate with tests/golden/make_vectors.py and commit vectors.json"
    )


def test_every_text_has_a_vector() -> None:
    assert set(STORED["vectors"]) == set(TEXTS)
    assert len(TEXTS) >= 45
    assert max(len(t.encode()) for t in TEXTS.values()) >= 1_000_000


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_golden_fingerprint(name: str) -> None:
    expected = STORED["vectors"][name]
    fp = fingerprint(TEXTS[name])
    assert (fp.hex, fp.features, len(TEXTS[name])) == (expected["simhash"], expected["features"], expected["chars"]), (
        f"{name}: fingerprints moved without a FINGERPRINT_VERSION bump"
    )


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_golden_sketch(name: str) -> None:
    assert SKETCHES["format"] == SKETCH_FORMAT, "SKETCH_FORMAT changed: regenerate with make golden"
    assert sketch_digest(TEXTS[name]) == SKETCHES["sha256"][name], (
        f"{name}: the stored sketch moved without a SKETCH_FORMAT bump; stored sketches would be misread"
    )


def test_golden_pairs_say_what_they_should() -> None:
    vec = {name: int(v["simhash"], 16) for name, v in STORED["vectors"].items()}

    def distance(a: str, b: str) -> int:
        return (vec[a] ^ vec[b]).bit_count()

    assert vec["empty"] == vec["emoji"] == vec["punctuation-cjk"] == 0  # no features, no bits
    assert distance("mixed-fullwidth-latin", "mixed-halfwidth-latin") == 0  # NFKC folds full width
    assert distance("en-upper", "en-sentence") == 0  # case folding
    assert distance("zh-seed0-article", "zh-seed4-article") > 10  # different articles on one topic


def test_an_edited_long_article_stays_within_distance_3() -> None:
    article = TEXTS["zh-seed4-article"]
    edited = article[:1000] + "关注我们的公众号获取更多资讯。" + article[1000:].replace("2019", "2020") + "（完）"
    assert (fingerprint(article).value ^ fingerprint(edited).value).bit_count() <= 3
