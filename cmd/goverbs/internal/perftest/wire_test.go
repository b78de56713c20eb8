package perftest

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestKeyRecord(t *testing.T) {
	d := Dest{LID: 0, OutReads: 128, QPN: 0x11, PSN: 0x50ac02, RKey: 0x2ad, VAddr: 0x55bdb0f74000, GID: rxeGID}
	gid := EncodeKey(&d, true)
	eq(t, keyMsgSizeGID, len(gid))
	eq(t, "0000:0080:000011:50ac02:000002ad:000055bdb0f74000:00:00:00:00:00:00:00:00:00:00:ff:ff:0a:e9:00:01:00000000:\x00", string(gid))
	plain := EncodeKey(&d, false)
	eq(t, keyMsgSize, len(plain))
	eq(t, "0000:0080:000011:50ac02:000002ad:000055bdb0f74000:00000000\x00", string(plain))
	for _, withGID := range []bool{false, true} {
		back, err := DecodeKey(EncodeKey(&d, withGID), withGID)
		noErr(t, err)
		want := d
		if !withGID {
			want.GID = [16]byte{}
		}
		eq(t, want, back)
	}
}

func TestDecodeKeyErrors(t *testing.T) {
	for _, msg := range []string{"", "0000:0001", "zzzz:0001:000011:50ac02:000002ad:000055bdb0f74000:00000000",
		"10000:0001:000011:50ac02:000002ad:000055bdb0f74000:00000000", "0000:0001::50ac02:000002ad:0:0",
		"0:10000:0:0:0:0:1", "0:1:1000000:0:0:0:0", "0:1:1:1000000:0:0:0"} { // wider than their fields
		if _, err := DecodeKey([]byte(msg), false); !errors.Is(err, ErrBadKey) {
			t.Errorf("DecodeKey(%q) = %v, want ErrBadKey", msg, err)
		}
	}
	if _, err := DecodeKey([]byte("0000:0001:000011:50ac02:000002ad:0:0:1:2"), true); !errors.Is(err, ErrBadKey) {
		t.Errorf("short GID record accepted: %v", err)
	}
}

func FuzzDecodeKey(f *testing.F) {
	d := Dest{OutReads: 16, QPN: 0x1234, PSN: 0xabcdef, RKey: 0x99, VAddr: 0x7fff0000, GID: rxeGID}
	f.Add(EncodeKey(&d, false), false)
	f.Add(EncodeKey(&d, true), true)
	f.Add([]byte("0:0:0:0:0:0:0"), false)
	f.Fuzz(func(t *testing.T, msg []byte, withGID bool) {
		got, err := DecodeKey(msg, withGID)
		if err != nil {
			return
		}
		// What parses re-encodes to a record that parses to the same values (widths may differ).
		again, err := DecodeKey(EncodeKey(&got, withGID), withGID)
		if err == nil && again != got {
			t.Fatalf("round trip: %+v -> %+v", got, again)
		}
	})
}

func FuzzAtof(f *testing.F) {
	for _, s := range []string{"6.06", "5.70", "", "x", "5.", "1e5", "6.06abc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v := Atof(s); v < 0 {
			t.Fatalf("Atof(%q) = %v", s, v)
		}
	})
}

func TestAtof(t *testing.T) {
	for s, want := range map[string]float64{"6.06": 6.06, "5.70": 5.7, "": 0, "abc": 0, "6.28-rc1": 6.28, "5..1": 5} {
		eq(t, want, Atof(s))
	}
}

