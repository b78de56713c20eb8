#!/bin/sh
# Builds perfquery's fake trees from the shared ones (cmd/goverbs/internal/testdata):
#   roce   rxe0 on Ethernet, ib_umad loaded (umad0 = rxe0 port 1)
#   noumad rxe0 without ib_umad (no /sys/class/infiniband_mad)
#   ib     mlx5_0, mlx5_1 on InfiniBand, umad0/umad1 whose device nodes are
#          plain files (open works, agent registration fails with ENOTTY)
#   empty  no RDMA devices at all
set -eu
cd "$(dirname "$0")"
src=../../testdata
rm -rf roce noumad ib empty
cp -r "$src/rxe" noumad
cp -r "$src/rxe" roce
mkdir -p roce/sys/class/infiniband_mad/umad0
echo 5 >roce/sys/class/infiniband_mad/abi_version
echo rxe0 >roce/sys/class/infiniband_mad/umad0/ibdev
echo 1 >roce/sys/class/infiniband_mad/umad0/port
: >roce/dev/infiniband/umad0
cp -r "$src/mlx5" ib
echo 5 >ib/sys/class/infiniband_mad/abi_version 2>/dev/null || { mkdir -p ib/sys/class/infiniband_mad; echo 5 >ib/sys/class/infiniband_mad/abi_version; }
for i in 0 1; do
	mkdir -p ib/sys/class/infiniband_mad/umad$i
	echo mlx5_$i >ib/sys/class/infiniband_mad/umad$i/ibdev
	echo 1 >ib/sys/class/infiniband_mad/umad$i/port
	: >ib/dev/infiniband/umad$i
done
mkdir -p empty/sys/class empty/dev
