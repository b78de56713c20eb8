#!/bin/bash
# The goverbs demo, run inside the lab VM by `make demo` (rxe0 is up on veth0). It shows goverbs' tools beside
# the newest releases of rdma-core's and iproute2's (Debian sid's rdma-core 65 and iproute2 7.3, whose root
# `lab -peer sid` builds) on the same device, and a goverbs ping-pong talking to rdma-core's in both directions.
set -u
G=${GOVERBS:-bin/goverbs}
SID=${GOVERBS_LAB_PEER_SID:-}
# sid TOOL ARGS...: run sid's TOOL from its root (the VM's /dev, /sys and /proc mounted in a private namespace);
# without the root (a demo run without -peer sid), the host's own tool.
sid() {
	if [ -z "$SID" ]; then "$@"; return; fi
	unshare -m --propagation private sh -c 'r=$1; shift
		mount --rbind /dev "$r/dev" && mount --rbind /sys "$r/sys" && mount -t proc proc "$r/proc" &&
		mount -t tmpfs tmpfs "$r/tmp" && cd / && exec chroot "$r" "$@"' sh "$SID" "$@"
}
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
same() { # same LABEL CMD_GO -- CMD_C : run both and say whether the outputs are identical
	local label=$1; shift
	local go=() c=()
	while [ "$1" != "--" ]; do go+=("$1"); shift; done; shift; c=("$@")
	local a b
	a=$("${go[@]}" 2>&1); b=$("${c[@]}" 2>&1)
	printf '%s\n' "$a"
	if [ "$a" == "$b" ]; then echo "   -> identical to the C tool's \`${c[*]}\`"; else
		echo "   -> DIFFERS from \`${c[*]}\`:"; printf '%s\n' "$b" >/tmp/c.out; printf '%s\n' "$a" >/tmp/go.out; diff /tmp/c.out /tmp/go.out; fi
}
wait_port() { for _ in $(seq 600); do grep -qi ":$(printf %04X "$1") .* 0A " /proc/net/tcp /proc/net/tcp6 2>/dev/null && return 0; sleep 0.1; done; return 1; }

step "goverbs devices"
same devices $G devices -- sid ibv_devices
step "goverbs devinfo"
same devinfo $G devinfo -- sid ibv_devinfo
step "goverbs devinfo -v (first lines)"
same devinfo-v $G devinfo -v -- sid ibv_devinfo -v | head -40
step "goverbs ibstat"
same ibstat $G ibstat -- sid ibstat

step "goverbs rdma link / dev / res show / sys"
same rdma-sys $G rdma sys -- sid rdma sys
same rdma-link $G rdma link show -- sid rdma link show
same rdma-dev $G rdma -j dev show -- sid rdma -j dev show
same rdma-res $G rdma res show -- sid rdma res show
step "goverbs cgroup: a limit in a new cgroup, then ibv_devinfo run under hca_handle=0"
$G cgroup create goverbs-demo && $G cgroup set goverbs-demo rxe0 hca_handle=2 hca_object=100 && $G cgroup show goverbs-demo
$G cgroup set goverbs-demo rxe0 hca_handle=0
$G cgroup exec goverbs-demo -- ibv_devinfo -l >/dev/null 2>&1 && echo "   ibv_devinfo -l ran (it opens no context)"
$G cgroup exec goverbs-demo -- ibv_devinfo 2>&1 | sed 's/^/   C: /'; echo "   -> exit status ${PIPESTATUS[0]} (the limit stops rdma-core's tool)"

step "goverbs pingpong rc (server)  <->  ibv_rc_pingpong (client)"
$G pingpong rc -d rxe0 -g 1 -n 20 -p 18601 & wait_port 18601
ibv_rc_pingpong -d rxe0 -g 1 -n 20 -p 18601 127.0.0.1 | sed 's/^/   C: /'; wait $!
step "ibv_rc_pingpong (server)  <->  goverbs pingpong rc (client)"
ibv_rc_pingpong -d rxe0 -g 1 -n 20 -p 18602 | sed 's/^/   C: /' & wait_port 18602
$G pingpong rc -d rxe0 -g 1 -n 20 -p 18602 127.0.0.1; wait $!
