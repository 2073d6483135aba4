# kv0 — build, test and benchmark entry points.
#
#   make run     build kv0, the dashboard and the wasm module, write the tracking demo to out/demo, print
#                its runs and metrics, then serve it with two live runs appending until Ctrl-C
#   make demo    write the demo and print it, without serving
#   make test    install test dependencies, vet, test, build for wasm, fuzz briefly, interop: every
#                suite runs even when one before it failed, then the run fails if any did
#   make bench   benchmarks side by side with lancedb, Pebble and SQLite (docs/benchmarks.md)
#   make fuzz    every fuzz target for FUZZTIME (default 60s)
#   make proto   regenerate the protobuf code from core/internal/lancepb/proto
#   make python  the Python package in out/python (PYTHONPATH=out/python, or pip install ./out/python)
#   make web     the dashboard in out/web (web/README.md), with the wasm module in out/web/wasm
#   make assets  pack out/web and out/wasm into web/assets/dist, the dashboard and wasm module every kv0
#                binary embeds (commit the result; make test-assets checks it)
#   make dist    release artifacts in out/dist: kv0 for five platforms, the Python wheel, the npm package

GO        ?= go
# The one version number of kv0, its wheel and its npm package.
VERSION   := $(shell sed -n 's/^const Version = "\(.*\)"$$/\1/p' core/version/version.go)
BIN       := bin
KV0       := $(BIN)/kv0
FUZZTIME  ?= 60s
# Debian packages the project needs (installed on demand by `make deps`):
APT_PACKAGES := protobuf-compiler nodejs npm
PROTOC_GEN_GO_LITE_VERSION := v0.14.0

.PHONY: all build run run-check demo test test-deps node-deps s3-deps assets test-assets dist dist-bin dist-python dist-npm vet unit wasm wasm-prof wasm-size test-wasm wasm-deps web web-deps test-web edge edge-deps test-edge bench-edge bench-wasm bench-web fuzz fuzz-short interop-deps azure-deps bench bench-lance bench-kv bench-tracking bench-s3 bench-api proto clean \
	python python-deps python-test bench-python

all: build

# Build tags of the native builds (kv0, libkv0.so, the unit tests):
# disable_grpc_modules is cloud.google.com/go/storage's documented opt-out
# of its gRPC DirectPath modules (xDS, Envoy's and CEL's packages); kv0
# talks to GCS over the JSON API only. kv0 is 62.9 MB with it, 82.6 MB
# without (docs/architecture.md, "Google Cloud Storage and gRPC").
NATIVE_TAGS := disable_grpc_modules

build:
	$(GO) build -tags $(NATIVE_TAGS) -o $(KV0) ./native/cmd/kv0

# `make demo` writes the tracking demo (a dozen runs of a few experiments,
# with loss/accuracy/learning-rate curves and two records tables) to a local
# folder; the demo prints the runs and each run's metric summaries (from the
# statistics), and make adds one downsampled curve. Each summary is printed
# once (native/cmd/kv0 tests it).
# `make run` does the same, then serves the repository as `kv0 serve` does
# (the dashboard, the HTTP API and the wasm module at LISTEN, its URL printed)
# while two live runs append a step every 100 ms through the write-ahead log,
# until Ctrl-C, which commits them and stops both (`kv0 demo --help`).
DEMO ?= out/demo
DEMO_FLAGS ?=
LISTEN ?= 127.0.0.1:8080
demo: build
	rm -rf $(DEMO)
	$(KV0) demo $(DEMO) $(DEMO_FLAGS)
	$(KV0) metrics $(DEMO) resnet-cifar10-1 loss --context '{"subset":"train"}' --max-points 12

