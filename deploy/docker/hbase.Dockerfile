# simhash-index/hbase: standalone Apache HBase with both Thrift gateways on 0.0.0.0, run by the project's own
# launcher (deploy/simhash_deploy: the same site properties and JVM flags as `make run`), from the jars
# `make jars` fetched from Maven Central.  Built by `make images`; the context is the checkout.
ARG BASE=simhash-index/base:bookworm

# The launcher's readiness probe speaks Thrift through happybase: built here, only its environment shipped.
FROM ${BASE} AS wheels
RUN apt-get update -qq && apt-get install -y -qq python3 python3-venv python3-dev gcc ca-certificates >/dev/null \
    && rm -rf /var/lib/apt/lists/*
COPY var/docker/ca/ /usr/local/share/ca-certificates/
RUN update-ca-certificates >/dev/null
ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt PIP_DISABLE_PIP_VERSION_CHECK=1
COPY deploy/docker/constraints.txt /tmp/constraints.txt
RUN python3 -m venv /tmp/pip && /tmp/pip/bin/pip install -q -c /tmp/constraints.txt pip setuptools wheel \
    && /tmp/pip/bin/pip wheel -q --wheel-dir /wheels -c /tmp/constraints.txt happybase thriftpy2 \
    && python3 -m venv /opt/launcher \
    && /opt/launcher/bin/pip install -q --no-index --find-links /wheels happybase thriftpy2

FROM ${BASE}
RUN apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless python3 >/dev/null \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb
COPY --from=wheels /opt/launcher /opt/launcher
COPY deploy/hbase-local/pom.xml /opt/simhash/deploy/hbase-local/pom.xml
COPY deploy/hbase-local/target/lib/ /opt/simhash/deploy/hbase-local/target/lib/
COPY deploy/yarn/target/lib/ /opt/simhash/deploy/yarn/target/lib/
COPY deploy/simhash_deploy/ /opt/launcher/lib/python3.11/site-packages/simhash_deploy/
# What this image holds, for `docker run --rm IMAGE cat /usr/share/simhash-index/versions.txt`.
RUN { echo "# apt"; dpkg-query -W -f '${Package}=${Version}\n'; echo "# python"; /opt/launcher/bin/pip freeze; \
      echo "# jars"; ls /opt/simhash/deploy/hbase-local/target/lib /opt/simhash/deploy/yarn/target/lib | grep '\.jar$'; } \
      > /usr/share/simhash-index/versions.txt \
    && useradd --system --home-dir /data --shell /usr/sbin/nologin hbase \
    && mkdir -p /data && chown hbase:hbase /data
ENV SIMHASH_HOME=/opt/simhash \
    SIMHASH_HBASE_DATA=/data \
    SIMHASH_THRIFT_IDLE_TIMEOUT_MS=60000 \
    SIMHASH_HBASE_MASTER_HEAP_MB=1024 \
    SIMHASH_HBASE_THRIFT_HEAP_MB=256
USER hbase
VOLUME /data
EXPOSE 9090 9091
HEALTHCHECK --interval=5s --timeout=5s --start-period=120s --retries=3 \
    CMD ["/opt/launcher/bin/python", "-m", "simhash_deploy.container", "check"]
ENTRYPOINT ["/opt/launcher/bin/python", "-m", "simhash_deploy.container"]
CMD ["run"]
