package ioctl

import (
	"errors"
	"os"
	"testing"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
	"golang.org/x/sys/unix"
)

func TestIoctlNumberMatchesABI(t *testing.T) {
	if rdmaVerbsIoctl != abi.RDMA_VERBS_IOCTL {
		t.Fatalf("RDMA_VERBS_IOCTL: want %#x (generated), got %#x", abi.RDMA_VERBS_IOCTL, rdmaVerbsIoctl)
	}
}

// On a file that is not a uverbs device the kernel answers ENOTTY: the errno comes back unchanged and
// errors.Is works on it.
func TestIoctlErrno(t *testing.T) {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hdr := new(abi.IbUverbsIoctlHdr)
	hdr.Length = abi.SizeofIbUverbsIoctlHdr
	err = Ioctl(int(f.Fd()), unsafe.Pointer(hdr))
	if !errors.Is(err, unix.ENOTTY) {
		t.Fatalf("ioctl on /dev/null: want ENOTTY, got %v", err)
	}
}

func TestIoctlAllocatesNothing(t *testing.T) {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := int(f.Fd())
	hdr := new(abi.IbUverbsIoctlHdr)
	if n := testing.AllocsPerRun(100, func() { _ = Ioctl(fd, unsafe.Pointer(hdr)) }); n != 0 {
		t.Fatalf("Ioctl allocates %v times per call, want 0", n)
	}
}

// TestWrite checks Write and WriteRaw on a pipe: the bytes arrive, no allocation per call, EBADF on fd -1.
func TestWrite(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(fd int, buf unsafe.Pointer, n int) error
	}{{"Write", Write}, {"WriteRaw", WriteRaw}} {
		t.Run(tc.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			defer w.Close()
			buf := new([32]byte)
			for i := range buf {
				buf[i] = byte(i)
			}
			if err := tc.write(int(w.Fd()), unsafe.Pointer(buf), len(buf)); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, 32)
			if _, err := r.Read(got); err != nil {
				t.Fatal(err)
			}
			if string(got) != string(buf[:]) {
				t.Fatalf("pipe got %x", got)
			}
			if n := testing.AllocsPerRun(100, func() {
				_ = tc.write(int(w.Fd()), unsafe.Pointer(buf), len(buf))
				r.Read(got)
			}); n != 0 {
				t.Fatalf("%s allocates %v times per call, want 0", tc.name, n)
			}
			if err := tc.write(-1, unsafe.Pointer(buf), len(buf)); !errors.Is(err, unix.EBADF) {
				t.Fatalf("write to fd -1: want EBADF, got %v", err)
			}
		})
	}
}
