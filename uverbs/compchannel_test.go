package uverbs

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// waitMode is where a test channel's waits sleep.
type waitMode int

const (
	modePoller waitMode = iota // Go's runtime poller
	modeEpoll                  // WaitInKernel without a kicker: every wait in epoll_pwait2
	modeRead                   // WaitInKernel with a kicker: a wait with no deadline or context in read(2)
)

// testKick is the user handle of a test channel's kicker CQ: its record is what a kick posts.
const testKick = 1 << 40

// testChannel is a CompChannel whose "channel" is an eventfd: a write of n to it is an event record (the
// eventfd's read returns its 8-byte counter), so the waiting logic runs on the host without a device. In
// modeRead a kick posts the record testKick, as the kicker's CQ raises an event on a real channel.
func testChannel(t *testing.T, mode waitMode) (ch *CompChannel, post func(uint64)) {
	t.Helper()
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	ch = &CompChannel{ctx: &Context{dev: Device{Name: "test0"}}, fd: fd, kernel: mode != modePoller, wfd: -1, epfd: -1}
	if ch.kernel {
		if ch.wfd, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
			t.Fatal(err)
		}
		if mode != modeRead { // a WaitRead channel makes its epoll set at its first epoll wait
			if err := ch.initEpoll(); err != nil {
				t.Fatal(err)
			}
		}
	} else {
		ch.f = os.NewFile(uintptr(fd), "test-comp-channel")
	}
	ch.ctx.objects = 1
	t.Cleanup(func() {
		if err := ch.Close(); err != nil {
			t.Error(err)
		}
	})
	rec := new([8]byte) // made once: the allocation tests count the waits, not the posts
	post = func(n uint64) {
		binary.NativeEndian.PutUint64(rec[:], n)
		if _, _, e := syscall.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(rec)), 8); e != 0 {
			t.Error(e)
		}
	}
	if mode == modeRead {
		ch.kickCQ.Store(&CQ{uhandle: testKick})
		ch.kick = func() error { post(testKick); return nil }
	}
	return ch, post
}

// wait is GetEvent without the CQ lookup: the record read, or the wait's error.
func (ch *CompChannel) testWait(ctx context.Context) (uint64, error) {
	ch.rmu.Lock()
	defer ch.rmu.Unlock()
	err := ch.wait(ctx)
	return binary.NativeEndian.Uint64(ch.buf[:]), err
}

func bothModes(t *testing.T, f func(t *testing.T, mode waitMode)) {
	t.Run("poller", func(t *testing.T) { f(t, modePoller) })
	t.Run("kernel", func(t *testing.T) { f(t, modeEpoll) })
	t.Run("kernel-read", func(t *testing.T) { f(t, modeRead) })
	// The kernel wait as on a kernel before 5.11 (no epoll_pwait2: whole milliseconds).
	t.Run("kernel-epoll_pwait", func(t *testing.T) {
		noEpollPwait2.Store(true)
		defer noEpollPwait2.Store(false)
		f(t, modeEpoll)
	})
}

// waitAsync starts a wait and returns its result channel once the waiter has had time to sleep.
func waitAsync(ch *CompChannel, ctx context.Context) <-chan error {
	done := make(chan error, 1)
	go func() { _, err := ch.testWait(ctx); done <- err }()
	time.Sleep(20 * time.Millisecond) // not a correctness condition: each case passes if the waiter is late too
	return done
}

func within(t *testing.T, done <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not end a waiting GetEvent in 30 s", what)
		return nil
	}
}

// waitAllocsNothing checks that end (an event, a Wake) and the wait it ends allocate nothing.
func waitAllocsNothing(t *testing.T, ch *CompChannel, what string, end func()) {
	t.Helper()
	if a := testing.AllocsPerRun(100, func() {
		end()
		ch.testWait(context.Background())
	}); a != 0 {
		t.Errorf("%s: %v allocations", what, a)
	}
}

// An event ends a wait, before it or during it.
func TestCompChannelEvent(t *testing.T) {
	bothModes(t, func(t *testing.T, mode waitMode) {
		ch, post := testChannel(t, mode)
		post(7)
		if n, err := ch.testWait(context.Background()); err != nil || n != 7 {
			t.Fatalf("event before the wait: %d, %v", n, err)
		}
		done := make(chan uint64, 1)
		go func() { n, _ := ch.testWait(context.Background()); done <- n }()
		time.Sleep(20 * time.Millisecond)
		post(9)
		select {
		case n := <-done:
			if n != 9 {
				t.Fatalf("event during the wait: record %d, want 9", n)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("an event did not end a wait in 30 s")
		}
		waitAllocsNothing(t, ch, "an event and a wait with context.Background", func() { post(1) })
	})
}

// Wake ends the wait of now or the next one, once; Wakes before a wait count as one.
func TestCompChannelWake(t *testing.T) {
	bothModes(t, func(t *testing.T, mode waitMode) {
		ch, post := testChannel(t, mode)
		ch.Wake()
		ch.Wake()
		if _, err := ch.testWait(context.Background()); !errors.Is(err, ErrWoken) {
			t.Fatalf("wait after Wake: %v, want ErrWoken", err)
		}
		check := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		check(ch.SetDeadline(time.Now().Add(50 * time.Millisecond)))
		if _, err := ch.testWait(context.Background()); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("second wait after two Wakes: %v, want the deadline (the Wakes count as one)", err)
		}
		check(ch.SetDeadline(time.Time{}))
		done := waitAsync(ch, context.Background())
		check(ch.Wake())
		if err := within(t, done, "Wake"); !errors.Is(err, ErrWoken) {
			t.Fatalf("wait woken while waiting: %v, want ErrWoken", err)
		}
		// The Wake's interruption does not outlive it: the next wait gets its event.
		post(3)
		if n, err := ch.testWait(context.Background()); err != nil || n != 3 {
			t.Fatalf("event after a Wake: %d, %v", n, err)
		}
		waitAllocsNothing(t, ch, "Wake and wait", func() { ch.Wake() })
	})
}

