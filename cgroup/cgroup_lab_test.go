package cgroup_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/goverbs/goverbs/cgroup"
	"github.com/goverbs/goverbs/internal/cgrouptest"
	"github.com/goverbs/goverbs/test/labtest"
	"golang.org/x/sys/unix"
)

// labDevice is the RDMA device under test (rxe0 in the lab).
func labDevice() string { return labtest.Device() }

// TestLab is the only entry point of the lab tests of this package, so that
// their order holds even with -shuffle:
//
//  1. the library suite on cgroup v2 (mounted by the lab at /sys/fs/cgroup),
//  2. the same suite on a cgroup v1 rdma hierarchy the test mounts itself
//     (see package cgrouptest for how the controller moves between them),
//  3. the acceptance test of "goverbs cgroup" on v2 and on v1 (tool_lab_test.go),
//  4. last, RefusedContext: on Linux 6.1 a refused ioctl GET_CONTEXT leaks a
//     task reference that pins its cgroup for the rest of the boot, after
//     which the controller cannot move to v1 any more.
//
// The tool's acceptance test lives here rather than in package cgrouptool
// because all tests that move the controller must run in one package, in
// this order: the lab suite runs every package in one boot.
func TestLab(t *testing.T) {
	labtest.Require(t)
	t.Run("V2", func(t *testing.T) { runSuite(t, cgrouptest.UseV2(t)) })
	t.Run("V1", func(t *testing.T) { needV1(t); runSuite(t, cgrouptest.UseV1(t)) })
	t.Run("ToolV2", func(t *testing.T) { testTool(t, cgrouptest.UseV2(t)) })
	t.Run("ToolV1", func(t *testing.T) { needV1(t); testTool(t, cgrouptest.UseV1(t)) })
	t.Run("RefusedContext", func(t *testing.T) { refusedContextRan.Store(true); testRefusedContext(t) })
}

// refusedContextRan is set once TestLab/RefusedContext has run in this process: under go test -count N the next
// TestLab's V1 parts would come after it in the same boot.
var refusedContextRan atomic.Bool

// needV1 skips a v1 part that follows RefusedContext in the same boot (go test -count): the cgroup RefusedContext
// pins stays for the rest of the boot, and the kernel then refuses to mount the rdma controller on a v1
// hierarchy (EBUSY). The first TestLab of a boot has run the v1 parts already.
func needV1(t *testing.T) {
	if refusedContextRan.Load() {
		t.Skip("RefusedContext ran earlier in this boot (go test -count): the cgroup it pins holds the rdma controller until reboot, so it cannot move to v1; the first run of this boot tested v1")
	}
}

func setLimit(t *testing.T, c *cgroup.Cgroup, r cgroup.Resource, v cgroup.Value) {
	t.Helper()
	if err := c.SetLimit(labDevice(), cgroup.ResourceValue{Resource: r, Value: v}); err != nil {
		t.Fatal(err)
	}
}

// wantUsage checks rdma.current of rxe0 in c.
func wantUsage(t *testing.T, c *cgroup.Cgroup, handle, object cgroup.Value) {
	t.Helper()
	u, err := c.DeviceUsage(labDevice())
	if err != nil {
		t.Fatal(err)
	}
	if u.HCAHandle != handle || u.HCAObject != object {
		t.Fatalf("%s rdma.current for %s: hca_handle=%v hca_object=%v, want %v %v", c.Path(), labDevice(), u.HCAHandle, u.HCAObject, handle, object)
	}
}

// wantLimitError checks that err is the typed limit error for res on rxe0.
func wantLimitError(t *testing.T, err error, res cgroup.Resource) {
	t.Helper()
	var le *cgroup.LimitError
	if !errors.Is(err, cgroup.ErrLimitReached) || !errors.Is(err, unix.EAGAIN) || !errors.As(err, &le) {
		t.Fatalf("error = %v, want a *cgroup.LimitError matching ErrLimitReached and EAGAIN", err)
	}
	if le.Device != labDevice() || le.Resource != res {
		t.Fatalf("LimitError = %+v, want device %s resource %s", le, labDevice(), res)
	}
}

