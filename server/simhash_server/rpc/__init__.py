"""The gRPC service: validation, status codes, interceptors, TLS and tokens, the server's lifecycle."""
