# kv0 — build, test and benchmark entry points.
#
#   make run     build kv0, write the tracking demo to out/demo and print its runs and metrics
#   make test    install test dependencies, vet, test, build for wasm, fuzz briefly, interop
#   make bench   benchmarks side by side with lancedb, Pebble and SQLite (docs/benchmarks.md)
#   make fuzz    every fuzz target for FUZZTIME (default 60s)
#   make proto   regenerate the protobuf code from core/internal/lancepb/proto

GO        ?= go
BIN       := bin
KV0       := $(BIN)/kv0
FUZZTIME  ?= 60s
# Debian packages the project needs (installed on demand by `make deps`):
APT_PACKAGES := protobuf-compiler nodejs npm
PROTOC_GEN_GO_VERSION := v1.36.12

.PHONY: all build run test vet unit wasm fuzz fuzz-short interop-deps azure-deps bench bench-lance bench-kv bench-tracking bench-s3 proto clean

all: build

build:
	$(GO) build -o $(KV0) ./native/cmd/kv0

# `make run` writes the tracking demo (a dozen runs of a few experiments, with
# loss/accuracy/learning-rate curves) to a local folder; the demo prints the
# runs and each run's metric summaries (from the statistics), and make adds one
# downsampled curve. Each summary is printed once (native/cmd/kv0 tests it).
DEMO ?= out/demo
DEMO_FLAGS ?=
run: build
	rm -rf $(DEMO)
	$(KV0) demo $(DEMO) $(DEMO_FLAGS)
	$(KV0) metrics $(DEMO) resnet-cifar10-1 loss --context '{"subset":"train"}' --max-points 12

# `make test` is what CI runs (.ci/run). Node and npm are needed by the
# interop suite; with CI=true their absence is an error, never a skip.
test: interop-deps azure-deps vet unit wasm fuzz-short

vet:
	$(GO) vet ./...

unit:
	$(GO) test -count=1 -timeout 40m ./...

wasm:
	GOOS=js GOARCH=wasm $(GO) build ./core/... ./httpstore/...
	GOOS=wasip1 GOARCH=wasm $(GO) build ./core/...
	@bad=$$($(GO) list -f '{{.ImportPath}}: {{join .Imports " "}}' ./core/... | grep -E ': .*\b(os|os/exec|net|syscall)\b( |$$)' || true); \
	if [ -n "$$bad" ]; then echo "core imports OS packages:"; echo "$$bad"; exit 1; fi

fuzz-short:
	bash tests/fuzz.sh 3s

fuzz:
	bash tests/fuzz.sh $(FUZZTIME)

interop-deps:
	@if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then \
		if [ "$$CI" = "true" ] && command -v apt-get >/dev/null 2>&1; then \
			apt-get update -qq && apt-get install -y -qq nodejs npm; \
		fi; \
	fi
	@if command -v npm >/dev/null 2>&1; then \
		cd tests/interop && { [ -d node_modules/@lancedb/lancedb ] || npm ci --no-audit --no-fund; }; \
	elif [ "$$CI" = "true" ]; then \
		echo "node and npm are required for the interop suite (CI=true)"; exit 1; \
	else \
		echo "warning: node/npm not found: the interop suite will skip"; \
	fi

# Azurite (npm, pinned in tests/azure/package-lock.json) emulates Azure Blob
# Storage for native/azblobstore's tests; with CI=true its absence is an error.
azure-deps: interop-deps
	@if command -v npm >/dev/null 2>&1; then \
		cd tests/azure && { [ -d node_modules/azurite ] || npm ci --no-audit --no-fund; }; \
	elif [ "$$CI" = "true" ]; then \
		echo "node and npm are required for the Azure suite (CI=true)"; exit 1; \
	else \
		echo "warning: node/npm not found: the Azure suite will skip"; \
	fi

# Benchmarks, each side by side with its peer in one run (docs/benchmarks.md):
#   bench-lance     Lance reader and writer vs lancedb 0.31, commit rate
#   bench-kv        key-value layer vs Pebble
#   bench-tracking  tracking layer vs MLflow's SQLite shape
#   bench-s3        round trips and bytes with 50 ms injected latency; commits against versitygw
bench: bench-lance bench-kv bench-tracking bench-s3

bench-lance: build interop-deps
	bash tests/bench.sh

bench-kv:
	bash tests/kvbench/run.sh

bench-tracking:
	bash tests/trackbench/run.sh

bench-s3:
	$(GO) test ./tests/s3 -run '^$$' -bench 'BenchmarkLatency|BenchmarkTrackingLatency|BenchmarkCommit' -benchtime 3x

proto:
	@command -v protoc >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq protobuf-compiler; }
	$(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	cd core/internal/lancepb && PATH="$$PATH:$$($(GO) env GOPATH)/bin" $(GO) generate ./

clean:
	rm -rf $(BIN) out
