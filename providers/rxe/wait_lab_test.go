package rxe_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/goverbs/goverbs/netlinkrdma"
	"github.com/goverbs/goverbs/test/labtest"
	"github.com/goverbs/goverbs/uverbs"
	"github.com/goverbs/goverbs/verbs"
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

func newEventPair(t *testing.T, mode uverbs.WaitMode) *eventPair {
	e := newLab(t)
	ch, err := e.ctx.CreateCompChannel(&uverbs.CompChannelOptions{Wait: mode})
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

// event makes one event, waits for it with ctx and drains it.
func (ep *eventPair) event(t testing.TB, ctx context.Context, what string) {
	ep.fire(t)
	cq, err := ep.ch.GetEvent(ctx)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	ep.drain(t, cq)
}

// waitModes are the places a channel's waiter can sleep.
var waitModes = []uverbs.WaitMode{uverbs.WaitPoller, uverbs.WaitEpoll, uverbs.WaitRead}

// bothWaits runs f with a channel of each wait mode.
func bothWaits(t *testing.T, f func(t *testing.T, ep *eventPair)) {
	for _, mode := range waitModes {
		t.Run(mode.String(), func(t *testing.T) { f(t, newEventPair(t, mode)) })
	}
}

// waiting starts a GetEvent and returns its result once it has had time to sleep (either order must work).
func waiting(ep *eventPair, ctx context.Context) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := ep.ch.GetEvent(ctx)
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	return done
}

func ended(t *testing.T, done <-chan error, by string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not end a waiting GetEvent in 30 s", by)
		return nil
	}
}

// GetEvent, the one way to wait, in both places a channel can sleep, against rxe's real events: the event
// comes; a Wake before or during the wait ends it with ErrWoken (Wakes before a wait count once); the deadline
// ends it, a past one at once; a context ends it and leaves nothing behind; waiting allocates nothing.
func TestLabGetEvent(t *testing.T) {
	bothWaits(t, func(t *testing.T, ep *eventPair) {
		bg := context.Background()
		ep.event(t, bg, "the first event")

		check(t, ep.ch.Wake())
		check(t, ep.ch.Wake())
		if _, err := ep.ch.GetEvent(bg); !errors.Is(err, uverbs.ErrWoken) {
			t.Fatalf("GetEvent after Wake: %v, want ErrWoken", err)
		}
		// start is read before the deadline is computed from it: the wait ends at or after start+100ms.
		start := time.Now()
		check(t, ep.ch.SetDeadline(start.Add(100*time.Millisecond)))
		if _, err := ep.ch.GetEvent(bg); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("GetEvent with nothing to come: %v, want os.ErrDeadlineExceeded", err)
		}
		if d := time.Since(start); d < 100*time.Millisecond {
			t.Fatalf("the deadline ended the wait after %v, before it passed", d)
		}
		check(t, ep.ch.SetDeadline(time.Time{}))

		done := waiting(ep, bg)
		check(t, ep.ch.Wake())
		if err := ended(t, done, "Wake"); !errors.Is(err, uverbs.ErrWoken) {
			t.Fatalf("GetEvent woken while waiting: %v, want ErrWoken", err)
		}
		done = waiting(ep, bg)
		check(t, ep.ch.SetDeadline(time.Unix(1, 0)))
		if err := ended(t, done, "a past deadline"); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("GetEvent whose deadline moved into the past: %v, want os.ErrDeadlineExceeded", err)
		}
		check(t, ep.ch.SetDeadline(time.Time{}))
		ctx, cancel := context.WithCancel(bg)
		done = waiting(ep, ctx)
		cancel()
		if err := ended(t, done, "a cancelled context"); !errors.Is(err, context.Canceled) {
			t.Fatalf("GetEvent whose context was cancelled: %v, want context.Canceled", err)
		}

		// The event still comes after all that, with a context too, and waiting allocates nothing.
		wctx, wcancel := context.WithTimeout(bg, 30*time.Second)
		defer wcancel()
		ep.event(t, wctx, "event with a live context")
		if a := testing.AllocsPerRun(20, func() { ep.event(t, bg, "event") }); a != 0 {
			t.Errorf("arm, send, GetEvent, ack, poll: %v allocations per round", a)
		}
	})
}