# make run checks LISTEN first (with node, which it needs for the
# dashboard), installs only the dashboard's npm packages (web-deps), and
# serves the dashboard and wasm module just built from the sources
# (--web, --wasm) rather than the ones kv0 embeds.
run: run-check build web
	rm -rf $(DEMO)
	$(KV0) demo $(DEMO) $(DEMO_FLAGS)
	$(KV0) metrics $(DEMO) resnet-cifar10-1 loss --context '{"subset":"train"}' --max-points 12
	$(KV0) demo $(DEMO) --live --serve $(LISTEN) --web $(WEB_OUT) --wasm $(WASM_OUT)

run-check:
	@command -v node >/dev/null 2>&1 || { echo "make run needs node and npm (the dashboard is bundled with esbuild): apt-get install nodejs npm"; exit 1; }
	@node web/check-listen.mjs '$(LISTEN)'

# `make test` is what CI runs (.ci/run). Node and npm are needed by the
# interop, wasm, Python and Azure suites, Chromium by the browser suite;
# with CI=true their absence is an error, never a skip. The tools are
# installed first, as steps of their own (test-deps), outside any test's
# time limit. Each suite is a make of its own and runs even when one
# before it failed; the list of failed ones and a closing "suites: N
# passed, N failed" line come last, and the run fails if any failed.
TEST_SUITES := test-deps vet unit test-assets test-wasm test-web test-edge fuzz-short python-test wasm-size
test:
	@passed=0; failed=; \
	for s in $(TEST_SUITES); do \
		echo "=== make $$s"; \
		if $(MAKE) --no-print-directory $$s; then passed=$$((passed+1)); else failed="$$failed $$s"; echo "=== make $$s FAILED"; fi; \
	done; \
	n=$$(echo $$failed | wc -w); \
	if [ -n "$$failed" ]; then echo "failed suites:$$failed"; fi; \
	echo "suites: $$passed passed, $$n failed"; \
	[ -z "$$failed" ]

# Every tool the suites use, installed before they run.
test-deps: interop-deps azure-deps s3-deps wasm-deps web-deps edge-deps python-deps

vet:
	$(GO) vet ./...
	GOOS=js GOARCH=wasm $(GO) vet ./edge/...

unit:
	$(GO) test -tags $(NATIVE_TAGS) -count=1 -timeout 40m ./...

# `make wasm` checks that core builds for js/wasm (its tests too: vet compiles
# them) and wasip1/wasm without OS packages, then writes the browser/Node
# module to out/wasm/ (wasm/README.md).
WASM_OUT   := out/wasm
WASM_TAGS  := arrow_json_stdlib,kv0_readonly
# No inlining in packages off the decoding paths (JSON of small answers,
# error formatting, decimals, URL parsing, number formatting) and in the Go
# runtime: 137 KB less gzip at the first pass, 50 KB less brotli for runtime
# and strconv at the sixth, no slower read measured in Chromium (not time:
# the conversion of timestamps calls it, and is 1.9x slower without;
# docs/benchmarks.md, "The wasm module: size").
WASM_NOINLINE := encoding/json fmt math/big net/url reflect runtime strconv internal/strconv \
	github.com/apache/arrow-go/v18/arrow/internal/... github.com/google/flatbuffers/...
