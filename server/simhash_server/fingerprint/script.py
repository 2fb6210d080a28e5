"""Traditional and simplified Chinese characters folded to one form, from OpenCC's own character tables.

OpenCC (github.com/BYVoid/OpenCC) maps each simplified character to its traditional forms (STCharacters),
each traditional character to its simplified ones (TSCharacters), and traditional characters to their Taiwan
and Hong Kong variants and back (TWVariants, HKVariants and their Rev tables).  Taken together, the tables
link every character with its other forms; each linked group folds to one member, the simplified form most of the group
maps to.  So a page converted either way, by any of OpenCC's configurations (s2t, s2tw, s2hk, t2s, ...),
folds to the same characters as its source, whichever of a group's members a conversion chose.  Taiwan's own
vocabulary (軟體 for 软件, 程式 for 程序) is folded too, phrase by phrase: OpenCC's TWPhrases and TWPhrasesRev
say which Taiwan phrase a mainland one becomes (s2twp) and back (tw2sp); ``regional_phrases`` lists them as
(Taiwan, mainland) pairs, and normalize.py replaces every Taiwan phrase by its mainland one, longest first.

The tables come with the ``opencc-purepy`` package (OpenCC's dictionaries as text), pinned: the folding is
part of every recipe that uses it (versions.py).
"""

from __future__ import annotations

from collections import Counter
from functools import cache
from importlib import resources

from simhash_server.fingerprint.markup import INVISIBLE

__all__ = ["PHRASE_TABLES", "TABLES", "character_folding", "fold_script", "regional_phrases", "script_folding"]

# Simplified <-> traditional, and traditional <-> its Taiwan and Hong Kong variants (s2tw, s2hk).
TABLES = (
    "STCharacters.txt",
    "TSCharacters.txt",
    "TWVariants.txt",
    "TWVariantsRev.txt",
    "HKVariants.txt",
    "HKVariantsRev.txt",
)


PHRASE_TABLES = ("TWPhrasesRev.txt", "TWPhrases.txt")  # Taiwan -> mainland, and mainland -> Taiwan


def regional_phrases() -> list[tuple[str, str]]:
    """(Taiwan phrase, mainland phrase) pairs of OpenCC's phrase tables, as written there."""
    out = []
    for name in PHRASE_TABLES:
        text = resources.files("opencc_purepy").joinpath("dicts", name).read_text(encoding="utf-8")
        for line in text.splitlines():
            key, _, values = line.partition("\t")
            first = values.split(" ")[0]
            if key and first:
                out.append((key, first) if name == PHRASE_TABLES[0] else (first, key))
    return out


def _pairs(name: str) -> list[tuple[str, list[str]]]:
    text = resources.files("opencc_purepy").joinpath("dicts", name).read_text(encoding="utf-8")
    out = []
    for line in text.splitlines():
        key, _, values = line.partition("\t")
        forms = [v for v in values.split(" ") if len(v) == 1]
        if len(key) == 1 and forms:
            out.append((key, forms))
    return out


@cache
def script_folding() -> dict[str, str]:
    """Every character that has another form -> the form its group folds to (characters that fold to
    themselves are left out)."""
    parent: dict[str, str] = {}

    def root(ch: str) -> str:
        parent.setdefault(ch, ch)
        while parent[ch] != ch:
            parent[ch] = parent[parent[ch]]
            ch = parent[ch]
        return ch

    simplified_of: Counter[str] = Counter()  # how often each character is a conversion's simplified side
    for name in TABLES:
        for key, forms in _pairs(name):
            for form in forms:
                a, b = root(key), root(form)
                if a != b:
                    parent[max(a, b)] = min(a, b)
            if name.startswith("TS"):
                simplified_of[forms[0]] += 1
            elif name.startswith("ST"):
                simplified_of[key] += 1
    groups: dict[str, list[str]] = {}
    for ch in list(parent):
        groups.setdefault(root(ch), []).append(ch)
    folding = {}
    for members in groups.values():
        target = min(members, key=lambda ch: (-simplified_of[ch], ord(ch)))
        folding.update({ch: target for ch in members if ch != target})
    return folding


@cache
def _translation() -> dict[int, str]:
    return {ord(k): v for k, v in script_folding().items()}


def fold_script(text: str) -> str:
    """``text`` with every traditional (or simplified) character replaced by its group's form."""
    return text.translate(_translation())


@cache
def character_folding(scripts: bool) -> dict[str, str]:
    """What recipe v4 replaces character by character before NFKC (normalize.py): invisible characters
    (markup.INVISIBLE) by nothing and, with ``scripts``, every Chinese character by its group's form."""
    folding = dict.fromkeys(INVISIBLE, "")
    if scripts:
        folding.update(script_folding())
    return folding
