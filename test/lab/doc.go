// Package lab runs commands in the goverbs lab: a QEMU virtual machine that
// boots a Debian kernel with rdma_rxe, so that tests and tools can talk to a
// real kernel RDMA stack on a host without RDMA hardware. GOVERBS_LAB_KERNEL
// picks the kernel: 6.1 (bookworm, the default), 6.12 (trixie) or newest
// (trixie-backports or sid, 7.x today); see EnsureKernel and Matrix.
// Config.Kernel picks it for one run instead (the environment is the
// process's, shared by concurrent runs; labsuite -j uses Config.Kernel).
//
// # What the command sees
//
// The host's root filesystem, read-only, over virtio-9p: Go test binaries,
// rdma-core's libraries and tools (ibv_devinfo, ibv_rc_pingpong, perftest,
// iproute2's rdma) and the source tree are all there, at their host paths.
// On top of it the VM mounts its own proc, sysfs, devtmpfs (with
// /dev/infiniband), devpts, tmpfs on /tmp, /run and /dev/shm, cgroup2 on
// /sys/fs/cgroup (with the rdma controller) and configfs. Host paths that
// these hide (/tmp, /run, ...) are visible only when shared (Config.Shares);
// the working directory and the command's executable are shared
// automatically.
//
// The network: a veth pair veth0 (10.233.0.1/24) and veth1 (10.233.0.2/24),
// both up, and the rxe device rxe0 on veth0, port 1 ACTIVE. GID index 1 is
// the RoCEv2 GID of 10.233.0.1. QPs on rxe0 talk to each other in loopback
// (ibv_rc_pingpong -d rxe0 -g 1 as server and client works). Set
// GOVERBS_LAB_NO_RXE=1 (or Config.NoRXE) to get no rxe0, for tests of
// "rdma link add" itself.
//
// Soft-iWARP: with GOVERBS_LAB_PROVIDER=siw (Config.Provider "siw", the
// -provider flag of cmd/lab and cmd/labsuite) the device is siw0 on veth0
// instead of rxe0, port 1 ACTIVE, and the command's GOVERBS_LAB_PROVIDER is
// siw (test/labtest's Device is then siw0). Debian builds no siw module, so
// EnsureSIW builds siw.ko once per kernel from the kernel's own Debian source
// and headers; it goes into the initramfs after the kernel's modules it needs.
//
// Two hosts: on Linux 7.1 and newer (rxe in a network namespace), a test
// calls labtest.TwoHosts to move veth1 into a namespace of its own with an
// rxe device "rxe1" on it; traffic between rxe0 and rxe1 then crosses the
// veth as real packets (ready for tc netem), and labtest.PeerHost.Enter runs
// a command on that host. The test's cleanup puts everything back.
//
// The environment is Config.Env (default HostEnv: PATH, HOME, locale, every
// GOVERBS_* variable, GOTRACEBACK, GODEBUG, GOMAXPROCS, GORACE, GOCOVERDIR;
// no TERM) plus GOVERBS_LAB=1, and GOVERBS_LAB_OUT when Config.OutDir is
// set. The command runs as root, in a session of its own, with stdin
// /dev/null, in Config.Workdir (default: the caller's working directory).
//
// # Output and status
//
// The command's stdout and stderr are virtio-serial ports that QEMU writes
// to pipes read by Run, so they arrive byte for byte (no terminal, no CRLF,
// no kernel messages) and as they are produced. The kernel console is kept
// apart and shown only with GOVERBS_LAB_DEBUG=1 (Config.Debug) or in the
// error when the VM fails. Run returns the command's exit status (128+N if
// killed by signal N). If the VM cannot set up the command's environment,
// Run returns a *SetupError naming the step and exit code 125; when
// Config.Timeout or the context expires, exit code 124 and an error
// wrapping context.DeadlineExceeded.
//
// # Entry points
//
//	go run ./test/lab/cmd/lab -- ibv_devinfo -d rxe0     # one command
//	go run ./test/lab/cmd/lab -sh 'rdma link; ibstat'     # a shell script
//	go install ./test/lab/cmd/labexec                     # go test -exec wrapper
//	go test -exec labexec ./uverbs/...                    # tests in the VM
//	go run ./test/lab/cmd/labsuite                        # all lab packages, one boot
//
// # How it works
//
// The first run resolves the kernel package (the "-unsigned" variant of
// linux-image-amd64's dependency, via apt-cache; for 6.12 and newest through
// an apt configuration of the lab's own in CacheDir/apt that lists trixie,
// trixie-backports and sid; from 6.19 Debian splits a kernel into
// linux-binary-unsigned, linux-modules and linux-base), downloads it with
// apt-get download, unpacks it with dpkg -x and extracts the uncompressed
// vmlinux (xz or zstd), which QEMU boots through the PVH entry point. It builds the guest
// init (test/lab/internal/labinit, a static Go program, CGO_ENABLED=0) with
// the host's Go toolchain, and packs it with the needed kernel modules
// (dependencies read from each module's .modinfo; signatures stripped) into
// an uncompressed newc initramfs. All of that is cached, keyed by content,
// in CacheDir (GOVERBS_LAB_CACHE, else $XDG_CACHE_HOME/goverbs-lab, else
// ~/.cache/goverbs-lab); every cache entry appears by rename and builders
// hold a lock, so concurrent runs (go test runs packages in parallel) are
// safe. Each run has its own control directory, pipes and QEMU process, and
// QEMU gets no network device (the veth pair and the two hosts live inside
// the VM), so concurrent VMs share no port or socket path; Prepare does the
// host-side work before a run, for callers that start several at once.
//
// KVM is used when /dev/kvm works and the CPU has vmx or svm; otherwise TCG
// emulation, with a note on Config.Log (GOVERBS_LAB_ACCEL=kvm|tcg forces
// one). Under TCG a boot to the command costs about 3.5 s of host CPU
// (about 4 s of wall time on an idle 2-core host; more when other VMs
// compete), and the VM gets 1 vCPU unless Config.CPUs says otherwise;
// under KVM it gets 2 and should boot in a second or two.
//
// The host root is read-only, HOME included: a command that writes caches
// under HOME (go build's GOCACHE, for one) needs them pointed into /tmp.
//
// Prerequisites: qemu-system-x86_64 (apt-get install qemu-system-x86), apt
// and dpkg for the first download, xz and zstd for the vmlinux extraction and
// the modules (without them the compressed image is booted),
// debian-archive-keyring for the private apt suites, and the Go toolchain.
//
// Environment knobs: GOVERBS_LAB_CACHE, GOVERBS_LAB_DEBUG=1,
// GOVERBS_LAB_NO_RXE=1, GOVERBS_LAB_PROVIDER (rxe or siw), GOVERBS_LAB_ACCEL, GOVERBS_LAB_KERNEL (6.1, 6.12,
// newest or another major.minor), GOVERBS_LAB_KERNEL_PACKAGE (boot another
// Debian kernel package), GOVERBS_LAB_KERNEL_ARGS (extra kernel
// command line), GOVERBS_LAB_SRC (the source tree to build init from, when
// not run from inside it), GOVERBS_LAB_QUIET=1 (no TCG note).
package lab