WASM_GCFLAGS  := $(foreach p,$(WASM_NOINLINE),-gcflags='$(p)=-l')
WASM_EXEC  := $(firstword $(wildcard $(shell $(GO) env GOROOT)/lib/wasm/wasm_exec.js $(shell $(GO) env GOROOT)/misc/wasm/wasm_exec.js))
# The module is built with an empty build ID: the Go build ID of a main package varies with the
# checkout (the same sources in two folders gave two), and the module is
# committed in web/assets, compared byte for byte with a fresh build.
wasm:
	GOOS=js GOARCH=wasm $(GO) vet ./core/...
	GOOS=js GOARCH=wasm $(GO) build ./httpstore/...
	GOOS=wasip1 GOARCH=wasm $(GO) build ./core/...
	@bad=$$($(GO) list -f '{{.ImportPath}}: {{join .Imports " "}}' ./core/... | grep -E ': .*\b(os|os/exec|net|syscall)\b( |$$)' || true); \
	if [ -n "$$bad" ]; then echo "core imports OS packages:"; echo "$$bad"; exit 1; fi
	@if GOOS=js GOARCH=wasm $(GO) list -tags $(WASM_TAGS) -deps ./wasm | grep -qx 'net/http'; then \
		echo "the wasm module links net/http"; exit 1; fi
	mkdir -p $(WASM_OUT)
	GOOS=js GOARCH=wasm $(GO) build -tags $(WASM_TAGS) $(WASM_GCFLAGS) -trimpath -buildvcs=false -ldflags='-s -w -buildid=' -o $(WASM_OUT)/kv0.wasm ./wasm
	cp $(WASM_EXEC) $(WASM_OUT)/wasm_exec.js
	cp wasm/kv0.mjs wasm/kv0.d.ts wasm/README.md $(WASM_OUT)/
	sed 's/"version": "[^"]*"/"version": "$(VERSION)"/' wasm/package.json > $(WASM_OUT)/package.json
	gzip -9 -k -f $(WASM_OUT)/kv0.wasm

# `make wasm-prof` writes out/wasm-prof: the module with its name section
# (function names) for CPU profiles (tests/wasm/profile.mjs).
wasm-prof: wasm
	mkdir -p out/wasm-prof
	GOOS=js GOARCH=wasm $(GO) build -tags $(WASM_TAGS) $(WASM_GCFLAGS) -trimpath -o out/wasm-prof/kv0.wasm ./wasm
	cp $(WASM_OUT)/kv0.mjs $(WASM_OUT)/wasm_exec.js out/wasm-prof/

# The size check of `make test`: raw, gzip -9 and brotli sizes of kv0.wasm;
# fails above the hard limit (docs/benchmarks.md has the per-package table).
wasm-size: wasm
	bash tests/wasm/size.sh $(WASM_OUT)/kv0.wasm

# Node and headless Chromium suites over out/wasm (tests/wasm/README.md),
# after httpstore's fetch transport, tested under Node as js/wasm (Go's
# go_js_wasm_exec). With CI=true a missing Chromium is installed, and is an
# error if that fails.
wasm-deps: build node-deps
	@if [ ! -x /usr/bin/chromium ] && [ "$$CI" = "true" ]; then \
		apt-get update -qq && apt-get install -y -qq chromium brotli; fi
	@if [ ! -x /usr/bin/chromium ] && [ "$$CI" = "true" ]; then \
		echo "chromium is required for the browser suite (CI=true)"; exit 1; fi
	cd tests/wasm && { [ -d node_modules/apache-arrow ] && [ -d node_modules/playwright-core ] || npm ci --no-audit --no-fund; }

# browser.test.mjs reads a signed repository from versitygw (make s3-deps).
# npm.test.mjs installs the npm package as a user does (make dist-npm's
# kv0-wasm-VERSION.tgz into a fresh folder) and reads a repository with it
# in Node, directly and bundled by esbuild (web/package-lock.json's).
test-wasm: wasm wasm-deps dist-npm web-deps s3-deps
	PATH="$$($(GO) env GOROOT)/lib/wasm:$$PATH" GOOS=js GOARCH=wasm $(GO) test -count=1 -run TestFetchTransport ./httpstore
	cd tests/wasm && KV0=$(CURDIR)/$(KV0) WASM_DIR=$(CURDIR)/$(WASM_OUT) NPM_TGZ=$(CURDIR)/$(DIST_OUT)/kv0-wasm-$(VERSION).tgz \
		ESBUILD=$(CURDIR)/web/node_modules/.bin/esbuild node --test --test-concurrency=1 *.test.mjs

