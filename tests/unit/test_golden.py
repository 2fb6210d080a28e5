"""Golden vectors: the same text gives the same 64 bits forever, unless FINGERPRINT_VERSION says otherwise."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
sys.path.insert(0, str(GOLDEN))

from make_vectors import files, sketch_digest  # noqa: E402
from texts import golden_texts  # noqa: E402

from simhash_server.fingerprint import FINGERPRINT_VERSION, V1, VERSIONS, fingerprint, short_name  # noqa: E402

TEXTS = golden_texts()
STORED = {v: json.loads(files(v)[0].read_text(encoding="utf-8")) for v in VERSIONS}
SKETCHES = {v: json.loads(files(v)[1].read_text(encoding="utf-8")) for v in VERSIONS}
IDS = {v: short_name(v) for v in VERSIONS}
versions = pytest.mark.parametrize("version", list(VERSIONS), ids=IDS.get)


@versions
def test_vectors_belong_to_their_version(version: str) -> None:
    assert STORED[version]["version"] == version, "regenerate with `make golden` and commit tests/golden"
    assert SKETCHES[version]["format"] == VERSIONS[version].sketch.code


def test_v1_keeps_its_files_and_new_indexes_get_the_newest() -> None:
    assert files(V1)[0].name == "vectors.json" and files(V1)[1].name == "sketches.json"
    assert list(VERSIONS)[-1] == FINGERPRINT_VERSION


@versions
def test_every_text_has_a_vector(version: str) -> None:
    assert set(STORED[version]["vectors"]) == set(TEXTS)
    assert len(TEXTS) >= 45
    assert max(len(t.encode()) for t in TEXTS.values()) >= 1_000_000


@versions
@pytest.mark.parametrize("name", sorted(TEXTS))
def test_golden_fingerprint(version: str, name: str) -> None:
    expected = STORED[version]["vectors"][name]
    fp = fingerprint(TEXTS[name], version)
    assert (fp.hex, fp.features, len(TEXTS[name])) == (expected["simhash"], expected["features"], expected["chars"]), (
        f"{name}: fingerprints of {IDS[version]} moved; a recipe change must be a new version"
    )


@versions
@pytest.mark.parametrize("name", sorted(TEXTS))
def test_golden_sketch(version: str, name: str) -> None:
    assert sketch_digest(TEXTS[name], version) == SKETCHES[version]["sha256"][name], (
        f"{name}: the {IDS[version]} sketch moved; stored sketches would be misread"
    )


@versions
def test_golden_pairs_say_what_they_should(version: str) -> None:
    vec = {name: int(v["simhash"], 16) for name, v in STORED[version]["vectors"].items()}

    def distance(a: str, b: str) -> int:
        return (vec[a] ^ vec[b]).bit_count()

    assert vec["empty"] == vec["emoji"] == vec["punctuation-cjk"] == 0  # no features, no bits
    assert distance("mixed-fullwidth-latin", "mixed-halfwidth-latin") == 0  # NFKC folds full width
    assert distance("en-upper", "en-sentence") == 0  # case folding
    assert distance("zh-seed0-article", "zh-seed4-article") > 10  # different articles on one topic


@versions
def test_an_edited_long_article_stays_within_distance_3(version: str) -> None:
    article = TEXTS["zh-seed4-article"]
    edited = article[:1000] + "关注我们的公众号获取更多资讯。" + article[1000:].replace("2019", "2020") + "（完）"
    assert (fingerprint(article, version).value ^ fingerprint(edited, version).value).bit_count() <= 3
