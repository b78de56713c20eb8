package faults

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/goverbs/goverbs/test/labtest"
	"github.com/goverbs/goverbs/uverbs"
)

// rxe's counters that show recovery at work.
var recoveryCounters = []string{"completer_retry_err", "rcvd_seq_err", "duplicate_request", "out_of_seq_request",
	"retry_exceeded_err", "rcvd_rnr_err", "send_err"}

// TestLabNetemRC sends checksummed messages (SEND, 4 KiB = four 1 KiB packets each) and then a 256 KiB RDMA
// WRITE and its RDMA READ back, RC from rxe0 to the peer host, through each netem fault on both directions of
// the veth: every byte arrives intact and in order through rxe's retransmission, and no completion fails.
func TestLabNetemRC(t *testing.T) {
	peer := labtest.TwoHosts(t)
	for _, f := range []struct {
		name, spec string
		drops      bool // the fault drops packets: netem must report drops
	}{
		{"loss-1%", "loss 1%", true},
		{"loss-10%", "loss 10%", true},
		{"duplicate-10%", "duplicate 10%", false},
		{"corrupt-2%", "corrupt 2%", false},
		{"reorder-25%", "delay 2ms reorder 25% 50%", false},
		{"delay-5ms", "delay 5ms", false}, // no jitter: netem's jitter reorders, as the reorder case does
	} {
		t.Run(f.name, func(t *testing.T) { rcUnderFault(t, peer, f.spec, f.drops) })
	}
}