# The dashboard (web/README.md): esbuild bundles web/src into out/web
# (index.html, app-HASH.js, app-HASH.css) and copies the wasm module into
# out/web/wasm, so the folder deploys to any static host as it is.
WEB_OUT := out/web
web-deps: node-deps
	@command -v npm >/dev/null 2>&1 || { echo "the dashboard is bundled with node and npm (apt-get install nodejs npm)"; exit 1; }
	cd web && { [ -x node_modules/.bin/esbuild ] && [ -d node_modules/uplot ] || npm ci --no-audit --no-fund; }

web: wasm web-deps
	OUT=$(CURDIR)/$(WEB_OUT) WASM=$(CURDIR)/$(WASM_OUT) node web/build.mjs

# The dashboard's browser suite (tests/web/README.md) in Debian's Chromium,
# installed as for the wasm suites (wasm-deps); with CI=true a missing
# Chromium or node is an error. Screenshots go to out/web-screens. It runs
# against kv0 as a user builds it: a plain `go build` into a temporary
# folder, serving the dashboard and wasm module it embeds (web/assets) from
# another temporary folder; out/web and out/wasm are what it compares them
# with (and the static host of direct mode serves).
test-web: web wasm-deps
	cd tests/web && { [ -d node_modules/playwright-core ] || npm ci --no-audit --no-fund; }
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(GO) build -o "$$tmp/kv0" ./native/cmd/kv0 && \
	cd tests/web && KV0="$$tmp/kv0" WEB_DIR=$(CURDIR)/$(WEB_OUT) WASM_DIR=$(CURDIR)/$(WASM_OUT) SCREENS=$(CURDIR)/out/web-screens \
		node --test --test-concurrency=1 *.test.mjs

# The dashboard and wasm module every kv0 binary embeds (web/assets/dist,
# committed): `make assets` packs them from out/web and out/wasm, and
# test-assets (part of make test) fails when the committed ones are not
# what the sources build.
assets: web
	KV0_WEB_OUT=$(CURDIR)/$(WEB_OUT) KV0_WASM_OUT=$(CURDIR)/$(WASM_OUT) $(GO) test -count=1 -run '^TestAssetsMatchBuild$$' ./web/assets -args -update

test-assets: web
	KV0_WEB_OUT=$(CURDIR)/$(WEB_OUT) KV0_WASM_OUT=$(CURDIR)/$(WASM_OUT) $(GO) test -count=1 -v -run '^TestAssetsMatchBuild$$' ./web/assets

# The edge worker (docs/edge.md): edge/ built for js/wasm with the wasm
# module's size levers, syumai/workers' wasm_exec.js (from its
# workers-assets-gen), the glue edge/worker.mjs, the dashboard (out/web)
# as its static assets and out/edge/wrangler.toml, so that
# `wrangler deploy --config out/edge/wrangler.toml` deploys it.
EDGE_OUT := out/edge
edge: web
	rm -rf $(EDGE_OUT) && mkdir -p $(EDGE_OUT)
	GOOS=js GOARCH=wasm $(GO) build -tags $(WASM_TAGS) $(WASM_GCFLAGS) -trimpath -ldflags='-s -w' -o $(EDGE_OUT)/kv0edge.wasm ./edge
	$(GO) run github.com/syumai/workers/cmd/workers-assets-gen -mode=go -o $(EDGE_OUT)/.gen
	cp $(EDGE_OUT)/.gen/wasm_exec.js $(EDGE_OUT)/wasm_exec.js && rm -rf $(EDGE_OUT)/.gen
	cp edge/worker.mjs edge/wrangler.toml $(EDGE_OUT)/
	cp -r $(WEB_OUT) $(EDGE_OUT)/web

# wrangler 4.86.0 (workerd inside) and playwright-core from
# edge/package-lock.json; node and Chromium as for the other suites.
edge-deps: node-deps wasm-deps
	cd edge && { [ -x node_modules/.bin/wrangler ] && [ -d node_modules/playwright-core ] || npm ci --no-audit --no-fund; }

