package rxe_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

// eventPair is an RC pair whose B side's CQ reports to ch, and a way to make one completion event there.
type eventPair struct {
	e    *labEnv
	ch   *uverbs.CompChannel
	p    rcPair
	recv []uverbs.RecvWR
	send []uverbs.SendWR
	wc   []uverbs.WC
}

func newEventPair(t *testing.T) *eventPair {
	e := newLab(t)
	ch, err := e.ctx.CreateCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { check(t, ch.Close()) })
	return &eventPair{e: e, ch: ch, p: e.rcPair(t, labCap, ch),
		recv: []uverbs.RecvWR{{WRID: 1, SGL: []uverbs.SGE{e.mr.SGE(0, 64)}}},
		send: []uverbs.SendWR{{WRID: 1, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled, SGL: []uverbs.SGE{e.mr.SGE(64, 64)}}},
		wc:   make([]uverbs.WC, 2)}
}

// fire arms B's CQ and sends it one message: its receive completion raises one event.
func (ep *eventPair) fire(t testing.TB) {
	if err := ep.p.cqB.ReqNotify(false); err != nil {
		t.Fatal(err)
	}
	if _, err := ep.p.b.PostRecv(ep.recv); err != nil {
		t.Fatal(err)
	}
	if _, err := ep.p.a.PostSend(ep.send); err != nil {
		t.Fatal(err)
	}
}

// drain acknowledges an event of B's CQ and polls both completions.
func (ep *eventPair) drain(t testing.TB, cq *uverbs.CQ) {
	if cq != ep.p.cqB {
		t.Fatalf("event for CQ %#x, want %#x", cq.Handle(), ep.p.cqB.Handle())
	}
	cq.AckEvents(1)
	for got := 0; got < 1; {
		got += mustPoll(t, ep.p.cqB, ep.wc)
	}
	for got := 0; got < 1; {
		got += mustPoll(t, ep.p.cqA, ep.wc)
	}
}

// WaitEvent waits in the kernel (ppoll on the channel and the Wakeup's eventfd): the event comes, a Wake before
// or during the wait ends it with ErrWoken (and is consumed), the deadline ends it, and channels in the other
// waiting modes are refused.
func TestLabWaitEvent(t *testing.T) {
	ep := newEventPair(t)
	w, err := uverbs.NewWakeup()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	long := time.Now().Add(30 * time.Second)

	ep.fire(t)
	cq, err := ep.ch.WaitEvent(long, w)
	if err != nil {
		t.Fatal(err)
	}
	ep.drain(t, cq)

	// A wake before the wait is not lost; it is consumed, so the next wait reaches its deadline.
	if err := w.Wake(); err != nil {
		t.Fatal(err)
	}
	if err := w.Wake(); err != nil {
		t.Fatal(err)
	}
	if _, err := ep.ch.WaitEvent(long, w); !errors.Is(err, uverbs.ErrWoken) {
		t.Fatalf("WaitEvent after Wake: %v, want ErrWoken", err)
	}
	start := time.Now()
	if _, err := ep.ch.WaitEvent(time.Now().Add(100*time.Millisecond), w); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("WaitEvent with nothing to come: %v, want os.ErrDeadlineExceeded", err)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("the deadline ended the wait after %v, before it passed", d)
	}
	if _, err := ep.ch.WaitEvent(time.Now().Add(-time.Second), w); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("WaitEvent with a past deadline: %v, want os.ErrDeadlineExceeded", err)
	}

	// A wake during the wait.
	done := make(chan error, 1)
	go func() {
		_, err := ep.ch.WaitEvent(time.Time{}, w)
		done <- err
	}()
	time.Sleep(50 * time.Millisecond) // let it block (either order must work: the eventfd keeps the wake)
	if err := w.Wake(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, uverbs.ErrWoken) {
			t.Fatalf("WaitEvent woken while waiting: %v, want ErrWoken", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Wake did not end a waiting WaitEvent in 30 s")
	}

	// The event still comes after all that, and waiting allocates nothing.
	if a := testing.AllocsPerRun(20, func() {
		ep.fire(t)
		cq, err := ep.ch.WaitEvent(time.Time{}, w)
		if err != nil {
			t.Fatal(err)
		}
		ep.drain(t, cq)
	}); a != 0 {
		t.Errorf("arm, send, WaitEvent, ack, poll: %v allocations per round", a)
	}

	closed, err := uverbs.NewWakeup()
	if err != nil {
		t.Fatal(err)
	}
	check(t, closed.Close())
	check(t, closed.Close())
	if err := closed.Wake(); !errors.Is(err, uverbs.ErrClosed) {
		t.Fatalf("Wake after Close: %v, want ErrClosed", err)
	}
	if _, err := ep.ch.WaitEvent(long, closed); !errors.Is(err, uverbs.ErrClosed) {
		t.Fatalf("WaitEvent with a closed Wakeup: %v, want ErrClosed", err)
	}

	inKernel, err := ep.e.ctx.CreateCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer inKernel.Close()
	check(t, inKernel.SetWaitInKernel(true))
	if _, err := inKernel.WaitEvent(long, w); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("WaitEvent on a channel that waits in read(2): %v, want EINVAL", err)
	}
	polled, err := ep.e.ctx.CreateCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer polled.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := polled.GetEvent(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("GetEvent on an idle channel: %v, want context.DeadlineExceeded", err)
	}
	if _, err := polled.WaitEvent(long, w); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("WaitEvent on a channel registered with Go's poller: %v, want EINVAL", err)
	}
}

// SetDeadline bounds GetEvent on Go's poller without a context: a deadline ends a wait, one in the past wakes a
// waiting GetEvent at once, the zero time removes it; a channel waiting in the kernel refuses deadlines.
func TestLabCompChannelDeadline(t *testing.T) {
	ep := newEventPair(t)
	bg := context.Background()
	// start is read before the deadline is computed from it: the wait ends at or after start+100ms, where a start
	// read after SetDeadline could be later than the deadline's base and make a correct wait look early.
	start := time.Now()
	check(t, ep.ch.SetDeadline(start.Add(100*time.Millisecond)))
	if _, err := ep.ch.GetEvent(bg); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("GetEvent past its deadline: %v, want os.ErrDeadlineExceeded", err)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("the deadline ended the wait after %v, before it passed", d)
	}
	check(t, ep.ch.SetDeadline(time.Time{}))
	done := make(chan error, 1)
	go func() {
		_, err := ep.ch.GetEvent(bg)
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	check(t, ep.ch.SetDeadline(time.Unix(1, 0)))
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("GetEvent woken by a past deadline: %v, want os.ErrDeadlineExceeded", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a past deadline did not end a waiting GetEvent in 30 s")
	}
	check(t, ep.ch.SetDeadline(time.Time{}))
	ep.fire(t)
	cq, err := ep.ch.GetEvent(bg)
	if err != nil {
		t.Fatal(err)
	}
	ep.drain(t, cq)

	inKernel, err := ep.e.ctx.CreateCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer inKernel.Close()
	check(t, inKernel.SetWaitInKernel(true))
	if err := inKernel.SetDeadline(time.Now()); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("SetDeadline on a channel that waits in read(2): %v, want EINVAL", err)
	}
}
