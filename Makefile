# simhash-index: `make run` serves on a real local HBase; `make test` runs the suite against one.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
NATIVE := $(VENV)/.native
JARS := deploy/hbase-local/target/lib/.complete
HFILE_JOB := deploy/hfile-job/target/simhash-hfile-job.jar
PYTEST_ARGS ?=

.PHONY: run stop test test-containers test-cluster cluster-up cluster-down images engine unit lint deps jars install hbase-start hbase-stop hbase-status clean \
	eval soak bench-fingerprint bench-dedup bench-gc bench-query bench-compression bench-grpc bench-bulkload bench-hfile bench-scale bench-scale-clean bench-compaction bench-compaction-clean bench-live bench-regions bench-reads bench-reply bench-fp2docs bench-warmup bench-cache bench-blockcache bench-scans bench-grouping bench-clusters bench-verify golden proto proto-check tools

# HBase up, schema applied (idempotent), then the gRPC server in the foreground on 127.0.0.1:50051.
run: install jars
	$(BIN)/simhash-index hbase start
	$(BIN)/simhash-index schema apply
	$(BIN)/simhash-index serve

stop:
	@if [ -x $(BIN)/simhash-index ]; then $(BIN)/simhash-index hbase stop; fi

# The whole suite on a real HBase: the test session starts its own (free ports, var/test-hbase-*)
# and stops it, so this works while `make run` is up.  Exit status is pytest's.
test: install jars proto-check tools
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The container path (needs Docker; `make deps` as root provides it): the images, the compose stack, the
# testcontainers fixture users get (simhash_client.testing), then the integration suite again, this time on
# the HBase image through testcontainers.  No registry here: Ryuk, testcontainers' reaper, cannot be pulled
# (the fixtures remove their containers themselves), and /.dockerenv misleads its guess of the host.
CONTAINER_ENV := TESTCONTAINERS_RYUK_DISABLED=true TESTCONTAINERS_CONNECTION_MODE=docker_host
test-containers: install images
	$(CONTAINER_ENV) $(BIN)/python -m pytest tests/containers $(PYTEST_ARGS)
	$(CONTAINER_ENV) SIMHASH_TEST_HBASE=container $(BIN)/python -m pytest tests/integration $(PYTEST_ARGS)

# The distributed cluster (deploy/cluster.yaml: HDFS, ZooKeeper, HMaster, 2 region servers, Thrift, 2 replicas)
# on a stack of its own: a region server killed under load, regions moved, a replica restarted.  Recovery
# times land in var/cluster-results.json.  About 10 minutes.
test-cluster: install images
	$(BIN)/python -m pytest tests/cluster $(PYTEST_ARGS)
	@cat var/cluster-results.json

COMPOSE = $(shell docker compose version >/dev/null 2>&1 && echo docker compose || echo docker-compose)
cluster-up: images
	$(COMPOSE) -p simhash-cluster -f deploy/cluster.yaml up -d

cluster-down:
	$(COMPOSE) -p simhash-cluster -f deploy/cluster.yaml down -v

# simhash-index/base (debootstrap), simhash-index/hbase, simhash-index/server, simhash-index/prometheus
images: jars engine
	deploy/docker/images.sh

engine:
	deploy/docker/engine.sh

unit: install
	$(BIN)/python -m pytest -m unit $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# System packages the project needs: a JDK 17 for HBase, Maven to fetch its jars, venv for Python; as root,
# also a Docker engine for the container path (deploy/docker/engine.sh; skipped, with a note, otherwise).
deps:
	@missing=""; \
	command -v java >/dev/null || missing="$$missing openjdk-17-jdk-headless"; \
	command -v mvn >/dev/null || missing="$$missing maven"; \
	$(PYTHON) -c 'import venv, ensurepip' 2>/dev/null || missing="$$missing python3-venv"; \
	if ! command -v cargo >/dev/null; then \
	  echo "cargo (Rust, e.g. from rustup) is needed to build server/native (the fingerprinting extension)" >&2; exit 1; \
	fi; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "need root (or install by hand):$$missing" >&2; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi; \
	if [ "$$(id -u)" = 0 ]; then deploy/docker/engine.sh; \
	else echo "note: not root, so no Docker engine set up; the container path (make images) needs one"; fi

install: $(INSTALLED) $(NATIVE)
$(INSTALLED): pyproject.toml | deps
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[server,test]'
	touch $@

# The Rust fingerprinting extension (maturin from PyPI, crates from crates.io; about a minute once).
$(NATIVE): $(INSTALLED) server/native/Cargo.toml server/native/Cargo.lock server/native/pyproject.toml \
		server/native/src/lib.rs
	$(BIN)/pip install -q ./server/native
	touch $@