# The worker under `wrangler dev --local` against kv0 serve's answers, via
# KV0_ORIGIN and via a local R2 bucket (tests/edge/README.md).
test-edge: build edge edge-deps
	cd tests/edge && KV0=$(CURDIR)/$(KV0) EDGE_DIR=$(CURDIR)/$(EDGE_OUT) WRANGLER=$(CURDIR)/edge/node_modules/.bin/wrangler \
		node --test --test-concurrency=1 *.test.mjs

# Size and speed of the worker in workerd beside kv0 serve (docs/benchmarks.md).
bench-edge: build edge edge-deps
	cd tests/edge && KV0=$(CURDIR)/$(KV0) EDGE_DIR=$(CURDIR)/$(EDGE_OUT) WRANGLER=$(CURDIR)/edge/node_modules/.bin/wrangler \
		node bench.mjs $(CURDIR)/out/edge-bench

fuzz-short:
	bash tests/fuzz.sh 3s

fuzz:
	bash tests/fuzz.sh $(FUZZTIME)

# node and npm (Debian's, installed with CI=true when missing).
node-deps:
	@if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then \
		if [ "$$CI" = "true" ] && command -v apt-get >/dev/null 2>&1; then \
			apt-get update -qq && apt-get install -y -qq nodejs npm; \
		fi; \
	fi

# The interop suite (tests/interop/README.md) runs against lancedb 0.31.0
# (lance 8, tests/interop/package-lock.json) and lancedb 0.39.0 (lance 12,
# tests/interop/lance12/package-lock.json; it asks for node 22 and runs on
# node 20 with an engine warning); with CI=true a missing node or npm fails.
INTEROP_LOCKS := tests/interop tests/interop/lance12
interop-deps: node-deps
	@if command -v npm >/dev/null 2>&1; then \
		for d in $(INTEROP_LOCKS); do \
			(cd $$d && { [ -d node_modules/@lancedb/lancedb ] || npm ci --no-audit --no-fund; }) || exit 1; \
		done; \
	elif [ "$$CI" = "true" ]; then \
		echo "node and npm are required for the interop suite (CI=true)"; exit 1; \
	else \
		echo "warning: node/npm not found: the interop suite will skip"; \
	fi

# versitygw, the S3 server of tests/s3 (pinned in tests/s3/main_test.go),
# built with `go install` into the cache folder where the suite looks for
# it (a few minutes the first time; 30 at most).
VERSITYGW     := github.com/versity/versitygw/cmd/versitygw@v1.8.0
VERSITYGW_BIN  = $${XDG_CACHE_HOME:-$$HOME/.cache}/kv0/tools/versitygw-v1.8.0
s3-deps:
	@if ! command -v versitygw >/dev/null 2>&1 && [ ! -x "$(VERSITYGW_BIN)/versitygw" ]; then \
		echo "go install $(VERSITYGW)"; \
		GOBIN="$(VERSITYGW_BIN)" GOWORK=off timeout 30m $(GO) install $(VERSITYGW) || exit 1; \
	fi

# Azurite (npm, pinned in tests/azure/package-lock.json) emulates Azure Blob
# Storage for native/azblobstore's tests; with CI=true its absence is an error.
azure-deps: node-deps
	@if command -v npm >/dev/null 2>&1; then \
		cd tests/azure && { [ -d node_modules/azurite ] || npm ci --no-audit --no-fund; }; \
	elif [ "$$CI" = "true" ]; then \
		echo "node and npm are required for the Azure suite (CI=true)"; exit 1; \
	else \
		echo "warning: node/npm not found: the Azure suite will skip"; \
	fi

