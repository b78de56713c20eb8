#!/bin/sh
# Regenerates the fake RoCE GID tables show_gids' tests read (roce/): gids/N,
# gid_attrs/ndevs/N and gid_attrs/types/N as a 6.1 kernel exposes them for
# mlx5 and rxe RoCE ports, plus entries that exercise the script's quirks.
# Independent of mktrees.sh, whose trees other goldens depend on.
set -e
cd "$(dirname "$0")"
w() { mkdir -p "$(dirname "$1")"; printf '%b' "$2" > "$1"; }
# gid dir index gid [ndev [type]]: one GID table entry
gid() {
	w "$1/gids/$2" "$3\n"
	if [ $# -ge 4 ]; then w "$1/gid_attrs/ndevs/$2" "$4\n"; fi
	if [ $# -ge 5 ]; then w "$1/gid_attrs/types/$2" "$5\n"; fi
}
z=0000:0000:0000:0000:0000:0000:0000:0000

rm -rf roce
# --- mlx5_0: a RoCE port with link-local, IPv4 and IPv6 GIDs, v1 and v2 ---------
p=roce/sys/class/infiniband/mlx5_0/ports/1
w $p/link_layer "Ethernet\n"
gid $p 0 fe80:0000:0000:0000:0e42:a1ff:fe3b:1c20 ens1f0 "IB/RoCE v1"
gid $p 1 fe80:0000:0000:0000:0e42:a1ff:fe3b:1c20 ens1f0 "RoCE v2"
gid $p 2 0000:0000:0000:0000:0000:ffff:c0a8:0a0b ens1f0 "IB/RoCE v1"
gid $p 3 0000:0000:0000:0000:0000:ffff:c0a8:0a0b ens1f0 "RoCE v2"
gid $p 4 2001:0db8:0000:0000:0000:0000:0000:0042 ens1f0 "IB/RoCE v1"
gid $p 5 2001:0db8:0000:0000:0000:0000:0000:0042 ens1f0 "RoCE v2"
gid $p 6 0000:0000:0000:0000:0000:ffff:0a00:00fe ens1f0.100 "IB/RoCE v1"
gid $p 7 0000:0000:0000:0000:0000:ffff:0a00:00fe ens1f0.100 "RoCE v2"
# unused entries: zero GID, attrs unreadable (the kernel returns EINVAL)
for i in 8 9 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 127; do gid $p $i $z; done
# not IPv4-mapped but first group 0000: the IPv4 column is still computed
gid $p 10 0000:0000:0000:0000:0000:0000:0a01:0203 ens1f0 "RoCE v2"
gid $p 100 fe80:0000:0000:0000:0000:0000:0000:0000 ens1f0 "RoCE v2"
# no ndev or type files
gid $p 101 fe80:0000:0000:0000:0e42:a1ff:fe3b:1c21
# --- mlx5_1: two ports, the second IB (no gid_attrs) ---------------------------
p=roce/sys/class/infiniband/mlx5_1/ports/1
w $p/link_layer "Ethernet\n"
gid $p 0 fe80:0000:0000:0000:0e42:a1ff:fe3b:1c21 ens1f1 "IB/RoCE v1"
gid $p 1 fe80:0000:0000:0000:0e42:a1ff:fe3b:1c21 ens1f1 "RoCE v2"
gid $p 2 $z
gid $p 3 0000:0000:0000:0000:0000:ffff:ac10:0001 ens1f1 "RoCE v2"
p=roce/sys/class/infiniband/mlx5_1/ports/2
w $p/link_layer "InfiniBand\n"
gid $p 0 fe80:0000:0000:0000:b859:9f03:00d4:a7b1
gid $p 1 $z
# --- nports: a device without a ports directory --------------------------------
w roce/sys/class/infiniband/nports/node_type "1: CA\n"
# --- odd: entries only a fake tree has -----------------------------------------
p=roce/sys/class/infiniband/odd/ports/1
gid $p 0 0000:0000:0000:0000:0000:ffff:c0a8 ens9 "RoCE v2"    # short: printf's invalid numbers
gid $p 1 0000 ens9 "roce V2 extra  words"                      # type words re-joined, grep from the first V
gid $p 2 "fe80:0000 0000:0000" ens9 "IB/RoCE v1"             # two words: [: too many arguments
gid $p 3 "" ens9 "RoCE v2"                                     # empty: [: =: unary operator expected
gid $p 4 "0000:0000:0000:0000:0000:ffff:c0a8:0a0b\n\n\n" "ens9\n\n" "\n"  # trailing newlines stripped
gid $p 5 "abcd:\\\\t:x" 'a\\tb' "-e v1\\\\n"                 # echo -e escapes in the values
gid $p 6 "0000:0000:0000:0000:0000:ffff:c0a8:0 0b" ens9 "RoCE v2"   # printf gets an extra word
gid $p 7 "x\0y" "e\0th0" "RoCE\0 v2"                           # NUL bytes: bash's warning
# an unreadable entry: a directory where the file should be
mkdir -p $p/gids/8 && : > $p/gids/8/.keep
gid $p 9 0000:0000:0000:0000:0000:ffff:7f00:0001 lo "RoCE v2"
ln -s missing $p/gids/11                                       # dangling link: No such file or directory
p=roce/sys/class/infiniband/odd/ports/2                         # a port without gids
w $p/link_layer "Ethernet\n"
mkdir -p roce/sys/class/infiniband/odd/ports/3/gids             # an empty gids directory
: > roce/sys/class/infiniband/odd/ports/3/gids/.keep
# --- words: multi-word GIDs through bash's test operators ------------------------
p=roce/sys/class/infiniband/words/ports/1
i=0
for g in "! x" "( x )" "-n x" "a -a b" "! = 0000" "x -o" "-z" "( =" "a = b c" "!" "-a" "\\\\( ! )" "0000 fe80" "-x y"; do
	gid $p $i "$g" w0 "RoCE v2"
	i=$((i + 1))
done
