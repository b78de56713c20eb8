#!/bin/sh
# capture.sh ROOT: runs every command line of cases.txt with perftest 6.24 (Debian sid's or trixie's
# perftest 25.01.0+0.80, unpacked in ROOT, run by chroot as root) and stores its status, stdout and stderr as
# NAME.status, NAME.stdout, NAME.stderr. Every case fails or exits before a device is opened, so no RDMA device
# is needed; cli_test.go replays them against goverbs.
set -u
root=$1
cd "$(dirname "$0")"
while read -r name tool args; do
	case $name in '#'*|'') continue ;; esac
	# shellcheck disable=SC2086
	chroot "$root" /usr/bin/"$tool" $args >"$name.stdout" 2>"$name.stderr"
	echo $? >"$name.status"
done <cases.txt
