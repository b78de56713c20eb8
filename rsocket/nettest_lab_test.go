package rsocket_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/goverbs/goverbs/rsocket"
	"github.com/goverbs/goverbs/test/labtest"
	"golang.org/x/net/nettest"
	"golang.org/x/sys/unix"
)

// makePipe is a nettest.MakePipe over rsocket on the lab's rxe netdev: a listener on a port the kernel picks,
// one connection dialed to it; stop closes both ends and the listener. With acceptorFirst, c1 is the accepted end.
// Where siw loses a connection's first message (firstMessageLost) a pipe that stalled so is made again.
func makePipe(t *testing.T, acceptorFirst bool) nettest.MakePipe {
	return func() (c1, c2 net.Conn, stop func(), err error) {
		for attempt := 0; ; attempt++ {
			c1, c2, stop, err = makePipeOnce(acceptorFirst)
			if err != nil {
				return c1, c2, stop, err
			}
			lost, err := firstMessageLostErr(t, c1, c2)
			if err != nil {
				stop()
				return nil, nil, nil, err
			}
			if !lost {
				return c1, c2, stop, nil
			}
			stop()
			if attempt == siwRaceReruns {
				return nil, nil, nil, errStalledAlways
			}
		}
	}
}

func makePipeOnce(acceptorFirst bool) (c1, c2 net.Conn, stop func(), err error) {
	ln, err := rsocket.Listen("rdma", net.JoinHostPort(labIP, "0"))
	if err != nil {
		return nil, nil, nil, err
	}
	ch := acceptOne(ln)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := rsocket.DialContext(ctx, "rdma", ln.Addr().String())
	if err != nil {
		ln.Close()
		return nil, nil, nil, err
	}
	a := <-ch
	if a.err != nil {
		d.Close()
		ln.Close()
		return nil, nil, nil, a.err
	}
	stop = func() {
		d.Close()
		a.c.Close()
		ln.Close()
	}
	if acceptorFirst {
		return a.c, d, stop, nil
	}
	return d, a.c, stop, nil
}

// TestLabNettest runs golang.org/x/net/nettest's net.Conn conformance suite (basic I/O, ping-pong, racy
// reads and writes, past/present/future deadlines, Close waking blocked calls, concurrent methods) over
// rsocket, with the dialed end as c1 and then the accepted end, three rounds.
func TestLabNettest(t *testing.T) {
	labtest.Require(t)
	// nettest may miss a race in one run (its doc: false negatives are possible): three rounds.
	for round := range 3 {
		t.Run(fmt.Sprintf("Dialer%d", round), func(t *testing.T) { nettest.TestConn(t, makePipe(t, false)) })
		t.Run(fmt.Sprintf("Acceptor%d", round), func(t *testing.T) { nettest.TestConn(t, makePipe(t, true)) })
	}
}

// pipe is a connected pair (dialer first), stopped when the test ends.
func pipe(t *testing.T) (c1, c2 net.Conn) {
	t.Helper()
	c1, c2, stop, err := makePipe(t, false)()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return c1, c2
}

// TestLabConnSemantics checks what nettest does not: half-close with CloseWrite, the errors a closed or
// half-closed connection returns, io.EOF after the peer's Close, and Close waking a Read and a Write that
// have no deadline.
func TestLabConnSemantics(t *testing.T) {
	labtest.Require(t)
	t.Run("CloseWrite", func(t *testing.T) {
		c, s := pipe(t)
		if _, err := c.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		if err := c.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte("x")); !errors.Is(err, unix.EPIPE) {
			t.Errorf("Write after CloseWrite: %v, want EPIPE", err)
		}
		s.SetReadDeadline(time.Now().Add(20 * time.Second))
		got, err := io.ReadAll(s)
		if err != nil || string(got) != "hello" {
			t.Fatalf("peer read %q, %v; want \"hello\" then EOF", got, err)
		}
		// The half-closed side still reads.
		if _, err := s.Write([]byte("world")); err != nil {
			t.Fatalf("peer Write after our CloseWrite: %v", err)
		}
		buf := make([]byte, 5)
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "world" {
			t.Fatalf("read %q, %v after CloseWrite", buf, err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("peer Close: %v", err)
		}
		if n, err := c.Read(buf); n != 0 || err != io.EOF {
			t.Errorf("Read after the peer's Close: %d, %v; want 0, io.EOF", n, err)
		}
	})
	t.Run("PeerClose", func(t *testing.T) {
		c, s := pipe(t)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		if n, err := c.Read(make([]byte, 8)); n != 0 || err != io.EOF {
			t.Fatalf("Read after the peer's Close: %d, %v; want 0, io.EOF", n, err)
		}
		if _, err := c.Write([]byte("x")); err == nil {
			t.Error("Write after the peer's Close succeeded")
		} else {
			t.Logf("Write after the peer's Close: %v", err)
		}
		if err := c.Close(); err != nil {
			t.Errorf("Close after the peer's Close: %v", err)
		}
		if err := c.Close(); !errors.Is(err, net.ErrClosed) {
			t.Errorf("second Close: %v, want net.ErrClosed", err)
		}
		if _, err := c.Read(make([]byte, 8)); !errors.Is(err, net.ErrClosed) {
			t.Errorf("Read after Close: %v, want net.ErrClosed", err)
		}
		if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
			t.Errorf("Write after Close: %v, want net.ErrClosed", err)
		}
		for name, set := range map[string]func(time.Time) error{"SetDeadline": c.SetDeadline,
			"SetReadDeadline": c.SetReadDeadline, "SetWriteDeadline": c.SetWriteDeadline} {
			if err := set(time.Now()); !errors.Is(err, net.ErrClosed) {
				t.Errorf("%s after Close: %v, want net.ErrClosed", name, err)
			}
		}
	})
	t.Run("CloseWakes", func(t *testing.T) {
		c, _ := pipe(t)
		read := func() error {
			_, err := c.Read(make([]byte, 8))
			return err
		}
		write := func() error { // the peer never reads: Write blocks once its receive buffer is full
			b := make([]byte, 64<<10)
			for {
				if _, err := c.Write(b); err != nil {
					return err
				}
			}
		}
		if err := closeWakes(t, c, 200*time.Millisecond, read, write); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	t.Run("Deadline", func(t *testing.T) {
		c, _ := pipe(t)
		c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		_, err := c.Read(make([]byte, 8))
		var ne net.Error
		if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("Read past its deadline: %v, want os.ErrDeadlineExceeded (a net.Error with Timeout)", err)
		}
	})
}
