# TensorStack Training: build, test and run the aggregated apiserver and controller-manager.
SHELL := /usr/bin/env bash
GO ?= go
OUTPUT := _output
BIN := $(OUTPUT)/bin
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
# Linked without the symbol table and DWARF, as Kubernetes' own builds are: a link takes about half the time and
# the binary is a third smaller, while panics and profiles still name functions and lines. DBG=1 keeps them for a
# debugger (hack/lib/build.sh does the same for the pinned binaries).
STRIP_LDFLAGS := $(if $(filter 1,$(DBG)),,-s -w)
LDFLAGS := $(STRIP_LDFLAGS) -X tensorstack.dev/training/pkg/version.gitVersion=$(VERSION)
# Tests compile with -trimpath too, as the binaries, images and releases do:
# each package is compiled once for all of them (hack/lib/common.sh says the same).
# And without DWARF: the links drop it anyway (-s -w below), and making it is an
# eighth of a cold compile. DBG=1 keeps both for a debugger.
NODWARF := $(if $(filter 1,$(DBG)),,-gcflags=all=-dwarf=false)
export GOFLAGS := -trimpath $(NODWARF) $(filter-out -trimpath -gcflags=all=-dwarf=false,$(GOFLAGS))
# Without cgo, for the same reason (hack/lib/common.sh says more).
CGO_ENABLED ?= 0
export CGO_ENABLED
# The tools modules (hack/tools) that build their shared libraries at the main module's versions, so that a cold
# make test compiles client-go, grpc and the rest once instead of once per tool (hack/alignmodules). Not Kueue and
# scheduler-plugins: they compile Kubernetes' scheduler framework of another minor release, which does not build
# against this one's libraries.
ALIGNED_MODULES := $(addprefix hack/tools/,cni containerd coredns etcd helm kube kwok local-path-provisioner prometheus \
	registry runc) hack/images/builder
# go test with -json, printing what go test prints and counting the tests for make test's last table (hack/gotest).
GOTEST := $(OUTPUT)/tools/gotest
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(OUTPUT)/tools/staticcheck-$(STATICCHECK_VERSION)

.PHONY: all help build dashboard test-dashboard bench-dashboard images release python test test-unit test-python test-integration test-e2e test-chaos test-deploy test-fuzz test-fuzz-short update-codegen verify-codegen lint bench bench-e2e \
	bench-api bench-controller bench-first-run bench-real bench-progress bench-replicas bench-scale bench-tuning bench-wide \
	test-binaries stack-binaries stack-build test-build node node-images-early run local-up local-down clean test-install local-install local-uninstall align-modules

## all: the same as build
all: build

## help: every target with one line of what it does (hack/make-help.sh)
help:
	@hack/make-help.sh

## build: compile the apiserver, the controller-manager and the kubectl plugin into _output/bin; the plugin embeds
## the dashboard's front end, built first (make dashboard) where npm is installed
# One go build for the three: go compiles their packages in one plan, linking one command while the next compiles. Its
# outputs (named by package) stay in OUR_BUILD, where go finds them up to date next time, hard-linked into BIN.
OUR_BUILD := $(OUTPUT)/build
OUR_COMMANDS := ./cmd/apiserver ./cmd/controller-manager ./cmd/kubectl-training
build:
	@mkdir -p $(BIN)
	@if command -v npm >/dev/null 2>&1; then $(MAKE) --no-print-directory dashboard; \
	else echo "npm not found: kubectl-training's dashboard is built without its front end (make dashboard builds it)"; fi
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(OUR_BUILD)/ $(OUR_COMMANDS)
	@ln -f $(OUR_BUILD)/apiserver $(BIN)/training-apiserver
	@ln -f $(OUR_BUILD)/controller-manager $(BIN)/training-controller-manager
	@ln -f $(OUR_BUILD)/kubectl-training $(BIN)/kubectl-training

