"""simhash-index server side: text -> fingerprint -> drawer keys -> HBase rows -> hits."""

__all__: list[str] = []
