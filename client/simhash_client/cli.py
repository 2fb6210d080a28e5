"""`simhash-index query|index|dedup|get|delete|stats`: call a running server through simhash_client.

Output is JSON (one object per line); fingerprints are 16 hex digits.  Needs only the client install.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import click

from simhash_client.types import DedupResult, Hit, parse_simhash, to_hex

if TYPE_CHECKING:
    from simhash_client.client import SimHashClient
from simhash_client.times import parse_duration, parse_instant


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    ctx.meta[f"simhash.{param.name}"] = value
    return value


def _security_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """TLS and token options, kept in the click context for _client (the commands never see them)."""
    path = click.Path(dir_okay=False, exists=True)
    options = [
        click.option("--tls", is_flag=True, envvar="SIMHASH_TLS", help="Use TLS (system roots unless --tls-ca)."),
        click.option("--tls-ca", type=path, envvar="SIMHASH_TLS_CA", help="CA certificates (PEM) of the server."),
        click.option("--tls-cert", type=path, envvar="SIMHASH_TLS_CLIENT_CERT", help="Client certificate (PEM)."),
        click.option("--tls-key", type=path, envvar="SIMHASH_TLS_CLIENT_KEY", help="Client key (PEM)."),
        click.option("--token-file", type=path, envvar="SIMHASH_TOKEN_FILE", help="Bearer token (or SIMHASH_TOKEN)."),
    ]
    for option in reversed(options):
        command = option(command)
    for param in command.__click_params__[-len(options) :]:  # type: ignore[attr-defined]
        param.expose_value, param.callback = False, _remember
    return command


def client_options(command: Callable[..., Any]) -> Callable[..., Any]:
    command = _security_options(command)
    command = click.option(
        "--timeout",
        type=click.FloatRange(0.001),
        default=10.0,
        show_default=True,
        envvar="SIMHASH_TIMEOUT",
        help="Seconds per call, retries included.",
    )(command)
    return click.option(
        "--target",
        default="127.0.0.1:50051",
        show_default=True,
        envvar="SIMHASH_TARGET",
        help="host:port of the server.",
    )(command)


def content_options(command: Callable[..., Any]) -> Callable[..., Any]:
    command = click.option("--simhash", help="A fingerprint: 16 hex digits.")(command)
    command = click.option("--text-file", type=click.File("r", encoding="utf-8"), help="Read the text from a file.")(
        command
    )
    return click.option("--text", help="The text.")(command)


def _content(text: str | None, text_file: IO[str] | None, simhash: str | None) -> dict[str, Any]:
    given = [name for name, value in (("--text", text), ("--text-file", text_file), ("--simhash", simhash)) if value]
    if len(given) != 1:
        raise click.UsageError(
            "give exactly one of --text, --text-file, --simhash" + (f" (got {', '.join(given)})" if given else "")
        )
    if simhash is not None:
        return {"simhash": simhash}
    return {"text": text if text is not None else text_file.read()}  # type: ignore[union-attr]


def _security() -> dict[str, Any]:
    meta = click.get_current_context().meta

    def read(name: str) -> bytes | None:
        path = meta.get(f"simhash.{name}")
        return None if path is None else Path(path).read_bytes()

    token_file = meta.get("simhash.token_file")
    token = Path(token_file).read_text().strip() if token_file else os.environ.get("SIMHASH_TOKEN")
    return {
        "tls": bool(meta.get("simhash.tls")),
        "root_certificates": read("tls_ca"),
        "client_certificate": read("tls_cert"),
        "client_key": read("tls_key"),
        "token": token or None,
    }


@contextmanager
def _client(target: str, timeout: float) -> Iterator[SimHashClient]:
    # gRPC is imported by the command that calls, not with the command line: the server's commands start
    # without it.
    from simhash_client import SimHashClient, SimHashError

    try:
        with SimHashClient(target, timeout=timeout, **_security()) as client:
            yield client
    except SimHashError as exc:
        raise click.ClickException(f"{exc.code.name}: {exc.details}") from None
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None


def _hit(hit: Hit) -> dict[str, Any]:
    record: dict[str, Any] = {"doc_id": hit.doc_id, "simhash": hit.hex, "distance": hit.distance}
    if hit.verified is not None:
        record["verified"] = hit.verified
    if hit.similarity is not None:
        record["similarity"] = round(hit.similarity, 4)
    return record


def _emit(record: dict[str, Any]) -> None:
    click.echo(json.dumps(record, ensure_ascii=False))


distance_option = click.option(
    "--max-distance",
    type=click.IntRange(0),
    default=None,
    help="0..8 for a text [default: 8; 3 with --min-similarity 0]; 0..3 for --simhash [3]",
)
similarity_option = click.option(
    "--min-similarity",
    type=click.FloatRange(0.0, 1.0),
    default=None,
    help="Keep only candidates whose stored sketch estimates at least this similarity (needs text) "
    "[default: the index's floor; 0: the fingerprint's own answer]",
)
limit_option = click.option("--limit", type=click.IntRange(0), default=0, help="Most hits [default: the server's]")


def _parsed(parse: Callable[[str], Any]) -> Callable[[click.Context, click.Parameter, str | None], Any]:
    def callback(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
        try:
            return None if value is None else parse(value)
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from None

    return callback


age_option = click.option(
    "--max-age",
    callback=_parsed(parse_duration),
    help="Only documents seen within this long before now (72h, 30d, 90m) [default: any time]",
)
seen_option = click.option(
    "--indexed-at",
    callback=_parsed(parse_instant),
    help="When the document was first seen: RFC 3339 (2026-11-24T08:00:00Z) or Unix seconds [default: now]",
)


@click.command()
@client_options
@content_options
@distance_option
@limit_option
@similarity_option
@age_option
def query(target: str, timeout: float, text, text_file, simhash, max_distance, limit, min_similarity, max_age) -> None:
    """Print the stored near-duplicates of a text or fingerprint, most similar (verified) or closest first."""
    content = _content(text, text_file, simhash)
    with _client(target, timeout) as client:
        hits = client.query(
            **content, max_distance=max_distance, limit=limit, min_similarity=min_similarity, max_age=max_age
        )
        for hit in hits:
            _emit(_hit(hit))


@click.command()
@client_options
@click.argument("doc_id")
@content_options
@seen_option
def index(target: str, timeout: float, doc_id: str, text, text_file, simhash, indexed_at) -> None:
    """Store (upsert) one document's fingerprint."""
    content = _content(text, text_file, simhash)
    with _client(target, timeout) as client:
        _emit({"doc_id": doc_id, "simhash": to_hex(client.index(doc_id, **content, indexed_at=indexed_at))})


