package rsocket

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/goverbs/rdmacm"
	"golang.org/x/sys/unix"
)

// bareConn is a Conn with the sizes of a connection and no device behind it: enough for the option calls.
func bareConn() *Conn {
	return &Conn{sqSize: 100, rqSize: 50, sbufSize: 8192, rb: make([]byte, 65536), iomapSize: 1,
		pollTime: 10 * time.Microsecond, linger: -1, done: make(chan struct{}), local: &Addr{}, remote: &Addr{}}
}

// TestSocketOptions: what SocketOptions reports (rgetsockopt), the stored options' setters (TCP_NODELAY,
// SO_LINGER), the buffer sizes' refusal after the connection (*OptionError, EINVAL), SocketError (SO_ERROR, not
// cleared by reading), and the setters after Close.
func TestSocketOptions(t *testing.T) {
	c := bareConn()
	want := SocketOptions{Options: Options{SendBuffer: 8192, RecvBuffer: 65536, InlineSize: -1, SQSize: 100, RQSize: 50,
		IOMapSize: 1, PollTime: 10 * time.Microsecond}, Linger: -1, MaxSegment: 2048}
	if got := c.SocketOptions(); got != want {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	c.inline = 64
	c.kaPeriod = 5 * time.Second // set, probes off
	if err := c.SetNoDelay(true); err != nil {
		t.Fatal(err)
	}
	if err := c.SetLinger(0); err != nil {
		t.Fatal(err)
	}
	want.InlineSize, want.NoDelay, want.Linger, want.KeepAlivePeriod = 64, true, 0, 5*time.Second
	if got := c.SocketOptions(); got != want {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	c.SetLinger(-3)
	if got := c.SocketOptions().Linger; got != -1 {
		t.Fatalf("linger off: %d", got)
	}
	for _, tc := range []struct {
		set           func(int) error
		option, field string
	}{{c.SetReadBuffer, "SO_RCVBUF", "RecvBuffer"}, {c.SetWriteBuffer, "SO_SNDBUF", "SendBuffer"}} {
		err := tc.set(1 << 20)
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Option != tc.option || oe.Field != tc.field || !errors.Is(err, unix.EINVAL) {
			t.Fatalf("%s: %v", tc.option, err)
		}
		if !strings.Contains(err.Error(), "Options."+tc.field) {
			t.Errorf("%s: %q does not name the field", tc.option, err)
		}
	}
	if err := c.SocketError(); err != nil {
		t.Fatalf("SocketError: %v", err)
	}
	c.err = fmt.Errorf("message opcode 5: %w", ErrProtocol)
	for range 2 {
		if err := c.SocketError(); !errors.Is(err, ErrProtocol) {
			t.Fatalf("SocketError: %v", err)
		}
	}
	c.closed = true
	for _, err := range []error{c.SetNoDelay(false), c.SetLinger(1)} {
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("after Close: %v", err)
		}
	}
	if _, err := c.Route(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Route after Close: %v", err)
	}
}

// TestEncodePaths: RDMA_ROUTE's value is an array of 72-byte struct ibv_path_data: flags in host order, 4
// reserved bytes, the 64-byte record.
func TestEncodePaths(t *testing.T) {
	var r1, r2 [64]byte
	for i := range r1 {
		r1[i], r2[i] = byte(i), byte(200-i)
	}
	b := encodePaths([]rdmacm.PathRecord{{Flags: 43, Record: r1}, {Flags: 0x11223344, Record: r2}})
	if len(b) != 144 {
		t.Fatalf("%d bytes", len(b))
	}
	for i, want := range []struct {
		flags uint32
		rec   [64]byte
	}{{43, r1}, {0x11223344, r2}} {
		e := b[i*72:]
		if binary.NativeEndian.Uint32(e) != want.flags || binary.NativeEndian.Uint32(e[4:]) != 0 || !bytes.Equal(e[8:72], want.rec[:]) {
			t.Fatalf("entry %d: %x", i, e[:72])
		}
	}
}

// TestGather: gather copies from a cursor over buffers (empty ones among them) and leaves the cursor after
// what it took, as rs_copy_iov.
func TestGather(t *testing.T) {
	bufs := [][]byte{[]byte("ab"), nil, []byte("cdef"), {}, []byte("g"), []byte("hij")}
	i, off := 0, 0
	var got []string
	for _, n := range []int{1, 2, 4, 3} {
		dst := make([]byte, n)
		gather(dst, bufs, &i, &off)
		got = append(got, string(dst))
	}
	if strings.Join(got, "|") != "a|bc|defg|hij" || i != len(bufs) || off != 0 {
		t.Fatalf("%q, cursor %d/%d", got, i, off)
	}
	i, off = 0, 0
	gather(nil, bufs, &i, &off)
	if i != 0 || off != 0 {
		t.Fatalf("empty gather moved the cursor to %d/%d", i, off)
	}
}
