#!/usr/bin/env bash
# Runs every fuzz target of the module for FUZZTIME each (default 5m; `make fuzz`), one at a time, and stops at
# the first failure (go test writes the crashing input under the package's testdata/fuzz/ for a regression
# test). FUZZ=REGEXP narrows the targets, e.g. FUZZ='Decode' scripts/fuzz.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-5m}
filter=${FUZZ:-.}
n=0
start=$(date +%s)
while IFS=: read -r file name; do
	pkg=./$(dirname "$file")
	[[ $name =~ $filter ]] || continue
	echo "fuzz: $pkg $name for $fuzztime"
	go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg"
	n=$((n + 1))
done < <(grep -rhoE --include='*_test.go' '^func (Fuzz[A-Za-z0-9_]+)' . --with-filename |
	sed -E 's/^\.\/(.*):func (Fuzz[A-Za-z0-9_]+)$/\1:\2/' | sort -u)
echo "fuzz: $n targets, $fuzztime each, $(( $(date +%s) - start ))s in all, no failure"