func runSuite(t *testing.T, h *cgroup.Hierarchy) {
	t.Run("Files", func(t *testing.T) { testFiles(t, h) })
	t.Run("HCAHandle", func(t *testing.T) { testHCAHandle(t, h) })
	t.Run("HCAObject", func(t *testing.T) { testHCAObject(t, h) })
	t.Run("LowerBelowUsage", func(t *testing.T) { testLowerBelowUsage(t, h) })
	t.Run("Hierarchical", func(t *testing.T) { testHierarchical(t, h) })
	t.Run("ToolsDevinfo", func(t *testing.T) { testDevinfo(t, h) })
	t.Run("ToolsPingpong", func(t *testing.T) { testPingpong(t, h) })
}

// testFiles checks the kernel's file formats and write rules.
func testFiles(t *testing.T, h *cgroup.Hierarchy) {
	c := cgrouptest.NewCgroup(t, h, "files")
	raw, err := os.ReadFile(filepath.Join(c.Dir(), cgroup.MaxFile))
	if err != nil {
		t.Fatal(err)
	}
	// Every registered device is listed, unlimited, with the trailing space.
	if !strings.Contains(string(raw), labDevice()+" hca_handle=max hca_object=max \n") {
		t.Fatalf("rdma.max = %q, want a line for %s with max and a trailing space", raw, labDevice())
	}
	l, err := c.DeviceLimit(labDevice())
	if err != nil || !l.Unlimited() {
		t.Fatalf("DeviceLimit = %+v, %v", l, err)
	}
	wantUsage(t, c, 0, 0)

	setLimit(t, c, cgroup.HCAObject, 7)
	if l, err = c.DeviceLimit(labDevice()); err != nil || l.HCAHandle != cgroup.Max || l.HCAObject != 7 {
		t.Fatalf("after set hca_object=7: %+v, %v", l, err)
	}
	setLimit(t, c, cgroup.HCAHandle, 0)
	if l, err = c.DeviceLimit(labDevice()); err != nil || l.HCAHandle != 0 || l.HCAObject != 7 {
		t.Fatalf("after set hca_handle=0: %+v, %v", l, err)
	}
	// 2147483647 is max.
	setLimit(t, c, cgroup.HCAObject, 2147483647)
	if raw, _ := os.ReadFile(filepath.Join(c.Dir(), cgroup.MaxFile)); !strings.Contains(string(raw), labDevice()+" hca_handle=0 hca_object=max \n") {
		t.Fatalf("rdma.max = %q", raw)
	}
	if err := c.RemoveLimit(labDevice()); err != nil {
		t.Fatal(err)
	}
	if l, err = c.DeviceLimit(labDevice()); err != nil || !l.Unlimited() {
		t.Fatalf("after RemoveLimit: %+v, %v", l, err)
	}

	// An unknown device is ENODEV, typed.
	err = c.SetLimit("nosuchdev0", cgroup.ResourceValue{Resource: cgroup.HCAHandle, Value: 1})
	var ce *cgroup.Error
	if !errors.Is(err, unix.ENODEV) || !errors.As(err, &ce) || ce.Device != "nosuchdev0" {
		t.Fatalf("SetLimit on an unknown device: %v, want *cgroup.Error with ENODEV", err)
	}
	// The kernel's own parsing rules, written raw: negative and unknown
	// resources are EINVAL. Before "cgroup/rdma: refactor resource parsing
	// with match_table_t/match_token()" (cuitao, posted 2026-04-20; in
	// Debian's 7.2.13 and 7.3.4, not in 6.12.117) it was strsep on single
	// blanks, then match_int or a prefix of "max": an empty token between two
	// blanks is EINVAL and a prefix of "max" is max. Since then runs of blanks
	// are skipped and only "max" itself is max.
	k := labtest.Kernel()
	tokens := k.AtLeast(7, 2)
	if tokens {
		t.Logf("Linux %s: rdma.max is parsed with match_token (7.2+)", k)
	}
	ifTokens := func(newer, older error) error {
		if tokens {
			return newer
		}
		return older
	}
	maxFile := filepath.Join(c.Dir(), cgroup.MaxFile)
	// In order: the last two lines set the state checked below (a line the
	// kernel accepts on one kernel and not on another must come before them).
	for _, w := range []struct {
		line string
		want error
	}{
		{labDevice() + " hca_handle=-1", unix.EINVAL},
		{labDevice() + " hca_thing=1", unix.EINVAL},
		{labDevice() + "  hca_handle=1", ifTokens(nil, unix.EINVAL)},
		{labDevice() + " hca_handle=ma", ifTokens(unix.EINVAL, nil)},
		{labDevice(), nil},
		{"nosuchdev0 hca_object=1", unix.ENODEV},
		{labDevice() + " hca_object=3\n", nil},
		{labDevice() + " hca_handle=max\n", nil},
	} {
		line, want := w.line, w.want
		err := os.WriteFile(maxFile, []byte(line), 0)
		if (want == nil) != (err == nil) || (want != nil && !errors.Is(err, want)) {
			t.Errorf("write %q to rdma.max: %v, want %v", line, err, want)
		}
	}
	if l, err = c.DeviceLimit(labDevice()); err != nil || l.HCAHandle != cgroup.Max || l.HCAObject != 3 {
		t.Fatalf("after raw writes: %+v, %v", l, err)
	}
	// Values go through the kernel's simple_strtol, base 0: hex and octal are
	// taken; the file always prints decimal. Before the match_token parser
	// trailing garbage is ignored and "" or "m" (prefixes of "max") are max;
	// with it %d must take the whole value, so those are EINVAL.
	for _, w := range []struct {
		value string
		want  cgroup.Value
		bad   bool // EINVAL
	}{{"0x10", 16, false}, {"010", 8, false}, {"5abc", 5, tokens}, {"", cgroup.Max, tokens}, {"2", 2, false}, {"m", cgroup.Max, tokens}} {
		err := os.WriteFile(maxFile, []byte(labDevice()+" hca_object="+w.value), 0)
		if w.bad {
			if !errors.Is(err, unix.EINVAL) {
				t.Fatalf("write hca_object=%q: %v, want EINVAL on Linux %s", w.value, err, k)
			}
			continue
		}
		if err != nil {
			t.Fatalf("write hca_object=%q: %v", w.value, err)
		}
		if l, err = c.DeviceLimit(labDevice()); err != nil || l.HCAObject != w.want {
			t.Fatalf("after hca_object=%q: %+v, %v; want %v", w.value, l, err, w.want)
		}
	}

	// The root cgroup has no rdma files.
	root, err := h.Cgroup("/")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := root.Limits(); !errors.Is(err, cgroup.ErrNotEnabled) {
		t.Fatalf("root Limits: %v, want ErrNotEnabled", err)
	}
	if h.Version == cgroup.V2 {
		// A child of a cgroup without +rdma has none either.
		if err := os.Mkdir(filepath.Join(c.Dir(), "plain"), 0o755); err != nil {
			t.Fatal(err)
		}
		defer unix.Rmdir(filepath.Join(c.Dir(), "plain"))
		p, err := h.Cgroup(c.Path() + "/plain")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Usage(); !errors.Is(err, cgroup.ErrNotEnabled) || !errors.Is(err, unix.ENOENT) {
			t.Fatalf("Usage without +rdma in the parent: %v, want ErrNotEnabled", err)
		}
	}
}

