"""`simhash-index clusters`' request checks and its summary of the job's counters (no HBase, no JVM)."""

from __future__ import annotations

from pathlib import Path

import pytest

from simhash_server.bulk.hfile_job import JobEvent, JobRunner
from simhash_server.clusters.job import ClustersOptions, ClustersStats, _summary, _take
from simhash_server.index.config import StoreConfig

pytestmark = pytest.mark.unit


def options(**overrides: object) -> ClustersOptions:
    return ClustersOptions(store=StoreConfig(), output=Path("out"), runner=JobRunner(), **overrides)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("max_distance", 4, "max_distance"),
        ("max_distance", -1, "max_distance"),
        ("budget", 10, "budget"),
        ("reducers", 0, "reducers"),
        ("read", "hfiles", "read"),
        ("restore_dir", "hdfs:///r", "restore_dir"),  # only for read="snapshot"
        ("keep", "oldest", "keep"),
        ("clustering", "chains", "clustering"),
        ("clustering", "centres", "min_similarity"),  # stars are of verified links
    ],
)
def test_bad_options_name_the_field(field: str, value: object, named: str) -> None:
    with pytest.raises(ValueError, match=named):
        options(**{field: value})


def test_verified_clusters_reach_as_far_as_a_verified_query() -> None:
    assert options().max_distance == 3
    assert options(min_similarity=0.75).max_distance == 8
    assert options(min_similarity=0.75, max_distance=5).max_distance == 5
    with pytest.raises(ValueError, match=r"max_distance must be 0\.\.8, got 9"):
        options(min_similarity=0.75, max_distance=9)
    with pytest.raises(ValueError, match=r"max_distance must be 0\.\.3, got 4"):
        options(max_distance=4)


def test_verified_clusters_are_centres_unless_asked_and_unverified_ones_components() -> None:
    assert options(min_similarity=0.75).clustering == "centres"
    assert options(min_similarity=0.75, clustering="components").clustering == "components"
    assert options().clustering == "components"


def test_counters_of_a_rerun_phase_count_once() -> None:
    stats = ClustersStats()
    pairs = JobEvent("phase", "pairs", {"seconds": 2.0, "counters": {"pairs": 5, "comparisons": 40}})
    tiles = JobEvent("phase", "tiles", {"seconds": 1.0, "counters": {"pairs": 2, "comparisons": 9}})
    label = JobEvent(
        "phase", "label", {"seconds": 1.0, "counters": {"clusters": 3, "clusters of 2": 2, "clusters of 3-4": 1}}
    )
    for event in (pairs, tiles, pairs, label, JobEvent("settled", "stars", {"rounds": 2}), JobEvent("done", "", {})):
        _take(stats, event)
    assert stats.complete and stats.rounds == 2
    assert stats.counters["pairs_found"] == 7 and stats.counters["comparisons"] == 49
    largest = "cluster id\tdocuments\nc-1\t3\nc-2\t2\n"
    groups = "drawer value\tflag\tfingerprints\n0abc0000\t0\t9\n"
    summary = _summary(options(), stats, {"largest-clusters.tsv": largest, "largest-groups.tsv": groups}.__getitem__)
    assert summary["clusters_by_documents"] == {"2": 2, "3-4": 1}
    assert summary["largest_clusters"] == [{"cluster": "c-1", "documents": 3}, {"cluster": "c-2", "documents": 2}]
    assert summary["largest_prefix_groups"] == [{"drawer_value": "0abc0000", "flag": 0, "fingerprints": 9}]
    assert summary["star_rounds"] == 2 and summary["clusters"] == 3