## dashboard: the front end of kubectl training dashboard (pkg/dashboard/ui), built with Node.js and the npm packages
## of its package-lock.json into pkg/dashboard/assets/app, which the plugin embeds; only when its sources changed
DASHBOARD_UI := pkg/dashboard/ui
DASHBOARD_APP := pkg/dashboard/assets/app
DASHBOARD_STAMPS := $(OUTPUT)/stamps
DASHBOARD_SOURCES := $(wildcard $(DASHBOARD_UI)/index.html $(DASHBOARD_UI)/*.ts $(DASHBOARD_UI)/tsconfig.json \
	$(DASHBOARD_UI)/src/*)
# npm's cache stays in _output, beside everything else the build downloads. Node.js trusts only its own
# certificate authorities; the Go toolchain, the system's. Given the system's bundle as extra ones (unless the
# environment names its own), npm reaches the registry wherever go reaches the module proxy.
SYSTEM_CA_BUNDLE := $(wildcard /etc/ssl/certs/ca-certificates.crt)
DASHBOARD_NPM := $(if $(SYSTEM_CA_BUNDLE),NODE_EXTRA_CA_CERTS=$${NODE_EXTRA_CA_CERTS:-$(SYSTEM_CA_BUNDLE)}) \
	npm_config_cache=$(abspath $(OUTPUT))/npm-cache npm --prefix $(DASHBOARD_UI) --no-audit --no-fund \
	--no-update-notifier
dashboard:
	@[ -f $(DASHBOARD_APP)/index.html ] || rm -f $(DASHBOARD_STAMPS)/dashboard
	@$(MAKE) --no-print-directory $(DASHBOARD_STAMPS)/dashboard

$(DASHBOARD_STAMPS)/dashboard-npm-ci: $(DASHBOARD_UI)/package.json $(DASHBOARD_UI)/package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "make dashboard needs Node.js and npm (Debian: apt install nodejs npm)"; exit 1; }
	@mkdir -p $(dir $@)
	$(DASHBOARD_NPM) ci
	@touch $@

$(DASHBOARD_STAMPS)/dashboard: $(DASHBOARD_STAMPS)/dashboard-npm-ci $(DASHBOARD_SOURCES)
	$(DASHBOARD_NPM) run build
	@touch $@

## test-dashboard: the dashboard in Debian's Chromium (playwright-core) against a local stack of its own, kwok nodes
## only: the list and a job's page follow the jobs live (phase, progress bar, loss chart and hovered value, three
## attempts), pause, resume, scale, debug, create and a new job from a runtime show the API's answers (a 422 naming
## the field, a viewer's 403); it takes screenshots into _output/dashboard-screenshots (DASHBOARD_SCREENSHOTS=docs/images: the docs' own)
test-dashboard: build stack-binaries
	DASHBOARD_SCREENSHOTS=$(DASHBOARD_SCREENSHOTS) hack/test-dashboard.sh

## images: the product's images (training-apiserver, training-controller-manager, training-etcd, training-dashboard)
## as OCI archives in _output/images/product, for linux/amd64 and linux/arm64 (IMAGE_PLATFORMS), with no Docker
## (hack/build-images.sh)
IMAGE_PLATFORMS ?= linux/amd64,linux/arm64
images:
	hack/build-images.sh --platforms $(IMAGE_PLATFORMS) --version $(VERSION)

## release: a release in _output/release/$(VERSION) (VERSION=vX.Y.Z): images as OCI archives, install.yaml pinned by
## digest, kubectl-training archives, the krew manifest, release notes and checksums.txt (hack/release.sh, which
## builds the two pinned tools it packs with: kubectl for kustomize, helm for the chart)
release:
	hack/release.sh $(VERSION)

## test: everything CI checks: lint, generated code, unit, a bounded fuzz run, integration and end-to-end tests. After
## the builds, two lanes run side by side on stacks of their own (hack/test.sh): the e2e suite, whose real-node tests
## hold the real nodes one at a time, then deploy and the dashboard in Chromium, beside integration, chaos and
## install, which mostly wait. Ends with a table of each phase's lane, start, seconds and the Go tests it ran, passed,
## failed and skipped, and says what was
## skipped where something it needs is missing here (real nodes: no root, cgroup v2, no overlayfs), each a failure
## under CI=true or REQUIRE_REAL_NODES=1 (internal/skips)
TEST_SUITES := node-images-early lint verify-codegen test-unit test-python test-fuzz-short test-build
TEST_LANES := "test-e2e test-deploy test-dashboard" "test-integration test-chaos test-install"
test:
	@hack/test.sh $(TEST_SUITES) --lanes $(TEST_LANES)

## test-unit: the unit tests of every module (no stack, no etcd)
# The main module's unit tests, then those of every other module (hack/tools, hack/images) that has tests: kwok's
# Stages, the image builder. Found rather than listed, so that a module's first test runs without a Makefile edit.
test-unit: $(GOTEST)
	$(GOTEST) -suite unit -- -count=1 ./pkg/... ./cmd/... ./internal/... ./test/internal/... ./test/bench/... ./hack/...
	@for mod in $$(git ls-files -co --exclude-standard '*/go.mod' | xargs -n1 dirname); do \
		[ -n "$$(git ls-files -co --exclude-standard "$$mod/*_test.go")" ] || continue; \
		echo "cd $$mod && go test -count=1 ./..."; \
		(cd "$$mod" && $(abspath $(GOTEST)) -suite "unit $$mod" -- -count=1 ./...) || exit 1; \
	done

## test-integration: the apiserver in-process on a real etcd (test/integration)
# etcd first: TestEtcdUnreachableAnswersInBoundedTime runs it as a process of its own.
test-integration: $(GOTEST)
	hack/build-test-binaries.sh etcd
	$(GOTEST) -suite integration -- -count=1 -timeout 20m ./test/integration/...

## python: the Python client (python/) built into a wheel in _output/python, with Debian's /usr/bin/python3 (run as
## root, it installs the build tools)
python:
	hack/test-python.sh wheel

## test-python: the Python client (python/) built into a wheel in _output/python, and its unit tests run against it
## with Debian's /usr/bin/python3 (run as root, it installs python3-kubernetes, python3-pytest and the build tools)
test-python:
	hack/test-python.sh

## test-e2e: build the pinned control plane, start it, run test/e2e, stop it
test-e2e: test-build
	hack/test-e2e.sh

## test-chaos: about 120 jobs through controller-manager crashes, an apiserver restart, frozen etcds and
## leader failovers on a local stack of its own (test/chaos/README.md); about 5 minutes
test-chaos: build test-binaries
	hack/test-chaos.sh

## test-install: a release built here (hack/release.sh, this machine's architecture) installed from the local stack's
## registry as Pods on the real node: apply, train, upgrade under load, faults, uninstall (hack/test-install.sh)
test-install: test-build
	hack/test-install.sh

## test-deploy: the installation manifests (artifacts/deploy) against a local stack of their own
test-deploy: build test-binaries
	hack/verify-deploy.sh

# The fuzz targets: the decode path of every verb (create, update, patches,
# apply, action bodies). go test -fuzz takes one target per run.
FUZZ_PACKAGE := ./pkg/apis/batch/validation/
FUZZ_TARGETS := FuzzDecodeDefaultValidate FuzzPatch FuzzApply
FUZZ_TIME ?= 2m

## test-fuzz: each fuzz target for FUZZ_TIME (2m by default), one after another
test-fuzz: $(GOTEST)
	@for target in $(FUZZ_TARGETS); do \
		echo "fuzzing $$target for $(FUZZ_TIME)"; \
		$(GOTEST) -suite "fuzz $$target" -- -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZ_TIME) $(FUZZ_PACKAGE) || exit 1; \
	done

