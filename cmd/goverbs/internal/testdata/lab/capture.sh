#!/bin/sh
# Runs inside the goverbs lab VM (rxe0 on veth0): captures the output, status
# and errors of the C tools the clones mirror (rdma-core 65: Debian sid's,
# from the lab's sid root, which the VM sees read-only at the host's path, run
# by chroot) as golden files, and the sysfs/dev tree they read, under
# $GOVERBS_LAB_OUT. Run from the repository root, after labsuite has built
# the root once, with
#   flock /tmp/goverbs-lab.lock go run ./test/lab/cmd/lab -out /tmp/cap -sh 'sh cmd/goverbs/internal/testdata/lab/capture.sh'
# then cmd/goverbs/internal/testdata/lab/import.sh /tmp/cap.
set -u
out=${GOVERBS_LAB_OUT:?not in the lab}
root=${GOVERBS_LAB_PEER_SID:-${GOVERBS_LAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/goverbs-lab}/peers/sid/root}
[ -x "$root/usr/bin/ibv_devinfo" ] || { echo "capture.sh: no sid root at $root" >&2; exit 1; }
mount --rbind /dev "$root/dev" && mount --rbind /sys "$root/sys" && mount -t proc proc "$root/proc" &&
	mount -t tmpfs tmpfs "$root/tmp" || exit 1
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mkdir -p "$out/golden"
as= # chroot's user options, set by nonroot
cap() { # name prog args...
	name=$1; shift
	chroot $as "$root" "$@" >"$out/o" 2>"$out/e"
	st=$?
	{ printf -- '-- status --\n%d\n-- stdout --\n' "$st"; cat "$out/o"; printf -- '-- stderr --\n'; cat "$out/e"; } >"$out/golden/$name.golden"
}
nonroot() { as="--userspec=65534:65534 --groups=65534"; cap "$@"; as=; }

cap devices                ibv_devices
cap devices_extra          ibv_devices -v
cap devinfo                ibv_devinfo
cap devinfo_-v             ibv_devinfo -v
cap devinfo_-l             ibv_devinfo -l
cap devinfo_-d_rxe0        ibv_devinfo -d rxe0
cap devinfo_-d_rxe0_-i_1   ibv_devinfo -d rxe0 -i 1
cap devinfo_-v_-i_1        ibv_devinfo -v -i 1
cap devinfo_-d_rxe0_-i_2   ibv_devinfo -d rxe0 -i 2
cap devinfo_-i_2           ibv_devinfo -i 2
cap devinfo_-i_257         ibv_devinfo -i 257
cap devinfo_-i_256         ibv_devinfo -i 256
cap devinfo_-d_foo         ibv_devinfo -d foo
cap devinfo_-i_0           ibv_devinfo -i 0
nonroot devinfo_nonroot    ibv_devinfo
nonroot devinfo_nonroot_-l ibv_devinfo -l
nonroot devices_nonroot    ibv_devices
cap ibstat                 ibstat
cap ibstat_-s              ibstat -s
cap ibstat_-p              ibstat -p
cap ibstat_-l              ibstat -l
cap ibstat_rxe0_1          ibstat rxe0 1
cap ibstat_rxe0_2          ibstat rxe0 2
cap ibstat_foo             ibstat foo
cap ibstat_-dd_rxe0_2      ibstat -dd rxe0 2
nonroot ibstat_nonroot     ibstat
rm -f "$out/o" "$out/e"

# The tree the tools read, as "path:content" lines (one grep process: forking
# per file is slow under TCG). Unreadable files are left out, as they are
# absent to the tools; import.sh rebuilds the tree from this dump.
for d in /sys/class/infiniband/*; do
	p=$d/ports/*
	grep -rs '' $d/node_type $d/node_guid $d/sys_image_guid $d/fw_ver $d/hw_rev $d/hca_type $d/board_id $d/node_desc \
		$p/state $p/phys_state $p/rate $p/lid $p/sm_lid $p/sm_sl $p/lid_mask_count $p/cap_mask $p/link_layer \
		$p/gids $p/pkeys $p/gid_attrs/types
done >"$out/dump.txt"
for u in /sys/class/infiniband_verbs/*; do
	if [ -d "$u" ]; then grep -s '' $u/ibdev $u/dev $u/abi_version /dev/null; else grep -s '' $u /dev/null; fi
done >>"$out/dump.txt"
ls /dev/infiniband >"$out/dev.txt"
