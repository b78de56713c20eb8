package rdmacm

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/goverbs/goverbs/uverbs"
)

// Request.Accept's options refine the Listener's: set fields replace, the rest (Cap field by field) stay, the
// Listener-level fields are the Listener's.
func TestRefine(t *testing.T) {
	three := uint8(3)
	l := (&Options{Cap: uverbs.QPCap{MaxSendWR: 8, MaxRecvWR: 24, MaxSendSGE: 1, MaxRecvSGE: 1},
		PrivateData: []byte("listener"), Backlog: 5, RetryCount: &three}).orDefault()
	got := l.refine(&Options{Cap: uverbs.QPCap{MaxRecvWR: 64}, PortSpace: PortSpaceUDP, Backlog: 1,
		Source: netip.MustParseAddrPort("10.0.0.1:1"), DisconnectTimeout: time.Second})
	if got.Cap != (uverbs.QPCap{MaxSendWR: 8, MaxRecvWR: 64, MaxSendSGE: 1, MaxRecvSGE: 1}) {
		t.Errorf("Cap %+v", got.Cap)
	}
	if got.PortSpace != PortSpaceTCP || got.Backlog != 5 || got.Source.IsValid() {
		t.Errorf("Listener-level fields changed: %+v", got)
	}
	if string(got.PrivateData) != "listener" || got.RetryCount != &three || got.DisconnectTimeout != time.Second {
		t.Errorf("refined %+v", got)
	}
	if l.Cap.MaxRecvWR != 24 {
		t.Error("refine changed the Listener's options")
	}
}

// FuzzOptionsRefine: refining never panics, keeps the Listener-level fields, and a field set in the accept's
// options always wins; the private data the ACCEPT carries is bounded by SetPrivateData's limit.
func FuzzOptionsRefine(f *testing.F) {
	f.Add(uint32(16), uint32(16), uint32(0), uint32(0), []byte("x"), 56, int64(0))
	f.Add(uint32(0), uint32(1<<31), uint32(1), uint32(0), make([]byte, 300), 196, int64(-1))
	f.Fuzz(func(t *testing.T, sw, rw, inl, lsw uint32, pd []byte, max int, dt int64) {
		l := (&Options{Cap: uverbs.QPCap{MaxSendWR: lsw, MaxRecvWR: 16}}).orDefault()
		over := &Options{Cap: uverbs.QPCap{MaxSendWR: sw, MaxRecvWR: rw, MaxInlineData: inl}, PrivateData: pd,
			DisconnectTimeout: time.Duration(dt), PortSpace: PortSpaceIB}
		got := l.refine(over)
		if got.PortSpace != l.PortSpace || got.QPType != l.QPType {
			t.Fatal("Listener-level fields changed")
		}
		if sw != 0 && got.Cap.MaxSendWR != sw || sw == 0 && got.Cap.MaxSendWR != lsw || rw != 0 && got.Cap.MaxRecvWR != rw {
			t.Fatalf("Cap %+v from %+v over %+v", got.Cap, over.Cap, l.Cap)
		}
		if pd != nil && !bytes.Equal(got.PrivateData, pd) {
			t.Fatal("private data not taken")
		}
		c := &Conn{id: &ID{}, opts: got, send: got.PrivateData, sendMax: max}
		err := c.SetPrivateData(pd)
		if (err == nil) != (len(pd) <= max) {
			t.Fatalf("SetPrivateData(%d bytes) with limit %d: %v", len(pd), max, err)
		}
		if p := c.connParam(); err == nil && !bytes.Equal(p.PrivateData, pd) {
			t.Fatal("CONNECT/ACCEPT would not carry the data set")
		}
		if c.SetPrivateData(nil) == nil {
			t.Fatal("SetPrivateData after the data went succeeded")
		}
	})
}
