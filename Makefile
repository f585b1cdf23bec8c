# herdlock developer targets. `make demo` and `make test` are the two commands
# a fresh clone needs: each installs what it lacks (Go modules, the dynalite
# npm package, the Lambda Runtime Interface Emulator) before it runs.

GO      ?= go
BIN     := $(CURDIR)/bin
RIE     := $(BIN)/aws-lambda-rie
DYNALITE_DIR := internal/dynalite
DYNALITE_STAMP := $(DYNALITE_DIR)/node_modules/.package-lock.json

# Knobs: make demo N=50 UPSTREAM_LATENCY=500ms; make chaos SEED=7 DURATION=10m
N                ?= 10
UPSTREAM_LATENCY ?= 300ms
SEED             ?= 1
DURATION         ?= 10m

export HERDLOCK_RIE := $(RIE)

LAMBDA_GOARCH ?= arm64

.PHONY: all deps test lint bench demo chaos model clean build-FetchFunction

all: test

deps: $(DYNALITE_STAMP) $(RIE)
	$(GO) mod download

$(DYNALITE_STAMP): $(DYNALITE_DIR)/package.json $(DYNALITE_DIR)/package-lock.json
	@command -v npm >/dev/null || { echo "npm not found: install Node.js 18 or later"; exit 1; }
	npm ci --prefix $(DYNALITE_DIR) --no-audit --no-fund --loglevel=error

$(RIE): tools/go.mod tools/go.sum
	cd tools && $(GO) build -o $(RIE) github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie

test: deps
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 20m ./...
	bash model/check.sh ci

# cfn-lint is a Python tool, not pinned in tools/: a missing one fails lint
# with the install command, it is never skipped.
CFN_LINT ?= cfn-lint

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool -modfile=tools/go.mod staticcheck ./...
	@command -v $(CFN_LINT) >/dev/null || { echo "cfn-lint not found: install it with 'pipx install cfn-lint' or 'pip install cfn-lint', then run make lint again"; exit 1; }
	$(CFN_LINT) template.yaml
	@mkdir -p $(BIN)
	$(GO) run ./cmd/herdlock create-table --print-cfn herdlock-locks > $(BIN)/lock-table.yaml
	$(CFN_LINT) $(BIN)/lock-table.yaml

# One burst of N invocations of the example, each in its own Lambda Runtime
# Interface Emulator, on local dynalite and a rate-limited local upstream.
demo: deps
	$(GO) run ./examples/lambda-fetch-cache/demo -n $(N) -upstream-latency $(UPSTREAM_LATENCY)

# Called by `sam build` (template.yaml: BuildMethod makefile) with ARTIFACTS_DIR.
build-FetchFunction:
	CGO_ENABLED=0 GOOS=linux GOARCH=$(LAMBDA_GOARCH) $(GO) build -tags lambda.norpc -trimpath \
		-ldflags='-s -w' -o $(ARTIFACTS_DIR)/bootstrap ./examples/lambda-fetch-cache

# Every figure of BENCHMARKS.md in one run (under 5 minutes), then the plot.
bench: deps
	$(GO) run ./internal/bench/cmd/bench -out bench.out/results.json
	$(GO) run ./internal/bench/cmd/plot -in bench.out/results.json -out docs/herd-latency.svg

# The fault harness, longer than the CI-sized run inside `make test`: every
# kind of phase, storm phases (all faults at once) included.
chaos: deps
	$(GO) run ./internal/chaos/cmd/chaos -seed $(SEED) -duration $(DURATION)

model:
	bash model/check.sh full

clean:
	rm -rf $(BIN) $(DYNALITE_DIR)/node_modules
