"""The drawer index in HBase: fingerprint -> drawer row keys -> HBase rows -> hits, for threads and asyncio."""
