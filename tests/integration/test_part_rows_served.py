"""Part rows end to end on real HBase (recipe v7, index/keys.py): a page stored inside another site's header and
footer is found when its article is sent alone, by the default text query, Deduplicate and DeduplicateBatch;
a v6 index, without them, misses it; gc removes the part rows of a fingerprint no document has any more.

The pages and articles are tests/golden/texts.py's, as the unit tests of the same rules use them
(tests/unit/test_part_rows.py): the template moves a page's fingerprint 13 bits from its article's."""

from __future__ import annotations

import sys
from pathlib import Path

from simhash_server.fingerprint import V6, V7, fingerprint
from simhash_server.fingerprint.sketch_format import stored_parts
from simhash_server.index.gc import collect
from simhash_server.index.keys import PART_KEY_LENGTH, drawer_keys, part_row_keys
from simhash_server.index.model import Document

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "golden"))
from texts import page_in_template

PAGE, ARTICLE = page_in_template(0)


def _rows(store, keys: list[bytes]) -> int:
    import happybase

    conn = happybase.Connection(store.config.host, store.config.thrift_port)
    try:
        return len(conn.table(store.tables.drawers.name).rows(keys))
    finally:
        conn.close()


def test_the_article_alone_finds_its_page_in_a_template_by_default_and_not_by_fingerprint(server, client, ids) -> None:
    assert server.store.recipe.version == V7  # a new index's default
    client.index(ids + "page", text=PAGE)
    hits = client.query(text=ARTICLE)
    assert [(h.doc_id, h.verified) for h in hits] == [(ids + "page", True)]
    assert hits[0].similarity >= 0.75 and hits[0].distance > 8  # met through the page's first part
    assert client.query(text=ARTICLE, min_similarity=0) == []  # the fingerprint's own answer: nothing near
    (outcome,) = client.query_batch([{"text": ARTICLE}])
    assert [h.doc_id for h in outcome.hits] == [ids + "page"]

    dedup = client.deduplicate(ids + "article", text=ARTICLE)
    assert not dedup.stored and [h.doc_id for h in dedup.hits] == [ids + "page"]
    assert client.delete([ids + "page"]) == 1  # the next run (the other client) stores its own page


def test_in_one_batch_the_article_after_its_page_is_not_stored(client, ids) -> None:
    page, article = page_in_template(1)
    first, second = client.deduplicate_batch(
        [{"doc_id": ids + "p", "text": page}, {"doc_id": ids + "a", "text": article}]
    )
    assert first.result.stored
    assert not second.result.stored and [h.doc_id for h in second.result.hits] == [ids + "p"]
    assert client.delete([ids + "p"]) == 1  # the next run (the other client) stores its own page


def test_only_a_v7_index_reaches_the_page_and_gc_removes_part_rows_no_document_owns(make_index) -> None:
    older, newer = make_index(fingerprint_version=V6), make_index(fingerprint_version=V7)
    page, article = fingerprint(PAGE, V7, sketch=True), fingerprint(ARTICLE, V7, sketch=True)
    assert fingerprint(PAGE, V6, sketch=True) == page  # one fingerprint and sketch: only the rows differ
    for store in (older, newer):
        store.index_many([Document("page", page.value, page.sketch)])
    found = {s.recipe.version: s.query_verified(article.value, article.sketch, 0.75).hits for s in (older, newer)}
    assert found[V6] == [] and [h.doc_id for h in found[V7]] == ["page"]

    keys = part_row_keys(stored_parts(page.sketch)[0], page.value)
    assert all(len(k) == PART_KEY_LENGTH for k in keys)
    assert _rows(newer, keys) == 10 and _rows(older, keys) == 0
    newer.index_many([Document("page", article.value, article.sketch)])  # the page moves: its old rows are orphans
    collect(newer, grace_seconds=3600)  # younger than the grace: kept
    assert _rows(newer, keys) == 10
    report = collect(newer, grace_seconds=0)
    assert _rows(newer, keys) == 0 and _rows(newer, drawer_keys(page.value)) == 0
    assert report.orphan_drawer_rows_deleted == 20  # the old fingerprint's 10 drawer rows and 10 part rows
    assert [h.doc_id for h in newer.query_verified(article.value, article.sketch, 0.75).hits] == ["page"]