// TestExchangeOrder runs the whole setup exchange between a client and a server over a pipe: the client
// writes first and the server reads first in every step, and each side gets the other's values.
func TestExchangeOrder(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	cli, srv := &Conn{RW: a, Client: true}, &Conn{RW: b}
	type res struct {
		ver    string
		cb, cl int
		mtu    int
		key    Dest
		rep    BWReport
		err    error
	}
	run := func(c *Conn, ver string, cb, cl, mtu int, key Dest, rep BWReport, out chan<- res) {
		var r res
		if r.ver, r.err = c.Versions(ver); r.err == nil {
			if r.cb, r.cl, r.err = c.SysData(cb, cl); r.err == nil {
				if r.mtu, r.err = c.MTU(mtu); r.err == nil {
					if r.key, r.err = c.Keys(&key, true); r.err == nil {
						r.rep, r.err = c.BWReports(&rep, false)
					}
				}
			}
		}
		out <- r
	}
	cc, sc := make(chan res, 1), make(chan res, 1)
	k1 := Dest{QPN: 1, PSN: 2, RKey: 3, VAddr: 4, OutReads: 1, GID: rxeGID}
	k2 := Dest{QPN: 5, PSN: 6, RKey: 7, VAddr: 8, OutReads: 1}
	go run(cli, "6.06", 4096, 64, 3, k1, BWReport{Size: 64, Iters: 20, BWPeak: 1.28, BWAvg: 0.07, MsgRateAvg: 0.001118}, cc)
	go run(srv, "5.93", 65536, 128, 5, k2, BWReport{}, sc)
	c, s := <-cc, <-sc
	noErr(t, c.err)
	noErr(t, s.err)
	eq(t, "5.93", c.ver)
	eq(t, "6.06", s.ver)
	eq(t, 65536, c.cb)
	eq(t, 128, c.cl)
	eq(t, 4096, s.cb)
	eq(t, 64, s.cl)
	eq(t, 5, c.mtu)
	eq(t, 3, s.mtu)
	eq(t, k2, c.key)
	eq(t, k1, s.key)
	eq(t, 0.07, s.rep.BWAvg)
	eq(t, uint64(20), s.rep.Iters)
}

// TestWireBytes pins the byte layout of the records C peers read.
func TestWireBytes(t *testing.T) {
	var buf bytes.Buffer
	c := &Conn{RW: &rwPair{r: bytes.NewReader(make([]byte, 64)), w: &buf}, Client: true}
	_, err := c.Versions("6.06")
	noErr(t, err)
	_, _, err = c.SysData(4096, 64)
	noErr(t, err)
	_, err = c.MTU(3)
	noErr(t, err)
	noErr(t, c.Done())
	want := append([]byte("6.06"), make([]byte, 12)...)
	want = append(want, 0, 0, 0x10, 0, 0, 0, 0, 64, '3', 0)
	want = append(want, "done\x00"...)
	eq(t, string(want), buf.String())
}

type rwPair struct {
	r *bytes.Reader
	w *bytes.Buffer
}

func (p *rwPair) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p *rwPair) Write(b []byte) (int, error) { return p.w.Write(b) }

// A data exchange broken on the TCP channel prints perftest's lines for the failing step and side.
func TestXchgDataFailurePrintsCsLines(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client bool
		rw     io.ReadWriter
		want   string
	}{
		{"server/truncated", false, &brokenRW{r: strings.NewReader("6.0")},
			"ethernet_read_data: Couldn't read reports\n Unable to read to socket/rdma_cm\n"},
		{"client/peer closed", true, &brokenRW{r: strings.NewReader("")},
			"ethernet_read_data: Couldn't read reports\n Unable to read from socket/rdma_cm\n"},
		{"client/write fails", true, &brokenRW{r: strings.NewReader(""), werr: unix.EPIPE},
			"client write: Broken pipe\nCouldn't send reports\n Unable to write to socket/rdma_cm\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr strings.Builder
			c := &Conn{RW: tc.rw, Client: tc.client, Stderr: &stderr}
			if _, err := c.Versions(Version); err == nil {
				t.Fatal("Versions over a broken channel succeeded")
			}
			if stderr.String() != tc.want {
				t.Errorf("stderr %q, want %q", stderr.String(), tc.want)
			}
			// The key exchange prints nothing itself (C's ethernet_read_keys has its own lines, printed by the
			// caller), and neither does an exchange without Stderr.
			stderr.Reset()
			(&Conn{RW: tc.rw, Client: tc.client}).Versions(Version)
			if stderr.Len() != 0 {
				t.Errorf("without Stderr: %q", stderr.String())
			}
		})
	}
}

type brokenRW struct {
	r    io.Reader
	werr error
}

func (b *brokenRW) Read(p []byte) (int, error) { return b.r.Read(p) }
func (b *brokenRW) Write(p []byte) (int, error) {
	if b.werr != nil {
		return 0, b.werr
	}
	return len(p), nil
}