jars: $(JARS) $(HFILE_JOB)
$(JARS): deploy/hbase-local/pom.xml | deps
	mvn -B -q -f deploy/hbase-local/pom.xml package
	touch $@

# The HFile job of `simhash-index hfile-load` (hbase-mapreduce from Maven Central): its jar and lib/.
$(HFILE_JOB): deploy/hfile-job/pom.xml $(wildcard deploy/hfile-job/src/main/java/io/simhashindex/hfile/*.java) | deps
	mvn -B -q -f deploy/hfile-job/pom.xml package
	touch $@

# grpcurl, to check README's examples (built from the Go module proxy into var/bin; about 40 s once).
GRPCURL := var/bin/grpcurl
tools: $(GRPCURL)
$(GRPCURL):
	@if command -v go >/dev/null; then GOBIN=$(CURDIR)/var/bin go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.3; \
	else echo "go is not installed: the grpcurl README test will be skipped"; fi

# Generated gRPC code (client/simhash_index/v1) from proto/; `proto-check` fails when it is stale.
PROTO := proto/simhash_index/v1/simhash_index.proto
PROTOC = $(BIN)/python -m grpc_tools.protoc -Iproto
proto: install
	$(PROTOC) --python_out=client --pyi_out=client --grpc_python_out=client $(PROTO)

proto-check: install
	@tmp=$$(mktemp -d) && $(PROTOC) --python_out=$$tmp --pyi_out=$$tmp --grpc_python_out=$$tmp $(PROTO) && \
	for f in simhash_index_pb2.py simhash_index_pb2.pyi simhash_index_pb2_grpc.py; do \
	  diff -q $$tmp/simhash_index/v1/$$f client/simhash_index/v1/$$f >/dev/null || \
	    { echo "client/simhash_index/v1/$$f is stale: run 'make proto' and commit" >&2; rm -rf $$tmp; exit 1; }; \
	done; rm -rf $$tmp; echo "generated gRPC code is up to date"

# Accuracy of every fingerprint recipe on whole Debian-docs pages (reporting half) -> docs/accuracy.md, accuracy-k.png
# (EVAL_ARGS="--half tune" for the half recipes are chosen on)
eval: install
	$(BIN)/pip install -q -e '.[server,test,eval]'
	$(BIN)/python benchmarks/eval_accuracy.py $(EVAL_ARGS)

bench-fingerprint: install
	$(BIN)/python benchmarks/bench_fingerprint.py

# Query latency against the local HBase of `make run` (loads 1e5 and 1e6 fingerprints once)
bench-query: install jars
	$(BIN)/simhash-index hbase start
	$(BIN)/python benchmarks/bench_query.py $(BENCH_ARGS)

# On-disk size per compression codec (NONE, SNAPPY, LZ4, ZSTD) of the same fingerprints
bench-compression: install jars
	$(BIN)/simhash-index hbase start
	$(BIN)/python benchmarks/bench_compression.py $(BENCH_ARGS)

# Bulk load of 10 million fingerprints (and 20,000 texts) into an HBase of its own, with the CPU per process
bench-bulkload: install jars
	$(BIN)/python benchmarks/bench_bulkload.py $(BENCH_ARGS)

# Verification's cost beside the unverified path (sketch CPU, Index and Query latency, fp2docs bytes)
bench-verify: install jars
	$(BIN)/simhash-index hbase start
	$(BIN)/python benchmarks/bench_verify.py $(BENCH_ARGS)

# What Deduplicate's claims cost beside the unclaimed steps (docs/dedup.md), on the local HBase
bench-dedup: install jars
	$(BIN)/simhash-index hbase start
	$(BIN)/python benchmarks/bench_dedup.py $(BENCH_ARGS)

# A fingerprint shared by 1,000,000 documents against ordinary ones; churn's orphans before and after gc
bench-gc: install jars
	$(BIN)/simhash-index hbase start
	$(BIN)/python benchmarks/bench_gc.py $(BENCH_ARGS)

# 10 minutes of mixed load (70% Query, 20% Index, 10% Deduplicate) at half the sustained rate: errors, server
# RSS and p99 drift, and docs/soak.png
soak: install jars
	$(BIN)/pip install -q -e '.[server,test,eval]'
	$(BIN)/simhash-index hbase start
	$(BIN)/python benchmarks/soak.py $(BENCH_ARGS)

# End-to-end gRPC with ghz over the 1e6 index of bench-query (run that first)
GHZ := var/bin/ghz
$(GHZ):
	GOBIN=$(CURDIR)/var/bin go install github.com/bojand/ghz/cmd/ghz@v0.93.0
bench-grpc: install jars $(GHZ)
	$(BIN)/simhash-index hbase start
	$(BIN)/python benchmarks/bench_grpc.py $(BENCH_ARGS)

# Rewrite tests/golden/vectors.json (refuses to move fingerprints without a FINGERPRINT_VERSION bump)
golden: install
	$(BIN)/python tests/golden/make_vectors.py

hbase-start: install jars
	$(BIN)/simhash-index hbase start
hbase-stop: stop
hbase-status: install
	$(BIN)/simhash-index hbase status

clean: stop
	rm -rf $(VENV) var build dist *.egg-info deploy/hbase-local/target

# The two load paths side by side (10^7 fingerprints each): hfile-load against bulk-load (docs/benchmarks.md)
bench-hfile: install jars
	$(BIN)/python benchmarks/bench_hfile.py $(BENCH_ARGS)

# Query latency at 10^5..10^8 fingerprints (hfile-load builds the index; ~40 GB under var/scale, kept for
# later runs), live and major-compacted (docs/benchmarks.md, docs/scale.png).  bench-scale-clean removes it.
bench-scale: install jars
	$(BIN)/pip install -q -e '.[server,test,eval]'
	$(BIN)/python benchmarks/bench_scale.py $(BENCH_ARGS)

# Live 10^8 after chunked loads: queries while HBase compacts the loads' store files, by compaction throughput
# limit, side by side (the index, ~20 GB under var/compaction, is kept; bench-compaction-clean removes it).
bench-compaction: install jars
	$(BIN)/python benchmarks/bench_compaction.py $(BENCH_ARGS)

# A live 10^6 index (written through Index, never compacted by hand) as make run's HBase serves it, a fresh
# HBase per garbage collector, one at a time: latency just after the writes, while writing, and compacted.
bench-live: install jars
	$(BIN)/python benchmarks/bench_live.py $(BENCH_ARGS)

# Drawer regions on one region server: indexes of 16 and 2 regions written and queried side by side.
bench-regions: install jars
	$(BIN)/python benchmarks/bench_regions.py $(BENCH_ARGS)

# serve's query reads on its event loop against in a batch thread, side by side on one 10^6 index.
bench-reads: install jars
	$(BIN)/python benchmarks/bench_reads.py $(BENCH_ARGS)

# Decoding a long Thrift2 reply on the event loop: afresh after every read, or as loop_reads does (no HBase).
bench-reply: install
	$(BIN)/python benchmarks/bench_reply.py $(BENCH_ARGS)

# The fp2docs family's encoding, FAST_DIFF against ROW_INDEX_V1, on bench-live's index (BENCH_ARGS="--gcs G1 --keep").
bench-fp2docs: install jars
	$(BIN)/python benchmarks/bench_fp2docs.py $(BENCH_ARGS)

# The first queries after a restart: serve warming up until settled, a fixed count, none (needs bench-live's BENCH_ARGS="--gcs G1 --keep").
bench-warmup: install jars
	$(BIN)/python benchmarks/bench_warmup.py $(BENCH_ARGS)

# bench-scale's 10^8 index read with the drawer table in the block cache or in the page cache, by heap size.
bench-cache: install jars
	$(BIN)/python benchmarks/bench_cache.py $(BENCH_ARGS)

# bench-scale's 10^8 index, its drawer table in the page cache: the block cache's policies side by side.
bench-blockcache: install jars
	$(BIN)/python benchmarks/bench_blockcache.py $(BENCH_ARGS)

# Where a query goes: drawer scans pipelined or a thread per region group, store.query, the client, gRPC alone.
bench-scans: install jars
	$(BIN)/python benchmarks/bench_scans.py $(BENCH_ARGS)

# bench-scale's 10^8 index: a query's drawer scans grouped by region against a scan per prefix, cold and warm.
bench-grouping: install jars
	$(BIN)/python benchmarks/bench_grouping.py $(BENCH_ARGS)

# The clusters job: exactness at 10^5 with a 10^5-fingerprint hot prefix (brute force), then wall time at 10^7
# on var/scale (an index of bench-scale's first 10^7 fingerprints, kept) against N queries through the store.
bench-clusters: install jars
	$(BIN)/python benchmarks/bench_clusters.py $(BENCH_ARGS)

bench-scale-clean:
	@if [ -x $(BIN)/simhash-index ]; then $(BIN)/simhash-index hbase stop --var-dir var/scale/hbase || true; fi
	rm -rf var/scale

bench-compaction-clean:
	@if [ -x $(BIN)/simhash-index ]; then $(BIN)/simhash-index hbase stop --var-dir var/compaction/hbase || true; fi
	rm -rf var/compaction
