"""The evaluation's formulaic neighbours (benchmarks/pairs.py, class N5): pages under their own titles, each once."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from corpus import Doc
from pairs import make_pairs, title

_BOILERPLATE = (
    "--help\n显示此帮助信息并退出\n--version\n显示版本信息并退出\n作者\n由 Jim Meyering 编写。\n报告错误\n"
    "GNU coreutils 的在线帮助：<https://www.gnu.org/software/coreutils/>\n请向翻译团队报告翻译错误。\n" * 3
)


def _page(name: str, summary: str) -> Doc:
    return Doc(
        f"manpages-zh:{name}.1.gz",
        "manpages-zh",
        "zh",
        f"名称\n{name} - {summary}\n概述\n{name} [选项]\n{_BOILERPLATE}",
    )


def test_a_pages_title_is_its_first_line_or_its_name_line_before_the_description() -> None:
    assert title(_page("hostid", "显示当前主机的数字标识符").text) == "hostid"
    assert title("NAME\nsync - Synchronize cached writes\n...") == "sync"
    assert title("\n  3.4. Gaussian Blur\nThe Gaussian Blur filter...") == "3.4. Gaussian Blur"
    assert title("") == ""


def test_formulaic_neighbours_are_pages_with_different_titles_each_used_once_in_the_order_given() -> None:
    hostid, sync, logname = _page("hostid", "显示主机标识符"), _page("sync", "同步缓存"), _page("logname", "显示登录名")
    alias = Doc("manpages-zh:hostid-alias.1.gz", "manpages-zh", "zh", hostid.text)  # one page under two names
    originals = [hostid, sync, logname, alias]
    unconverted = {name: str for name in ("s2t", "s2tw", "s2hk", "s2twp")}  # P4's copies are not what is tested
    formulaic = [(hostid, alias), (hostid, sync), (sync, logname), (hostid, logname)]
    pairs = make_pairs(originals, "zh", 5, {}, unconverted, formulaic)
    # (hostid, alias) share a title; after (hostid, sync), neither page is used again
    assert [(p.a.id, p.b.id) for p in pairs if p.kind == "N5"] == [(hostid.id, sync.id)]
    assert all(not p.same for p in pairs if p.kind == "N5")
