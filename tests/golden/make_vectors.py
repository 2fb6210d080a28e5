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
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from texts import golden_texts  # noqa: E402

from simhash_server.fingerprint import V1, VERSIONS, fingerprint, short_name  # noqa: E402


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


def main() -> int:
    return max(write(version) for version in VERSIONS)


if __name__ == "__main__":
    sys.exit(main())
