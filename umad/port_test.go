package umad

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fakePort is a Port over one end of a SOCK_SEQPACKET pair (which keeps
// message boundaries like a umad device); the test plays the kernel on the
// other end.
func fakePort(t *testing.T) (*Port, int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fds[0]), "fake-umad")
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[1]) })
	return &Port{dev: Device{Name: "umad9"}, f: f, rc: rc, regs: map[uint32]bool{}}, fds[1]
}

func TestRecvDeadlineCancelClose(t *testing.T) {
	p, _ := fakePort(t)
	defer p.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := p.Recv(ctx)
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("deadline took %v", d)
	}

	ctx2, cancel2 := context.WithCancel(context.Background())
	go func() { time.Sleep(30 * time.Millisecond); cancel2() }()
	if _, err := p.Recv(ctx2); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancel: %v", err)
	}

	// A Recv with no deadline after a cancelled one must block again (the
	// deadline was reset), until Close wakes it.
	done := make(chan error, 1)
	go func() { _, err := p.Recv(context.Background()); done <- err }()
	select {
	case err := <-done:
		t.Fatalf("Recv returned early: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	p.Close()
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("after Close: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not wake Recv")
	}
}

func TestCallMatchesTIDAndStatus(t *testing.T) {
	p, peer := fakePort(t)
	defer p.Close()
	a := Agent{ID: 4, Class: ClassPMA}
	go func() {
		buf := make([]byte, 1024)
		for i := 0; ; {
			n, err := unix.Read(peer, buf)
			if err == unix.EAGAIN {
				time.Sleep(time.Millisecond)
				continue
			}
			if err != nil || n == 0 {
				return
			}
			req := append([]byte(nil), buf[HdrSize:n]...)
			rh, _ := ParseMADHdr(req)
			// First an unrelated reply (other TID), then the answer; the
			// second request gets a kernel timeout report.
			other := append([]byte(nil), req...)
			oh := rh
			oh.TID += 100
			oh.Put(other)
			h := Hdr{AgentID: 4}
			unix.Write(peer, append(h.Marshal(), other...))
			if i == 0 {
				rh.Method = MethodGetResp
				resp := append([]byte(nil), req...)
				rh.Put(resp)
				(&PortCounters{PortSelect: 1, LinkDownedCounter: 7}).Put(resp)
				unix.Write(peer, append(h.Marshal(), resp...))
			} else {
				h.Status = uint32(unix.ETIMEDOUT)
				unix.Write(peer, append(h.Marshal(), req[:MADHdrSize]...))
			}
			i++
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := p.Call(ctx, a, Addr{QPN: 1, QKey: QP1QKey}, NewPMAGet(0, AttrPortCounters, 1), time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParsePortCounters(resp)
	if err != nil || c.LinkDownedCounter != 7 {
		t.Fatalf("%+v %v", c, err)
	}
	_, err = p.Call(ctx, a, Addr{QPN: 1, QKey: QP1QKey}, NewPMAGet(0, AttrPortCounters, 1), time.Second, 0)
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, unix.ETIMEDOUT) {
		t.Fatalf("kernel timeout: %v", err)
	}
}

func TestSysfs(t *testing.T) {
	dir := t.TempDir()
	w := func(p, s string) {
		p = filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := Root{Sys: filepath.Join(dir, "sys"), Dev: filepath.Join(dir, "dev")}
	if _, err := r.ABIVersion(); !errors.Is(err, ErrNoDevice) || !errors.Is(err, unix.ENOENT) {
		t.Fatalf("no class: %v", err)
	}
	if _, err := r.Open("rxe0", 1); !errors.Is(err, ErrNoDevice) {
		t.Fatalf("Open without class: %v", err)
	}
	w("sys/class/infiniband_mad/abi_version", "5\n")
	w("sys/class/infiniband_mad/umad10/ibdev", "mlx5_1\n")
	w("sys/class/infiniband_mad/umad10/port", "1\n")
	w("sys/class/infiniband_mad/umad2/ibdev", "rxe0\n")
	w("sys/class/infiniband_mad/umad2/port", "1\n")
	w("dev/infiniband/issm2", "")
	if v, err := r.ABIVersion(); err != nil || v != 5 {
		t.Fatalf("abi %d %v", v, err)
	}
	devs, err := r.Devices()
	if err != nil || len(devs) != 2 || devs[0].Name != "umad2" || devs[1].Index != 10 || !devs[0].IssmOK || devs[1].IssmOK {
		t.Fatalf("%+v %v", devs, err)
	}
	d, err := r.Lookup("rxe0", 1)
	if err != nil || d.Path != filepath.Join(dir, "dev/infiniband/umad2") {
		t.Fatalf("%+v %v", d, err)
	}
	if _, err := r.Lookup("rxe0", 2); !errors.Is(err, ErrNoDevice) {
		t.Fatalf("missing port: %v", err)
	}
	// The device node is missing: ENOENT, ErrNoDevice.
	if _, err := r.Open("rxe0", 1); !errors.Is(err, ErrNoDevice) || !errors.Is(err, unix.ENOENT) {
		t.Fatalf("Open without node: %v", err)
	}
	// A regular file is no umad device: ENABLE_PKEY fails with ENOTTY.
	w("dev/infiniband/umad2", "")
	if _, err := r.Open("rxe0", 1); !errors.Is(err, ErrABI) || !errors.Is(err, unix.ENOTTY) {
		t.Fatalf("Open of a plain file: %v", err)
	}
	w("sys/class/infiniband_mad/abi_version", "4\n")
	if _, err := r.Open("rxe0", 1); !errors.Is(err, ErrABI) {
		t.Fatalf("ABI 4: %v", err)
	}
}
