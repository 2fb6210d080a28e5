"""The tables of one index, as data.  Options are checked eagerly against the tables below."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "BLOOM_TYPES",
    "CLAIM_TTL_SECONDS",
    "COMPRESSIONS",
    "DRAWER_REGIONS",
    "ENCODINGS",
    "FOREVER",
    "MIN_RETENTION_SECONDS",
    "FamilySpec",
    "IndexTables",
    "TableSpec",
    "index_tables",
]

COMPRESSIONS = ("NONE", "SNAPPY", "LZ4", "ZSTD", "GZ")
BLOOM_TYPES = ("NONE", "ROW", "ROWCOL", "ROWPREFIX_FIXED_LENGTH")
ENCODINGS = ("NONE", "PREFIX", "DIFF", "FAST_DIFF", "ROW_INDEX_V1")
BLOOM_PREFIX_KEY = "RowPrefixBloomFilter.prefix_length"
FAMILY = "d"
FOREVER = 2**31 - 1  # HBase's TTL meaning "no TTL" (HConstants.FOREVER)
CLAIM_TTL_SECONDS = 60  # the lease of a Deduplicate call's claims (simhash_server.index.claims)
MIN_RETENTION_SECONDS = 3600
# A new drawer table's regions, for one region server.  A query scans once per region its prefixes fall in,
# and a write batch goes to every region, so regions beyond the servers' parallelism cost CPU per call
# (docs/decisions.md#one-drawer-region-for-make-runs-index).  HBase splits the region as the table grows;
# a cluster pre-splits more (`schema apply --regions`, docs/operations.md).
DRAWER_REGIONS = 1


@dataclass(frozen=True)
class FamilySpec:
    name: str = FAMILY
    max_versions: int = 1
    bloom: str = "ROW"
    bloom_prefix_length: int | None = None
    compression: str = "NONE"
    encoding: str = "FAST_DIFF"
    block_cache: bool = True
    block_size: int = 65536
    ttl_seconds: int | None = None  # cells older than this vanish (HBase's TTL); None: kept for good

    def __post_init__(self) -> None:
        for value, allowed, what in (
            (self.compression, COMPRESSIONS, "compression"),
            (self.bloom, BLOOM_TYPES, "bloom filter"),
            (self.encoding, ENCODINGS, "data block encoding"),
        ):
            if value not in allowed:
                raise ValueError(f"unknown {what} {value!r}; choose one of {', '.join(allowed)}")
        if (self.bloom == "ROWPREFIX_FIXED_LENGTH") != (self.bloom_prefix_length is not None):
            raise ValueError("bloom_prefix_length goes with, and only with, the ROWPREFIX_FIXED_LENGTH bloom filter")
        if self.max_versions < 1 or self.block_size < 1024:
            raise ValueError("max_versions must be >= 1 and block_size >= 1024")
        if self.ttl_seconds is not None and not 1 <= self.ttl_seconds < FOREVER:
            raise ValueError(f"ttl_seconds must be 1..{FOREVER - 1} (or None: forever), got {self.ttl_seconds}")


@dataclass(frozen=True)
class TableSpec:
    name: str
    family: FamilySpec
    split_keys: tuple[bytes, ...] = field(default=())
    attributes: tuple[tuple[str, str], ...] = field(default=())  # table descriptor values (key, value)


# HBase splits a drawer region only between prefix groups (drawer value + flag, 5 bytes): a group stays in one
# region, which a snapshot read of the table needs (server/mapreduce Snapshots.java).
DRAWER_SPLIT_POLICY = (
    ("SPLIT_POLICY", "org.apache.hadoop.hbase.regionserver.KeyPrefixRegionSplitPolicy"),
    ("KeyPrefixRegionSplitPolicy.prefix_length", "5"),
)


@dataclass(frozen=True)
class IndexTables:
    drawers: TableSpec  # 13-byte keys, no value: the 10 drawers of every fingerprint
    fp2docs: TableSpec  # fingerprint (8 bytes) -> one column per document id, valued by its sketch
    docs: TableSpec  # document id -> fingerprint (the commit record; the sketch lives in fp2docs)
    meta: TableSpec  # one row: fingerprint version and segment layout
    claims: TableSpec  # drawer prefix (5 bytes) -> each claiming Deduplicate call's mark, CLAIM_TTL_SECONDS at most

    def all(self) -> tuple[TableSpec, ...]:
        return (self.drawers, self.fp2docs, self.docs, self.meta, self.claims)

    def documents(self) -> tuple[TableSpec, ...]:
        """The tables a document lives in: the index's retention is their TTL."""
        return (self.drawers, self.fp2docs, self.docs)