# Benchmarks, each side by side with its peer in one run (docs/benchmarks.md):
#   bench-lance     Lance reader and writer vs lancedb 0.31 (2.1) and 0.39 (2.2; KV0_BENCH_LANCEDB12), commit rate
#   bench-kv        key-value layer vs Pebble
#   bench-tracking  tracking layer vs MLflow's SQLite shape
#   bench-s3        round trips and bytes with 50 ms injected latency; commits against versitygw
#   bench-api       kv0 serve vs the Go API in-process (one series, 32 clients), rows streamed vs kv0 lance cat
#   bench-python    the Python package vs the Go API (Run.track, DB.put/get, iteration)
#   bench-wasm      the wasm module in Chromium vs native Go: startup, a cold series read with 50 ms per
#                   request, decoding per point, scan rate (data cached in out/wasm-bench)
#   bench-web       the dashboard in Chromium: time to first chart with 50 ms per request (api and direct),
#                   100 lines in one panel (draw, frame times while dragging a zoom), a live run at 1,000
#                   points/s (lag, requests of an idle poll), 10,000 runs in the table (scroll frames)
#                   (data cached in out/webbench)
bench: bench-lance bench-kv bench-tracking bench-s3 bench-api bench-python bench-wasm bench-web

bench-lance: build interop-deps
	bash tests/bench.sh

bench-kv:
	bash tests/kvbench/run.sh

bench-tracking:
	bash tests/trackbench/run.sh

bench-s3: s3-deps
	$(GO) test ./tests/s3 -run '^$$' -bench 'BenchmarkLatency|BenchmarkTrackingLatency|BenchmarkCommit|BenchmarkColdReadStores' -benchtime 3x

bench-api:
	sh tests/api/bench.sh

# The Python package (native/python on the C ABI of native/capi). The
# shared library is built once and the Python sources copied next to it.
PYTHON    ?= /usr/bin/python3
PYOUT     := out/python
python:
	mkdir -p $(PYOUT)/kv0
	$(GO) build -tags $(NATIVE_TAGS) -trimpath -buildvcs=false -buildmode=c-shared -o $(PYOUT)/kv0/libkv0.so ./native/capi
	rm -f $(PYOUT)/kv0/libkv0.h
	for f in native/python/kv0/*.py; do sed 's/@VERSION@/$(VERSION)/' $$f > $(PYOUT)/kv0/$${f##*/} || exit 1; done
	cp native/python/kv0_build.py $(PYOUT)/
	sed 's/@VERSION@/$(VERSION)/' native/python/pyproject.toml > $(PYOUT)/pyproject.toml

# pytest, pip and numpy (optional for users; the tests cover both the
# numpy and the array.array results) come from Debian; with CI=true
# missing ones are installed, and if that fails the target fails, never
# skips.
PY_APT := python3-pytest python3-pip python3-numpy python3-venv
python-deps:
	@missing=; \
	$(PYTHON) -c 'import pytest, numpy' >/dev/null 2>&1 || missing=1; \
	$(PYTHON) -m pip --version >/dev/null 2>&1 || missing=1; \
	v=$$(mktemp -d) && { $(PYTHON) -m venv "$$v/venv" >/dev/null 2>&1 || missing=1; rm -rf "$$v"; }; \
	if [ -n "$$missing" ]; then \
		if [ "$$CI" = "true" ]; then \
			apt-get update -qq && apt-get install -y -qq $(PY_APT) || exit 1; \
			$(PYTHON) -c 'import pytest' || { echo "pytest is required for the Python tests (CI=true)"; exit 1; }; \
		else \
			echo "warning: $(PYTHON) lacks pytest, pip, venv or numpy (apt-get install $(PY_APT)): some Python tests will skip"; \
		fi; \
	fi

# The Python tests use bin/kv0 and lancedb (tests/interop) for interop,
# versitygw (make s3-deps) for S3,
# and install the wheel of make dist-python into a fresh venv
# (test_wheel.py). pytest's exit code 5 (no tests collected) fails the
# target like any other failure.
python-test: build python python-deps interop-deps s3-deps dist-python
	@if $(PYTHON) -c 'import pytest' >/dev/null 2>&1; then \
		KV0_CLI=$(CURDIR)/$(KV0) KV0_WHEEL_DIR=$(CURDIR)/$(DIST_OUT) PYTHONPATH=$(CURDIR)/$(PYOUT) $(PYTHON) -m pytest -q -p no:cacheprovider tests/python; \
	elif [ "$$CI" = "true" ]; then exit 1; fi

