package faults

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/goverbs/test/labtest"
	"github.com/goverbs/goverbs/uverbs"
)

// scale multiplies the traffic of every test: 1 in `make test`, GOVERBS_FAULTS_SCALE in `make faults`.
func scale() int {
	if n, err := strconv.Atoi(os.Getenv("GOVERBS_FAULTS_SCALE")); err == nil && n > 0 {
		return n
	}
	return 1
}

// end is one host's side: a device context with a PD, a CQ, a buffer and its MR.
type end struct {
	name string
	ctx  *uverbs.Context
	pd   *uverbs.PD
	cq   *uverbs.CQ
	buf  *uverbs.Buffer
	mr   *uverbs.MR
	// removed: the device went away under the test; Close errors are recorded, not failures.
	removed   bool
	closeErrs []string
}

// closed is the cleanup check of one of e's objects.
func (e *end) closed(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if e.removed {
		e.closeErrs = append(e.closeErrs, what+": "+err.Error())
		return
	}
	t.Errorf("close %s of %s: %v", what, e.name, err)
}

// openEnd opens dev with a bufSize buffer registered for every access and a CQ of cqe entries; t's cleanup
// closes it all and fails the test if a Close fails.
func openEnd(t *testing.T, dev string, bufSize, cqe int) *end {
	t.Helper()
	e := &end{name: dev}
	var err error
	if e.ctx, err = uverbs.Open(dev); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.closed(t, "context", e.ctx.Close()) })
	if e.pd, err = e.ctx.AllocPD(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.closed(t, "PD", e.pd.Close()) })
	if e.buf, err = uverbs.AllocBuffer(bufSize); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.closed(t, "buffer", e.buf.Close()) })
	if e.mr, err = e.pd.RegMR(e.buf.Bytes(), uverbs.AccessLocalWrite|uverbs.AccessRemoteWrite|uverbs.AccessRemoteRead); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.closed(t, "MR", e.mr.Close()) })
	if e.cq, err = e.ctx.CreateCQ(uverbs.CQAttr{CQE: cqe}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.closed(t, "CQ", e.cq.Close()) })
	return e
}

