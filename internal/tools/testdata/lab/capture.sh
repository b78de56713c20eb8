#!/bin/sh
# Runs inside the goverbs lab VM (rxe0 on veth0): captures the C tools'
# output, status and errors as golden files, and the sysfs/dev tree they
# read, under $GOVERBS_LAB_OUT. Run from the repository root with
#   go run ./test/lab/cmd/lab -out /tmp/cap -sh 'sh internal/tools/testdata/lab/capture.sh'
# then internal/tools/testdata/lab/import.sh /tmp/cap.
set -u
out=${GOVERBS_LAB_OUT:?not in the lab}
mkdir -p "$out/golden"
n=0
cap() { # name prog args...
	name=$1; shift
	"$@" >"$out/o" 2>"$out/e"
	st=$?
	{ printf -- '-- status --\n%d\n-- stdout --\n' "$st"; cat "$out/o"; printf -- '-- stderr --\n'; cat "$out/e"; } >"$out/golden/$name.golden"
}
nonroot() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

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
cap devinfo_nonroot        nonroot ibv_devinfo
cap devinfo_nonroot_-l     nonroot ibv_devinfo -l
cap devices_nonroot        nonroot ibv_devices
cap ibstat                 ibstat
cap ibstat_-s              ibstat -s
cap ibstat_-p              ibstat -p
cap ibstat_-l              ibstat -l
cap ibstat_rxe0_1          ibstat rxe0 1
cap ibstat_rxe0_2          ibstat rxe0 2
cap ibstat_foo             ibstat foo
cap ibstat_-dd_rxe0_2      ibstat -dd rxe0 2
cap ibstat_nonroot         nonroot ibstat
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
