#!/usr/bin/env bash
# Runs every fuzz target of the module for FUZZTIME each (default 5m; `make fuzz`), one at a time, and stops at
# the first failure (go test writes the crashing input under the package's testdata/fuzz/ for a regression
# test). FUZZ=REGEXP narrows the targets, e.g. FUZZ='Decode' scripts/fuzz.sh; FUZZPARALLEL=N runs N fuzzing
# workers (go test's default: GOMAXPROCS). At the end it prints one line per target: executions and the new
# interesting inputs the run found (corpus entries kept in the build cache, not failures).
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-5m}
filter=${FUZZ:-.}
parallel=()
if [[ -n ${FUZZPARALLEL:-} ]]; then
	parallel=(-parallel "$FUZZPARALLEL")
fi
n=0
start=$(date +%s)
summary=""
while IFS=: read -r file name; do
	pkg=./$(dirname "$file")
	[[ $name =~ $filter ]] || continue
	echo "fuzz: $pkg $name for $fuzztime"
	out=$(mktemp)
	if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "${parallel[@]}" "$pkg" 2>&1 | tee "$out"; then
		rm -f "$out"
		echo "fuzz: $pkg $name failed (the input is under $pkg/testdata/fuzz/$name)"
		exit 1
	fi
	last=$(grep -E '^fuzz: elapsed:' "$out" | tail -1 || true)
	rm -f "$out"
	summary+=$(printf '%-40s %-28s %s' "$pkg" "$name" "${last#fuzz: }")$'\n'
	n=$((n + 1))
done < <(grep -rhoE --include='*_test.go' '^func (Fuzz[A-Za-z0-9_]+)' . --with-filename |
	sed -E 's/^\.\/(.*):func (Fuzz[A-Za-z0-9_]+)$/\1:\2/' | sort -u)
printf '%s' "$summary"
echo "fuzz: $n targets, $fuzztime each, $(( $(date +%s) - start ))s in all, no failure"