// The charging tests run once per verbs implementation in verbsImpls. Each
// implementation opens a context on a device and creates objects that charge
// exactly one hca_object each.
type verbsImpl struct {
	name string
	open func(dev string) (verbsContext, error)
	// ioctlGetContext: the context is made with the ioctl GET_CONTEXT method.
	// Refusing it leaks a task reference on Linux 6.1 (see
	// testRefusedContext), so its refusal is only tested there.
	ioctlGetContext bool
}

// verbsContext is an open context of one implementation.
type verbsContext interface {
	// Kinds lists the object kinds Create makes ("PD", "CQ", "QP", "MR", ...).
	Kinds() []string
	// Create makes one object of the kind, charging exactly one hca_object
	// (parents it needs were made, and charged, by open), and returns the
	// function that destroys it.
	Create(kind string) (destroy func() error, err error)
	// Close destroys the context and everything made from it.
	Close() error
}

// verbsImpls are the implementations the charging tests run. Another file
// may add one in an init function.
var verbsImpls = []verbsImpl{
	{name: "raw-write", open: func(dev string) (verbsContext, error) { return openRaw(dev) }},
}

func (c *rawContext) Kinds() []string { return []string{"PD"} }

func (c *rawContext) Create(kind string) (func() error, error) {
	if kind != "PD" {
		return nil, fmt.Errorf("raw context: cannot create %s", kind)
	}
	h, err := c.allocPD()
	if err != nil {
		return nil, err
	}
	return func() error { return c.deallocPD(h) }, nil
}

