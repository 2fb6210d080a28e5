"""Every repository path that the docs, the Makefile and the code's comments name exists (and so does every
docs/*.md#anchor they link to): a moved or deleted file leaves no dead reference behind."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
# Where each package's own paths (``simhash_server/index/keys.py``, ``index/keys.py``) live in the tree.
PACKAGES = {
    "simhash_server": "server/simhash_server",
    "simhash_client": "client/simhash_client",
    "simhash_index": "client/simhash_index",
    "simhash_schema": "hbase_schema/simhash_schema",
    "simhash_deploy": "deploy/simhash_deploy",
}
SERVER_ROOMS = ("fingerprint", "index", "rpc", "bulk", "clusters", "cli")
TOP = ("server", "client", "hbase_schema", "deploy", "tests", "docs", "benchmarks", "proto", ".ci")
PATH = re.compile(
    r"(?<![\w./-])((?:" + "|".join(re.escape(t) for t in (*TOP, *PACKAGES, *SERVER_ROOMS)) + r")/[\w./-]*\w)"
    r"(#[\w-]+)?"
)
TEXT_SUFFIXES = {".md", ".py", ".rs", ".java", ".toml", ".yaml", ".yml", ".xml", ".sh", ".proto", ".jsh", ".cfg"}


def _tracked() -> list[Path]:
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    files = [ROOT / line for line in listed.splitlines()]
    return [
        f
        for f in files
        if f.is_file()
        and (f.suffix in TEXT_SUFFIXES or f.name in {"Makefile", "run"} or f.name.endswith("Dockerfile"))
        and "_pb2" not in f.name
        and "golden" not in f.parts
    ]


def _resolve(path: str) -> list[Path]:
    """The places ``path`` may mean: from the root, or inside its package."""
    head, _, rest = path.partition("/")
    if head in PACKAGES:
        return [ROOT / PACKAGES[head] / rest]
    if head in SERVER_ROOMS:
        return [ROOT / "server/simhash_server" / path, ROOT / path]
    return [ROOT / path]


def _anchors(markdown: Path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings."""
    out = set()
    for line in markdown.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return out


def _references() -> list[tuple[str, str, str | None]]:
    found = []
    for f in _tracked():
        text = f.read_text(encoding="utf-8", errors="replace")
        for n, line in enumerate(text.splitlines(), 1):
            for match in PATH.finditer(line):
                path, anchor = match.group(1), match.group(2)
                after = line[match.end() : match.end() + 1]
                if path == "docs/s" or "NAME" in path or after in ("*", "$", "%", "-", "{", "<"):
                    continue  # a unit (documents/s), or a pattern rather than a path
                if path.startswith("var/"):
                    continue  # made at run time
                found.append((f"{f.relative_to(ROOT)}:{n}", path.rstrip("."), anchor))
    return found


def test_the_scan_finds_references() -> None:
    paths = {path for _, path, _ in _references()}
    assert {"docs/decisions.md", "server/native"} <= paths  # named in README and the Makefile


def _in_history(where: str, path: str) -> bool:
    """A retired file named with the commit that still holds it (docs/decisions.md: "at 71f7471")."""
    file, _, n = where.rpartition(":")
    line = (ROOT / file).read_text(encoding="utf-8").splitlines()[int(n) - 1]
    commits = re.findall(r"\b(?:at |show )([0-9a-f]{7,40})\b", line)
    git = ["git", "-C", str(ROOT), "cat-file", "-e"]
    places = [p.relative_to(ROOT).as_posix() for p in _resolve(path)]
    return any(
        subprocess.run([*git, f"{c}:{place}"], capture_output=True).returncode == 0 for c in commits for place in places
    )


def test_every_named_path_exists() -> None:
    dead = [
        f"{where}: {path}"
        for where, path, _ in _references()
        if not any(p.exists() for p in _resolve(path)) and not _in_history(where, path)
    ]
    assert not dead, "paths named that do not exist:\n" + "\n".join(dead)


def test_every_linked_anchor_exists() -> None:
    dead = []
    for where, path, anchor in _references():
        markdown = ROOT / path
        if anchor and path.endswith(".md") and markdown.is_file() and anchor[1:] not in _anchors(markdown):
            dead.append(f"{where}: {path}{anchor}")
    assert not dead, "anchors linked that no heading makes:\n" + "\n".join(dead)
