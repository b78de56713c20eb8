package cgroup

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func TestChargeError(t *testing.T) {
	// As the uverbs package sees it: an errno wrapped with context.
	kernel := fmt.Errorf("create CQ on rxe0: %w", unix.EAGAIN)
	err := ChargeError(kernel, "rxe0", HCAObject)
	if !errors.Is(err, ErrLimitReached) || !errors.Is(err, unix.EAGAIN) {
		t.Fatalf("errors.Is fails for %v", err)
	}
	var le *LimitError
	if !errors.As(err, &le) || le.Device != "rxe0" || le.Resource != HCAObject || le.Err != kernel {
		t.Fatalf("errors.As = %+v", le)
	}
	if want := "rdma cgroup limit reached: hca_object on rxe0: create CQ on rxe0: resource temporarily unavailable"; err.Error() != want {
		t.Fatalf("Error() = %q, want %q", err, want)
	}
	// Wrapping it again keeps both matches.
	outer := fmt.Errorf("pingpong: %w", err)
	if !errors.Is(outer, ErrLimitReached) || !errors.Is(outer, unix.EAGAIN) || !errors.As(outer, &le) {
		t.Fatalf("wrapped: %v", outer)
	}

	for _, other := range []error{nil, unix.ENOMEM, fmt.Errorf("x: %w", unix.EINVAL), os.ErrNotExist} {
		if got := ChargeError(other, "rxe0", HCAHandle); got != other {
			t.Errorf("ChargeError(%v) = %v, want it unchanged", other, got)
		}
		if errors.Is(ChargeError(other, "rxe0", HCAHandle), ErrLimitReached) {
			t.Errorf("ChargeError(%v) matches ErrLimitReached", other)
		}
	}
	// A LimitError literal built by hand (as the brief's uverbs code may do)
	// behaves the same.
	lit := &LimitError{Device: "mlx5_0", Resource: "hca_handle", Err: unix.EAGAIN}
	if !errors.Is(lit, ErrLimitReached) || !errors.Is(lit, unix.EAGAIN) || errors.Is(lit, unix.ENODEV) {
		t.Fatalf("literal LimitError matching is wrong")
	}
}

func TestErrorMessage(t *testing.T) {
	e := &Error{Op: "set limit in", Cgroup: "/a", Device: "rxe9", Err: &os.PathError{Op: "write", Path: "/sys/fs/cgroup/a/rdma.max", Err: unix.ENODEV}}
	if want := "cgroup: set limit in /a for rxe9: write /sys/fs/cgroup/a/rdma.max: no such device"; e.Error() != want {
		t.Fatalf("Error() = %q, want %q", e, want)
	}
	if !errors.Is(e, unix.ENODEV) {
		t.Fatal("errors.Is(ENODEV) fails")
	}
}
