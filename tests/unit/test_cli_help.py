"""What the command line's help promises about defaults matches the code's defaults."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from simhash_server.cli import main
from simhash_server.fingerprint.versions import FINGERPRINT_VERSION, NAMES, short_name


def test_schema_apply_names_the_version_a_new_index_gets() -> None:
    result = CliRunner().invoke(main, ["schema", "apply", "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    help_text = " ".join(result.output.split())
    assert f"[default: the newest, {short_name(FINGERPRINT_VERSION)}]" in help_text
    assert short_name(FINGERPRINT_VERSION) == max(
        NAMES, key=lambda name: (int(name[1:].split("-")[0]), "-" not in name)
    )  # "the newest" holds


def test_every_command_is_documented_in_the_readme() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    commands = sorted(main.commands)
    assert {"serve", "query", "hfile-load"} <= set(commands)
    missing = [c for c in commands if f"`simhash-index {c}" not in readme and f"`{c}`" not in readme]
    assert not missing, f"commands README does not name: {missing}"


def test_schema_apply_waits_minutes_for_the_master_unless_asked_for_longer(monkeypatch) -> None:
    """Creating a pre-split table on a busy cluster can outlast a data call's 10 s."""
    import simhash_schema

    asked: list[int] = []

    def unreachable(host: str, port: int, timeout_ms: int) -> None:
        asked.append(timeout_ms)
        raise OSError("no gateway here")

    monkeypatch.setattr(simhash_schema, "connect", unreachable)
    result = CliRunner().invoke(main, ["schema", "apply", "--hbase-timeout-ms", "10000"])
    assert result.exit_code == 1 and "no gateway here" in result.output, result.output
    assert asked == [simhash_schema.DDL_TIMEOUT_MS] and simhash_schema.DDL_TIMEOUT_MS >= 120_000
    result = CliRunner().invoke(main, ["schema", "apply", "--hbase-timeout-ms", "900000"])
    assert asked[-1] == 900_000  # a longer timeout asked for is kept
