package rsocket_test

import (
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/goverbs/goverbs/rsocket"
	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

// A datagram rsocket is refused with ErrDatagram, which is also the module's not-supported error.
func ExampleListenPacket() {
	_, err := rsocket.ListenPacket("rdma4", "10.0.0.1:7174")
	fmt.Println(errors.Is(err, rsocket.ErrDatagram), errors.Is(err, uverbs.ErrNotSupported), errors.Is(err, unix.EOPNOTSUPP))
	// Output: true true true
}

func TestListenPacket(t *testing.T) {
	for _, c := range []struct {
		network, address string
		refused          bool // else an address or network error
	}{
		{"rdma", "10.233.0.1:7174", true},
		{"rdma6", "[fe80::1%eth0]:7174", true},
		{"rdma", ":7174", true},
		{"udp", "10.233.0.1:7174", false},
		{"rdma4", "[::1]:7174", false},
		{"rdma", "10.233.0.1", false},
	} {
		pc, err := rsocket.ListenPacket(c.network, c.address)
		if pc != nil || err == nil {
			t.Fatalf("ListenPacket(%q, %q) = %v, %v", c.network, c.address, pc, err)
		}
		var op *net.OpError
		if !errors.As(err, &op) || op.Op != "listen" || op.Net != c.network {
			t.Errorf("ListenPacket(%q, %q): %v is not a listen *net.OpError", c.network, c.address, err)
		}
		if got := errors.Is(err, rsocket.ErrDatagram); got != c.refused {
			t.Errorf("ListenPacket(%q, %q): %v; errors.Is ErrDatagram = %v, want %v", c.network, c.address, err, got, c.refused)
		}
	}
}