def _even_splits(regions: int) -> tuple[bytes, ...]:
    """regions - 1 two-byte split keys spreading uniformly distributed row keys evenly."""
    return tuple((i * 65536 // regions).to_bytes(2, "big") for i in range(1, regions))


def index_tables(
    prefix: str = "simhash",
    drawer_regions: int = DRAWER_REGIONS,
    compression: str = "LZ4",
    retention_seconds: int | None = None,
) -> IndexTables:
    """The tables of the index named ``prefix`` (names: PREFIX_drawers, ...; 'ns:name' puts them in a namespace).

    ``compression``: the fp2docs and docs tables' blocks; the drawer table's stay uncompressed (below).
    ``retention_seconds``: a TTL on the drawers, fp2docs and docs tables alike (None: documents are kept for
    good).  A document's cells carry the time it was seen, so it expires from every table at once."""
    if retention_seconds is not None and retention_seconds < MIN_RETENTION_SECONDS:
        raise ValueError(
            f"retention must be at least {MIN_RETENTION_SECONDS} s (1 hour), got {retention_seconds}: a write's "
            "entries in the docs table must outlive the write (simhash_server.index.writes)"
        )
    if not prefix or not all(c.isalnum() or c in "_-.:" for c in prefix) or prefix.count(":") > 1:
        raise ValueError(f"table prefix {prefix!r}: use letters, digits, '_', '-', '.', and at most one ':'")
    if not 1 <= drawer_regions <= 4096:
        raise ValueError(f"drawer_regions must be 1..4096, got {drawer_regions}")
    sep = "" if prefix.endswith(":") else "_"
    name = f"{prefix}{sep}".__add__
    # Keys are random, so fingerprint-keyed tables split evenly too.
    # Drawers: 4 KB FAST_DIFF blocks, uncompressed.  A query reads ~10 blocks, one per prefix; once the table
    # outgrows the block cache each is decompressed anew, the region server's largest cost.  FAST_DIFF keeps
    # blocks as small as LZ4 does, and a seek decodes its block from the start, so small blocks keep it short
    # (docs/decisions.md#drawer-table-blocks-4-kb-fast_diff-no-compression).
    drawers = FamilySpec(
        bloom="ROWPREFIX_FIXED_LENGTH",
        bloom_prefix_length=5,
        compression="NONE",
        encoding="FAST_DIFF",
        block_size=4096,
        ttl_seconds=retention_seconds,
    )
    # fp2docs and docs are read by single rows (a query's hits, a writer's id), and a FAST_DIFF seek decodes
    # from the block's start: 8 KB blocks, not HBase's 64 KB, keep a read to a few rows' decoding
    # (docs/decisions.md#fp2docs-and-docs-in-8-kb-blocks).
    keyed = FamilySpec(bloom="ROW", compression=compression, block_size=8192, ttl_seconds=retention_seconds)
    splits = _even_splits(drawer_regions)
    fp_splits = _even_splits(max(1, drawer_regions // 4))
    return IndexTables(
        drawers=TableSpec(name("drawers"), drawers, splits, DRAWER_SPLIT_POLICY),
        fp2docs=TableSpec(name("fp2docs"), keyed, fp_splits),
        docs=TableSpec(name("docs"), keyed),
        meta=TableSpec(name("meta"), FamilySpec(name="m", bloom="NONE", encoding="NONE")),
        claims=TableSpec(
            name("claims"), FamilySpec(bloom="ROW", encoding="NONE", ttl_seconds=CLAIM_TTL_SECONDS), fp_splits
        ),
    )
