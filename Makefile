# herdlock developer targets. `make demo` and `make test` are the two commands
# a fresh clone needs: each installs what it lacks (Go modules, the Dynoxide
# and dynalite npm packages, the Lambda Runtime Interface Emulator) before it
# runs.
#
# The repository is several Go modules joined by go.work (see MODULES): the
# library at the root, each tracing adapter, the example, the chaos harness
# and the benchmarks. Package patterns below name the whole workspace.

GO      ?= go
BIN     := $(CURDIR)/bin
RIE     := $(BIN)/aws-lambda-rie
DYNALITE_DIR := internal/dynalite
DYNALITE_STAMP := $(DYNALITE_DIR)/node_modules/.package-lock.json
DYNOXIDE_DIR := internal/dynoxide
DYNOXIDE_STAMP := $(DYNOXIDE_DIR)/node_modules/.package-lock.json
S3RVER_DIR := middleware/lockmw/s3answers/internal/s3rver
S3RVER_STAMP := $(S3RVER_DIR)/node_modules/.package-lock.json

# Knobs: make demo N=50 UPSTREAM_LATENCY=500ms FRONT=http; make demo FRONT=http IDEMPOTENT=1
# (N duplicates of one POST /orders); make chaos SEED=7 DURATION=10m
N                ?= 10
UPSTREAM_LATENCY ?= 300ms
FRONT            ?= direct
IDEMPOTENT       ?=
SEED             ?= 1
DURATION         ?= 10m

export HERDLOCK_RIE := $(RIE)

# Every module of the workspace, and every package in it.
MODULES := . middleware/lockmw/xraytracer middleware/lockmw/oteltracer middleware/lockmw/s3answers \
	examples/lambda-fetch-cache internal/chaos internal/bench internal/minidyntest
PKGS    := github.com/herdlock/herdlock/...
# The example's tracing SDKs are behind build tags; tests and lint see them
# (vet and staticcheck check the example with and without them).
ALLTAGS := xray,otel
EXAMPLE := github.com/herdlock/herdlock/examples/lambda-fetch-cache/...
STATICCHECK := $(BIN)/staticcheck

# The example function's architecture is set in one place, FetchFunction's
# Architectures in template.yaml (one value, in the flow form
# "Architectures: [arm64]"); build-FetchFunction builds for it. Lambda's
# x86_64 is Go's amd64, and no Architectures means x86_64.
LAMBDA_TEMPLATE ?= template.yaml
LAMBDA_ARCH = $(firstword $(shell sed -n 's/^ *Architectures: *\[ *\([a-z0-9_]*\) *\].*/\1/p' $(LAMBDA_TEMPLATE)))
LAMBDA_GOARCH = $(if $(filter arm64,$(LAMBDA_ARCH)),arm64,amd64)

.PHONY: all deps test lint bench demo chaos model modcost clean build-FetchFunction

all: test

deps: $(DYNOXIDE_STAMP) $(DYNALITE_STAMP) $(S3RVER_STAMP) $(RIE)
	$(GO) mod download

# Dynoxide is a native binary in a per-platform npm package (no Node.js at
# run time; npm only installs it).
$(DYNOXIDE_STAMP): $(DYNOXIDE_DIR)/package.json $(DYNOXIDE_DIR)/package-lock.json
	@command -v npm >/dev/null || { echo "npm not found: install Node.js 18 or later"; exit 1; }
	npm ci --prefix $(DYNOXIDE_DIR) --no-audit --no-fund --loglevel=error

$(DYNALITE_STAMP): $(DYNALITE_DIR)/package.json $(DYNALITE_DIR)/package-lock.json
	@command -v npm >/dev/null || { echo "npm not found: install Node.js 18 or later"; exit 1; }
	npm ci --prefix $(DYNALITE_DIR) --no-audit --no-fund --loglevel=error

# s3rver, the S3-API server of the s3answers module's tests.
$(S3RVER_STAMP): $(S3RVER_DIR)/package.json $(S3RVER_DIR)/package-lock.json
	@command -v npm >/dev/null || { echo "npm not found: install Node.js 18 or later"; exit 1; }
	npm ci --prefix $(S3RVER_DIR) --no-audit --no-fund --loglevel=error

