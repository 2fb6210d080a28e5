# simhash-index/prometheus: Debian's Prometheus, scraping the server of deploy/compose.yaml.
ARG BASE=simhash-index/base:bookworm
FROM ${BASE}
RUN apt-get update -qq && apt-get install -y -qq prometheus >/dev/null \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb \
    && { echo "# apt"; dpkg-query -W -f '${Package}=${Version}\n'; } > /usr/share/simhash-index/versions.txt \
    && mkdir -p /prometheus && chown prometheus:prometheus /prometheus
COPY deploy/docker/prometheus.yml /etc/prometheus/prometheus.yml
USER prometheus
VOLUME /prometheus
EXPOSE 9090
HEALTHCHECK --interval=5s --timeout=3s CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/9090"]
ENTRYPOINT ["/usr/bin/prometheus", "--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus", \
            "--web.listen-address=0.0.0.0:9090"]
