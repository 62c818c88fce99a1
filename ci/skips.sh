#!/usr/bin/env bash
# ci/skips.sh LOG WHAT — how many tests and benchmarks LOG (go test -v
# output) skipped, and which: "skips in WHAT: N", then one line per skip
# with its name. Benchmarks print their skips only under -test.v, so the
# passes that call this run with it.
#
# Report only, for now (issue #29): the skips of each pass are listed in
# CI's log so that an allowlist with reasons can be written from what
# CI really skips; a later step fails on a skip that list lacks.
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: ci/skips.sh LOG WHAT" >&2; exit 2; }
log=$1 what=$2
[[ -r $log ]] || { echo "ci/skips.sh: cannot read $log" >&2; exit 2; }
# No process substitution: the qemu guest's initramfs has no /dev/fd.
names=$(sed -nE 's/^[[:space:]]*--- SKIP: ([^ ]+).*/\1/p' "$log")
n=0
[[ -z $names ]] || n=$(wc -l <<<"$names")
echo "skips in $what: $n"
[[ -z $names ]] || sed 's/^/  skipped: /' <<<"$names"