// usage returns rdma.current of rxe0 in c.
func usage(t *testing.T, c *cgroup.Cgroup) cgroup.Usage {
	t.Helper()
	u, err := c.DeviceUsage(labDevice())
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// forEachImpl runs fn as a subtest per implementation, in a fresh cgroup
// that the test process has entered.
func forEachImpl(t *testing.T, h *cgroup.Hierarchy, name string, fn func(t *testing.T, c *cgroup.Cgroup, v verbsImpl)) {
	for _, v := range verbsImpls {
		t.Run(v.name, func(t *testing.T) {
			c := cgrouptest.NewCgroup(t, h, name+"-"+v.name)
			cgrouptest.Enter(t, c)
			fn(t, c, v)
		})
	}
}

// testHCAHandle: with hca_handle=1 a second context fails with the typed
// error; closing the first gives the handle back.
func testHCAHandle(t *testing.T, h *cgroup.Hierarchy) {
	forEachImpl(t, h, "handle", func(t *testing.T, c *cgroup.Cgroup, v verbsImpl) {
		setLimit(t, c, cgroup.HCAHandle, 1)
		first, err := v.open(labDevice())
		if err != nil {
			t.Fatalf("first context: %v", err)
		}
		wantUsage(t, c, 1, usage(t, c).HCAObject)
		if !v.ioctlGetContext {
			_, err = v.open(labDevice())
			wantLimitError(t, err, cgroup.HCAHandle)
			if u := usage(t, c); u.HCAHandle != 1 {
				t.Fatalf("hca_handle usage after a refused context = %v, want 1", u.HCAHandle)
			}
		}
		if err := first.Close(); err != nil {
			t.Fatal(err)
		}
		wantUsage(t, c, 0, 0)
		again, err := v.open(labDevice())
		if err != nil {
			t.Fatalf("context after closing the first: %v", err)
		}
		if u := usage(t, c); u.HCAHandle != 1 {
			t.Fatalf("hca_handle usage = %v, want 1", u.HCAHandle)
		}
		again.Close()
		wantUsage(t, c, 0, 0)
	})
}

// testHCAObject: for every object kind, with hca_object=N (above what the
// open context already holds) the (N+1)th object fails with the typed error,
// rdma.current follows the objects held, destroying one makes room again,
// and closing the context uncharges everything.
func testHCAObject(t *testing.T, h *cgroup.Hierarchy) {
	const n = 3
	forEachImpl(t, h, "object", func(t *testing.T, c *cgroup.Cgroup, v verbsImpl) {
		probe, err := v.open(labDevice())
		if err != nil {
			t.Fatal(err)
		}
		kinds := probe.Kinds()
		probe.Close()
		for _, kind := range kinds {
			t.Run(kind, func(t *testing.T) {
				setLimit(t, c, cgroup.HCAObject, cgroup.Max)
				ctx, err := v.open(labDevice())
				if err != nil {
					t.Fatal(err)
				}
				defer ctx.Close()
				base := usage(t, c).HCAObject // parents made by open
				setLimit(t, c, cgroup.HCAObject, base+n)
				var destroy []func() error
				for i := range n {
					d, err := ctx.Create(kind)
					if err != nil {
						t.Fatalf("%s %d of %d: %v", kind, i+1, n, err)
					}
					destroy = append(destroy, d)
					wantUsage(t, c, 1, base+cgroup.Value(i+1))
				}
				_, err = ctx.Create(kind)
				wantLimitError(t, err, cgroup.HCAObject)
				wantUsage(t, c, 1, base+n)

				if err := destroy[0](); err != nil {
					t.Fatal(err)
				}
				wantUsage(t, c, 1, base+n-1)
				if _, err := ctx.Create(kind); err != nil {
					t.Fatalf("%s after destroying one: %v", kind, err)
				}
				wantUsage(t, c, 1, base+n)
				if err := ctx.Close(); err != nil {
					t.Fatal(err)
				}
				wantUsage(t, c, 0, 0)
			})
		}
	})
}

// testLowerBelowUsage: lowering a limit below the usage is accepted; the
// objects stay, only later charges fail.
func testLowerBelowUsage(t *testing.T, h *cgroup.Hierarchy) {
	forEachImpl(t, h, "lower", func(t *testing.T, c *cgroup.Cgroup, v verbsImpl) {
		ctx, err := v.open(labDevice())
		if err != nil {
			t.Fatal(err)
		}
		defer ctx.Close()
		kind := ctx.Kinds()[0]
		for range 3 {
			if _, err := ctx.Create(kind); err != nil {
				t.Fatal(err)
			}
		}
		held := usage(t, c)
		if held.HCAHandle != 1 || held.HCAObject < 3 {
			t.Fatalf("usage with 3 objects: %+v", held)
		}
		if err := c.SetLimit(labDevice(),
			cgroup.ResourceValue{Resource: cgroup.HCAHandle, Value: 0},
			cgroup.ResourceValue{Resource: cgroup.HCAObject, Value: 1}); err != nil {
			t.Fatalf("lowering below usage was refused: %v", err)
		}
		wantUsage(t, c, 1, held.HCAObject)
		_, err = ctx.Create(kind)
		wantLimitError(t, err, cgroup.HCAObject)
		if !v.ioctlGetContext {
			_, err = v.open(labDevice())
			wantLimitError(t, err, cgroup.HCAHandle)
		}
		ctx.Close()
		wantUsage(t, c, 0, 0)
	})
}

// testHierarchical: a parent's limit applies to its child, and the child's
// charges show in the parent's rdma.current.
func testHierarchical(t *testing.T, h *cgroup.Hierarchy) {
	for _, v := range verbsImpls {
		t.Run(v.name, func(t *testing.T) {
			c := cgrouptest.NewCgroup(t, h, "parent-"+v.name)
			child, err := h.Create(c.Path() + "/child")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := cgrouptest.Settle(child.Remove, unix.EBUSY); err != nil {
					t.Errorf("cleanup: %v", err)
				}
			})
			cgrouptest.Enter(t, child)
			ctx, err := v.open(labDevice())
			if err != nil {
				t.Fatal(err)
			}
			defer ctx.Close()
			base := usage(t, child).HCAObject
			setLimit(t, c, cgroup.HCAObject, base+1)
			kind := ctx.Kinds()[0]
			if _, err := ctx.Create(kind); err != nil {
				t.Fatal(err)
			}
			wantUsage(t, child, 1, base+1)
			wantUsage(t, c, 1, base+1)
			_, err = ctx.Create(kind)
			wantLimitError(t, err, cgroup.HCAObject)
			ctx.Close()
			wantUsage(t, c, 0, 0)
		})
	}
}

