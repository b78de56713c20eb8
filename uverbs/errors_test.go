package uverbs

import (
	"errors"
	"testing"

	"github.com/goverbs/goverbs/internal/provider"
	"golang.org/x/sys/unix"
)

func TestDataPathErrors(t *testing.T) {
	tab := newDataPathErrors("rxe0")
	for _, tc := range []struct {
		op    dataPathOp
		st    provider.Status
		text  string
		match error
	}{
		{opPostSend, provider.NotReady, "post send on rxe0: QP state does not allow posting: invalid argument", unix.EINVAL},
		{opPostRecv, provider.QueueFull, "post receive on rxe0: queue full: cannot allocate memory", unix.ENOMEM},
		{opPostSend, provider.Destroyed, "post send on rxe0: queue destroyed: object is closed", ErrClosed},
		{opPollCQ, provider.UnknownCQE, "poll CQ on rxe0: completion for a queue the provider does not know: input/output error", unix.EIO},
		{opPostSend, provider.OpcodeNotSupported, "post send on rxe0: opcode not supported by the provider: operation not supported", ErrNotSupported},
		{opPostSend, provider.DoorbellFailed(unix.EPERM), "post send on rxe0: doorbell failed: operation not permitted", unix.EPERM},
	} {
		err := tab.get(tc.op, tc.st)
		if err.Error() != tc.text {
			t.Errorf("%v: %q, want %q", tc.st, err, tc.text)
		}
		if !errors.Is(err, tc.match) {
			t.Errorf("%q does not match %v", err, tc.match)
		}
		var e *Error
		if !errors.As(err, &e) || e.Device != "rxe0" {
			t.Errorf("%q is not an *Error naming the device", err)
		}
	}
	if !errors.Is(tab.get(opPostSend, provider.OpcodeNotSupported), errors.ErrUnsupported) {
		t.Error("not-supported opcode does not match errors.ErrUnsupported")
	}
	if n := testing.AllocsPerRun(100, func() { _ = tab.get(opPostSend, provider.QueueFull) }); n != 0 {
		t.Errorf("a data-path error allocates %v times", n)
	}
	// Every provider status has a row with a reason and an errno.
	for st := provider.NotReady; int(st) < provider.NumStatus; st++ {
		if info := provider.Statuses[st]; info.Reason == "" || (st != provider.Doorbell && info.Errno == 0) {
			t.Errorf("status %d has no row: %+v", st, info)
		}
	}
}
