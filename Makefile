# rdmabench — everything a fresh Debian/Ubuntu machine needs:
#   make bench   run the benchmark suite (results/ gets the output)
#   make test    run the tests: host unit tests, then the device tests on
#                a real RDMA device (native, rxe, or the qemu guest)
SHELL := /bin/bash
export PATH := $(PATH):/usr/local/go/bin

RXEVM := .cache/rxevm
RXEVM_FLAGS ?=
COUNT ?= 8
BENCHTIME ?= 0.5s
# The default matrix: the perftest families (a few minutes on rxe in the
# qemu guest). BENCH=. adds the rdma_bench families' small default points.
BENCH ?= ^Benchmark(Send|Write|Read|Atomic)(Lat|BW)$$
BENCHARGS ?=
# The deadline of make bench's whole guest run (rxevm -timeout; a later
# -timeout in RXEVM_FLAGS wins).
BENCH_TIMEOUT := 30m
# make bench ATC16=1: the rdma_bench (Kalia et al., ATC'16) families with
# their full sweeps instead of the default matrix, about an hour in the
# qemu guest at the default COUNT: a 3 h deadline. -rdma.full is added to
# a BENCHARGS given on the command line too.
ifeq ($(ATC16),1)
BENCH := Doorbell|Threads|Inbound|HeaderOnly|EchoRPC|AtomicContention|ReadWindow|RegMR|Connect|CreateQueue
override BENCHARGS += -rdma.full
BENCH_TIMEOUT := 3h
endif
STAMP := $(shell date -u +%Y%m%dT%H%M%SZ)

.PHONY: all deps build test unit devtest vmtest fuzz bench compare history plots calibrate calibration-table calibrate-setup calibrate-phases cping-builds progcost clean

all: build

# make deps: the Debian/Ubuntu packages this machine lacks (go doc
# ./ci/deps: the user-space RDMA stack everywhere; qemu, a kernel that
# ships rdma_rxe, busybox, and slurm-wlm and munge for the guests' Slurm
# cluster (their services kept from starting on the host) only without
# native RDMA, or for make test, which boots guests on every machine),
# then the Go modules. ci/deps uses the standard library only: it runs
# before go mod download. A change to its package lists runs it again.
DEPS_VM := $(if $(filter test,$(MAKECMDGOALS)),-vm)
deps: .cache/deps$(DEPS_VM).stamp
.cache/deps.stamp .cache/deps-vm.stamp: ci/deps/packages.go
	@command -v go >/dev/null || { echo "make deps: Go is not installed (https://go.dev/dl, Go >= 1.26)"; exit 1; }
	go run ./ci/deps $(DEPS_VM)
	go mod download
	@mkdir -p .cache && touch $@

build: deps
	go build ./...
	go build -o $(RXEVM) ./loopback/cmd/rxevm

# The tests: static checks and unit tests on the host, the VM failure
# tests of the loopback package, brief fuzzing, then every device test and
# the benchmark suite in -short form on a real device in one session.
test: build
	bash ci/test.sh

# make bench: the default matrix, COUNT runs each, on the default device
# (real HCA, else rxe, else the qemu guest). Output streams and is kept in
# results/bench-<time>.txt with HdrHistogram logs beside it; then a summary
# per family (go doc ./cmd/rdmasummary) and the plots (make plots). A
# plotting failure (such as nothing to draw: rdmaplot needs a size= axis or
# .hlog files) does not fail the run: the results stand, the message says
# why there are no plots. Last, the results file goes into the history
# (results/history.db; HISTORY_SERVER=URL uploads it to a perfdata server
# as well: docs/history.md); a failure there does not fail the run either.
HISTORY_SERVER ?=
bench: build
	@mkdir -p results
	go test -c -o .cache/bench.test ./bench_test
	@echo "make bench: writing results/bench-$(STAMP).txt"
	set -o pipefail; cd bench_test && ../$(RXEVM) -share .. -timeout $(BENCH_TIMEOUT) $(RXEVM_FLAGS) -- ../.cache/bench.test -test.run '^$$' \
		-test.bench '$(BENCH)' -test.count $(COUNT) -test.benchtime $(BENCHTIME) \
		-rdma.hlog ../results/bench-$(STAMP)-hlog $(BENCHARGS) | tee ../results/bench-$(STAMP).txt
	@echo; go run ./cmd/rdmasummary results/bench-$(STAMP).txt
	@echo; $(MAKE) --no-print-directory plots RESULTS=results/bench-$(STAMP).txt || echo "make bench: no plots (above: why)"
	@echo; go run ./cmd/rdmahistory store $(if $(HISTORY_SERVER),-server '$(HISTORY_SERVER)') results/bench-$(STAMP).txt || echo "make bench: not stored in the history (above: why)"
	@echo; echo "make bench: results in results/bench-$(STAMP).txt (histograms in results/bench-$(STAMP)-hlog/;" \
		"all units: go run golang.org/x/perf/cmd/benchstat results/bench-$(STAMP).txt)"

