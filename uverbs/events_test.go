package uverbs

import (
	"context"
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// A read whose context ends just as an event arrives must not leave its wake-up deadline behind: the next
// read would fail at once with "i/o timeout" (os.ErrDeadlineExceeded) instead of waiting.
func TestPollFileReadLeavesNoDeadline(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	fd, err := dupFD(r)
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := newPollFile(fd, "test-pipe")
	if err != nil {
		t.Fatal(err)
	}
	defer pf.close()
	rec := make([]byte, 8)
	buf := make([]byte, 8)
	for i := 0; i < 2000; i++ {
		if _, err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		go cancel()
		err := pf.read(ctx, buf)
		switch {
		case err == nil: // the record was read; write the next one
			if _, err := w.Write(rec); err != nil {
				t.Fatal(err)
			}
		case errors.Is(err, context.Canceled): // the record is still there
		default:
			t.Fatalf("iteration %d: racing read: %v", i, err)
		}
		if err := pf.read(context.Background(), buf); err != nil {
			t.Fatalf("iteration %d: the read after a read whose context ended: %v", i, err)
		}
	}
}

// dupFD is a new descriptor for f's file, owned by the caller.
func dupFD(f *os.File) (int, error) {
	raw, err := f.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var derr error
	if err := raw.Control(func(s uintptr) { fd, derr = unix.Dup(int(s)) }); err != nil {
		return -1, err
	}
	return fd, derr
}

// Every asynchronous event type has a name (ibv_event_type_str's job, in goverbs' words), and an unknown one
// says its number.
func TestAsyncEventNames(t *testing.T) {
	seen := map[string]bool{}
	for e := EventCQErr; int(e) < len(asyncEventNames); e++ {
		n := e.String()
		if n == "" || seen[n] {
			t.Errorf("event %d: name %q empty or repeated", e, n)
		}
		seen[n] = true
	}
	if got := EventQPAccessErr.String(); got != "QP access error" {
		t.Errorf("EventQPAccessErr = %q", got)
	}
	if got := AsyncEventType(99).String(); got != "event(99)" {
		t.Errorf("unknown event = %q", got)
	}
}
