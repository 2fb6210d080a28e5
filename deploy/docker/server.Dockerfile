# simhash-index/server: `simhash-index serve`, installed from wheels built here (the Rust fingerprinting
# extension included), run as a non-root user.  Every flag comes from its SIMHASH_* variable (see
# `simhash-index serve --help`).  Built by `make images`; the context is the checkout.
ARG BASE=simhash-index/base:bookworm

FROM ${BASE} AS build
RUN apt-get update -qq \
    && apt-get install -y -qq python3 python3-venv python3-dev gcc g++ cargo-web rustc-web ca-certificates >/dev/null \
    && rm -rf /var/lib/apt/lists/*
COPY var/docker/ca/ /usr/local/share/ca-certificates/
RUN update-ca-certificates >/dev/null
ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
    CARGO_HTTP_CAINFO=/etc/ssl/certs/ca-certificates.crt \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_CONSTRAINT=/src/deploy/docker/constraints.txt
COPY deploy/docker/constraints.txt /src/deploy/docker/constraints.txt
# The dependencies' wheels, then the native extension's, in layers of their own: they change only with
# constraints.txt or server/native, so a change to the project's Python code rebuilds from its COPY on.
RUN python3 -m venv /tmp/pip \
    && /tmp/pip/bin/pip install -q pip setuptools wheel \
    && /tmp/pip/bin/pip wheel -q --wheel-dir /wheels -r /src/deploy/docker/constraints.txt
COPY server/native/ /src/server/native/
RUN /tmp/pip/bin/pip wheel -q --wheel-dir /wheels /src/server/native
COPY pyproject.toml README.md /src/
COPY proto/ /src/proto/
COPY client/ /src/client/
COPY hbase_schema/ /src/hbase_schema/
COPY deploy/simhash_deploy/ /src/deploy/simhash_deploy/
COPY deploy/hbase-local/pom.xml deploy/hbase-local/flush.jsh /src/deploy/hbase-local/
COPY server/simhash_server/ /src/server/simhash_server/
RUN /tmp/pip/bin/pip wheel -q --no-deps --wheel-dir /wheels /src \
    && python3 -m venv /opt/simhash-index \
    && /opt/simhash-index/bin/pip install -q --no-index --find-links /wheels 'simhash-index[server]' simhash-native

# Only the installed environment comes over: no wheels, compilers or caches in the image.
FROM ${BASE}
RUN apt-get update -qq && apt-get install -y -qq python3 >/dev/null \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb
COPY --from=build /opt/simhash-index /opt/simhash-index
RUN { echo "# apt"; dpkg-query -W -f '${Package}=${Version}\n'; echo "# python"; /opt/simhash-index/bin/pip freeze; } \
       > /usr/share/simhash-index/versions.txt \
    && useradd --system --no-create-home --shell /usr/sbin/nologin simhash
ENV PATH=/opt/simhash-index/bin:$PATH \
    SIMHASH_ADDRESS=0.0.0.0:50051 \
    SIMHASH_METRICS_ADDRESS=0.0.0.0:9464 \
    SIMHASH_HBASE_HOST=hbase \
    SIMHASH_HBASE_THRIFT_PORT=9090 \
    SIMHASH_HBASE_THRIFT2_PORT=9091
USER simhash
WORKDIR /tmp
EXPOSE 50051 9464
# A network address serves only with TLS, tokens or SIMHASH_INSECURE=true (the server refuses otherwise).
HEALTHCHECK --interval=5s --timeout=5s --start-period=60s --retries=3 \
    CMD ["simhash-index", "health", "--target", "127.0.0.1:50051", "--timeout", "4"]
ENTRYPOINT ["simhash-index", "serve"]
