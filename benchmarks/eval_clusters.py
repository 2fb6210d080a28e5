"""What `simhash-index clusters` answers, on the evaluation's documents, scored pair by pair against the truth.

The links are the job's: two documents whose v4 fingerprints are within Hamming distance 3 (the same
fingerprint included), and with ``--min-similarity`` those within 8 that share a drawer too (what a verified
query reads), linked only where their sketches also reach the floor.  They are
grouped two ways:

- connected components, as the job groups unverified links and verified ones with ``--clustering components``:
  any chain of links makes one cluster;
- star clusters around a centre (CENTER: Haveliwala, Gionis and Indyk, "Scalable techniques for clustering the
  web", WebDB 2000; compared in Hassanzadeh et al., "Framework for evaluating clustering algorithms in
  duplicate detection", VLDB 2009): links taken from the most similar down, the first end of a link between
  two unplaced documents becomes a centre and the other its member, and a document later linked to a centre
  joins it; then two stars merge when each centre is linked to every member of the other's.  Every member
  is then linked to its centre itself, not through a chain.  This is the job's
  grouping of verified links by default (``--clustering centres``), in the job's order when given the
  documents' ids: similarities to four decimals, ties by the ends' ids.

A clustering's predicted pairs are every pair of documents in one cluster.
"""

from __future__ import annotations

import collections
from collections.abc import Mapping, Sequence

Pair = tuple[int, int]


def components(links: Sequence[Pair] | set[Pair], n: int) -> list[int]:
    """Each of the ``n`` documents' cluster (its component's smallest document), by union-find."""
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in links:
        a, b = root(i), root(j)
        if a != b:
            parent[max(a, b)] = min(a, b)
    return [root(i) for i in range(n)]


def centres(scored: Mapping[Pair, float], n: int, ids: Sequence[str] | None = None) -> list[int]:
    """Each document's cluster (its centre) by CENTER, links from the most similar down, then stars merged
    that vouch for each other (the job's Center.java).  With the documents' ``ids``, in the job's order:
    similarities at the four decimals it prints, ties by the ends' ids (UTF-8 bytes), and the end with the
    smaller id becomes a centre; without them, ties by index."""

    def order(item: tuple[Pair, float]) -> tuple:
        (i, j), s = item
        if ids is None:
            return (-s, i, j)
        return (-round(s * 10_000), *sorted((ids[i].encode(), ids[j].encode())))

    ordered = []
    for (i, j), _ in sorted(scored.items(), key=order):
        if ids is not None and ids[j].encode() < ids[i].encode():
            i, j = j, i
        ordered.append((i, j))
    label = [-1] * n  # a centre's is its own; -1: in no star yet
    for i, j in ordered:
        if label[i] < 0 and label[j] < 0:
            label[i] = label[j] = i
        elif label[j] < 0 and label[i] == i:
            label[j] = i
        elif label[i] < 0 and label[j] == j:
            label[i] = j
    merge_stars(ordered, label)
    return [c if c >= 0 else k for k, c in enumerate(label)]


def merge_stars(ordered: Sequence[Pair], label: list[int]) -> None:
    """Merge CENTER's stars in place: taking the links between two centres in CENTER's order, the first
    end's star takes in the other's when each centre is linked to every member of the other star.  CENTER
    splits an article's copies whenever two of them paired off before a link to the first centre came."""
    linked = {frozenset(pair) for pair in ordered}
    members: dict[int, list[int]] = collections.defaultdict(list)
    for k, c in enumerate(label):
        if c >= 0:
            members[c].append(k)

    def vouches(c: int, star: list[int]) -> bool:
        return all(frozenset((c, m)) in linked for m in star)

    for a, b in ordered:
        if label[a] == a and label[b] == b and vouches(a, members[b]) and vouches(b, members[a]):
            for m in members[b]:
                label[m] = a
            members[a] += members.pop(b)


def pairs_of(labels: Sequence[int]) -> set[Pair]:
    """Every pair of documents (i < j) that share a cluster."""
    groups: dict[int, list[int]] = collections.defaultdict(list)
    for i, c in enumerate(labels):
        groups[c].append(i)
    return {(a, b) for members in groups.values() for x, a in enumerate(members) for b in members[x + 1 :]}


def sizes(labels: Sequence[int]) -> list[int]:
    """The clusters' sizes (of two or more documents), largest first."""
    return sorted((s for s in collections.Counter(labels).values() if s > 1), reverse=True)


def mixed(labels: Sequence[int], truth: Sequence[str]) -> int:
    """How many clusters hold documents of more than one article."""
    articles: dict[int, set[str]] = collections.defaultdict(set)
    for c, article in zip(labels, truth, strict=True):
        articles[c].add(article)
    return sum(1 for found in articles.values() if len(found) > 1)