# make compare OLD=<ref|file> NEW=<ref|file>: both builds run against
# each other one benchmark at a time in one device session, COMPARE_COUNT
# runs per side, each at the fixed count a pilot run of -benchtime
# COMPARE_BENCHTIME chose (the same on both sides): both builds'
# processes stay ready and take turns run by run (COMPARE_BLOCK runs a turn),
# old new new old ... within the benchmark, so that paired runs are about
# a second apart (docs/compare.md), then the regression gate with paired
# runs and -detect 25%: exit 0 pass, 1 regression, 3 some benchmark
# cannot see 25% (UNDECIDED). COUNT=..., BENCHTIME=... on the command
# line override the first two. BENCH= picks a subset.
# COMPARE_PROCS processes per side and benchmark (runs rotate among
# them; the gate checks that they agree: go doc ./ci/gate).
# make compare SLOW='25%:random10' builds both sides with the self-check
# tag and reports ten benchmarks drawn at random (seed printed; replay
# with SLOW='25%:random10:SEED') 25% worse in NEW, SLOW='25%:REGEX' the
# benchmarks REGEX matches ($ needs no doubling): the gate must name each
# (or call it UNDECIDED) and nothing else, or make compare fails.
OLD ?= HEAD
NEW ?= HEAD
SLOW ?=
COMPARE_COUNT ?= $(if $(filter command line environment,$(origin COUNT)),$(COUNT),30)
COMPARE_BENCHTIME ?= $(if $(filter command line environment,$(origin BENCHTIME)),$(BENCHTIME),0.1s)
COMPARE_BLOCK ?= 1
COMPARE_PROCS ?= 3
compare: build
	BENCH='$(BENCH)' COUNT='$(COMPARE_COUNT)' BLOCK='$(COMPARE_BLOCK)' PROCS='$(COMPARE_PROCS)' BENCHTIME='$(COMPARE_BENCHTIME)' GATEFLAGS='$(GATEFLAGS)' SLOW='$(value SLOW)' bash ci/compare.sh '$(OLD)' '$(NEW)'

# make history: every stored run as series, their change points (exit 1:
# a new one worse by more than 10% in a series' last 5 runs) and the
# trend page results/history.html (go doc ./cmd/rdmahistory).
history:
	go run ./cmd/rdmahistory -html results/history.html $(if $(HISTORY_SERVER),-server '$(HISTORY_SERVER)')

