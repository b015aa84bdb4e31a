# benchfleet — the one test command is `make test`: it installs what the
# tests need (VersityGW at a pinned version, into ./.tools/bin), checks
# formatting and vet, runs every test (the S3 tests against a real
# VersityGW are required, not skipped; so is the dashboard's test in
# headless Chromium, installed from Debian's packages; the harness tests under
# Debian's real pytest and venv; and bench query's DuckDB reference, npm's
# @duckdb/node-api), the race detector on the
# concurrent packages, and a brief run of every fuzz target.

GO       ?= go
TOOLS    := $(CURDIR)/.tools/bin
FUZZTIME ?= 4s
export BENCHFLEET_VERSITYGW := $(TOOLS)/versitygw

.PHONY: test tools build vet unit race fuzz-short bench demo soak clean

test: tools vet unit race fuzz-short

tools:
	./scripts/install-versitygw.sh
	./scripts/install-chromium.sh
	./scripts/install-pytest.sh
	./scripts/install-bubblewrap.sh
	./scripts/install-duckdb.sh

# What `benchfleet version` names (and every worker's heartbeat, result and
# /metrics): this tree's commit, read from git here because go's own VCS
# stamp is missing in a git worktree and with -buildvcs=false. Outside a
# checkout they are empty and the binary says "unknown".
VERSION_PKG := github.com/benchfleet/benchfleet/internal/version
LDFLAGS := -X $(VERSION_PKG).stampVersion=$(shell git describe --tags --dirty 2>/dev/null) \
	-X $(VERSION_PKG).stampRevision=$(shell git rev-parse HEAD 2>/dev/null) \
	-X $(VERSION_PKG).stampTime=$(shell git log -1 --format=%cI 2>/dev/null) \
	-X $(VERSION_PKG).stampModified=$(shell test -n "$$(git status --porcelain 2>/dev/null)" && echo true)
BIN ?= bin/benchfleet

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/benchfleet

# gofmt, go.mod and go.sum tidy (go mod tidy changes nothing), go vet.
vet:
	@out="$$(gofmt -l $$(git ls-files '*.go'))"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }
	$(GO) vet ./...

# The benchfleet binary the tests run, built once for the whole run
# (internal/e2e/clitest.Binary; go test alone builds one per test process).
TESTBIN := $(CURDIR)/.tools/test/benchfleet

unit:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(TESTBIN) ./cmd/benchfleet
	BENCHFLEET_TEST_BINARY=$(TESTBIN) BENCHFLEET_REQUIRE_S3=1 BENCHFLEET_REQUIRE_PYTEST=1 BENCHFLEET_REQUIRE_BOX=1 BENCHFLEET_REQUIRE_PYDANTIC=1 BENCHFLEET_REQUIRE_BROWSER=1 BENCHFLEET_REQUIRE_DUCKDB=1 AWS_EC2_METADATA_DISABLED=true $(GO) test -count=1 -timeout 20m ./...

# The packages with the most concurrency, under the race detector.
race:
	BENCHFLEET_REQUIRE_S3=1 $(GO) test -race -count=1 -timeout 20m ./worker/... ./producer/... ./storage/... ./internal/topology/... ./device/box/...

fuzz-short:
	FUZZTIME=$(FUZZTIME) ./scripts/fuzz-short.sh

bench:
	$(GO) test -run '^$$' -bench . -benchtime 3x ./device/cpu/ ./storage/...

demo:
	$(GO) run ./cmd/benchfleet demo

# Long soak and chaos runs, not part of `make test`.
soak:
	BENCHFLEET_SOAK=1 $(GO) test -count=1 -timeout 60m -tags soak ./...

clean:
	rm -rf bin benchfleet-data
