#!/usr/bin/env bash
# ci/test.sh — what `make test` runs (see the Makefile). Fails on the
# first failing step; every step has a bounded run time.
set -euo pipefail
cd "$(dirname "$0")/.."
# step NAME: start a step; the table at the end (also on failure) gives
# each step's wall time (issue #42: make test within 20 minutes).
# The whole output also goes to .cache/maketest.log; on a failure the
# failing step's FAIL and error lines are printed again after the table,
# so that the last lines of a CI log say why (CI keeps only its tail).
mkdir -p .cache
log=.cache/maketest.log
: >"$log" # made here: tee, started in the background, may not have yet
exec > >(tee -a "$log") 2>&1
steps=() times=() t_step=$SECONDS t_all=$SECONDS step_line=1
step_end() { ((${#steps[@]})) && times+=($((SECONDS - t_step))); t_step=$SECONDS; }
step() { step_end; steps+=("$*"); step_line=$(($(wc -l <"$log") + 1)); printf '\n=== %s\n' "$*"; }
report() {
	local rc=$? i
	step_end
	printf '\n=== make test: wall time per step (exit %d)\n' "$rc"
	for i in "${!steps[@]}"; do printf '%6d s  %s\n' "${times[i]}" "${steps[i]:0:90}"; done
	printf '%6d s  total\n' $((SECONDS - t_all))
	if ((rc != 0)); then
		sleep 0.5 # tee's last lines
		printf '\n=== why it failed: the FAIL and error lines of "%s" (its whole output: %s from line %d)\n' "${steps[-1]:0:60}" "$log" "$step_line"
		tail -n "+$step_line" "$log" | grep -aE 'FAIL|panic:|[Ee]rror|fatal|not after|named:|BAD |SUSPECT ' | grep -av '^===' | tail -n 15
	fi
}
trap report EXIT

step "static checks: no tracked binary, gofmt, go vet (cgo, CGO_ENABLED=0 and GOOS=darwin), build and stub tests without cgo"
bash ci/nobinaries.sh
bad=$(gofmt -l . | grep -v '^\.cache/' || true)
if [[ -n $bad ]]; then echo "gofmt would change: $bad"; exit 1; fi
go vet ./...
CGO_ENABLED=0 go build ./...
CGO_ENABLED=0 go vet ./...
# The !linux files compile (vet type-checks them: the stubs of verbs,
# rdmatest/internal/cpus's affinity_other.go, …).
GOOS=darwin go vet ./...
# The stubs of verbs (!(linux && cgo)) run their tests.
RDMA_REQUIRE=0 CI= CGO_ENABLED=0 go test -count=1 ./verbs/... # no device without cgo, by construction
# calibrate's C-only control: the loops of verbs/loop.c without Go (make calibrate)
# and its experiment builds (make calibrate-setup, make calibrate-phases)
make -s cping-builds >/dev/null

step "unit tests on the host (device tests skip here; they run on a device below)"
# (the history's trend page loads in headless Chromium: make deps
# installs it, and RDMAHISTORY_CHROMIUM=1 fails the test without it)
RDMA_REQUIRE=0 CI= RDMAHISTORY_CHROMIUM=1 go test -count=1 -timeout 10m ./...

step "VM failure tests of the loopback runner"
# The log shows each test's name and result; on a failure, the whole
# output of the failing tests follows (ci/failed.sh; all of it in the file).
vmlog=.cache/vmtests.log
vmrc=0
RDMA_VM_TESTS=1 go test -count=1 -timeout 15m -run VM -v ./loopback/ >"$vmlog" 2>&1 || vmrc=$?
grep -E '^(=== RUN|--- |\s+--- |PASS|FAIL|ok|panic)' "$vmlog" || true
bash ci/skips.sh "$vmlog" vm "the VM tests" || { ((vmrc != 0)) || vmrc=1; }
if ((vmrc != 0)); then
	echo "=== the whole output of the failing VM tests (all of the log in $vmlog)"
	bash ci/failed.sh "$vmlog"
	exit "$vmrc"
fi

step "brief fuzzing of every parser of outside input"
# A count, not a duration: with -fuzztime 5s, Go 1.26's fuzz coordinator
# can report its own deadline as a failure ("context deadline exceeded",
# no failing input; golang/go#75804, fixed in Go 1.27). 20000 inputs take
# 1-7 s per target here.
for t in ./rdmatest/internal/sizes:FuzzParseSizes ./internal/results:FuzzRead ./internal/history:FuzzAdd ./rdmatest/oob:FuzzDecode ./cmd/rdmapeer:FuzzSession ./ci/gate:FuzzGate ./ci/calibrate:FuzzParsePerftest ./cmd/rdmaplot:FuzzReadResults ./cmd/rdmaplot:FuzzReadHlog ./cmd/rdmacheck:FuzzControlMessage; do
	pkg=${t%%:*} name=${t##*:}
	go test -count=1 -run '^$' -fuzz "^${name}\$" -fuzztime 20000x -fuzzminimizetime 2s "$pkg"
done

step "device tests and the benchmark suite (-short) on a real RDMA device"
mkdir -p .cache/testbin
pkgs=(verbs rdmatest/internal/engine rdmatest cmd/rdmapeer bench_test)
for p in "${pkgs[@]}"; do
	go test -c -o ".cache/testbin/${p//\//_}.test" "./$p"
done
rm -f .cache/example-commit.txt
RDMA_REQUIRE=1 .cache/rxevm -timeout 20m -- bash ci/devtests.sh "${pkgs[@]}"

step "Soft-iWARP: siw.ko built for the guest kernel (cached), then the device pass on siw0 over rdma_cm (ci/siw.sh, docs/siw.md)"
RXEVM=.cache/rxevm bash ci/siw.sh run

step "the gate's self-check: make compare of HEAD against HEAD, two of seven benchmarks drawn at random (seed printed) reported 25% worse"
bash ci/selfcheck.sh

step "the own-pattern example's 14 runs through benchstat and the regression gate"
bash ci/owngate.sh .cache/example-commit.txt

step "two hosts: every benchmark (-short) against rdmapeer in a second guest, then faults over the wire"
go build -o .cache/rdmapeer ./cmd/rdmapeer
rm -f .cache/twohost.done .cache/twohost.kill .cache/twohost.token
RDMA_REQUIRE=1 .cache/rxevm -pair -timeout 15m -- bash ci/twohost.sh ::: bash ci/twohost.sh

step "the bring-up check on two guests: all good, port down, a wrong GID index, UDP 4791 blocked (ci/bringup.sh)"
go build -o .cache/rdmacheck ./cmd/rdmacheck
rm -f .cache/bringup.*
.cache/rxevm -pair -timeout 10m -- bash ci/bringup.sh ::: bash ci/bringup.sh

step "a Slurm cluster of 4 guests: munge, slurmctld, slurmd, srun across all four (the fabric pass's base), the fabric pass with a bad node and link drawn at random (seed printed), then incast through a bottleneck"
# The fabric's faults are drawn afresh every run (ci/fabric/faults.sh);
# a failure prints its seed: FABRIC_FAULT_SEED=<seed> bash
# ci/fabric/cluster.sh runs that draw again.
# Incast (issue #47) after the fabric's verdicts, the faults out again:
# into node1 through its ingress bottleneck and 20% lower, 4 runs each
# of 50 × 64 KiB a sender (the open sweep only by hand).
FABRIC_INCAST=1 FABRIC_INCAST_OPEN_RUNS=0 FABRIC_INCAST_ITERS=50 RXEVM=.cache/rxevm bash ci/fabric/cluster.sh