// A deadline ends a wait, a past one at once, a changed one while waiting, and the zero time removes it.
func TestCompChannelDeadline(t *testing.T) {
	bothModes(t, func(t *testing.T, mode waitMode) {
		ch, post := testChannel(t, mode)
		start := time.Now()
		if err := ch.SetDeadline(start.Add(100 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		if _, err := ch.testWait(context.Background()); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("wait with nothing to come: %v, want os.ErrDeadlineExceeded", err)
		}
		if el := time.Since(start); el < 100*time.Millisecond {
			t.Fatalf("the deadline ended the wait after %v, before it passed", el)
		}
		ch.SetDeadline(time.Unix(1, 0))
		if _, err := ch.testWait(context.Background()); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("wait with a past deadline: %v", err)
		}
		ch.SetDeadline(time.Now().Add(time.Hour))
		done := waitAsync(ch, context.Background())
		ch.SetDeadline(time.Now().Add(-time.Second))
		if err := within(t, done, "a deadline moved into the past"); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("wait whose deadline moved into the past: %v", err)
		}
		ch.SetDeadline(time.Time{})
		post(5)
		if n, err := ch.testWait(context.Background()); err != nil || n != 5 {
			t.Fatalf("event after the deadline was removed: %d, %v", n, err)
		}
	})
}

// A context ends its wait and leaves nothing behind for the next one; an ended context does not wait.
func TestCompChannelContext(t *testing.T) {
	bothModes(t, func(t *testing.T, mode waitMode) {
		ch, post := testChannel(t, mode)
		ctx, cancel := context.WithCancel(context.Background())
		done := waitAsync(ch, ctx)
		cancel()
		if err := within(t, done, "a cancelled context"); !errors.Is(err, context.Canceled) {
			t.Fatalf("wait whose context was cancelled: %v", err)
		}
		if _, err := ch.testWait(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("wait with an ended context: %v", err)
		}
		// A deadline set before survives a context's interruption.
		ch.SetDeadline(time.Now().Add(time.Hour))
		ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel2()
		if _, err := ch.testWait(ctx2); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("wait with a context's timeout: %v", err)
		}
		post(4)
		if n, err := ch.testWait(context.Background()); err != nil || n != 4 {
			t.Fatalf("event after a context ended a wait: %d, %v", n, err)
		}
		ctx3, cancel3 := context.WithCancel(context.Background())
		defer cancel3()
		post(6)
		if n, err := ch.testWait(ctx3); err != nil || n != 6 {
			t.Fatalf("event with a live context: %d, %v", n, err)
		}
	})
}

// Close ends a waiting GetEvent with ErrClosed, and every call after it fails with ErrClosed.
func TestCompChannelClose(t *testing.T) {
	bothModes(t, func(t *testing.T, mode waitMode) {
		ch, _ := testChannel(t, mode)
		done := waitAsync(ch, context.Background())
		if err := ch.Close(); err != nil {
			t.Fatal(err)
		}
		if err := within(t, done, "Close"); !errors.Is(err, ErrClosed) {
			t.Fatalf("wait ended by Close: %v, want ErrClosed", err)
		}
		if _, err := ch.testWait(context.Background()); !errors.Is(err, ErrClosed) {
			t.Fatalf("wait after Close: %v", err)
		}
		if err := ch.Wake(); !errors.Is(err, ErrClosed) {
			t.Fatalf("Wake after Close: %v", err)
		}
		if err := ch.SetDeadline(time.Now()); !errors.Is(err, ErrClosed) {
			t.Fatalf("SetDeadline after Close: %v", err)
		}
	})
}

// Wake, SetDeadline and Close race with waits (for the race detector and for lost wake-ups: every wait ends).
func TestCompChannelRace(t *testing.T) {
	bothModes(t, func(t *testing.T, mode waitMode) {
		ch, post := testChannel(t, mode)
		stop := make(chan struct{})
		waited := make(chan struct{})
		go func() {
			defer close(waited)
			for {
				_, err := ch.testWait(context.Background())
				if errors.Is(err, ErrClosed) {
					return
				}
			}
		}()
		for i := 0; i < 2000; i++ {
			switch i % 4 {
			case 0:
				ch.Wake()
			case 1:
				ch.SetDeadline(time.Now().Add(time.Millisecond))
			case 2:
				ch.SetDeadline(time.Time{})
			case 3:
				post(1)
			}
		}
		close(stop)
		ch.Close()
		select {
		case <-waited:
		case <-time.After(30 * time.Second):
			t.Fatal("Close did not end the waiter in 30 s")
		}
	})
}