func (e *end) qp(t *testing.T, typ uverbs.QPType, depth int) *uverbs.QP {
	t.Helper()
	qp, err := e.pd.CreateQP(uverbs.QPInitAttr{Type: typ, SendCQ: e.cq, RecvCQ: e.cq,
		Cap: uverbs.QPCap{MaxSendWR: uint32(depth), MaxRecvWR: uint32(depth), MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.closed(t, "QP", qp.Close()) })
	return qp
}

// gidOptions picks GID index 1, the lab's RoCEv2 IPv4 GID on both hosts.
var gidOptions = &uverbs.EndpointOptions{Port: 1, GIDIndex: 1}

// rcPair connects an RC QP on a to one on b.
func rcPair(t *testing.T, a, b *end, depth int, opts *uverbs.ConnectOptions) (qa, qb *uverbs.QP) {
	t.Helper()
	qa, qb = a.qp(t, uverbs.QPTypeRC, depth), b.qp(t, uverbs.QPTypeRC, depth)
	epA, err := qa.Endpoint(gidOptions)
	if err != nil {
		t.Fatal(err)
	}
	epB, err := qb.Endpoint(gidOptions)
	if err != nil {
		t.Fatal(err)
	}
	if err := qa.Connect(epB, opts); err != nil {
		t.Fatal(err)
	}
	if err := qb.Connect(epA, opts); err != nil {
		t.Fatal(err)
	}
	return qa, qb
}

// poll collects completions from cq until want have arrived or ctx ends (an error naming what was missing).
func poll(ctx context.Context, cq *uverbs.CQ, wcs []uverbs.WC) error {
	for got := 0; got < len(wcs); {
		n, err := cq.Poll(wcs[got:])
		if err != nil {
			return err
		}
		got += n
		if n == 0 {
			if ctx.Err() != nil {
				return fmt.Errorf("%d of %d completions after the deadline: %w", got, len(wcs), ctx.Err())
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	return nil
}

// fill writes message seq into b: 4 bytes of sequence number, 4 of CRC-32C over the rest, then bytes
// derived from seq.
func fill(b []byte, seq uint32) {
	x := seq*2654435761 + 1
	for i := 8; i < len(b); i++ {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	binary.LittleEndian.PutUint32(b[0:], seq)
	binary.LittleEndian.PutUint32(b[4:], crc32.Checksum(b[8:], castagnoli))
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// verify checks a message fill wrote and returns its sequence number.
func verify(b []byte) (uint32, error) {
	if len(b) < 8 {
		return 0, fmt.Errorf("message of %d bytes", len(b))
	}
	seq := binary.LittleEndian.Uint32(b[0:])
	if sum := crc32.Checksum(b[8:], castagnoli); sum != binary.LittleEndian.Uint32(b[4:]) {
		return seq, fmt.Errorf("message %d: checksum %#x, carried %#x", seq, sum, binary.LittleEndian.Uint32(b[4:]))
	}
	return seq, nil
}

// netem installs "tc qdisc replace dev DEV root netem SPEC" on the lab's veth0 and on the peer host's veth1,
// so both directions see the fault, and removes both when t ends or remove is called. drops reads how many
// packets netem dropped on each.
func netem(t *testing.T, peer *labtest.PeerHost, spec string) (drops func() (int, int), remove func()) {
	t.Helper()
	// tc runs "tc [-s] qdisc VERB dev DEV REST...", on the peer's veth1 or on veth0.
	tc := func(onPeer bool, verb []string, rest ...string) (string, error) {
		dev := labtest.Netdev()
		if onPeer {
			dev = peer.Netdev
		}
		args := append(append(append([]string{}, verb...), "dev", dev), rest...)
		cmd := exec.Command("tc", args...)
		if onPeer {
			peer.Enter(cmd)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("tc %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return string(out), nil
	}
	var installed []bool
	remove = func() {
		for _, onPeer := range installed {
			if _, err := tc(onPeer, []string{"qdisc", "del"}, "root"); err != nil {
				t.Error(err)
			}
		}
		installed = nil
	}
	t.Cleanup(remove)
	for _, onPeer := range []bool{false, true} {
		if _, err := tc(onPeer, []string{"qdisc", "replace"}, append([]string{"root", "netem"}, strings.Fields(spec)...)...); err != nil {
			t.Fatal(err)
		}
		installed = append(installed, onPeer)
	}
	drops = func() (int, int) {
		var n [2]int
		for i, onPeer := range []bool{false, true} {
			out, err := tc(onPeer, []string{"-s", "qdisc", "show"})
			if err != nil {
				t.Error(err)
				continue
			}
			if m := droppedRE.FindStringSubmatch(out); m != nil {
				n[i], _ = strconv.Atoi(m[1])
			}
		}
		return n[0], n[1]
	}
	return drops, remove
}

var droppedRE = regexp.MustCompile(`dropped (\d+)`)

// counters reads rxe's port counters of dev (sysfs hw_counters).
func counters(t *testing.T, dev string) map[string]int64 {
	t.Helper()
	dir := "/sys/class/infiniband/" + dev + "/ports/1/hw_counters/"
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]int64{}
	for _, e := range ents {
		b, err := os.ReadFile(dir + e.Name())
		if err != nil {
			continue
		}
		m[e.Name()], _ = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	}
	return m
}

// delta formats the counters that changed between before and after.
func delta(before, after map[string]int64, names ...string) string {
	var parts []string
	for _, n := range names {
		if d := after[n] - before[n]; d != 0 {
			parts = append(parts, fmt.Sprintf("%s +%d", n, d))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// wcErr is the first failed completion among wcs, as an error.
func wcErr(wcs []uverbs.WC) error {
	for i := range wcs {
		if err := wcs[i].Err(); err != nil {
			return fmt.Errorf("work request %d: %w", wcs[i].WRID, err)
		}
	}
	return nil
}