// runIn runs a command with the test process in c (the child inherits it).
func runIn(t *testing.T, c *cgroup.Cgroup, name string, args ...string) (string, error) {
	t.Helper()
	var out string
	var err error
	t.Run("in "+c.Path(), func(t *testing.T) {
		cgrouptest.Enter(t, c)
		var b []byte
		b, err = exec.Command(name, args...).CombinedOutput()
		out = string(b)
	})
	return out, err
}

// testDevinfo: rdma-core's ibv_devinfo needs one context, so it runs with
// hca_handle=1 and gives the handle back when it exits. (hca_handle=0 is
// TestLab/RefusedContext, which must come last.)
func testDevinfo(t *testing.T, h *cgroup.Hierarchy) {
	c := cgrouptest.NewCgroup(t, h, "devinfo")
	setLimit(t, c, cgroup.HCAHandle, 1)
	if out, err := runIn(t, c, "ibv_devinfo", "-d", labDevice()); err != nil || !strings.Contains(out, "hca_id:\t"+labDevice()) {
		t.Fatalf("ibv_devinfo with hca_handle=1: %v\n%s", err, out)
	}
	wantUsage(t, c, 0, 0)
}

// testRefusedContext checks that hca_handle=0 stops rdma-core's ibv_devinfo,
// which opens a context through the ioctl GET_CONTEXT method.
//
// It runs last, on cgroup v2, because Linux 6.1 leaks a task reference when
// that method fails: its error path frees the new ucontext without dropping
// the restrack task reference taken by ib_alloc_ucontext (the write()
// GET_CONTEXT path does drop it). The leaked task pins its css_set, so the
// cgroup it ran in stays as a dying cgroup forever and the RDMA controller
// can no longer move between v1 and v2 in this boot.
func testRefusedContext(t *testing.T) {
	h := cgrouptest.UseV2(t)
	c := cgrouptest.NewCgroup(t, h, "refused")
	setLimit(t, c, cgroup.HCAHandle, 0)
	out, err := runIn(t, c, "ibv_devinfo", "-d", labDevice())
	if err == nil || !strings.Contains(out, "Failed to open device") {
		t.Fatalf("ibv_devinfo with hca_handle=0: %v, want \"Failed to open device\"; output:\n%s", err, out)
	}
	wantUsage(t, c, 0, 0)
	setLimit(t, c, cgroup.HCAHandle, cgroup.Max)
	if out, err := runIn(t, c, "ibv_devinfo", "-d", labDevice()); err != nil {
		t.Fatalf("ibv_devinfo after unset: %v\n%s", err, out)
	}

	// Implementations that use the ioctl method get the typed error too.
	for _, v := range verbsImpls {
		if !v.ioctlGetContext {
			continue
		}
		t.Run(v.name, func(t *testing.T) {
			setLimit(t, c, cgroup.HCAHandle, 0)
			cgrouptest.Enter(t, c)
			_, err := v.open(labDevice())
			wantLimitError(t, err, cgroup.HCAHandle)
			wantUsage(t, c, 0, 0)
		})
	}
}

