// Package perftestsrc builds perftest's benchmarks from a checkout of its source (github.com/linux-rdma/perftest)
// with gcc alone, for pairing goverbs' perftest with a release newer than Debian packages
// (cmd/goverbs/internal/interop TestLabPerftestFromSource, on demand).
//
// perftest's own build is autotools; this one needs no autoconf: it writes a config.h with the version of the
// checkout's configure.ac and a fixed set of HAVE_* features that rdma-core 44's headers (Debian 12) and later
// provide — XRC, the extended verbs and work-request API, thread domains, GID types, endianness conversions,
// IPv6 and IPv4 extensions, raw Ethernet, dma-buf MRs, ODP through the extended API, SSE4.2 — and none of
// the vendor (mlx5dv, hnsdv), accelerator (CUDA, ROCm, ...) or libpci ones, then compiles libperftest's
// sources with each benchmark's main. It needs gcc and the -dev packages of libibverbs, librdmacm and
// libibumad (make deps).
package perftestsrc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
)

// Tools are the benchmarks Build makes (perftest's ib_* programs over RDMA verbs).
var Tools = []string{"write_bw", "write_lat", "read_bw", "read_lat", "send_bw", "send_lat", "atomic_bw", "atomic_lat"}

// libSources are libperftest's sources (Makefile.am's libperftest_a_SOURCES without the accelerators) and the
// raw Ethernet helpers the parameters parser calls.
var libSources = []string{"get_clock", "perftest_communication", "perftest_parameters", "perftest_resources",
	"perftest_counters", "host_memory", "host_validation", "mmap_memory", "multicast_resources",
	"raw_ethernet_resources"}

// features are the HAVE_* macros of config.h (see the package comment).
var features = []string{"HAVE_XRCD", "HAVE_EX", "HAVE_IBV_WR_API", "HAVE_CQ_EX", "HAVE_TD_API", "HAVE_GID_TYPE",
	"HAVE_GID_TYPE_DECLARED", "HAVE_ENDIAN", "HAVE_IPV6", "HAVE_IPV4_EXT", "HAVE_RAW_ETH", "HAVE_REG_DMABUF_MR",
	"HAVE_EX_ODP", "HAVE_SSE42"}

var acInit = regexp.MustCompile(`AC_INIT\(\[perftest\],\s*\[([0-9.]+)\]`)

// Version is the perftest version of the checkout in src (configure.ac's AC_INIT).
func Version(src string) (string, error) {
	b, err := os.ReadFile(filepath.Join(src, "configure.ac"))
	if err != nil {
		return "", fmt.Errorf("perftestsrc: %s is not a perftest checkout: %w", src, err)
	}
	m := acInit.FindSubmatch(b)
	if m == nil {
		return "", fmt.Errorf("perftestsrc: no AC_INIT([perftest], [VERSION]) in %s", filepath.Join(src, "configure.ac"))
	}
	return string(m[1]), nil
}

// Build compiles the checkout in src into out (created): out/ib_<tool> for each of Tools. It returns the
// checkout's version.
func Build(ctx context.Context, src, out string) (string, error) {
	version, err := Version(src)
	if err != nil {
		return "", err
	}
	obj := filepath.Join(out, "obj")
	if err := os.MkdirAll(obj, 0o755); err != nil {
		return "", err
	}
	conf := fmt.Sprintf("#define VERSION %q\n#define PACKAGE_VERSION %q\n", version, version)
	for _, f := range features {
		conf += "#define " + f + " 1\n"
	}
	if err := os.WriteFile(filepath.Join(obj, "config.h"), []byte(conf), 0o644); err != nil {
		return "", err
	}
	compile := func(name string) (string, error) {
		o := filepath.Join(obj, name+".o")
		cmd := exec.CommandContext(ctx, "gcc", "-O2", "-msse4.2", "-D_GNU_SOURCE", "-DHAVE_CONFIG_H", "-I"+obj,
			"-I"+filepath.Join(src, "src"), "-c", filepath.Join(src, "src", name+".c"), "-o", o)
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("perftestsrc: compile %s.c (gcc and libibverbs-dev, librdmacm-dev, libibumad-dev: make deps): %w\n%s", name, err, b)
		}
		return o, nil
	}
	var lib []string
	for _, s := range libSources {
		o, err := compile(s)
		if err != nil {
			return "", err
		}
		lib = append(lib, o)
	}
	for _, t := range Tools {
		o, err := compile(t)
		if err != nil {
			return "", err
		}
		args := append(append([]string{"-o", filepath.Join(out, "ib_"+t), o}, lib...), "-libverbs", "-lrdmacm", "-libumad", "-lm", "-lpthread")
		if b, err := exec.CommandContext(ctx, "gcc", args...).CombinedOutput(); err != nil {
			return "", fmt.Errorf("perftestsrc: link ib_%s: %w\n%s", t, err, b)
		}
	}
	return version, os.RemoveAll(obj)
}
