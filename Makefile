# goverbs: the two Quick start commands are `make demo` and `make test`; both install what they need.
SHELL := /bin/bash
GO ?= go
export CGO_ENABLED ?= 0

.PHONY: all deps build demo test check unit lab bench fuzz faults soak clean

all: build

## deps: install the host packages (QEMU, rdma-core tools, headers) the lab and the generators need
deps:
	@./scripts/install-deps.sh

## build: the static goverbs binary in bin/
build:
	$(GO) build -trimpath -o bin/goverbs ./cmd/goverbs

## demo: boot the lab, bring up rxe0 on a veth, and show goverbs at work beside the newest rdma-core and iproute2 (sid's)
demo: deps build
	$(GO) run ./test/lab/cmd/lab -peer sid -- bash test/demo/demo.sh

## test: every test: static checks, then the kernel-facing suites in the lab with the unit tests (race detector)
## on the host beside them at the lowest CPU priority, filling the time the lab's VMs leave idle
## (scripts/unit-beside-lab.sh); TEST_SERIAL=1 runs unit, then lab, one after the other
TEST_SERIAL ?=
test: deps check
ifeq ($(TEST_SERIAL),1)
	@$(MAKE) --no-print-directory unit lab
else
	@MAKE=$(MAKE) ./scripts/unit-beside-lab.sh
endif

## check: formatting, vet, no cgo outside generators, static build, arm64 cross-build, ABI regeneration
check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@cg=$$($(GO) list -f '{{if .CgoFiles}}{{.ImportPath}}{{end}}' ./... | grep -v '/internal/cmd/' || true); \
	 if [ -n "$$cg" ]; then echo "cgo is forbidden outside generators: $$cg"; exit 1; fi
	$(GO) build -o /dev/null ./cmd/goverbs
	@file=$$(mktemp); $(GO) build -o $$file ./cmd/goverbs && \
	 if ldd $$file >/dev/null 2>&1; then echo "cmd/goverbs is not static"; rm -f $$file; exit 1; fi; rm -f $$file
	GOARCH=arm64 $(GO) build ./...
	GOARCH=arm64 $(GO) vet ./mmio/... ./abi/... ./providers/...

## unit: host tests with the race detector (lab tests skip here and run in `lab`). GOVERBS_REQUIRE_GOLDEN=1: the
## comparisons with rdma-core (mlx5 golden regeneration, WQE bytes against libmlx5) fail instead of skipping
## when gcc, the headers or libmlx5 are missing (`deps` installs them).
unit:
	GOVERBS_REQUIRE_GOLDEN=1 CGO_ENABLED=1 $(GO) test -race -trimpath -count=1 ./...

## lab: the packages with kernel-facing tests on every kernel of the matrix (6.1, 6.12, newest Debian kernel),
## then a per-kernel summary (a missing device fails, never skips). Lab VMs run two at a time on a 2-core host
## (one per core, at most 2): each kernel's cmd/goverbs/internal/interop in a boot of its own, the other packages in another,
## longest first. LAB_KERNELS=6.12 (or a comma list) narrows the matrix; LAB_JOBS=N runs N VMs at once (passed
## as labsuite -j N; unset: $GOVERBS_LAB_JOBS, else min(2, cores)); LAB_JOBS=1 is one boot per kernel, one after
## another, as before (what cost measurements need). The packages proven on soft-iWARP too (LAB_SIW) run again
## on siw0 on LAB_SIW_KERNELS (default 6.12: on 7.3.4 siw loses a connection's first message now and then,
## docs/kernels.md 11, which a test without a rerun meets as a hang), in the same schedule; LAB_SIW= turns it off.
## test/siwlab (rdma-core's tools against goverbs' on siw0, 7 minutes a kernel) runs on demand:
## go run ./test/lab/cmd/labsuite -provider siw -kernels all ./test/siwlab
LAB_KERNELS ?= all
LAB_JOBS ?=
LAB_SIW ?= ./test/conformance ./rsocket ./netlinkrdma ./test/smoke
LAB_SIW_KERNELS ?= 6.12
lab:
	$(GO) run ./test/lab/cmd/labsuite -kernels $(LAB_KERNELS)$(if $(LAB_JOBS), -j $(LAB_JOBS))$(if $(strip $(LAB_SIW)), -siw '$(strip $(LAB_SIW))' -siw-kernels $(LAB_SIW_KERNELS))

## bench: data-path microbenchmarks on the host, goverbs' mlx5 path against libmlx5 (callgrind + ns; the hw
## package, the public path locked and with a thread domain), then the Go-vs-C tables in the lab: instruction
## cost (QEMU -icount, repeatable), the scale curves at N = 1..1000 (icount; plot in .lab/scalebench/scale.svg),
## then wall clock under TCG (ping-pong, perftest, rstream)
bench: deps build
	$(GO) test -run '^$$' -bench . -benchmem ./providers/... ./internal/ioctl/... ./uverbs/...
	$(GO) run ./providers/mlx5/internal/cmd/mlx5bench
	$(GO) run ./test/bench/cmd/costbench
	$(GO) run ./test/bench/cmd/scalebench -svg .lab/scalebench/scale.svg
	$(GO) run ./test/bench/cmd/ppbench
	$(GO) run ./test/bench/cmd/bench
	$(GO) run ./test/bench/cmd/rsbench

## fuzz: every fuzz target for FUZZTIME each (default 5m); FUZZ=REGEXP narrows them (not part of `make test`)
fuzz:
	./scripts/fuzz.sh

## faults: the fault campaign (test/faults) with FAULTS_SCALE times the traffic and kills of its short version
## in `make test` (default 13: 104 kills per kernel): SIGKILL at random moments with the kernel's reclaim
## checked, port down/up on every kernel; netem loss, duplication, corruption, reordering and delay between two
## hosts in one VM, a partition, device removal under traffic on the newest (two hosts need 7.1+).
## FAULTS_KERNELS narrows the matrix; GOVERBS_FAULTS_SEED repeats a run's kill moments.
FAULTS_SCALE ?= 13
FAULTS_KERNELS ?= all
faults: deps build
	GOVERBS_FAULTS_SCALE=$(FAULTS_SCALE) $(GO) run ./test/lab/cmd/labsuite -j 1 -kernels $(FAULTS_KERNELS) -v -timeout 90m -pkgtimeout 80m ./test/faults

## soak: test/faults TestLabSoak with SOAK_BYTES per leg (default 1792 MiB: six legs, 10.5 GiB) through SOAK_NETEM
## (default 1 % loss both ways) between two hosts on the newest kernel (7.1+): RC SEND and RDMA WRITE WITH IMM,
## goverbs -> libibverbs, libibverbs -> goverbs and goverbs -> goverbs, every message checksummed; prints the
## resource curve (RSS, heap, goroutines, fds; the C peer's RSS) and fails if goverbs' side grows.
SOAK_BYTES ?= 1879048192
SOAK_NETEM ?= loss 1%
soak: deps build
	GOVERBS_SOAK_BYTES=$(SOAK_BYTES) GOVERBS_SOAK_NETEM='$(SOAK_NETEM)' $(GO) run ./test/lab/cmd/labsuite -j 1 -kernels newest -run '^TestLabSoak$$' -v -timeout 3h -pkgtimeout 170m ./test/faults

clean:
	rm -rf bin .lab .scratch
