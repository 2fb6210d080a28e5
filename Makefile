# simhash-index: `make run` serves on a real local HBase; `make test` runs the suite against one.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
NATIVE := $(VENV)/.native
JARS := deploy/hbase-local/target/lib/.complete
MAPREDUCE_JAR := server/mapreduce/target/simhash-mapreduce.jar
YARN_JARS := deploy/yarn/target/lib/.complete
PYTEST_ARGS ?=

.PHONY: pex run stop test java-test proto-lint test-containers test-cluster test-yarn cluster-up cluster-down images engine unit lint deps jars install hbase-start hbase-stop hbase-status clean \
	eval soak bench golden proto proto-check tools

# HBase up, schema applied (idempotent), then the gRPC server in the foreground on 127.0.0.1:50051.
run: install jars
	$(BIN)/simhash-index hbase start
	$(BIN)/simhash-index schema apply
	$(BIN)/simhash-index serve

stop:
	@if [ -x $(BIN)/simhash-index ]; then $(BIN)/simhash-index hbase stop; fi

# The whole suite on a real HBase: the test session starts its own (free ports, var/test-hbase-*)
# and stops it, so this works while `make run` is up.  Exit status is pytest's.
test: install jars proto-check tools java-test
	$(BIN)/python -m pytest --durations=25 $(PYTEST_ARGS)

# The Java jobs' JUnit tests: the row-key codec and the sketch comparison against tests/golden.
java-test: | deps
	mvn -B -q -f server/mapreduce/pom.xml test

# The container path (needs Docker; `make deps` as root provides it): the images, the compose stack, the
# testcontainers fixture users get (simhash_client.testing), then the integration suite again, this time on
# the HBase image through testcontainers.  No registry here: Ryuk, testcontainers' reaper, cannot be pulled
# (the fixtures remove their containers themselves), and /.dockerenv misleads its guess of the host.
# The rerun takes the tests of what the image's HBase must do as the launcher's does (tables and their
# settings, scans, puts and deletes, time ranges and TTLs); the compose stack and the fixture's tests above
# already serve and query through it.  `make test` runs the rest on the launcher's HBase, and
# `make test-containers ENGINE_TESTS='gc batches …'` reruns others (these four are what CI runs).
CONTAINER_ENV := TESTCONTAINERS_RYUK_DISABLED=true TESTCONTAINERS_CONNECTION_MODE=docker_host
ENGINE_TESTS ?= hbase_smoke schema store time_window
test-containers: install images
	$(CONTAINER_ENV) $(BIN)/python -m pytest tests/containers $(PYTEST_ARGS)
	$(CONTAINER_ENV) SIMHASH_TEST_HBASE=container $(BIN)/python -m pytest \
		$(foreach t,$(ENGINE_TESTS),tests/integration/test_$(t).py) $(PYTEST_ARGS)

# The distributed cluster (deploy/cluster.yaml: HDFS, ZooKeeper, HMaster, 2 region servers, Thrift, YARN,
# 2 replicas) on a stack of its own: a region server killed under load, regions moved, a replica restarted,
# the HMaster killed, ZooKeeper and the NameNode restarted, a replica cut off from HBase; then hfile-load and
# clusters submitted to its YARN (tests/cluster/test_yarn.py: local records loaded; test_yarn_texts.py: texts
# on HDFS fingerprinted in the tasks with a NodeManager killed mid-job, the same input through the local
# runner into the launcher's HBase, verified clusters read from snapshots, with a Ctrl-C and a resume).  Recovery times land in var/cluster-results.json.  About 15 minutes.
test-cluster: install jars images pex
	$(BIN)/python -m pytest --durations=12 tests/cluster $(PYTEST_ARGS)
	@cat var/cluster-results.json

# Only the YARN tests of test-cluster, on a stack of their own: about 20 minutes on 2 cores.
test-yarn: install jars images pex
	$(BIN)/python -m pytest tests/cluster/test_yarn.py tests/cluster/test_yarn_texts.py $(PYTEST_ARGS)
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

lint: install proto-lint
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The proto: buf's STANDARD rules with documentation comments (buf.yaml), and no change that breaks the wire or
# JSON of the released API (proto/released: `buf build` of each release's proto).  buf comes from the Go module
# proxy into var/bin, like grpcurl (about a minute once).
BUF := var/bin/buf
GO_PLUGINS := var/bin/protoc-gen-go var/bin/protoc-gen-go-grpc
RELEASED_API := proto/released/simhash_index-v0.1.0.binpb
proto-lint: $(BUF) $(GO_PLUGINS)
	$(BUF) lint
	$(BUF) breaking --against $(RELEASED_API)
	@tmp=$$(mktemp -d) && $(BUF) generate -o $$tmp && diff -r $$tmp/client/go/simhashindexv1 client/go/simhashindexv1 \
	  >/dev/null || { echo "client/go/simhashindexv1 is stale: run 'make proto' and commit" >&2; rm -rf $$tmp; exit 1; }; \
	rm -rf $$tmp; echo "generated Go code is up to date"
$(BUF):
	GOBIN=$(CURDIR)/var/bin go install github.com/bufbuild/buf/cmd/buf@v1.75.0
var/bin/protoc-gen-go:
	GOBIN=$(CURDIR)/var/bin go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
var/bin/protoc-gen-go-grpc:
	GOBIN=$(CURDIR)/var/bin go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1

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

jars: $(JARS) $(MAPREDUCE_JAR) $(YARN_JARS)
$(JARS): deploy/hbase-local/pom.xml | deps
	mvn -B -q -f deploy/hbase-local/pom.xml package
	touch $@