// pingpongSteps are what ibv_rc_pingpong allocates, in order, each charging
// one hca_object (its completion channel, used only with -e, is an FD object
// and charges nothing), with the message it prints when that step fails.
var pingpongSteps = []string{"Couldn't allocate PD", "Couldn't register MR", "Couldn't create CQ", "Couldn't create QP"}

// testPingpong: with hca_object=k the server fails exactly at its (k+1)th
// object; with len(pingpongSteps) it gets to wait for a client, holding one
// context and that many objects, which rdma.current shows and which are
// uncharged when it exits.
func testPingpong(t *testing.T, h *cgroup.Hierarchy) {
	c := cgrouptest.NewCgroup(t, h, "pingpong")
	for k, msg := range pingpongSteps {
		setLimit(t, c, cgroup.HCAObject, cgroup.Value(k))
		out, err := runIn(t, c, "ibv_rc_pingpong", "-d", labDevice(), "-p", "18515")
		if err == nil || !strings.Contains(out, msg) {
			t.Errorf("ibv_rc_pingpong with hca_object=%d: %v, want failure %q; output:\n%s", k, err, msg, out)
		}
		wantUsage(t, c, 0, 0)
	}

	setLimit(t, c, cgroup.HCAObject, cgroup.Value(len(pingpongSteps)))
	t.Run("server holds objects", func(t *testing.T) {
		cgrouptest.Enter(t, c)
		// stdbuf: the line must reach the pipe while the server waits.
		cmd := exec.Command("stdbuf", "-oL", "ibv_rc_pingpong", "-d", labDevice(), "-p", "18516")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = cmd.Stdout
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The server prints its local address after creating everything,
		// then blocks waiting for a client.
		sc := bufio.NewScanner(stdout)
		var seen []string
		for sc.Scan() && !strings.Contains(sc.Text(), "local address") {
			seen = append(seen, sc.Text())
		}
		if !strings.Contains(sc.Text(), "local address") {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("ibv_rc_pingpong did not get to waiting for a client:\n%s", strings.Join(seen, "\n"))
		}
		wantUsage(t, c, 1, cgroup.Value(len(pingpongSteps)))
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		// The uverbs file is closed before the exit status is reported.
		wantUsage(t, c, 0, 0)
	})
}