# make plots RESULTS=results/bench-….txt: SVG and PNG charts next to it;
# prints the SVG paths (a PNG beside each) and their count.
RESULTS ?= $(lastword $(sort $(wildcard results/bench-*.txt)))
PLOTS = $(basename $(RESULTS))-plots
plots:
	@test -n "$(RESULTS)" || { echo "make plots: no RESULTS file (run make bench first)"; exit 2; }
	@echo "make plots: drawing $(RESULTS) into $(PLOTS)/"
	@set -o pipefail; go run ./cmd/rdmaplot -o $(PLOTS) $(RESULTS) $(wildcard $(basename $(RESULTS))-hlog/*.hlog) | \
		grep '\.svg$$' | awk '{ print } END { if (NR) printf "make plots: %d charts in $(PLOTS)/, each as .svg (above) and .png\n", NR }'

# make calibrate: perftest and the matching rdmabench benchmarks on the
# same device in one session, interleaved, like for like and each against
# itself (go doc ./ci/calibrate), with the C-only control (ci/cping: the
# benchmark's C loop without Go) as a contestant of write_lat. Each run is
# stored in docs/calibration/ under its time and commit (commit it: the
# README's summary and docs/performance.md's table are rendered from all
# of them: make calibration-table).
# A tree with uncommitted changes is stored as <commit>-dirty.
CALIBRATE_FLAGS ?=
CALIBRATE_COMMIT = $(shell git describe --always --dirty --abbrev=12 2>/dev/null || echo unknown)
calibrate: build
	go test -c -o .cache/bench.test ./bench_test
	go build -o .cache/bin/calibrate ./ci/calibrate
	$(CPING) -o .cache/bin/cping
	@mkdir -p docs/calibration
	$(RXEVM) $(RXEVM_FLAGS) -- .cache/bin/calibrate -bench .cache/bench.test -control .cache/bin/cping \
		-store docs/calibration -commit $(CALIBRATE_COMMIT) $(CALIBRATE_FLAGS)

# make calibrate-setup: issue #27's setup experiments (docs/performance.md):
# write_lat's like-for-like ratio of the C-only control built three ways,
# in one boot, alternating, 2 blocks of 3 pairs each: cping (our setup:
# both sides in one process), cping-q1 (perftest's latency queues:
# tx_depth 1, a send queue and a CQ of one entry) and cping-2p (the two
# sides in two processes, as perftest's client and server); nothing is
# stored.
CPING = gcc -O2 -Wall -Wextra -Werror ci/cping/cping.c verbs/loop.c -libverbs -lpthread -lm
calibrate-setup: build cping-builds
	go test -c -o .cache/bench.test ./bench_test
	go build -o .cache/bin/calibrate ./ci/calibrate
	$(RXEVM) $(RXEVM_FLAGS) -- bash -c 'for i in 1 2; do for c in cping cping-q1 cping-2p; do echo "=== block $$i, control $$c"; \
		.cache/bin/calibrate -only "write_lat 8 B" -runs 3 -bench .cache/bench.test -control .cache/bin/$$c | grep "^write_lat 8 B"; done; done'

# make calibrate-phases: issue #27's phases (docs/performance.md,
# "Phases"): in one boot, PHASE_ROUNDS rounds of ib_write_lat -U (every
# sample) and the C-only control like for like, built in one process, in
# two (cping, cping-2p), with a device context per side (cping-2c), with
# perftest's latency queues (cping-q1: send queue and CQ of one entry),
# with perftest's buffer layout (cping-pg: the polled byte a page from
# the written one), with perftest's loop shape instead of ours on both
# sides (cping-ptloop: no clock read or histogram add in the loop), on
# side A only (cping-ptA) or side B only (cping-ptB), on side A with our
# clock read at the answer added (cping-ptA-stamp), and with perftest's
# loop, queues and layout together (cping-ptall), and with perftest's
# loop plus our pieces (cping-ptloop-all: the answer's clock read, the
# histogram adds, our poll, our clock read at the post; ci/cping/cping.c),
# and with perftest's loop over a receive CQ a side besides the send CQ
# (cping-pt2cq, as perftest's, for send_lat), and with the Go
# benchmarks' setup (cping-go: receive queue 1, CQ 65, the device's
# maximum of outstanding reads and atomics, a page per side from mmap);
# calibrate -phases then
# splits every run at 14 and 19 µs and prints each phase's share and
# level per tool, the levels' and p50s' ratios to perftest round by
# round, and each build against cping in the same round (issue #43), each
# median with its 95% confidence interval. Then (issue #43),
# in a second boot, the same for read_lat, send_lat RC and UD and the
# atomics against the benchmarks themselves like for like (their cycle
# histograms: ci/cping/families.sh), and for read_lat and the atomics the
# C-only control too, with our loop, perftest's, perftest's with our
# pieces, and our loop over the benchmarks' setup (cping -o
# read|fadd|cas, paired against cping), for send_lat RC
# with our loops (cping -o send), each split at the bounds below
# between the levels its runs sit at under TCG. Nothing is stored.
PHASE_ROUNDS ?= 24
PHASE_BOUNDS = read_lat:28 send_lat:15,20 send_lat_ud:20 atomic_lat_fadd:26 atomic_lat_cas:26
PHASE_BUILDS = cping: cping-2p:-DCPING_TWO_PROCESSES cping-2c:-DCPING_TWO_CONTEXTS cping-q1:-DCPING_PERFTEST_QUEUES \
	cping-pg:-DCPING_PERFTEST_LAYOUT cping-ptloop:-DCPING_PERFTEST_LOOP cping-ptA:-DCPING_PERFTEST_LOOP_A \
	cping-ptB:-DCPING_PERFTEST_LOOP_B cping-ptA-stamp:-DCPING_PERFTEST_LOOP_A,-DCPING_PT_ANSWER_STAMP \
	cping-ptall:-DCPING_PERFTEST_LOOP,-DCPING_PERFTEST_QUEUES,-DCPING_PERFTEST_LAYOUT \
	cping-ptloop-all:-DCPING_PERFTEST_LOOP,-DCPING_PT_ANSWER_STAMP,-DCPING_PT_HIST_ADDS,-DCPING_PT_OUR_POLL,-DCPING_PT_OUR_CLOCK \
	cping-pt2cq:-DCPING_PERFTEST_LOOP,-DCPING_TWO_CQS cping-go:-DCPING_GO_SETUP
calibrate-phases: build cping-builds
	go test -c -o .cache/bench.test ./bench_test
	rm -rf .cache/phases && mkdir -p .cache/phases/write_lat
	$(RXEVM) $(RXEVM_FLAGS) -- bash ci/cping/phases.sh .cache/phases/write_lat $(PHASE_ROUNDS) $(foreach nb,$(PHASE_BUILDS),.cache/bin/$(firstword $(subst :, ,$(nb))))
	$(RXEVM) $(RXEVM_FLAGS) -- bash ci/cping/families.sh .cache/phases $(PHASE_ROUNDS) .cache/bench.test .cache/bin/cping .cache/bin/cping-ptloop .cache/bin/cping-ptloop-all .cache/bin/cping-pt2cq .cache/bin/cping-go
	@echo "=== write_lat"; go run ./ci/calibrate -phases .cache/phases/write_lat
	@for fb in $(PHASE_BOUNDS); do [ -d .cache/phases/$${fb%%:*} ] || continue; echo "=== $${fb%%:*}"; go run ./ci/calibrate -phases .cache/phases/$${fb%%:*} -phase-bounds $${fb#*:} || exit 1; done

# make cping-builds: the C-only control and every experiment build of
# PHASE_BUILDS, as .cache/bin/NAME (make test builds them all and runs
# each once on the device).
cping-builds:
	@mkdir -p .cache/bin && rm -f .cache/bin/cping-*
	@for nb in $(PHASE_BUILDS); do cmd="$(CPING) $$(echo $${nb#*:} | tr , ' ') -o .cache/bin/$${nb%%:*}"; \
		echo "$$cmd"; $$cmd || exit 1; done

# make calibration-table: the README's performance summary and the full
# table in docs/performance.md, rendered from every stored calibration
# (no device needed) between their markers (a host test checks that they
# are).
calibration-table:
	go run ./ci/calibrate -render docs/calibration -readme README.md
	go run ./ci/calibrate -render docs/calibration -readme docs/performance.md

# make progcost: the step interpreter's cost per operation (issue #28):
# the hand-written WriteLat loops against the same ping-pong as two
# programs, 200 interleaved blocks of 1000 round trips each, twice, in
# one boot (engine's TestProgramCost; docs/performance.md).
progcost: build
	go test -c -o .cache/testbin/progcost.test ./rdmatest/internal/engine
	$(RXEVM) $(RXEVM_FLAGS) -- bash -c 'cd rdmatest/internal/engine && for i in 1 2; do \
		RDMA_REQUIRE=1 ../../../.cache/testbin/progcost.test -test.v -test.run "^TestProgramCost$$" \
		-progcost.blocks 200 -progcost.iters 1000 -test.timeout 10m | grep -E "prog_cost_test|^(---|FAIL|ok)"; done'

clean:
	rm -rf .cache