# YARN's daemons for the container cluster (Hadoop's ResourceManager, NodeManager, history server).
$(YARN_JARS): deploy/yarn/pom.xml | deps
	mvn -B -q -f deploy/yarn/pom.xml package
	touch $@

# The MapReduce jobs of `hfile-load` and `clusters` (hbase-mapreduce from Maven Central): their jar and lib/.
$(MAPREDUCE_JAR): server/mapreduce/pom.xml $(wildcard server/mapreduce/src/main/java/io/simhashindex/hfile/*.java) | deps
	mvn -B -q -f server/mapreduce/pom.xml package -DskipTests
	touch $@

# The Python environment of hfile-load's map tasks on YARN: a PEX of the fingerprinting (the package's
# `fingerprint` extra, none of the server's dependencies) and the native extension,
# shipped through the distributed cache (docs/loading.md).  In venv mode it unpacks once per node, then starts
# as fast as a virtualenv.  Its wheels are this Python's (cp311 here): NodeManagers need that python3.  Its
# versions are the server image's (deploy/docker/constraints.txt): a release on PyPI changes neither.
PEX := $(dir $(MAPREDUCE_JAR))simhash-index.pex
pex: $(PEX)
$(PEX): $(INSTALLED) $(NATIVE) pyproject.toml deploy/docker/constraints.txt $(shell find server/simhash_server server/native/src -name '*.py' -o -name '*.rs')
	$(BIN)/pex '.[fingerprint]' ./server/native --constraints deploy/docker/constraints.txt --venv \
		--python-shebang '/usr/bin/env python3' -o $@

# grpcurl, to check README's examples (built from the Go module proxy into var/bin; about 40 s once).
GRPCURL := var/bin/grpcurl
tools: $(GRPCURL)
$(GRPCURL):
	@if command -v go >/dev/null; then GOBIN=$(CURDIR)/var/bin go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.3; \
	else echo "go is not installed: the grpcurl README test will be skipped"; fi

# Generated gRPC code (client/simhash_index/v1) from proto/; `proto-check` fails when it is stale.
PROTO := proto/simhash_index/v1/simhash_index.proto
PROTOC = $(BIN)/python -m grpc_tools.protoc -Iproto
proto: install $(BUF) $(GO_PLUGINS)
	$(PROTOC) --python_out=client --pyi_out=client --grpc_python_out=client $(PROTO)
	$(BUF) generate

proto-check: install
	@tmp=$$(mktemp -d) && $(PROTOC) --python_out=$$tmp --pyi_out=$$tmp --grpc_python_out=$$tmp $(PROTO) && \
	for f in simhash_index_pb2.py simhash_index_pb2.pyi simhash_index_pb2_grpc.py; do \
	  diff -q $$tmp/simhash_index/v1/$$f client/simhash_index/v1/$$f >/dev/null || \
	    { echo "client/simhash_index/v1/$$f is stale: run 'make proto' and commit" >&2; rm -rf $$tmp; exit 1; }; \
	done; rm -rf $$tmp; echo "generated gRPC code is up to date"

# Accuracy on pairs labelled by how they were made: docs/accuracy.md, then docs/accuracy-held-out.md on manuals
# nothing was tuned on (EVAL_ARGS="--half tune": the tuning half only)
eval: install $(EVAL_DEPS)
	$(BIN)/python benchmarks/eval_accuracy.py $(EVAL_ARGS)
	$(if $(EVAL_ARGS),,$(BIN)/python benchmarks/eval_accuracy.py --sources held-out --half all)

# 10 minutes of mixed load at half the sustained rate: errors, server RSS and p99 drift (docs/soak.png)
soak: install jars $(EVAL_DEPS)
	$(BIN)/simhash-index hbase start
	$(BIN)/python benchmarks/soak.py $(BENCH_ARGS)

# Any suite: `make bench-NAME` (or `make bench NAME=...`) runs benchmarks/bench_NAME.py with BENCH_ARGS;
# benchmarks/README.md lists the suites.  Those in BENCH_ON_RUN_HBASE use make run's HBase; the rest start
# their own.
BENCH_ON_RUN_HBASE := query verify parts part-rows grpc overload writers
EVAL_DEPS := $(VENV)/.eval
$(EVAL_DEPS): $(INSTALLED)
	$(BIN)/pip install -q -e '.[server,test,eval]'
	touch $@
# A suite's name with hyphens (parts-step) is its file's with underscores (bench_parts_step.py).
bench-%: install jars $(EVAL_DEPS)
	@test -f benchmarks/bench_$(subst -,_,$*).py || { echo "no suite benchmarks/bench_$(subst -,_,$*).py (see benchmarks/README.md)" >&2; exit 2; }
	$(if $(filter $*,$(BENCH_ON_RUN_HBASE)),$(BIN)/simhash-index hbase start)
	$(BIN)/python benchmarks/bench_$(subst -,_,$*).py $(BENCH_ARGS)
bench:
	@test -n "$(NAME)" || { echo "usage: make bench NAME=<suite> (see benchmarks/README.md)" >&2; exit 2; }
	$(MAKE) bench-$(NAME)

# bench-grpc, bench-overload, bench-writers and bench-tracing drive the server with ghz (from the Go module
# proxy into var/bin)
GHZ := var/bin/ghz
$(GHZ):
	GOBIN=$(CURDIR)/var/bin go install github.com/bojand/ghz/cmd/ghz@v0.93.0
bench-grpc bench-overload bench-writers bench-tracing: $(GHZ)

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

bench-scale-clean:
	@if [ -x $(BIN)/simhash-index ]; then $(BIN)/simhash-index hbase stop --var-dir var/scale/hbase || true; fi
	rm -rf var/scale

