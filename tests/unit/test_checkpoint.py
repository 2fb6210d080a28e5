"""Bulk load's checkpoint: written atomically, tied to its load, and resumed from exactly where it stopped.

These run the loader's own restore and chunking on real files; no HBase is reached (no worker starts).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simhash_server.bulk.checkpoint import CHECKPOINT_VERSION, BulkLoadError, read_checkpoint, write_checkpoint
from simhash_server.bulk.input import InputSource
from simhash_server.bulk.load import LoadOptions, _Load
from simhash_server.index.config import StoreConfig


def _input(tmp_path: Path, lines: int) -> InputSource:
    """A TSV input of ``lines`` documents (written once: a rewrite would be another file to a checkpoint)."""
    path = tmp_path / "in.tsv"
    text = "".join(f"doc{n}\t{n:016x}\n" for n in range(lines))
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return InputSource.detect(str(path), None, None, "hex")


def _options(tmp_path: Path, **kw) -> LoadOptions:
    return LoadOptions(
        StoreConfig(table_prefix="t"), tmp_path / "load.checkpoint", tmp_path / "load.rejects", batch_size=3, **kw
    )


def _save_after(load: _Load, chunks: int) -> None:
    """What a load that committed its first ``chunks`` chunks leaves behind."""
    for n, (chunk, _shares) in enumerate(load.chunks()):
        if n == chunks:
            break
        load.commit(chunk)
    load.save()


def test_write_replaces_atomically_and_read_checks_the_version(tmp_path: Path) -> None:
    path = tmp_path / "c"
    assert read_checkpoint(path) is None
    write_checkpoint(path, {"version": CHECKPOINT_VERSION, "line": 7})
    assert read_checkpoint(path) == {"version": CHECKPOINT_VERSION, "line": 7}
    assert not path.with_name("c.tmp").exists()
    path.write_text(json.dumps({"version": 99}))
    with pytest.raises(BulkLoadError, match="has version 99"):
        read_checkpoint(path)
    path.write_text("{torn")
    with pytest.raises(BulkLoadError, match="unreadable"):
        read_checkpoint(path)


def test_a_resume_continues_at_the_first_uncommitted_line(tmp_path: Path) -> None:
    source = _input(tmp_path, 20)
    first = _Load([source], _options(tmp_path, workers=2), lambda s: None)
    first.restore()
    _save_after(first, 1)  # one chunk of batch_size * workers = 6 lines
    first.rejects_file.close()

    again = _Load([_input(tmp_path, 20)], _options(tmp_path, workers=2, resume=True), lambda s: None)
    again.restore()
    assert again.stats.resumed_at_line == 7 and again.stats.lines == 6
    ids = [doc for _chunk, shares in again.chunks() for share in shares for doc, _fp, _text, _seen, _sketch in share]
    assert sorted(ids, key=lambda d: int(d[3:])) == [f"doc{n}" for n in range(6, 20)]


def test_an_unfinished_checkpoint_needs_resume_and_belongs_to_its_load(tmp_path: Path) -> None:
    load = _Load([_input(tmp_path, 20)], _options(tmp_path), lambda s: None)
    load.restore()
    _save_after(load, 1)
    load.rejects_file.close()
    with pytest.raises(BulkLoadError, match="pass --resume"):
        _Load([_input(tmp_path, 20)], _options(tmp_path), lambda s: None).restore()
    other = _options(tmp_path, resume=True)
    other.store = StoreConfig(table_prefix="another")
    with pytest.raises(BulkLoadError, match="belongs to another load"):
        _Load([_input(tmp_path, 20)], other, lambda s: None).restore()
    grown = _input(tmp_path, 21)  # the same path, another file
    with pytest.raises(BulkLoadError, match="belongs to another load"):
        _Load([grown], _options(tmp_path, resume=True), lambda s: None).restore()


def test_rejects_of_uncommitted_chunks_are_dropped_on_resume(tmp_path: Path) -> None:
    path = tmp_path / "in.tsv"
    path.write_text("a\tnot-hex\nb\t00000000000000a1\nc\t00000000000000a2\nd\talso-bad\ne\t00000000000000a3\n")
    source = InputSource.detect(str(path), None, None, "hex")
    load = _Load([source], _options(tmp_path, workers=1), lambda s: None)
    load.restore()
    _save_after(load, 1)  # lines 1-3, with the reject of line 1
    committed = (tmp_path / "load.rejects").read_text()
    assert committed.count("\n") == 1 and "\t1\t" in committed
    load.rejects_file.write("in.tsv\t4\tuncommitted\tx\n")  # written by a chunk that never committed
    load.rejects_file.close()
    again = _Load(
        [InputSource.detect(str(path), None, None, "hex")], _options(tmp_path, workers=1, resume=True), lambda s: None
    )
    again.restore()
    again.rejects_file.close()
    assert (tmp_path / "load.rejects").read_text() == committed
