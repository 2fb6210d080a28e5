"""One input file in an `hfile-load` map task: its bytes on stdin -> normalised records and rejects on stdout.

The task's Java half (server/mapreduce ``ParseJob``) opens the file where it lives (any Hadoop FileSystem),
streams its bytes here unchanged, and writes what comes back to the job's output.  Everything a record
means is decided by the same code as on the submitting machine: the input layer (``InputSource``: format by
name, decompression, rejects, the version and date checks) and ``stored_document`` (the index's recipe,
with the native extension where it is built).  So a fingerprint or a sketch never depends on where it was
made.

Frames on stdout, big-endian (``ParseJob.Texts`` reads them):

- ``R`` + a normalised record (normalized.normalized_record) whose seq is the record's line in the file;
- ``X`` + line (u64), length (u32), then UTF-8 ``reason<TAB>line text``: a reject;
- ``E`` + lines, records, rejects, and this process's CPU in milliseconds (u64 each): the file was read
  to its end.  A stream without it was cut short (the task fails, and is run again).  The CPU lets the job
  tell its Python's share of a task's CPU from the JVM's.

Run as ``python -m simhash_server.bulk.file_task NAME [options]`` (or a PEX whose module this is).  With
``--probe`` instead of a name it prints what ``probe`` returns: the job checks each NodeManager with it before
it submits the parse job (``NodeCheck``), and compares it with the pinned lines.  A node that passed is
remembered, so each parse task also gets ``--expect-probe`` with those lines: it makes the probe before any
record and exits with status 3 (``OTHER_PROBE``), naming what it made, if it differs.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import struct
import sys
from typing import IO

from simhash_server.bulk.input import COMPRESSIONS, FINGERPRINT_FORMATS, FORMATS, InputSource
from simhash_server.bulk.normalized import normalized_record, stored_document
from simhash_server.bulk.records import Record, Reject
from simhash_server.fingerprint import FINGERPRINT_VERSION, recipe_of
from simhash_server.fingerprint.versions import short_name

__all__ = ["OTHER_PROBE", "main", "pinned_probe", "probe", "run"]

PROBE_TEXT = "海量文本的近似重复检测：同一篇文章换了页眉页脚。 A near-duplicate probe, 2026."
# The first two lines of ``probe`` for each recipe, by short name: what the submitting command sends the
# NodeManagers' check, so that it need not fingerprint (and load jieba's and OpenCC's tables: ~2 s of CPU,
# the biggest part of its own) to know them.  tests/unit/test_cluster_inputs.py keeps them equal to what
# this build computes.
_PINNED_PROBES = {
    "v1": ("a4fc28be24239f50", "8293132f20c95c2f"),
    "v2": ("b48428be25e29e08", "7ce003654b746127"),
    "v3": ("0e3ab89a635a94d1", "7ce003654b746127"),
    "v4": ("8ecf33f1110d3df1", "576508e2692934fb"),
    "v4-nofold": ("8ecf33f1110d3df1", "576508e2692934fb"),
    "v5": ("8ecf33f1110d3df1", "7b41df523bd7f7a1"),
    "v6": ("8ecf33f1110d3df1", "6abc5643a4eaede8"),
    "v7": ("8ecf33f1110d3df1", "6abc5643a4eaede8"),  # v6's fingerprint and sketch
}

OTHER_PROBE = 3  # the exit status when the probe differs from --expect-probe (NodeCheck.OTHER_PROBE)
_REJECT = struct.Struct(">QI")
_END = struct.Struct(">QQQQ")


def run(source: InputSource, version: str, out: IO[bytes]) -> tuple[int, int, int]:
    """Every record of ``source`` framed onto ``out``; (lines, records, rejects)."""
    lines = records = rejects = 0
    for item, _, _ in source.records():
        lines += 1
        if isinstance(item, Reject):
            rejects += 1
            text = f"{item.reason}\t{item.raw}".encode("utf-8", "replace")
            out.write(b"X" + _REJECT.pack(item.line, len(text)) + text)
            continue
        assert isinstance(item, Record)
        doc = stored_document(item.doc_id, item.simhash, item.text, version, sketch=item.sketch)
        raw = normalized_record(item.line, doc.fingerprint, doc.doc_id.encode(), doc.sketch, item.indexed_at_ms)
        out.write(b"R" + raw)
        records += 1
    out.write(b"E" + _END.pack(lines, records, rejects, _cpu_ms()))
    return lines, records, rejects


def _cpu_ms() -> int:
    """This process's CPU since it started (a PEX's bootstrap, which exec()s into its venv, included) and
    that of the children it waited for."""
    times = os.times()
    return int((times.user + times.system + times.children_user + times.children_system) * 1000)


def probe(version: str) -> str:
    """``fingerprint HEX``, ``sketch DIGEST`` and ``python VERSION`` lines: the first two must be the same
    wherever the tasks run (the same recipe, native extension or not); the last is for the message."""
    from simhash_server.fingerprint.pipeline import fingerprint  # the command, which only pins it, starts without

    made = fingerprint(PROBE_TEXT, version, sketch=True)
    digest = hashlib.sha256(made.sketch).hexdigest()[:16]
    return f"fingerprint {made.value:016x}\nsketch {digest}\npython {platform.python_version()}\n"


def pinned_probe(version: str) -> str:
    """The fingerprint and sketch lines ``probe(version)`` prints, without fingerprinting."""
    fingerprint_hex, sketch_digest = _PINNED_PROBES[short_name(recipe_of(version).version)]
    return f"fingerprint {fingerprint_hex}\nsketch {sketch_digest}\n"


def _reject_all(name: str, reason: str, out: IO[bytes]) -> None:
    """A file that cannot be read at all (its format not told by its name): one reject at line 0."""
    text = f"{reason}\t".encode()
    out.write(b"X" + _REJECT.pack(0, len(text)) + text + b"E" + _END.pack(1, 0, 1, _cpu_ms()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="simhash_server.bulk.file_task", description=__doc__.split("\n")[0])
    parser.add_argument("name", nargs="?", help="the file's path, for its format and compression by name")
    parser.add_argument("--probe", action="store_true", help="print the probe's lines (see probe) and exit")
    parser.add_argument("--format", choices=FORMATS)
    parser.add_argument("--compression", choices=COMPRESSIONS)
    parser.add_argument("--fingerprint-format", choices=FINGERPRINT_FORMATS, default="auto")
    parser.add_argument("--fingerprint-version", default=FINGERPRINT_VERSION)
    parser.add_argument("--retention-seconds", type=int)
    parser.add_argument("--expect-probe", help="the lines the probe must begin with, checked before any record")
    args = parser.parse_args(argv)
    recipe_of(args.fingerprint_version)  # an unknown version stops here, before any record
    if args.probe:
        sys.stdout.write(probe(args.fingerprint_version))
        return 0
    if args.expect_probe is not None:
        made = probe(args.fingerprint_version)
        if not made.startswith(args.expect_probe):
            said = " ".join(made.split())
            sys.stderr.write(
                f"this node's Python makes another probe than the recipe's ({' '.join(args.expect_probe.split())}): "
                f"{said}\n"
            )
            return OTHER_PROBE
    if args.name is None:
        parser.error("give the input file's name, or --probe")
    out = sys.stdout.buffer
    try:
        source = InputSource.detect(args.name, args.format, args.compression, args.fingerprint_format)
    except ValueError as exc:
        _reject_all(args.name, str(exc), out)
        out.flush()
        return 0
    source.path = "-"  # the bytes come on stdin
    source.fingerprint_version = args.fingerprint_version
    source.retention_seconds = args.retention_seconds
    run(source, args.fingerprint_version, out)
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
