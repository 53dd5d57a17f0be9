# InferCrane developer targets. `make test` is what CI runs.
GO       ?= go
PKGS     ?= ./...
FUZZTIME ?= 20s
# Go's fuzzer minimizes every input that finds new coverage for up to 60 s by
# default, trying O(n^2) cuts of it; a multi-KB spec seed at a few ms an
# execution never finishes, so FuzzLoad sat at ~28 execs for its whole run.
# A bounded count keeps the workers fuzzing (docs/testing.md).
FUZZMINIMIZETIME ?= 200x

.PHONY: build check-binary cross test timing bench bench-duckdb fuzz lint integration integration-dsse fidelity clean

# The release build: static (no cgo), reproducible paths, stripped.
RELEASE_FLAGS = -trimpath -ldflags "-s -w"

## build: compile bin/infercrane and bin/infercrane-loadgen (the load generator
## alone, which the modal executor copies into sandboxes), static and stripped
build:
	CGO_ENABLED=0 $(GO) build $(RELEASE_FLAGS) -o bin/ ./cmd/infercrane ./cmd/infercrane-loadgen

## check-binary: build, then check both binaries are static and stripped and
## print their sizes (TestReleaseBuild)
check-binary: build
	INFERCRANE_RELEASE_BIN=$(CURDIR)/bin $(GO) test -count=1 -run '^TestReleaseBuild$$' -v ./cmd/infercrane

## cross: build both binaries for other supported platforms (Linux and macOS,
## ARM and 32-bit) and run the 32-bit-sensitive tests on linux/386
CROSS ?= linux/arm64 linux/386 darwin/arm64
cross:
	@for t in $(CROSS); do echo "build $$t"; \
	  CGO_ENABLED=0 GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) build -o /dev/null ./cmd/infercrane ./cmd/infercrane-loadgen || exit 1; \
	done
	GOARCH=386 $(GO) test -count=1 -run '^TestJSONIntSaturates$$' ./executor/loadgen

## test: go mod tidy leaves go.mod and go.sum as they are, vet, then every unit,
## property and testscript test; the integration tests (build tag integration) are
## vetted too, so a break in them shows here, not after make integration's ~3 GB setup
test:
	$(GO) mod tidy -diff
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet $(PKGS)
	$(GO) vet -tags integration $(PKGS)
	$(GO) test -count=1 -timeout 25m $(PKGS)

## timing: the simulated engine's real-time agreement with the plan, calibrate's
## recovery of the parameters the engine ran with, and the load generator's
## agreement with the engine, at their own tolerances (2-10%, 0.5 ms); make test
## compares the same runs at tolerances a loaded 2-core machine holds (20%,
## 1-3 ms). Run on an idle machine.
timing:
	INFERCRANE_TIMING_STRICT=1 $(GO) test -count=1 -timeout 20m -run 'TestSim|TestModelModeMatchesEstimate' -v ./executor/sim
	INFERCRANE_TIMING_STRICT=1 $(GO) test -count=1 -timeout 5m -run 'TestRecoversConstantTiming|TestOpenLoopSendsOnTime' -v ./executor/loadgen
	INFERCRANE_TIMING_STRICT=1 $(GO) test -count=1 -timeout 10m -run 'TestCalibrateRecoversHiddenParameters' -v ./cmd/infercrane

## bench: the benchmarks, with ratios against in-process baselines, then the
## full-scan profile against DuckDB (bench-duckdb)
bench:
	$(GO) test -run '^$$' -bench . -benchmem -timeout 30m $(PKGS)
	$(MAKE) check-binary
	$(MAKE) bench-duckdb

## bench-duckdb: `profile trace --all` vs DuckDB's equivalent query (pinned, PyPI) on the
## same synthetic trace (ROWS, default 20M), 1 and 2 threads, RUNS interleaved rounds; prints
## median rows/s with spread, the ratio, the load and whether the sample counts agree
bench-duckdb:
	bash scripts/bench/duckdb-vs-profile.sh

## fuzz: run every fuzz target for FUZZTIME each (inputs minimized for at most
## FUZZMINIMIZETIME executions)
fuzz:
	GO='$(GO)' PKGS='$(PKGS)' FUZZTIME='$(FUZZTIME)' FUZZMINIMIZETIME='$(FUZZMINIMIZETIME)' bash scripts/fuzz/run.sh

## lint: formatting and vet
lint:
	@test -z "$$(gofmt -l .)" || { gofmt -l .; exit 1; }
	$(GO) vet $(PKGS)

## reliability: the kill-anywhere matrix, 20 iterations per executor kind
## (make test runs 2); MATRIX_ITERATIONS and MATRIX_SEED override
MATRIX_ITERATIONS ?= 20
reliability:
	INFERCRANE_MATRIX_ITERATIONS=$(MATRIX_ITERATIONS) INFERCRANE_MATRIX_SEED=$(MATRIX_SEED) \
	  $(GO) test -count=1 -timeout 60m -run '^TestKillAnywhereMatrix$$' -v ./cmd/infercrane

## integration: real vLLM (CPU build) on a tiny local model; see scripts/integration
integration:
	bash scripts/integration/run.sh

## integration-dsse: signed evidence checked with securesystemslib (pinned venv); part of integration
integration-dsse:
	bash scripts/integration/dsse.sh

## fidelity: our load generator, vllm bench serve, AIPerf and GuideLLM side by side on the sim and real vLLM (CPU); see scripts/fidelity
fidelity:
	bash scripts/fidelity/run.sh

clean:
	rm -rf bin
