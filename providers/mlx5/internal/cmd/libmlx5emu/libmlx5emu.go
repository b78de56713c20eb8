// Package libmlx5emu builds and runs a test-only C harness (csrc/harness.c) that drives Debian's installed
// libibverbs and rdma-core's libmlx5 (ibverbs-providers) against an emulated kernel: the harness interposes
// open/stat/socket/ioctl/write/mmap on a fake uverbs node with a fake sysfs tree, answers the legacy write()
// commands with plausible kernel responses and backs the UAR/BlueFlame pages with ordinary memory, so libmlx5 builds
// its WQEs and rings its doorbells in memory the harness can read. The hw package's tests compare those bytes with
// goverbs' (TestLibmlx5WQEs), and test/bench/cmd/mlx5bench measures both under callgrind and as ns/op. Its
// extdump mode gives the fake kernel ECE, a clock page and a dump-fill mkey and dumps the commands and answers
// of libmlx5's optional verbs (ECE, rate limit, clock, null MR), which providers/mlx5's TestLibmlx5OptionalVerbs
// compares with goverbs'. Its wqdump mode answers the WQ and indirection-table commands and dumps what
// libmlx5 sends for ibv_create_wq, ibv_modify_wq and ibv_create_rwq_ind_table and the ring ibv_post_wq_recv
// writes, which TestLibmlx5WQ compares with goverbs'; its dmdump mode answers the extended QUERY_DEVICE and the
// device-memory ioctls and dumps libmlx5's DM_ALLOC attributes, its mapping and its copies (TestLibmlx5DM),
// the REG_DMABUF_MR of ibv_reg_dmabuf_mr (TestLibmlx5DmabufMR) and libmlx5's DM query, mapping and copies for
// ibv_import_dm (TestLibmlx5ImportDM).
//
// Nothing here is linked into goverbs: the package only embeds the C source and runs the C compiler, as the
// golden-vector generator does. No rdma-core code is copied: the harness calls the public verbs and mlx5dv API.
package libmlx5emu

import (
	"bufio"
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

//go:embed csrc/harness.c
var source []byte

// Source returns the harness's C source.
func Source() []byte { return source }

// ErrUnavailable is returned (wrapped) when the C compiler, the rdma-core headers or libmlx5 are missing.
var ErrUnavailable = errors.New("libmlx5 harness unavailable")

// ProviderGlob is where libibverbs loads rdma-core's mlx5 provider from (Debian: ibverbs-providers, e.g.
// /usr/lib/x86_64-linux-gnu/libibverbs/libmlx5-rdmav34.so).
const ProviderGlob = "/usr/lib/*/libibverbs/libmlx5-rdmav*.so"

// Env is the environment the harness runs with, besides the caller's: libmlx5 without its locks
// (MLX5_SINGLE_THREADED=1), the configuration that matches goverbs' hw queues, which leave serialisation to the
// caller.
var Env = []string{"MLX5_SINGLE_THREADED=1"}

// Available reports whether the harness can be built and run here.
func Available() error {
	if _, err := exec.LookPath("gcc"); err != nil {
		return fmt.Errorf("%w: gcc not found (install gcc)", ErrUnavailable)
	}
	for _, f := range []string{"/usr/include/infiniband/mlx5dv.h", "/usr/include/rdma/mlx5-abi.h"} {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("%w: %v (install libibverbs-dev and linux-libc-dev)", ErrUnavailable, err)
		}
	}
	if m, _ := filepath.Glob(ProviderGlob); len(m) == 0 {
		return fmt.Errorf("%w: no %s (install ibverbs-providers)", ErrUnavailable, ProviderGlob)
	}
	return nil
}

// Build compiles the harness into dir and returns the executable's path.
func Build(dir string) (string, error) {
	if err := Available(); err != nil {
		return "", err
	}
	src := filepath.Join(dir, "harness.c")
	bin := filepath.Join(dir, "libmlx5emu")
	if err := os.WriteFile(src, source, 0o644); err != nil {
		return "", fmt.Errorf("libmlx5 harness: %w", err)
	}
	// -rdynamic exports the interposed libc functions so that libibverbs, libmlx5 and libnl bind to them.
	out, err := exec.Command("gcc", "-std=gnu11", "-O2", "-g", "-Wall", "-Werror", "-rdynamic", "-o", bin, src,
		"-libverbs", "-lmlx5", "-ldl").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("libmlx5 harness: gcc: %w\n%s", err, out)
	}
	return bin, nil
}

// Command returns the harness invocation with its environment.
func Command(bin string, args ...string) *exec.Cmd {
	c := exec.Command(bin, args...)
	c.Env = append(os.Environ(), Env...)
	return c
}

// Run runs the harness bin in mode (dump, wrdump, extdump) with env added, and parses its "name value" lines.
func Run(bin, mode string, env ...string) (map[string]string, error) {
	var stderr bytes.Buffer
	c := Command(bin, mode)
	c.Env = append(c.Env, env...)
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		return nil, fmt.Errorf("libmlx5 harness %s: %w\n%s", mode, err, stderr.Bytes())
	}
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), " "); ok {
			m[k] = v
		}
	}
	return m, sc.Err()
}
