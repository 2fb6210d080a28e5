"""The HBase tables of a simhash-index, as code."""

__all__: list[str] = []
