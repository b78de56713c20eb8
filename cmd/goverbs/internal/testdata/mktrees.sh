#!/bin/sh
# Regenerates the fake sysfs/dev trees the tool tests read. The values are
# modelled on a Debian 6.1 kernel (rdma_rxe on a veth, mlx5 ConnectX-5 with IB
# ports); edge-case trees exercise the C tools' parsing rules.
set -e
cd "$(dirname "$0")"
w() { mkdir -p "$(dirname "$1")"; printf '%b' "$2" > "$1"; }

port() { # dir state phys rate lid smlid lmc capmask linklayer gid0
	w "$1/state" "$2\n"; w "$1/phys_state" "$3\n"; w "$1/rate" "$4\n"
	w "$1/lid" "$5\n"; w "$1/sm_lid" "$6\n"; w "$1/lid_mask_count" "$7\n"
	w "$1/sm_sl" "0\n"; w "$1/cap_mask" "$8\n"; w "$1/link_layer" "$9\n"
	w "$1/gids/0" "${10}\n"; w "$1/pkeys/0" "0xffff\n"
}

rm -rf rxe mlx5 edge empty
mkdir -p empty/sys/class
# --- rxe: one rxe device on veth0 -------------------------------------------
d=rxe/sys/class/infiniband/rxe0
w $d/node_type "1: CA\n"
w $d/node_guid "0042:acff:fe11:0002\n"
w $d/sys_image_guid "0042:acff:fe11:0002\n"
w $d/fw_ver "0.0.0\n"
w $d/node_desc "rxe0\n"
w $d/parent "veth0\n"
port $d/ports/1 "4: ACTIVE" "5: LinkUp" "10 Gb/sec (1X FDR10)" 0x0 0x0 0 0x00010000 Ethernet fe80:0000:0000:0000:0042:acff:fe11:0002
w rxe/sys/class/infiniband_verbs/abi_version "6\n"
w rxe/sys/class/infiniband_verbs/uverbs0/ibdev "rxe0\n"
w rxe/sys/class/infiniband_verbs/uverbs0/dev "231:192\n"
w rxe/sys/class/infiniband_verbs/uverbs0/abi_version "2\n"
w rxe/dev/infiniband/uverbs0 ""

# --- mlx5: two ConnectX-5 with two IB ports, one with a board id ------------
for i in 0 1; do
	d=mlx5/sys/class/infiniband/mlx5_$i
	w $d/node_type "1: CA\n"
	w $d/node_guid "b859:9f03:00d4:a7a$i\n"
	w $d/sys_image_guid "b859:9f03:00d4:a7a0\n"
	w $d/fw_ver "16.35.2000\n"
	w $d/hw_rev "0x0\n"
	w $d/hca_type "MT4119\n"
	w $d/board_id "MT_0000000012\n"
	w $d/device/modalias "pci:v000015B3d00001017sv000015B3sd00000008bc02sc07i00\n"
	port $d/ports/1 "4: ACTIVE" "5: LinkUp" "100 Gb/sec (4X EDR)" 0x1$i 0x1 0 0xa651e848 InfiniBand fe80:0000:0000:0000:b859:9f03:00d4:a7a$i
	port $d/ports/2 "1: DOWN" "3: Disabled" "2.5 Gb/sec (1X SDR)" 0xffff 0x0 0 0xa651e84a InfiniBand fe80:0000:0000:0000:b859:9f03:00d4:a7b$i
	w mlx5/sys/class/infiniband_verbs/uverbs$i/ibdev "mlx5_$i\n"
	w mlx5/sys/class/infiniband_verbs/uverbs$i/dev "231:19$i\n"
	w mlx5/sys/class/infiniband_verbs/uverbs$i/abi_version "1\n"
	w mlx5/dev/infiniband/uverbs$i ""
done
w mlx5/sys/class/infiniband_verbs/abi_version "6\n"

