#!/usr/bin/env bash
# Installs what goverbs' build, tests and lab need on a Debian/Ubuntu machine. Idempotent: it installs only
# what is missing. Needs root (or sudo).
set -euo pipefail

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

# The lab boots Debian kernels (6.1, 6.12 and the newest: the matrix of `make test`) under QEMU and runs
# rdma-core's C tools beside ours (they are the peers our tools must match), so the host needs QEMU, the C tools
# and the uAPI headers the ABI generator reads. xz and zstd unpack the kernels (6.1 is xz, 6.12 and 7.x zstd);
# debian-archive-keyring signs trixie, trixie-backports and sid, which the lab reaches through an apt
# configuration of its own in its cache (the system's apt sources are never changed). The mlx5 comparison with
# libmlx5 (tests and `make bench`) builds a C harness against libibverbs-dev and ibverbs-providers' libmlx5, and
# `make bench` counts instructions with valgrind (callgrind). libibumad-dev: perftest built from its source
# (test/perftestsrc, on demand) needs umad.h.
pkgs=(qemu-system-x86 ibverbs-utils ibverbs-providers infiniband-diags perftest rdma-core rdmacm-utils
      iproute2 libibverbs-dev librdmacm-dev libibumad-dev linux-libc-dev gcc make dpkg cpio kmod xz-utils zstd debian-archive-keyring
      ca-certificates valgrind)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	echo "install-deps: installing ${missing[*]}"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Go: the module asks for a recent toolchain; any Go >= 1.21 fetches it through the module proxy
# (GOTOOLCHAIN=auto). Install the distribution's Go only when there is none at all.
if ! command -v go >/dev/null 2>&1 && [ ! -x /usr/local/go/bin/go ]; then
	echo "install-deps: installing golang-go"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends golang-go >/dev/null
fi
