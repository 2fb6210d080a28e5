"""`simhash-index calibrate`: precision and recall of each distance and similarity floor on labelled pairs."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import IO, Any

import click

from simhash_server.cli.jsonl import json_object
from simhash_server.cli.options import version_option


def _texts(path: Path | None) -> dict[str, str]:
    """id -> text from JSON lines {"id", "text"}; a bad line is a UsageError naming it."""
    if path is None:
        return {}
    texts: dict[str, str] = {}
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                doc_id, text = record["id"], record["text"]
            except (ValueError, KeyError, TypeError) as exc:
                raise click.UsageError(f'{path} line {n}: expected {{"id", "text"}} ({exc})') from None
            if not isinstance(text, str):
                raise click.UsageError(f'{path} line {n}: "text" must be a string')
            texts[str(doc_id)] = text
    return texts


def parse_pair(line: str, texts: dict[str, str], threshold: float) -> tuple[str, str, bool]:
    """(text a, text b, duplicate) of one labelled pair; ValueError names what is wrong."""
    record = json_object(line)
    sides = []
    for side in ("a", "b"):
        if side in record and f"{side}_id" in record:
            raise ValueError(f'give "{side}" (a text) or "{side}_id", not both')
        if side in record:
            if not isinstance(record[side], str):
                raise ValueError(f'"{side}" must be a text')
            sides.append(record[side])
        elif f"{side}_id" in record:
            doc_id = str(record[f"{side}_id"])
            if doc_id not in texts:
                raise ValueError(f'"{side}_id" {doc_id!r} is not in --texts')
            sides.append(texts[doc_id])
        else:
            raise ValueError(f'"{side}" or "{side}_id" is required')
    if ("duplicate" in record) == ("similarity" in record):
        raise ValueError('give exactly one of "duplicate" (true/false) and "similarity" (0..1)')
    if "duplicate" in record:
        if not isinstance(record["duplicate"], bool):
            raise ValueError('"duplicate" must be true or false')
        return sides[0], sides[1], record["duplicate"]
    value = record["similarity"]
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ValueError(f'"similarity" must be a number in 0..1, got {value!r}')
    return sides[0], sides[1], value >= threshold


@click.command()
@click.argument("pairs", type=click.File("r", encoding="utf-8"), default="-")
@click.option(
    "--texts",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help='JSON lines {"id", "text"} that "a_id" / "b_id" refer to.',
)
@click.option(
    "--threshold",
    type=click.FloatRange(0, 1),
    default=0.9,
    show_default=True,
    help='A pair labelled with "similarity" is a duplicate at or above this.',
)
@click.option(
    "--target-precision",
    type=click.FloatRange(0, 1),
    default=0.97,
    show_default=True,
    help="Recommend the settings with the most recall at this precision or more.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object instead of tables.")
@version_option("The recipe to calibrate (as the index was created with).  [default: the newest]")
def calibrate_command(
    pairs: IO[str],
    texts: Path | None,
    threshold: float,
    target_precision: float,
    as_json: bool,
    fingerprint_version: str | None,
) -> None:
    """Measure our idea of "duplicate" against yours.

    PAIRS: JSON lines, one labelled pair each: {"a": TEXT, "b": TEXT} or {"a_id": ID, "b_id": ID} (ids in
    --texts), with "duplicate": true/false or "similarity": 0..1.  Prints precision and recall of each
    Hamming distance k (Query/Deduplicate max_distance, unverified) and of each similarity floor (min_similarity,
    verified), and the settings that reach --target-precision with the most recall.  A bad line is reported
    with its number and left out; the exit status is then 1.
    """
    from simhash_server.fingerprint import FINGERPRINT_VERSION
    from simhash_server.index.calibration import calibrate, measure

    version = fingerprint_version or FINGERPRINT_VERSION
    known = _texts(texts)
    measured, bad = [], 0
    for n, line in enumerate(pairs, start=1):
        if not line.strip():
            continue
        try:
            a, b, duplicate = parse_pair(line, known, threshold)
        except ValueError as exc:
            bad += 1
            click.echo(f"line {n}: {exc}", err=True)
            continue
        measured.append(measure(a, b, duplicate, version))
    if not measured:
        raise click.ClickException("no labelled pair to calibrate on")
    result = calibrate(measured)
    by_k, by_floor = result.recommend(target_precision)
    if as_json:
        click.echo(json.dumps(_as_dict(result, version, target_precision, by_k, by_floor)))
    else:
        _print_tables(result, version, target_precision, by_k, by_floor)
    if bad:
        click.echo(f"{bad} bad line(s) left out", err=True)
        sys.exit(1)


def _row(score: Any) -> dict[str, Any]:
    return {
        "setting": score.setting,
        "predicted": score.predicted,
        "precision": round(score.precision, 4),
        "recall": round(score.recall, 4),
    }


def _as_dict(result: Any, version: str, target: float, by_k: Any, by_floor: Any) -> dict[str, Any]:
    return {
        "fingerprint_version": version,
        "pairs": result.pairs,
        "duplicates": result.positives,
        "max_distance": [_row(s) for s in result.by_distance],
        "min_similarity": [_row(s) for s in result.by_floor],
        "target_precision": target,
        "recommended": {
            "max_distance": by_k.setting if by_k else None,
            "min_similarity": by_floor.setting if by_floor else None,
        },
    }


def _print_tables(result: Any, version: str, target: float, by_k: Any, by_floor: Any) -> None:
    click.echo(f"{result.pairs} pairs, {result.positives} duplicates; fingerprint version {version}")
    click.echo("\nunverified (max_distance = k)\n| k | pairs within | precision | recall |\n|---|---|---|---|")
    for s in result.by_distance:
        click.echo(f"| {int(s.setting)} | {s.predicted} | {s.precision:.3f} | {s.recall:.3f} |")
    click.echo("\nverified (min_similarity = floor)\n| floor | pairs kept | precision | recall |\n|---|---|---|---|")
    for s in result.by_floor:
        click.echo(f"| {s.setting:.2f} | {s.predicted} | {s.precision:.3f} | {s.recall:.3f} |")
    click.echo(f"\nfor precision >= {target}:")
    click.echo(
        f"  unverified: max_distance={int(by_k.setting)} (recall {by_k.recall:.3f})"
        if by_k
        else "  unverified: no max_distance up to 3 reaches it"
    )
    click.echo(
        f"  verified: min_similarity={by_floor.setting} (recall {by_floor.recall:.3f})"
        if by_floor
        else "  verified: no floor reaches it"
    )