bench-python: build python
	PYTHONPATH=$(CURDIR)/$(PYOUT) $(PYTHON) tests/python/bench.py

# Release artifacts (README.md, "Install"), in out/dist:
#   kv0-VERSION-OS-ARCH.tar.gz (.zip for windows)  kv0, README.md, LICENSE; built with CGO_ENABLED=0
#   kv0-VERSION-py3-none-manylinux_2_N_x86_64.whl  the Python package with libkv0.so (its manylinux
#                                                  tag from the glibc versions the library needs)
#   kv0-wasm-VERSION.tgz                           npm pack of out/wasm (@kv0/wasm)
#   SHA256SUMS
# make dist starts from an empty out/dist (no file of an earlier version
# is left to be summed or installed) and, since the binaries embed the
# committed dashboard (web/assets), first checks that it is current
# (test-assets).
DIST_OUT       := out/dist
DIST_BUILD     := out/dist-build
DIST_PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64
dist:
	rm -rf $(DIST_OUT)
	$(MAKE) --no-print-directory test-assets dist-bin dist-python dist-npm
	$(PYTHON) native/dist/dist.py sums $(DIST_OUT)

dist-bin:
	rm -rf $(DIST_BUILD) && mkdir -p $(DIST_OUT) $(DIST_BUILD)
	for p in $(DIST_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; exe=kv0; [ $$os = windows ] && exe=kv0.exe; \
		echo "kv0 for $$os/$$arch"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -tags $(NATIVE_TAGS) -trimpath -buildvcs=false -ldflags='-s -w' \
			-o $(DIST_BUILD)/kv0-$(VERSION)-$$os-$$arch/$$exe ./native/cmd/kv0 || exit 1; \
		cp README.md LICENSE $(DIST_BUILD)/kv0-$(VERSION)-$$os-$$arch/; \
	done
	$(PYTHON) native/dist/dist.py archives $(DIST_BUILD) $(DIST_OUT)

dist-python: python
	mkdir -p $(DIST_OUT) && rm -f $(DIST_OUT)/kv0-*.whl
	$(PYTHON) native/dist/dist.py wheel $(PYOUT) $(DIST_OUT)

dist-npm: wasm node-deps
	mkdir -p $(DIST_OUT) && rm -f $(DIST_OUT)/kv0-wasm-*.tgz
	cd $(DIST_OUT) && npm pack --silent $(CURDIR)/$(WASM_OUT)

bench-wasm: wasm wasm-deps
	cd tests/wasm && node bench.mjs $(CURDIR)/out/wasm-bench

# BENCH_WEB picks some of first, many, live, scroll (default all).
BENCH_WEB ?=
bench-web: build web wasm-deps
	cd tests/webbench && { [ -d node_modules/playwright-core ] || npm ci --no-audit --no-fund; }
	cd tests/webbench && KV0=$(CURDIR)/$(KV0) WEB_DIR=$(CURDIR)/$(WEB_OUT) WASM_DIR=$(CURDIR)/$(WASM_OUT) \
		DATA_DIR=$(CURDIR)/out/webbench node bench.mjs $(BENCH_WEB)

proto:
	@command -v protoc >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq protobuf-compiler; }
	$(GO) install github.com/aperturerobotics/protobuf-go-lite/cmd/protoc-gen-go-lite@$(PROTOC_GEN_GO_LITE_VERSION)
	cd core/internal/lancepb && PATH="$$PATH:$$($(GO) env GOPATH)/bin" $(GO) generate ./

clean:
	rm -rf $(BIN) out
