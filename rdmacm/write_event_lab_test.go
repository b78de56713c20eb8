package rdmacm_test

import (
	"errors"
	"testing"

	"github.com/goverbs/goverbs/rdmacm"
	"github.com/goverbs/goverbs/test/labtest"
	"golang.org/x/sys/unix"
)

// rdma_write_cm_event: on a kernel with WRITE_CM_EVENT (7.3.4) the events written on two ids arrive from
// GetEvent in order, each for its id with its status and argument; on 6.1 and 6.12 the kernel does not know
// the command, and WriteCMEvent says so with ErrNotSupported. Any other event type is refused before the
// kernel, as librdmacm refuses it.
func TestLabWriteCMEvent(t *testing.T) {
	labtest.Require(t)
	ctx := testCtx(t)
	id := newRCID(t)
	ch := id.Channel()
	other, err := ch.CreateID(rdmacm.PortSpaceUDP, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := id.WriteCMEvent(rdmacm.EventEstablished, 0, 1); !errors.Is(err, unix.EINVAL) || errors.Is(err, rdmacm.ErrNotSupported) {
		t.Errorf("writing ESTABLISHED: %v, want EINVAL", err)
	}
	err = id.WriteCMEvent(rdmacm.EventUser, -5, 0x0123456789abcdef)
	if !labtest.Kernel().AtLeast(6, 13) { // the lab's 6.1 and 6.12; its 7.3.4 has the command
		if !errors.Is(err, rdmacm.ErrNotSupported) || !errors.Is(err, unix.EINVAL) {
			t.Fatalf("write cm event on %v: %v, want ErrNotSupported", labtest.Kernel(), err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := other.WriteCMEvent(rdmacm.EventUser, 0, 42); err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		id     *rdmacm.ID
		status int32
		arg    uint64
	}{{id, -5, 0x0123456789abcdef}, {other, 0, 42}} {
		ev := nextEvent(t, ctx, ch, rdmacm.EventUser)
		if ev.ID != want.id || ev.Status != want.status || ev.Arg != want.arg {
			t.Errorf("event for id %d status %d arg %#x, want id %d status %d arg %#x", ev.ID.Num(), ev.Status, ev.Arg,
				want.id.Num(), want.status, want.arg)
		}
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if err := other.WriteCMEvent(rdmacm.EventUser, 0, 1); !errors.Is(err, rdmacm.ErrClosed) {
		t.Errorf("write on a closed id: %v, want ErrClosed", err)
	}
}
