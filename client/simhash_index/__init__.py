"""Generated gRPC code for the simhash-index API (package simhash_index.v1); regenerate with `make proto`."""