def _dedup_record(doc_id: str, result: DedupResult, verified: bool) -> dict[str, Any]:
    return {
        "doc_id": doc_id,
        "stored": result.stored,
        "simhash": to_hex(result.simhash),
        "duplicates": [_hit(h) for h in result.hits],
        **({"below_similarity": result.below_similarity} if verified else {}),
    }


@click.command()
@client_options
@click.argument("doc_id", required=False)
@content_options
@click.option(
    "--input",
    "input_file",
    type=click.File("r", encoding="utf-8"),
    help='JSON lines {"id", "text"} or {"id", "simhash"}, optionally with "indexed_at", to deduplicate in order, '
    'instead of DOC_ID ("-": stdin).',
)
@click.option("--batch-size", type=click.IntRange(1, 1000), default=100, show_default=True, help="Lines per call.")
@distance_option
@limit_option
@similarity_option
@age_option
@seen_option
def dedup(
    target: str,
    timeout: float,
    doc_id: str | None,
    text,
    text_file,
    simhash,
    input_file,
    batch_size: int,
    max_distance,
    limit,
    min_similarity,
    max_age,
    indexed_at,
) -> None:
    """Store the document unless a near-duplicate is already stored; print what happened.

    With --input, every line in order (DeduplicateBatch): a line near an earlier one is not stored and
    names it.  A line that is not a document, or that the server refuses, is reported on stderr by its
    number (the exit status is then 1); the others print one result each, in input order."""
    options = {"max_distance": max_distance, "limit": limit, "min_similarity": min_similarity, "max_age": max_age}
    if input_file is not None:
        if doc_id is not None or text or text_file or simhash or indexed_at:
            raise click.UsageError(
                '--input replaces DOC_ID, --text, --text-file, --simhash and --indexed-at (a line\'s own "indexed_at")'
            )
        with _client(target, timeout) as client:
            failed = _dedup_lines(client, input_file, batch_size, options)
        if failed:
            raise SystemExit(1)
        return
    if doc_id is None:
        raise click.UsageError("give DOC_ID with --text, --text-file or --simhash, or --input")
    content = _content(text, text_file, simhash)
    with _client(target, timeout) as client:
        result = client.deduplicate(doc_id, **content, **options, indexed_at=indexed_at)
    _emit(_dedup_record(doc_id, result, min_similarity is not None))


