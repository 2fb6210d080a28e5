"""(Re)write the golden vectors of every fingerprint version from tests/golden/texts.py.

Per version: ``vectors[-vN].json`` (fingerprint and feature count of each text) and ``sketches[-vN].json``
(a digest of each text's sketch); v1 keeps the unsuffixed names it always had.  Refuses to change an
expected fingerprint or sketch of an existing version: a recipe change that moves them must be a new
version (simhash_server/fingerprint/versions.py), since stored fingerprints made by the old one no longer
compare.  Run: make golden
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from texts import golden_texts  # noqa: E402

from simhash_server.fingerprint import V1, VERSIONS, fingerprint, short_name  # noqa: E402
from simhash_server.fingerprint.renames import parse, renamed  # noqa: E402
from simhash_server.fingerprint.sketch import similarity  # noqa: E402
from simhash_server.index.keys import drawer_keys, part_row_keys  # noqa: E402


def files(version: str) -> tuple[Path, Path]:
    """(vectors, sketches) files of a version."""
    suffix = "" if version == V1 else f"-{short_name(version)}"
    return HERE / f"vectors{suffix}.json", HERE / f"sketches{suffix}.json"


def sketch_digest(text: str, version: str) -> str:
    return hashlib.sha256(fingerprint(text, version, sketch=True).sketch).hexdigest()


def _moved(path: Path, tag_key: str, tag: object, values_key: str, new: dict) -> list[str]:
    """Names whose stored value under the same version (or sketch format) differs from the new one."""
    if not path.is_file():
        return []
    old = json.loads(path.read_text())
    if old[tag_key] != tag:
        return []
    return [n for n, v in new.items() if n in old[values_key] and v != old[values_key][n]]


def write(version: str) -> int:
    vectors_path, sketches_path = files(version)
    texts = golden_texts()
    vectors = {}
    for name, text in texts.items():
        fp = fingerprint(text, version)
        vectors[name] = {"simhash": fp.hex, "features": fp.features, "chars": len(text)}
    form = VERSIONS[version].sketch.code
    digests = {name: sketch_digest(text, version) for name, text in texts.items()}
    moved = _moved(vectors_path, "version", version, "vectors", vectors)
    moved += _moved(sketches_path, "format", form, "sha256", digests)
    if moved:
        print(f"refusing: {version}: {len(moved)} golden values moved (e.g. {moved[:3]})", file=sys.stderr)
        return 1
    vectors_path.write_text(json.dumps({"version": version, "vectors": vectors}, indent=1, ensure_ascii=False) + "\n")
    sketches_path.write_text(json.dumps({"format": form, "sha256": digests}, indent=1) + "\n")
    print(f"wrote {len(vectors)} vectors and sketch digests for {version}")
    return 0


# -- the row-key codec and sketch comparison, which the Java jobs (server/mapreduce) hold to these files too
KEYS_FILE, PAIRS_FILE = HERE / "drawer-keys.tsv", HERE / "sketch-pairs.tsv"
PARTS_FILE = HERE / "sketch-parts.tsv"
PART_KEYS_FILE = HERE / "part-row-keys.tsv"
RENAMED_FILE = HERE / "renamed-trailers.tsv"
KEY_EDGES = [0, 2**64 - 1, 1, 1 << 63, 0x0123456789ABCDEF, 0xFEDCBA9876543210, 0x5555555555555555]


def codec_fingerprints() -> list[int]:
    """Edges, one bit at each place, and random fingerprints from a fixed seed."""
    rng = random.Random(20261126)
    return KEY_EDGES + [1 << b for b in range(0, 64, 7)] + [rng.getrandbits(64) for _ in range(40)]


def write_codec() -> None:
    lines = ["# fingerprint\tits 10 drawer row keys (drawer value, flag, fingerprint), hex; index/keys.py"]
    lines += [f"{fp:016x}\t{','.join(k.hex() for k in drawer_keys(fp))}" for fp in codec_fingerprints()]
    KEYS_FILE.write_text("\n".join(lines) + "\n")
    lines = ["# part fingerprint\tdocument fingerprint\ttheir 10 part row keys (recipe v7), hex; index/keys.py"]
    fps = codec_fingerprints()
    for part, whole in zip(fps, reversed(fps), strict=True):
        lines.append(f"{part:016x}\t{whole:016x}\t{','.join(k.hex() for k in part_row_keys(part, whole))}")
    PART_KEYS_FILE.write_text("\n".join(lines) + "\n")
    texts = golden_texts()
    near = [(a, b) for a in texts for b in texts if a != b and b.startswith(a) and b != "one-megabyte"]
    far = [(a, b) for a in texts for b in texts if a < b and a[:3] == b[:3] == "zh-"][:12]
    pairs = [*near, ("en-sentence", "en-upper"), ("mixed-fullwidth-latin", "mixed-halfwidth-latin"), *far]
    pairs += [("zh-seed0-article", "zh-seed3-article"), ("html-tags-crlf", "zh-seed2-article")]  # v5: with parts
    lines = ["# version\tsketch a, hex\tsketch b, hex\tsimilarity(a, b) as fingerprint/sketch.py gives it (repr)"]
    # A recipe that differs from an earlier one only in its index's part rows (v7) makes that one's sketches.
    sketching = [v for v in VERSIONS if not VERSIONS[v].part_rows]
    for version in (V1, *(v for v in sketching if VERSIONS[v].sketch.code != VERSIONS[V1].sketch.code)):
        for a, b in pairs:
            sa, sb = (fingerprint(texts[n], version, sketch=True).sketch for n in (a, b))
            lines.append(f"{short_name(version)}\t{sa.hex()}\t{sb.hex()}\t{float(similarity(sa, sb))!r}")
    PAIRS_FILE.write_text("\n".join(lines) + "\n")
    lines = ["# version\tsketch, hex\tthe part fingerprints after its bins, hex, in order (sketch_format.stored_parts)"]
    for version in (v for v in sketching if VERSIONS[v].sketch.parts):
        for text in texts.values():
            made = fingerprint(text, version, sketch=True)
            lines.append(f"{short_name(version)}\t{made.sketch.hex()}\t{','.join(f'{p:016x}' for p in made.parts)}")
    PARTS_FILE.write_text("\n".join(lines) + "\n")
    # Made-up trailers, with words and contexts given twice, as a sketch loaded from elsewhere may hold them.
    rng = random.Random(20261207)
    lines = ["# renames trailer a, hex\trenames trailer b, hex\trenames.renamed(a, b) (format 5)"]
    for _ in range(300):
        a, b = _made_up_trailer(rng), _made_up_trailer(rng)
        lines.append(f"{a.hex()}\t{b.hex()}\t{str(renamed(parse(a, 0), parse(b, 0))).lower()}")
    RENAMED_FILE.write_text("\n".join(lines) + "\n")
    written = (KEYS_FILE, PART_KEYS_FILE, PAIRS_FILE, PARTS_FILE, RENAMED_FILE)
    print(f"wrote {', '.join(f.name for f in written)}")


def _made_up_trailer(rng: random.Random) -> bytes:
    words = rng.randint(0, 5)
    out = bytearray([words])
    for _ in range(words):
        out += rng.choice([1, 2, 3, 0xFFFFFFFF]).to_bytes(4, "big")
        contexts = rng.randint(0, 7)
        out.append(contexts)
        for _ in range(contexts):
            out += rng.choice([0, 1, 2, 3, 4, 5, 6, 0x80000000]).to_bytes(4, "big")
    return bytes(out)


def main() -> int:
    write_codec()
    return max(write(version) for version in VERSIONS)


if __name__ == "__main__":
    sys.exit(main())
