"""(Re)write tests/golden/vectors.json and sketches.json from tests/golden/texts.py.

Refuses to change an expected fingerprint while FINGERPRINT_VERSION stays the same: a recipe change that
moves fingerprints must be named by a new version, since stored fingerprints made by the old one no longer
compare.  Likewise a sketch may only change with a new SKETCH_FORMAT.
Run: .venv/bin/python tests/golden/make_vectors.py
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from texts import golden_texts  # noqa: E402

from simhash_server.fingerprint import FINGERPRINT_VERSION, fingerprint  # noqa: E402
from simhash_server.fingerprint.sketch import SKETCH_FORMAT  # noqa: E402


def sketch_digest(text: str) -> str:
    return hashlib.sha256(fingerprint(text, sketch=True).sketch).hexdigest()


def write_sketches() -> int:
    path = HERE / "sketches.json"
    old = json.loads(path.read_text()) if path.is_file() else {"format": None, "sha256": {}}
    digests = {name: sketch_digest(text) for name, text in golden_texts().items()}
    if old["format"] == SKETCH_FORMAT:
        moved = [n for n, v in digests.items() if n in old["sha256"] and old["sha256"][n] != v]
        if moved:
            print(
                f"refusing: {len(moved)} sketches changed but SKETCH_FORMAT is still {SKETCH_FORMAT}", file=sys.stderr
            )
            return 1
    path.write_text(json.dumps({"format": SKETCH_FORMAT, "sha256": digests}, indent=1) + "\n")
    print(f"wrote {len(digests)} sketch digests for format {SKETCH_FORMAT}")
    return 0


def main() -> int:
    path = HERE / "vectors.json"
    old = json.loads(path.read_text()) if path.is_file() else {"version": None, "vectors": {}}
    vectors = {}
    for name, text in golden_texts().items():
        fp = fingerprint(text)
        vectors[name] = {"simhash": fp.hex, "features": fp.features, "chars": len(text)}
    if old["version"] == FINGERPRINT_VERSION:
        moved = [n for n, v in vectors.items() if n in old["vectors"] and old["vectors"][n] != v]
        if moved:
            print(
                f"refusing: {len(moved)} fingerprints changed (e.g. {moved[:3]}) but FINGERPRINT_VERSION is still "
                f"{FINGERPRINT_VERSION!r}; bump its revision in server/simhash_server/fingerprint.py",
                file=sys.stderr,
            )
            return 1
    path.write_text(
        json.dumps({"version": FINGERPRINT_VERSION, "vectors": vectors}, indent=1, ensure_ascii=False) + "\n"
    )
    print(f"wrote {len(vectors)} vectors for {FINGERPRINT_VERSION}")
    return write_sketches()


if __name__ == "__main__":
    sys.exit(main())
