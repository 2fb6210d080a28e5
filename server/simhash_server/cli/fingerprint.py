"""`simhash-index fingerprint`: JSON lines of texts in, JSON lines of fingerprints out, in input order."""

from __future__ import annotations

import base64
import json
import sys
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from itertools import islice
from typing import IO, Any

import click

from simhash_server.cli.jsonl import json_object
from simhash_server.cli.options import version_option

BATCH_LINES = 512  # per batch (a worker's unit of work): bounds memory whatever the input size


def parse_line(line: str) -> tuple[Any, str]:
    """(id, text) of one input line; ValueError names what is wrong."""
    record = json_object(line)
    if "id" not in record:
        raise ValueError('no "id" field')
    if "text" not in record:
        raise ValueError('no "text" field')
    if not isinstance(record["text"], str):
        raise ValueError(f'"text" must be a string, got {type(record["text"]).__name__}')
    return record["id"], record["text"]


def _fingerprint_batch(
    batch: list[tuple[int, str]], version: str, sketch: bool = False
) -> list[tuple[int, str | None, str | None]]:
    """(line number, output line or None, error or None) for each input line, in order."""
    from simhash_server.fingerprint import fingerprint

    out: list[tuple[int, str | None, str | None]] = []
    for lineno, line in batch:
        try:
            doc_id, text = parse_line(line)
        except ValueError as exc:
            out.append((lineno, None, str(exc)))
            continue
        fp = fingerprint(text, version, sketch=sketch)
        record = {"id": doc_id, "simhash": fp.hex, "features": fp.features, "fingerprint_version": version}
        if sketch:  # what bulk-load and hfile-load take beside the simhash, so the document verifies
            record["sketch"] = base64.b64encode(fp.sketch).decode("ascii")
        out.append((lineno, json.dumps(record, ensure_ascii=False), None))
    return out


def _batches(lines: Iterable[str], size: int) -> Iterator[list[tuple[int, str]]]:
    numbered = ((n, line) for n, line in enumerate(lines, start=1) if line.strip())
    while batch := list(islice(numbered, size)):
        yield batch


def run(source: IO[str], sink: IO[str], workers: int, version: str, sketch: bool = False) -> int:
    """Fingerprint every line; returns the number of bad lines (each reported on stderr)."""
    bad = 0

    def emit(results: list[tuple[int, str | None, str | None]]) -> None:
        nonlocal bad
        for lineno, output, error in results:
            if error is not None:
                bad += 1
                click.echo(f"line {lineno}: {error}", err=True)
            else:
                sink.write(output + "\n")

    if workers <= 1:
        for batch in _batches(source, BATCH_LINES):
            emit(_fingerprint_batch(batch, version, sketch))
        return bad
    with ProcessPoolExecutor(max_workers=workers) as pool:
        # Two batches per worker in flight: workers never wait for the output of a slow batch to be written,
        # and memory stays bounded whatever the input size.  Results are written in input order.
        pending: deque[Future[list[tuple[int, str | None, str | None]]]] = deque()
        for batch in _batches(source, BATCH_LINES):
            pending.append(pool.submit(_fingerprint_batch, batch, version, sketch))
            if len(pending) >= 2 * workers:
                emit(pending.popleft().result())
        while pending:
            emit(pending.popleft().result())
    return bad


@click.command()
@click.option(
    "--input",
    "-i",
    "source",
    type=click.File("r", encoding="utf-8"),
    default="-",
    help='JSON lines {"id": ..., "text": ...}.  [default: stdin]',
)
@click.option(
    "--output",
    "-o",
    "sink",
    type=click.File("w", encoding="utf-8", atomic=False),
    default="-",
    help='JSON lines {"id", "simhash": "<16 hex>", "features": N, "fingerprint_version"}.  [default: stdout]',
)
@click.option(
    "--workers",
    "-w",
    type=click.IntRange(1),
    default=1,
    show_default=True,
    help="Processes fingerprinting in parallel; output keeps input order.",
)
@click.option(
    "--sketch",
    is_flag=True,
    help='Write each text\'s verification sketch too ("sketch": base64), for bulk-load and hfile-load.',
)
@version_option("The recipe, as the index to load into was created with.  [default: the newest]")
def fingerprint_command(
    source: IO[str], sink: IO[str], workers: int, sketch: bool, fingerprint_version: str | None
) -> None:
    """Fingerprint texts.  A bad line is reported on stderr with its line number, the rest is still
    processed, and the exit status is 1 if any line was bad."""
    from simhash_server.fingerprint import FINGERPRINT_VERSION

    bad = run(source, sink, workers, fingerprint_version or FINGERPRINT_VERSION, sketch)
    sink.flush()
    if bad:
        click.echo(f"{bad} bad line(s)", err=True)
        sys.exit(1)
