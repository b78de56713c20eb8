#!/bin/sh
# Imports a capture.sh result (the -out directory) into testdata: goldens to
# lab/golden, the sysfs dump to the fake tree lab/tree (sys + dev).
set -eu
cap=$1
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$here/golden" "$here/tree"
mkdir -p "$here/golden" "$here/tree/dev/infiniband"
for f in "$cap"/golden/*.golden; do
	sed -E 's/\[(pid )?[0-9]+\]/[\14242]/g' "$f" >"$here/golden/$(basename "$f")"
done
# Lines are "path:content" (the content may contain ':'); sysfs files end
# in a newline, so each line is one line of its file.
awk -v root="$here/tree" '{
	i = index($0, ":"); f = root substr($0, 1, i - 1)
	if (!(f in seen)) { seen[f] = 1; system("mkdir -p \"$(dirname \"" f "\")\""); printf "" > f }
	print substr($0, i + 1) >> f
	close(f)
}' "$cap/dump.txt"
# Device directories are symlinks in sysfs; the class entries resolve to them.
while read -r n; do : >"$here/tree/dev/infiniband/$n"; done <"$cap/dev.txt"
