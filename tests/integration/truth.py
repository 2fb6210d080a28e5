"""What the MapReduce jobs' answers are checked against, apart from HBase: planted near-duplicate clusters
and their brute-force truth (clusters), mixed load inputs and a digest of what a table holds (hfile-load), and
the timestamps a document's cells carry (its time: bulk-load, hfile-load, the time window).
Shared by tests/integration (the local runner) and tests/cluster (YARN)."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from simhash_server.index.keys import drawer_prefixes

MASK = (1 << 64) - 1
HOT_PREFIX_BITS = 26  # segments 0 and 1: drawer flag 0
TEXTS = [
    "The quick brown fox jumps over the lazy dog near the river bank at dawn.",
    "近似重复检测：把文本切词、加权，再算出六十四位的指纹。",
    "HBase keeps fingerprints durably; a query scans ten drawer prefixes.",
]

_WORDS = random.Random(12).sample(sorted(set(" ".join(TEXTS).lower().replace(".", " ").replace(";", " ").split())), 20)
PAGE = "\n".join(" ".join(random.Random(n).choices(_WORDS, k=10)) + "." for n in range(12))  # 12 different lines


def flip(fp: int, rng: random.Random, bits: int, keep_top: int = 0) -> int:
    """fp with ``bits`` distinct random bits flipped, none of its ``keep_top`` most significant."""
    for bit in rng.sample(range(64 - keep_top), bits):
        fp ^= 1 << bit
    return fp


@dataclass
class Planted:
    documents: dict[str, int] = field(default_factory=dict)  # doc id -> fingerprint, as indexed
    deleted: set[str] = field(default_factory=set)  # indexed, then deleted: their drawer rows stay
    hot_pairs: list[tuple[int, int]] = field(default_factory=list)  # planted near pairs in the hot group
    chain_pairs: list[tuple[int, int]] = field(default_factory=list)  # consecutive links of the chains

    def add(self, doc: str, fp: int) -> None:
        self.documents[doc] = fp & MASK


def plant(n: int, seed: int, hot: int) -> Planted:
    """About n documents: 40% random singletons, chains, stars, decoys, shared fingerprints, a hot prefix."""
    rng = random.Random(seed)
    p = Planted()
    count = 0

    def doc(kind: str) -> str:
        nonlocal count
        count += 1
        return f"{kind}-{count:07d}"

    while len(p.documents) < n - hot:
        r = rng.random()
        base = rng.getrandbits(64)
        if r < 0.4:
            p.add(doc("single"), base)
        elif r < 0.6:  # a chain: each link within 1-3 of the one before
            links = [base]
            for _ in range(rng.randint(1, 7)):
                links.append(flip(links[-1], rng, rng.randint(1, 3)))
            for fp in links:
                p.add(doc("chain"), fp)
            p.chain_pairs += pairwise(links)
        elif r < 0.75:  # a star: leaves within 1-3 of the centre, so within 2-6 of each other
            p.add(doc("star"), base)
            for _ in range(rng.randint(1, 6)):
                p.add(doc("leaf"), flip(base, rng, rng.randint(1, 3)))
        elif r < 0.85:  # decoys: 4-6 away, never near-duplicates of the base
            p.add(doc("decoyed"), base)
            for _ in range(rng.randint(1, 3)):
                p.add(doc("decoy"), flip(base, rng, rng.randint(4, 6)))
        elif r < 0.93:  # documents sharing one fingerprint: a cluster without a pair
            for _ in range(rng.randint(2, 3)):
                p.add(doc("same"), base)
        else:  # a chain whose middle document is deleted: its drawer rows must not join the ends
            bits = [1 << bit for bit in rng.sample(range(64), 4)]  # the ends 4 apart, the middle 2 from each
            p.add(doc("end"), base)
            middle = doc("gone")
            p.add(middle, base ^ bits[0] ^ bits[1])
            p.deleted.add(middle)
            p.add(doc("end"), base ^ bits[0] ^ bits[1] ^ bits[2] ^ bits[3])
    # One hot prefix: fingerprints sharing segments 0 and 1, a few of them in near pairs.
    top = rng.getrandbits(HOT_PREFIX_BITS) << (64 - HOT_PREFIX_BITS)
    group = [top | rng.getrandbits(64 - HOT_PREFIX_BITS) for _ in range(hot - 40)]
    p.hot_pairs = [(fp, flip(fp, rng, rng.randint(1, 3), keep_top=HOT_PREFIX_BITS)) for fp in rng.sample(group, 40)]
    group += [copy for _, copy in p.hot_pairs]
    for fp in group:
        p.add(doc("hot"), fp)
    # Odd ids: the cluster id is the smallest by UTF-8 bytes, and ids are escaped in the text output.
    base = rng.getrandbits(64)
    for name in ("文档-甲", "a\tb", "Zebra", "back\\slash"):
        p.add(name, base)
        base = flip(base, rng, 1)
    return p


def shares_a_drawer(a: int, b: int) -> bool:
    """Whether two fingerprints share a drawer row prefix: a verified query beyond distance 3 reads only those."""
    return not {*drawer_prefixes(a)}.isdisjoint(drawer_prefixes(b))


def brute_pairs(fps: np.ndarray, max_distance: int) -> set[tuple[int, int]]:
    """Every pair of distinct fingerprints within max_distance, by comparing all of them."""
    out: set[tuple[int, int]] = set()
    for i in range(len(fps) - 1):
        d = np.bitwise_count(fps[i + 1 :] ^ fps[i])
        for j in np.nonzero(d <= max_distance)[0]:
            a, b = int(fps[i]), int(fps[i + 1 + j])
            out.add((min(a, b), max(a, b)))
    return out


def components(links: Iterable[tuple[Hashable, Hashable]], docs: Iterable[str]) -> dict[str, str]:
    """doc -> the smallest doc id (UTF-8 bytes) of its component, for components of 2 or more documents;
    a document is the node ("doc", id), linked to others directly or through other nodes."""
    parent: dict[Hashable, Hashable] = {}

    def find(x: Hashable) -> Hashable:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in links:
        parent[find(a)] = find(b)
    members: dict[Hashable, list[str]] = {}
    for doc in docs:
        members.setdefault(find(("doc", doc)), []).append(doc)
    out = {}
    for group in members.values():
        if len(group) > 1:
            out |= dict.fromkeys(group, min(group, key=str.encode))
    return out


def centre_clusters(scored: Iterable[tuple[str, str, str]], merge: bool = True) -> dict[str, str]:
    """doc -> the smallest doc id (UTF-8 bytes) of its star, by CENTER over the job's verified pairs (doc id,
    doc id, similarity as printed): links from the most similar down, then by the ends' ids; a link between
    two documents in no star makes the smaller id a centre and the other its member, and a document later
    linked to a centre joins it.  Then, over the links between two centres in that order, the smaller id's
    star takes in the other's when each centre is linked to every member of the other star (unless not
    ``merge``).  Documents in no star are in no cluster."""
    links = []
    for x, y, printed in scored:
        a, b = sorted((x, y), key=str.encode)
        links.append((-round(float(printed) * 10_000), a.encode(), b.encode(), a, b))
    ordered = [(a, b) for *_, a, b in sorted(links)]
    centre: dict[str, str] = {}
    for a, b in ordered:
        ca, cb = centre.get(a), centre.get(b)
        if ca is None and cb is None:
            centre[a] = centre[b] = a
        elif cb is None and ca == a:
            centre[b] = a
        elif ca is None and cb == b:
            centre[a] = b
    stars: dict[str, list[str]] = {}
    for doc, c in centre.items():
        stars.setdefault(c, []).append(doc)
    linked = {frozenset(pair) for pair in ordered}

    def vouches(c: str, star: list[str]) -> bool:
        return all(frozenset((c, m)) in linked for m in star)

    for a, b in ordered if merge else ():
        if a in stars and b in stars and vouches(a, stars[b]) and vouches(b, stars[a]):
            stars[a] += stars.pop(b)
    return {doc: min(members, key=str.encode) for members in stars.values() for doc in members}


def expected_clusters(documents: dict[str, int], pairs: set[tuple[int, int]]) -> dict[str, str]:
    """Documents of one fingerprint are one group; fingerprints within the distance join groups."""
    links = [(("doc", doc), ("fp", fp)) for doc, fp in documents.items()]
    return components(links + [(("fp", a), ("fp", b)) for a, b in pairs], documents)


def unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            out.append({"t": "\t", "n": "\n", "r": "\r", "\\": "\\"}[text[i + 1]])
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def read_parts(folder: Path) -> Iterator[list[str]]:
    for part in sorted(folder.glob("part-*")):
        for line in part.read_text(encoding="utf-8").splitlines():
            yield line.split("\t")


def digest(table: list[tuple[bytes, bytes, bytes]]) -> str:
    h = hashlib.sha256()
    for row, column, value in table:
        h.update(b"%d:%b%d:%b%d:%b" % (len(row), row, len(column), column, len(value), value))
    return h.hexdigest()


def mixed_input(path: Path, seed: int, docs: int, records: int, shared: int) -> None:
    """JSON lines: fingerprints, one-line texts and pages of lines, ids repeated (the last wins), fingerprints
    shared by many ids, and one bad line."""
    rng = random.Random(seed)
    fps = [rng.getrandbits(64) for _ in range(shared)]
    lines = []
    for n in range(records):
        doc = f"doc-{rng.randrange(docs)}"
        if n % 20 == 0:
            lines.append(json.dumps({"doc_id": doc, "text": f"{rng.choice(TEXTS)} #{rng.randrange(40)}"}))
        elif n % 20 == 10:  # a page of 12 lines: a v7 index keeps its first part's rows too (index/keys.py)
            lines.append(json.dumps({"doc_id": doc, "text": f"{PAGE} #{rng.randrange(40)}"}))
        else:
            lines.append(json.dumps({"doc_id": doc, "simhash": f"{rng.choice(fps):016x}"}))
    lines.insert(records // 2, '{"doc_id": "", "simhash": "0"}')
    path.write_text("\n".join(lines) + "\n")


def cell_stamps(store: Any, doc_id: str, fp: int) -> tuple[int | None, int | None]:
    """The timestamps of a document's docs record and of its fp2docs column (None: not visible)."""
    from simhash_schema import hbase2
    from simhash_server.index.keys import doc_column, fingerprint_row
    from simhash_server.index.writes import FP_COLUMN

    t = hbase2()

    def cell(table: str, row: bytes, column: bytes) -> int | None:
        family, _, qualifier = column.partition(b":")
        get = t.TGet(row=row, columns=[t.TColumn(family=family, qualifier=qualifier)])
        found = store.thrift2.run(lambda c: c.get(store._names[table], get))
        return found.columnValues[0].timestamp if found.columnValues else None

    return cell("docs", doc_id.encode(), FP_COLUMN), cell("fp2docs", fingerprint_row(fp), doc_column(doc_id.encode()))