// Close ends a waiting GetEvent with ErrClosed in every mode, once the CQs are gone (before, it is EBUSY and
// the wait goes on).
func TestLabCompChannelCloseWakes(t *testing.T) {
	for _, mode := range waitModes {
		t.Run(fmt.Sprint("wait=", mode), func(t *testing.T) {
			e := newLab(t)
			ch, err := e.ctx.CreateCompChannel(&uverbs.CompChannelOptions{Wait: mode})
			if err != nil {
				t.Fatal(err)
			}
			cq := e.cq(t, 4, ch)
			done := make(chan error, 1)
			go func() {
				_, err := ch.GetEvent(context.Background())
				done <- err
			}()
			time.Sleep(50 * time.Millisecond)
			if err := ch.Close(); !errors.Is(err, unix.EBUSY) {
				t.Fatalf("Close with a CQ on the channel: %v, want EBUSY", err)
			}
			select {
			case err := <-done:
				t.Fatalf("a refused Close ended the wait: %v", err)
			case <-time.After(50 * time.Millisecond):
			}
			check(t, cq.Close())
			check(t, ch.Close())
			select {
			case err := <-done:
				if !errors.Is(err, uverbs.ErrClosed) {
					t.Fatalf("GetEvent ended by Close: %v, want ErrClosed", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("Close did not end a waiting GetEvent in 30 s")
			}
			if err := ch.Wake(); !errors.Is(err, uverbs.ErrClosed) {
				t.Fatalf("Wake after Close: %v, want ErrClosed", err)
			}
		})
	}
}

// kickerQPs are the RC QPs in ERR on the lab device: a WaitRead channel's kicker leaves one after each wake-up
// of a waiter asleep in read(2) (uverbs' kicker), and no other QP of this test is in ERR. (Not filtered by
// PID: the kernel records the thread that made the QP, and a goroutine runs on any of the process's threads.)
func kickerQPs(t *testing.T) int {
	t.Helper()
	c, err := netlinkrdma.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	d, err := c.Device(labtest.Device())
	if err != nil {
		t.Fatal(err)
	}
	qps, err := c.QPs(netlinkrdma.ResQuery{DevIndex: d.Index})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, q := range qps {
		if q.Type == verbs.QPTypeRC && q.State == verbs.QPStateErr {
			n++
		}
	}
	return n
}

// A WaitRead wait with no deadline and context.Background sleeps in one read(2) of the channel, which only
// an event ends: Wake, SetDeadline and Close end it with a completion of the channel's own kicker (a QP whose
// posted receive rxe flushes when it moves to ERR). The kicker is made at the first such wake-up (not before:
// a waiter nobody wakes costs no object), its QP is replaced at every later one, its events are never
// returned, real events still come between the wake-ups, and Close destroys all of it.
func TestLabCompChannelKick(t *testing.T) {
	ep := newEventPair(t, uverbs.WaitRead)
	bg := context.Background()
	ep.event(t, bg, "the first event")
	if n := kickerQPs(t); n != 0 {
		t.Fatalf("%d kicker QPs before any wake-up, want 0", n)
	}
	for i := 0; i < 20; i++ {
		done := waiting(ep, bg)
		check(t, ep.ch.Wake())
		if err := ended(t, done, fmt.Sprint("Wake ", i)); !errors.Is(err, uverbs.ErrWoken) {
			t.Fatalf("wake-up %d: GetEvent returned %v, want ErrWoken", i, err)
		}
		if n := kickerQPs(t); n != 1 {
			t.Fatalf("after wake-up %d: %d kicker QPs (RC, in ERR), want 1", i, n)
		}
		if i%5 == 4 { // a real event between the wake-ups
			ep.event(t, bg, fmt.Sprint("event after wake-up ", i))
		}
	}
	// A deadline set while a read sleeps moves the wait to epoll_pwait2, where it ends.
	done := waiting(ep, bg)
	check(t, ep.ch.SetDeadline(time.Now().Add(100*time.Millisecond)))
	if err := ended(t, done, "a deadline set while asleep in read"); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("GetEvent given a deadline while asleep: %v, want os.ErrDeadlineExceeded", err)
	}
	check(t, ep.ch.SetDeadline(time.Time{}))
	ep.event(t, bg, "event after the deadline was removed")

	// Close ends a sleeping read and takes the kicker's objects with it.
	done = waiting(ep, bg)
	check(t, ep.p.a.Close())
	check(t, ep.p.b.Close())
	check(t, ep.p.cqA.Close())
	check(t, ep.p.cqB.Close())
	check(t, ep.ch.Close())
	if err := ended(t, done, "Close"); !errors.Is(err, uverbs.ErrClosed) {
		t.Fatalf("GetEvent ended by Close: %v, want ErrClosed", err)
	}
	if n := kickerQPs(t); n != 0 {
		t.Fatalf("%d kicker QPs after Close, want 0", n)
	}
}
