#!/bin/sh
# Runs inside the goverbs lab VM (rxe0 on veth0): captures mlnx-tools'
# show_gids (8fbfd9cf, from the mirror the VM sees read-only at the host's
# path) run by bash on the real sysfs, as golden files under $GOVERBS_LAB_OUT.
# From the repository root:
#   flock /tmp/goverbs-lab.lock go run ./test/lab/cmd/lab -out /tmp/cap -sh 'sh cmd/goverbs/internal/showgids/testdata/lab/capture.sh'
# then copy /tmp/cap/*.golden to cmd/goverbs/internal/showgids/testdata/lab/.
set -u
out=${GOVERBS_LAB_OUT:?not in the lab}
mirror=/work/.mirror/Mellanox+mlnx-tools/repo
dir=$(mktemp -d)
git -C "$mirror" show 8fbfd9cfff34e2d32f1dd5a115c42eb8bd3b66c8:sbin/show_gids >"$dir/show_gids" || exit 1
uname -r >"$out/uname"
ip link show veth0 >"$out/link"
cd "$dir" || exit 1
for a in "" rxe0 "rxe0 nosuch"; do
	n=$(printf %s "$a" | tr ' ' _)
	PATH=/usr/sbin:/usr/bin:/sbin:/bin bash show_gids ${a:+"$a"} >"$out/o" 2>"$out/e"
	st=$?
	{ printf -- '-- status --\n%d\n-- stdout --\n' "$st"; cat "$out/o"; printf -- '-- stderr --\n'; cat "$out/e"; } >"$out/rxe0${n:+_$n}.golden"
done
rm -f "$out/o" "$out/e"
