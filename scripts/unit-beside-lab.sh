#!/usr/bin/env bash
# unit-beside-lab.sh: `make test`'s last two phases at once. The lab's VMs (one vCPU each under TCG, two at a
# time on a 2-core host) leave part of the host idle: each waits on timers, the wire and its peers, and QEMU sat
# at ~72 % of its core. `make unit` (the race detector on the host) fills that idle time at the lowest CPU
# priority (nice 19), so it takes none of a VM's time while the VM wants it. Unit's output is kept and printed
# when both are done, after the lab's summary; the exit status fails if either failed.
# TEST_SERIAL=1 `make test` runs them one after the other instead.
set -uo pipefail
make=${MAKE:-make}
log=$(mktemp -t goverbs-unit.XXXXXX)
(
	start=$SECONDS
	nice -n 19 "$make" --no-print-directory unit
	rc=$?
	echo "(make unit took $((SECONDS - start)) s beside the lab)"
	exit $rc
) >"$log" 2>&1 &
unit=$!
trap 'pkill -P $unit 2>/dev/null; kill $unit 2>/dev/null; rm -f "$log"' INT TERM
"$make" --no-print-directory lab
lab=$?
wait "$unit"
rc=$?
echo
echo "== make unit (beside the lab, nice 19): exit $rc"
cat "$log"
rm -f "$log"
if [ "$lab" -ne 0 ] || [ "$rc" -ne 0 ]; then
	echo "make test: lab exit $lab, unit exit $rc" >&2
	exit 1
fi