## test-fuzz-short: the bounded fuzz run of make test, 15s per target
test-fuzz-short:
	$(MAKE) test-fuzz FUZZ_TIME=15s

## update-codegen: the clientset, listers, informers, deep copies and OpenAPI from k8s.io/code-generator
update-codegen:
	hack/update-codegen.sh

## verify-codegen: fails when the generated code is stale (make update-codegen mends it)
verify-codegen:
	hack/verify-codegen.sh

## lint: gofmt, go vet, staticcheck (pinned, built from the Go module proxy into _output/tools), the import rules
## (hack/verify-imports.sh), no large files or unignored build outputs (hack/verify-tree.sh), a make help line for every
## target (hack/make-help.sh) and the tools modules'
## alignment with the main module (hack/alignmodules)
lint: $(STATICCHECK)
	hack/verify-tree.sh
	hack/make-help.sh --verify
	@out=$$(gofmt -l $$(git ls-files -co --exclude-standard '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	cd hack/images/builder && $(GO) vet ./... && $(GO) vet -tags noko ./...
	$(STATICCHECK) $$($(GO) list ./... | grep -v /pkg/generated/)
	GO=$(GO) hack/verify-imports.sh
	$(GO) run ./hack/alignmodules -verify $(ALIGNED_MODULES)

## align-modules: raise the tools modules' shared libraries to the main module's versions (after a go.mod change)
align-modules:
	$(GO) run ./hack/alignmodules $(ALIGNED_MODULES)

$(GOTEST): $(wildcard hack/gotest/*.go hack/gotest/*/*.go)
	@mkdir -p $(dir $@)
	$(GO) build -o $@ ./hack/gotest

# staticcheck, pinned, built from the Go module proxy. Generated code is left
# out: its deprecated calls are the generators' to change.
$(STATICCHECK):
	@mkdir -p $(OUTPUT)/tools
	GOBIN=$(abspath $(OUTPUT)/tools) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv $(OUTPUT)/tools/staticcheck $@

## bench: apiserver and controller benchmarks, printing ops/s
bench:
	$(GO) test -run '^$$' -bench . -benchmem -timeout 60m ./test/integration/... ./pkg/controller/...

## bench-e2e: benchmarks on the local control plane: job creates with the pods' dry runs, then without
bench-e2e: build test-binaries
	@echo "== admission plugins on (the default)"
	E2E_GO_TEST_FLAGS="-run ^$$ -bench . -benchtime 200x -count 3" hack/test-e2e.sh
	@echo "== admission plugins TrainingJobPodAuthorization and TrainingJobPodValidation off"
	LOCAL_TRAINING_APISERVER_EXTRA_ARGS="--disable-admission-plugins=TrainingJobPodAuthorization,TrainingJobPodValidation" \
		E2E_GO_TEST_FLAGS="-run ^$$ -bench . -benchtime 200x -count 3" hack/test-e2e.sh

## bench-api: our API next to Kubeflow's TFJob CRD, through kube-apiserver and direct, on a local control plane of
## its own; prints a table (docs/benchmarks.md). BENCH_JOBS=2000 jobs per target
bench-api: build test-binaries
	hack/bench-api.sh

## bench-controller: BENCH_JOBS=500 jobs of 5 pods through our controller on a local control plane of its own; with
## BENCH_PEER=training-operator also through Kubeflow's training-operator v1.9.4; prints a table (docs/benchmarks.md)
bench-controller: build test-binaries
	hack/bench-controller.sh

## bench-progress: BENCH_JOBS=500 running jobs, first reporting nothing, then each reporting its progress every
## BENCH_REPORT_EVERY=1s with its pod's token, on a local control plane of its own; prints a table (docs/benchmarks.md)
bench-progress: build test-binaries
	hack/bench-progress.sh

## bench-scale: BENCH_JOBS=100000 stored jobs, BENCH_RUNNING=500 of them running: the training-apiserver on that
## history and the controller starting on it, on a local control plane of its own; prints tables (docs/benchmarks.md)
bench-scale: build test-binaries
	hack/bench-scale.sh

## bench-replicas: one training-apiserver against two on one etcd (creates direct and through kube-apiserver, pages,
## a watch on the other replica, memory), on a local control plane of its own; prints a table (docs/benchmarks.md)
bench-replicas: build test-binaries
	hack/bench-replicas.sh

## bench-dashboard: kubectl training dashboard in Debian's Chromium on a stack of its own: BENCH_JOBS=1000 jobs in the
## list beside the same rows as static HTML (the floor), a job page's charts, the server's memory; prints a table
bench-dashboard: build stack-binaries
	hack/bench-dashboard.sh

## bench-first-run: a newcomer's first make run, from zero: purges the Debian packages the project installs and apt's
## cache, then times make run in a clean clone with an empty HOME, and the DDP example after it (docs/benchmarks.md);
## hack/bench-first-run.sh --ci times .ci/run the same way
bench-first-run:
	hack/bench-first-run.sh

## bench-wide: one job of every kind of BENCH_PODS=1000 pods (a leader and 999 workers) next to an Indexed Job of as
## many pods (the floor) and a ReplicaSet, on a local control plane of its own; prints a table (docs/benchmarks.md)
bench-wide: build test-binaries
	hack/bench-wide.sh

## bench-real: on a local control plane of its own with the real node: a 2-rank PyTorchTrainingJob from create to every
## rank's first step next to a bare Pod of the same image (the floor), and from the last rank's exit to Succeeded
bench-real: test-build
	hack/bench-real.sh

## bench-tuning: on a local control plane of its own with the real nodes: the example search under asha next to the
## same search without early stopping, the pod-seconds each spends and the best loss each reaches (docs/benchmarks.md)
bench-tuning: test-build
	hack/bench-tuning.sh

## test-binaries: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok, scheduler-plugins, Kueue,
## Helm, Prometheus and promtool (for artifacts/monitoring and its tests) at pinned versions
test-binaries:
	hack/build-test-binaries.sh

## node: the local stack's real node (containerd, runc, kubelet, kube-proxy, CoreDNS, CNI plugins) and its images
## (pause, training: Debian's PyTorch and the examples' scripts; training-mpi5, Open MPI 5, for the tests); says so
## and skips where it cannot run
node:
	hack/build-node-binaries.sh

## node-images-early: starts building the training image's Debian layer in the background, where make node would
## build it, so that its downloads and dpkg overlap the Go builds; make node waits for it (hack/build-node-images.sh)
node-images-early:
	@hack/build-node-images.sh --background

## stack-binaries: what the local stack runs (etcd, kwok, Kubernetes' four); Kueue and the second scheduler when
## LOCAL_KUEUE=1 / LOCAL_SCHEDULER_PLUGINS=1 ask for them or they are built already (test-binaries builds everything)
stack-binaries:
	hack/build-test-binaries.sh --stack

## stack-build, test-build: what the local stack runs (stack-binaries) or what the tests use (test-binaries), with
## build and node. Our binaries first (they compile most of the libraries the others share), then the pinned ones and
## the nodes' side by side: on 2 cores, one build's links and downloads leave the other the CPU
stack-build: node-images-early
	@$(MAKE) --no-print-directory build
	@$(MAKE) --no-print-directory -j2 stack-binaries node

# The tests' builds also build the Open MPI 5 training image (NODE_IMAGE_MPI5, hack/build-node-images.sh), which
# make run does without; exported, it reaches the prerequisites and the sub-makes.
test-build test: export NODE_IMAGE_MPI5 ?= 1
test-build: node-images-early
	@$(MAKE) --no-print-directory build
	@$(MAKE) --no-print-directory -j2 test-binaries node

## run: the whole system on loopback in the foreground, real nodes beside the kwok nodes; Ctrl-C stops it. Where real
## nodes cannot run, its first line says why (a failure under CI=true or REQUIRE_REAL_NODES=1)
run:
	@hack/build-node-binaries.sh --check
	@$(MAKE) --no-print-directory stack-build
	hack/local-up.sh --foreground

## local-up, local-down: the whole system on loopback in the background (as make run); local-down stops it and
## leaves nothing of the real nodes on the host
local-up: stack-build
	hack/local-up.sh

local-down:
	hack/local-down.sh

## local-install, local-uninstall: a release of this checkout installed into the running stack (make local-up) as Pods on its real node,
## from its registry, in place of the stack's own training processes; local-uninstall undoes it (docs/install.md)
local-install: build test-binaries
	hack/local-install.sh

local-uninstall:
	hack/local-uninstall.sh

## clean: remove _output: every build, cache and stack state of this checkout
clean:
	rm -rf $(OUTPUT)