$(RIE): tools/go.mod tools/go.sum
	cd tools && GOWORK=off CGO_ENABLED=0 $(GO) build -trimpath -o $(RIE) github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie

$(STATICCHECK): tools/go.mod tools/go.sum
	cd tools && GOWORK=off $(GO) build -o $(STATICCHECK) honnef.co/go/tools/cmd/staticcheck

test: deps
	$(GO) vet $(PKGS)
	$(GO) vet -tags $(ALLTAGS) $(EXAMPLE)
	$(GO) test -race -count=1 -timeout 20m -tags $(ALLTAGS) $(PKGS)
	bash model/check.sh ci

# cfn-lint is a Python tool, not pinned in tools/: a missing one fails lint
# with the install command, it is never skipped.
CFN_LINT ?= cfn-lint

lint: $(STATICCHECK)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags $(ALLTAGS) $(EXAMPLE)
	$(STATICCHECK) $(PKGS)
	$(STATICCHECK) -tags $(ALLTAGS) $(EXAMPLE)
	@# Each module on its own, as its users build it: tidy, and complete
	@# without the workspace.
	@for m in $(MODULES); do \
		echo "module $$m: tidy, builds without go.work"; \
		(cd $$m && GOWORK=off $(GO) mod tidy -diff && GOWORK=off $(GO) build ./... ) || exit 1; \
	done
	@command -v $(CFN_LINT) >/dev/null || { echo "cfn-lint not found: install it with 'pipx install cfn-lint' or 'pip install cfn-lint', then run make lint again"; exit 1; }
	$(CFN_LINT) template.yaml
	@mkdir -p $(BIN)
	$(GO) run ./cmd/herdlock create-table --print-cfn herdlock-locks > $(BIN)/lock-table.yaml
	$(CFN_LINT) $(BIN)/lock-table.yaml

# One burst of N invocations of the example, each in its own Lambda Runtime
# Interface Emulator, on local Dynoxide and a rate-limited local upstream;
# FRONT=http sends them as HTTP API requests GET /rates/{pair}. It needs
# only Dynoxide and the emulator; go run fetches the modules the demo and
# the bootstrap build need, and no more. The demo is built as the bootstrap
# is (CGO_ENABLED=0, -trimpath), so a cold build compiles the AWS SDK once
# for both, not twice.
demo: $(DYNOXIDE_STAMP) $(RIE)
	CGO_ENABLED=0 $(GO) run -trimpath ./examples/lambda-fetch-cache/demo -n $(N) -upstream-latency $(UPSTREAM_LATENCY) -front $(FRONT)$(if $(IDEMPOTENT), -idempotent)

# Called by `sam build` (template.yaml: BuildMethod makefile) with ARTIFACTS_DIR.
# LAMBDA_TAGS picks the tracing SDKs compiled in (xray, otel, both
# comma-separated, or empty for none); TRACING in template.yaml must name one
# of them.
LAMBDA_TAGS ?= xray

build-FetchFunction:
	CGO_ENABLED=0 GOOS=linux GOARCH=$(LAMBDA_GOARCH) $(GO) build -tags lambda.norpc$(LAMBDA_TAGS:%=,%) -trimpath \
		-ldflags='-s -w' -o $(ARTIFACTS_DIR)/bootstrap ./examples/lambda-fetch-cache

# Every figure of BENCHMARKS.md in one run (about 6 minutes on 2 cores), then
# the plot.
bench: deps
	$(GO) run ./internal/bench/cmd/bench -out bench.out/results.json
	$(GO) run ./internal/bench/cmd/plot -in bench.out/results.json -out docs/herd-latency.svg

# The fault harness, longer than the CI-sized run inside `make test`: every
# kind of phase, storm phases (all faults at once) included.
chaos: deps
	$(GO) run ./internal/chaos/cmd/chaos -seed $(SEED) -duration $(DURATION)

model:
	bash model/check.sh full

# What each module costs a user's module: modules, go.sum lines, bootstrap
# size, init time (the table in docs/modules.md).
modcost:
	$(GO) run ./internal/modcost

clean:
	rm -rf $(BIN) $(DYNALITE_DIR)/node_modules $(DYNOXIDE_DIR)/node_modules $(S3RVER_DIR)/node_modules
