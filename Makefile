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

.PHONY: all deps test lint bench demo chaos model clean

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

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool -modfile=tools/go.mod staticcheck ./...

# The fault harness, longer than the CI-sized run inside `make test`.
chaos: deps
	$(GO) run ./internal/chaos/cmd/chaos -seed $(SEED) -duration $(DURATION)

model:
	bash model/check.sh full

clean:
	rm -rf $(BIN) $(DYNALITE_DIR)/node_modules