def _document_line(line: str) -> dict[str, Any]:
    """One --input line as deduplicate_batch's item; ValueError saying what is wrong with it."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(record, dict) or not isinstance(record.get("id"), str):
        raise ValueError('expected an object with a string "id"')
    if ("text" in record) == ("simhash" in record):
        raise ValueError('expected exactly one of "text" and "simhash"')
    item: dict[str, Any] = {"doc_id": record["id"]}
    if "indexed_at" in record:
        seen = record["indexed_at"]
        if not isinstance(seen, str | int | float) or isinstance(seen, bool):
            raise ValueError('"indexed_at" must be an RFC 3339 string or Unix seconds')
        try:
            item["indexed_at"] = parse_instant(str(seen))
        except ValueError as exc:
            raise ValueError(f'"indexed_at": {exc}') from None
    if "simhash" in record:
        return {**item, "simhash": parse_simhash(record["simhash"])}
    if not isinstance(record["text"], str):
        raise ValueError('"text" must be a string')
    return {**item, "text": record["text"]}


def _dedup_lines(client: SimHashClient, lines: IO[str], batch_size: int, options: dict[str, Any]) -> int:
    """Deduplicate every line in order, batch_size lines a call; how many lines failed."""
    failed = 0
    batch: list[tuple[int, dict[str, Any]]] = []

    def send() -> int:
        items = [{**item, **options} for _, item in batch]
        bad = 0
        for (number, item), outcome in zip(batch, client.deduplicate_batch(items), strict=True):
            if outcome.ok and outcome.result is not None:
                _emit(_dedup_record(item["doc_id"], outcome.result, options["min_similarity"] is not None))
            else:
                click.echo(f"line {number}: {outcome.error}", err=True)
                bad += 1
        batch.clear()
        return bad

    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            batch.append((number, _document_line(line)))
        except ValueError as exc:
            click.echo(f"line {number}: {exc}", err=True)
            failed += 1
            continue
        if len(batch) == batch_size:
            failed += send()
    if batch:
        failed += send()
    return failed


@click.command()
@client_options
@click.argument("doc_ids", nargs=-1, required=True)
def get(target: str, timeout: float, doc_ids: tuple[str, ...]) -> None:
    """Print the stored fingerprint of each id (exit status 1 if any is unknown)."""
    from simhash_client import NotFound

    missing = 0
    with _client(target, timeout) as client:
        for doc_id in doc_ids:
            try:
                _emit({"doc_id": doc_id, "simhash": to_hex(client.get(doc_id))})
            except NotFound as exc:
                missing += 1
                click.echo(f"NOT_FOUND: {exc.details}", err=True)
    if missing:
        raise SystemExit(1)


@click.command()
@client_options
@click.argument("doc_ids", nargs=-1, required=True)
def delete(target: str, timeout: float, doc_ids: tuple[str, ...]) -> None:
    """Remove documents; print how many existed."""
    with _client(target, timeout) as client:
        _emit({"deleted": client.delete(doc_ids)})


@click.command()
@client_options
def stats(target: str, timeout: float) -> None:
    """Print what the index holds."""
    with _client(target, timeout) as client:
        record = asdict(client.stats())
    record["top_fingerprints"] = [{"simhash": to_hex(fp), "documents": n} for fp, n in record["top_fingerprints"]]
    _emit(record)


@click.command()
@client_options
def health(target: str, timeout: float) -> None:
    """Exit 0 if the server says SERVING (gRPC health checking), 1 if not: for container health checks."""
    with _client(target, timeout) as client:
        serving = client.health()
    _emit({"serving": serving})
    if not serving:
        raise SystemExit(1)


COMMANDS = {
    "query": query,
    "index": index,
    "dedup": dedup,
    "get": get,
    "delete": delete,
    "stats": stats,
    "health": health,
}