# --- edge: unusual values the C tools still print -----------------------------
d=edge/sys/class/infiniband/rxe_edge_device_long_name
w $d/node_type "2: switch\n"
w $d/node_guid "0:1:2\n" # too few groups: libibumad rejects, libibverbs gives 0
w $d/sys_image_guid "0000:0000:0000:0001\n"
port $d/ports/0 "5: weird" "9: beyond" "40 Gb/sec (4X FDR10)" 0x80000000 0x0 7 0xffffffff IB fe80::1:2:3:4
d=edge/sys/class/infiniband/rxe_b
w $d/node_type "3: router\n"
w $d/node_guid "ffff:0:x:12345\n"
w $d/sys_image_guid "1:2:3:4\n"
w $d/fw_ver "12345678901234567890123\n"
w $d/hca_type "two\nlines\n"
port $d/ports/1 "0: NOP" "0: unknown" "FDR10)" 1 2 3 0 Ethernet "fe80:0:0:0:1:2:3:4"
rm $d/ports/1/link_layer
port $d/ports/3 "2: INIT" "2: Polling" "14 Gb/sec (1X FDR)" 1 2 3 0 InfiniBand "fe80:0:0:0:0:0:0:0"
d=edge/sys/class/infiniband/iwarp0
w $d/node_type "4: RNIC\n"
w $d/node_guid "0001:0002:0003:0004\n"
w $d/sys_image_guid "0001:0002:0003:0004\n"
d=edge/sys/class/infiniband/nopkeys
w $d/node_type "1: CA\n"
w $d/node_guid "0001:0002:0003:0004\n"
w $d/sys_image_guid "0001:0002:0003:0004\n"
port $d/ports/1 "4: ACTIVE" "5: LinkUp" "10 Gb/sec (1X QDR)" 1 1 0 0 InfiniBand fe80:0:0:0:1:2:3:4
rm -r $d/ports/1/pkeys
d=edge/sys/class/infiniband/badport
w $d/node_type "1: CA\n"
w $d/node_guid "0001:0002:0003:0004\n"
w $d/sys_image_guid "0001:0002:0003:0004\n"
port $d/ports/10 "4: ACTIVE" "5: LinkUp" "10 Gb/sec (1X QDR)" 1 1 0 0 InfiniBand fe80:0:0:0:1:2:3:4
d=edge/sys/class/infiniband/cmonly # no GID 0, no pkeys, a CM capability: an RDMA endpoint libibumad fails on
w $d/node_type "1: CA\n"
w $d/node_guid "0001:0002:0003:0005\n"
w $d/sys_image_guid "0001:0002:0003:0005\n"
port $d/ports/1 "4: ACTIVE" "5: LinkUp" "10 Gb/sec (1X QDR)" 1 1 0 0x00010000 InfiniBand fe80:0:0:0:1:2:3:5
rm -r $d/ports/1/pkeys $d/ports/1/gids
touch empty/sys/class/.keep

# --- verbs_edge: uverbs entries libibverbs skips, unparsable GUIDs ------------
rm -rf verbs_edge verbs_badabi
v=verbs_edge/sys/class/infiniband_verbs
w $v/abi_version "6\n"
for n in 0 1 2 3; do w $v/uverbs$n/dev "231:19$n\n"; w $v/uverbs$n/abi_version "2\n"; done
w $v/uverbs0/ibdev "rxe_a\n";       w verbs_edge/dev/infiniband/uverbs0 ""
w $v/uverbs1/ibdev "rxe_nodev\n"
w $v/uverbs2/ibdev "rxe_missing\n"; w verbs_edge/dev/infiniband/uverbs2 ""
w $v/uverbs3/ibdev "rxe_c\n";       w verbs_edge/dev/infiniband/uverbs3 ""
w $v/uverbs3/dev "231\n"
for d in rxe_a rxe_nodev rxe_c; do w verbs_edge/sys/class/infiniband/$d/node_type "1: CA\n"; done
w verbs_edge/sys/class/infiniband/rxe_a/node_guid "0:1:2\n"
w verbs_edge/sys/class/infiniband/rxe_nodev/node_guid "0001:0002:0003:0004\n"
v=verbs_badabi/sys/class/infiniband_verbs
w $v/abi_version "7\n"
w $v/uverbs0/ibdev "rxe0\n"; w $v/uverbs0/dev "231:192\n"; w $v/uverbs0/abi_version "2\n"
w verbs_badabi/sys/class/infiniband/rxe0/node_type "1: CA\n"
w verbs_badabi/sys/class/infiniband/rxe0/node_guid "0001:0002:0003:0004\n"
w verbs_badabi/dev/infiniband/uverbs0 ""