func rcUnderFault(t *testing.T, peer *labtest.PeerHost, spec string, wantDrops bool) {
	const (
		msgSize  = 4096
		depth    = 16
		rdmaSize = 256 << 10
	)
	n := 100 * scale()
	slots := depth * msgSize
	bufSize := 2*slots + 2*rdmaSize
	a := openEnd(t, labtest.Device(), bufSize, 4*depth)
	b := openEnd(t, peer.Device, bufSize, 4*depth)
	qa, qb := rcPair(t, a, b, depth, nil)
	drops, _ := netem(t, peer, spec)
	before := [2]map[string]int64{counters(t, a.name), counters(t, b.name)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(scale())*3*time.Minute)
	defer cancel()
	start := time.Now()

	sendSlot := func(i int) []byte { return a.buf.Bytes()[(i%depth)*msgSize:][:msgSize] }
	recvOff := func(i int) int { return slots + (i%depth)*msgSize }
	postRecv := func(i int) {
		if _, err := qb.PostRecv([]uverbs.RecvWR{{WRID: uint64(i), SGL: []uverbs.SGE{b.mr.SGE(recvOff(i), msgSize)}}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < depth; i++ {
		postRecv(i)
	}
	sent, completed, received := 0, 0, 0
	wcs := make([]uverbs.WC, depth)
	for received < n {
		for sent < n && sent-completed < depth && sent-received < depth {
			fill(sendSlot(sent), uint32(sent))
			if _, err := qa.PostSend([]uverbs.SendWR{{WRID: uint64(sent), Opcode: uverbs.WRSend,
				Flags: uverbs.SendSignaled, SGL: []uverbs.SGE{a.mr.SGE((sent%depth)*msgSize, msgSize)}}}); err != nil {
				t.Fatal(err)
			}
			sent++
		}
		k, err := a.cq.Poll(wcs)
		if err != nil {
			t.Fatal(err)
		}
		if err := wcErr(wcs[:k]); err != nil {
			t.Fatalf("send: %v", err)
		}
		completed += k
		m, err := b.cq.Poll(wcs)
		if err != nil {
			t.Fatal(err)
		}
		for _, wc := range wcs[:m] {
			if err := wc.Err(); err != nil {
				t.Fatalf("receive %d: %v", wc.WRID, err)
			}
			if wc.ByteLen != msgSize {
				t.Fatalf("receive %d: %d bytes, want %d", wc.WRID, wc.ByteLen, msgSize)
			}
			seq, err := verify(b.buf.Bytes()[recvOff(received):][:msgSize])
			if err != nil {
				t.Fatalf("receive %d: %v", received, err)
			}
			if seq != uint32(received) {
				t.Fatalf("receive %d carried message %d (RC delivers in order)", received, seq)
			}
			received++
			if received+depth-1 < n {
				postRecv(received + depth - 1)
			}
		}
		if k == 0 && m == 0 {
			if ctx.Err() != nil {
				t.Fatalf("%d sent, %d completed, %d received when the deadline passed", sent, completed, received)
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	for completed < sent {
		if err := poll(ctx, a.cq, wcs[:sent-completed]); err != nil {
			t.Fatal(err)
		}
		if err := wcErr(wcs[:sent-completed]); err != nil {
			t.Fatalf("send: %v", err)
		}
		completed = sent
	}

	// One large RDMA WRITE into the peer, then an RDMA READ of it back.
	src := a.buf.Bytes()[2*slots:][:rdmaSize]
	for i := 0; i < rdmaSize; i += msgSize {
		fill(src[i:i+msgSize], uint32(1<<20+i))
	}
	dst := b.buf.Bytes()[2*slots:][:rdmaSize]
	back := a.buf.Bytes()[2*slots+rdmaSize:][:rdmaSize]
	for _, wr := range []uverbs.SendWR{
		{WRID: 1, Opcode: uverbs.WRRDMAWrite, Flags: uverbs.SendSignaled, SGL: []uverbs.SGE{a.mr.SGE(2*slots, rdmaSize)},
			RemoteAddr: b.mr.Addr() + uint64(2*slots), RKey: b.mr.RKey()},
		{WRID: 2, Opcode: uverbs.WRRDMARead, Flags: uverbs.SendSignaled, SGL: []uverbs.SGE{a.mr.SGE(2*slots+rdmaSize, rdmaSize)},
			RemoteAddr: b.mr.Addr() + uint64(2*slots), RKey: b.mr.RKey()},
	} {
		if _, err := qa.PostSend([]uverbs.SendWR{wr}); err != nil {
			t.Fatal(err)
		}
		if err := poll(ctx, a.cq, wcs[:1]); err != nil {
			t.Fatalf("%v: %v", wr.Opcode, err)
		}
		if err := wcErr(wcs[:1]); err != nil {
			t.Fatalf("%v: %v", wr.Opcode, err)
		}
	}
	if !bytes.Equal(dst, src) {
		t.Errorf("RDMA WRITE: the peer's memory differs from the source")
	}
	if !bytes.Equal(back, src) {
		t.Errorf("RDMA READ: the bytes read back differ from the source")
	}

	d0, d1 := drops()
	after := [2]map[string]int64{counters(t, a.name), counters(t, b.name)}
	t.Logf("%s: %d messages (%d KiB) and %d KiB written and read back intact in %v; netem dropped %d (veth0) + %d (veth1); %s: %s; %s: %s",
		spec, n, n*msgSize>>10, rdmaSize>>10, time.Since(start).Round(time.Millisecond), d0, d1,
		a.name, delta(before[0], after[0], recoveryCounters...), b.name, delta(before[1], after[1], recoveryCounters...))
	if wantDrops && d0+d1 == 0 {
		t.Errorf("netem %q dropped nothing: the fault was not exercised", spec)
	}
}

// TestLabNetemUD sends checksummed datagrams from rxe0 to the peer host through 10 % loss: every send
// completes successfully (UD does not know), the datagrams that arrive are intact and distinct, and the ones
// missing are what netem dropped.
func TestLabNetemUD(t *testing.T) {
	peer := labtest.TwoHosts(t)
	const (
		payload = 256
		grh     = 40
	)
	n := 200 * scale()
	depth := 256
	slot := grh + payload
	a := openEnd(t, labtest.Device(), depth*slot, 2*depth)
	b := openEnd(t, peer.Device, n*slot, n+depth)
	qa, qb := a.qp(t, uverbs.QPTypeUD, depth), b.qpWith(t, uverbs.QPTypeUD, depth, n)
	epB, err := qb.Endpoint(gidOptions)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := qa.Endpoint(gidOptions); err != nil {
		t.Fatal(err)
	}
	for _, qp := range []*uverbs.QP{qa, qb} {
		if err := qp.ActivateUD(nil); err != nil {
			t.Fatal(err)
		}
	}
	aa, err := qa.AHAttrTo(epB)
	if err != nil {
		t.Fatal(err)
	}
	ah, err := a.pd.CreateAH(aa)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.closed(t, "AH", ah.Close()) })
	for i := 0; i < n; i++ {
		if _, err := qb.PostRecv([]uverbs.RecvWR{{WRID: uint64(i), SGL: []uverbs.SGE{b.mr.SGE(i*slot, slot)}}}); err != nil {
			t.Fatal(err)
		}
	}
	drops, _ := netem(t, peer, "loss 10%")
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(scale())*2*time.Minute)
	defer cancel()

	wcs := make([]uverbs.WC, depth)
	for sent := 0; sent < n; {
		k := min(depth, n-sent)
		for i := 0; i < k; i++ {
			buf := a.buf.Bytes()[i*slot:][:payload]
			fill(buf, uint32(sent+i))
			if _, err := qa.PostSend([]uverbs.SendWR{{WRID: uint64(sent + i), Opcode: uverbs.WRSend,
				Flags: uverbs.SendSignaled, SGL: []uverbs.SGE{a.mr.SGE(i*slot, payload)},
				AH: ah.Data(), RemoteQPN: epB.QPN, RemoteQKey: epB.QKey}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := poll(ctx, a.cq, wcs[:k]); err != nil {
			t.Fatal(err)
		}
		if err := wcErr(wcs[:k]); err != nil {
			t.Fatalf("UD send under loss: %v", err)
		}
		sent += k
	}

	// Collect what arrives: until every datagram is in or nothing new came for a second.
	seen := make(map[uint32]bool)
	last := time.Now()
	for len(seen) < n && time.Since(last) < time.Second {
		m, err := b.cq.Poll(wcs)
		if err != nil {
			t.Fatal(err)
		}
		if m == 0 {
			time.Sleep(time.Millisecond)
			continue
		}
		last = time.Now()
		for _, wc := range wcs[:m] {
			if err := wc.Err(); err != nil {
				t.Fatalf("UD receive %d: %v", wc.WRID, err)
			}
			if wc.ByteLen != uint32(slot) {
				t.Fatalf("UD receive %d: %d bytes, want %d", wc.WRID, wc.ByteLen, slot)
			}
			seq, err := verify(b.buf.Bytes()[int(wc.WRID)*slot+grh:][:payload])
			if err != nil {
				t.Fatalf("UD receive %d: %v", wc.WRID, err)
			}
			if seq >= uint32(n) || seen[seq] {
				t.Fatalf("UD receive %d: datagram %d (duplicate or out of range)", wc.WRID, seq)
			}
			seen[seq] = true
		}
	}
	lost := n - len(seen)
	d0, d1 := drops()
	t.Logf("loss 10%%: %d datagrams sent, %d received intact, %d lost; netem dropped %d on veth0 (the direction of the datagrams), %d on veth1",
		n, len(seen), lost, d0, d1)
	if lost == 0 {
		t.Errorf("no datagram was lost under 10%% loss: the fault was not exercised")
	}
	if lost > d0 {
		t.Errorf("%d datagrams lost but netem dropped only %d packets in their direction", lost, d0)
	}
}

// qpWith is qp with a receive queue of its own depth.
func (e *end) qpWith(t *testing.T, typ uverbs.QPType, sendDepth, recvDepth int) *uverbs.QP {
	t.Helper()
	qp, err := e.pd.CreateQP(uverbs.QPInitAttr{Type: typ, SendCQ: e.cq, RecvCQ: e.cq,
		Cap: uverbs.QPCap{MaxSendWR: uint32(sendDepth), MaxRecvWR: uint32(recvDepth), MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.closed(t, "QP", qp.Close()) })
	return qp
}

// TestLabPartition cuts the link (netem loss 100 %, both ways) under an RC send with a short retry budget:
// the send completes with RETRY_EXC_ERR, the QP is in ERR, nothing arrived; after the link heals a new
// connection between the same hosts works.
func TestLabPartition(t *testing.T) {
	peer := labtest.TwoHosts(t)
	a := openEnd(t, labtest.Device(), 8192, 16)
	b := openEnd(t, peer.Device, 8192, 16)
	opts := uverbs.DefaultConnectOptions()
	opts.Timeout, opts.RetryCnt = 10, 2 // 4.2 ms × 2^0 per try, 3 tries
	qa, qb := rcPair(t, a, b, 4, &opts)
	if _, err := qb.PostRecv([]uverbs.RecvWR{{WRID: 7, SGL: []uverbs.SGE{b.mr.SGE(4096, 4096)}}}); err != nil {
		t.Fatal(err)
	}
	_, heal := netem(t, peer, "loss 100%")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fill(a.buf.Bytes()[:1024], 1)
	start := time.Now()
	if _, err := qa.PostSend([]uverbs.SendWR{{WRID: 1, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled,
		SGL: []uverbs.SGE{a.mr.SGE(0, 1024)}}}); err != nil {
		t.Fatal(err)
	}
	wcs := make([]uverbs.WC, 1)
	if err := poll(ctx, a.cq, wcs); err != nil {
		t.Fatalf("no completion for a send into a partition: %v", err)
	}
	took := time.Since(start)
	err := wcs[0].Err()
	if !errors.Is(err, uverbs.WCRetryExcErr) {
		t.Fatalf("send into a partition completed with %v, want %v", err, uverbs.WCRetryExcErr)
	}
	state := labtest.WaitQPErr(t, qa)
	if state != uverbs.QPStateErr {
		t.Errorf("after RETRY_EXC_ERR the QP is %v, want %v", state, uverbs.QPStateErr)
	}
	if m, err := b.cq.Poll(wcs); err != nil || m != 0 {
		t.Errorf("the partitioned peer saw %d completions (%v)", m, err)
	}
	t.Logf("partition: the send failed with %q after %v (timeout 10, retry 2); QP %v", err, took.Round(time.Millisecond), state)

	heal()
	qa2, qb2 := rcPair(t, a, b, 4, nil)
	if _, err := qb2.PostRecv([]uverbs.RecvWR{{WRID: 8, SGL: []uverbs.SGE{b.mr.SGE(4096, 1024)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := qa2.PostSend([]uverbs.SendWR{{WRID: 2, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled,
		SGL: []uverbs.SGE{a.mr.SGE(0, 1024)}}}); err != nil {
		t.Fatal(err)
	}
	for _, e := range []*end{a, b} {
		if err := poll(ctx, e.cq, wcs); err != nil {
			t.Fatalf("after healing, %s: %v", e.name, err)
		}
		if err := wcErr(wcs); err != nil {
			t.Fatalf("after healing, %s: %v", e.name, err)
		}
	}
	if seq, err := verify(b.buf.Bytes()[4096:][:1024]); err != nil || seq != 1 {
		t.Errorf("after healing the message arrived as %d, %v", seq, err)
	}
}

// portEvents returns the next event of ctx's device of one of the wanted types (others are logged).
func nextEvent(ctx context.Context, t *testing.T, c *uverbs.Context, want ...uverbs.AsyncEventType) (uverbs.AsyncEvent, error) {
	for {
		ev, err := c.AsyncEvent(ctx)
		if err != nil {
			return ev, err
		}
		for _, w := range want {
			if ev.Type == w {
				return ev, nil
			}
		}
		t.Logf("event %v (not waited for)", ev)
	}
}
