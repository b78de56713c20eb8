package faults

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goverbs/goverbs/test/interop"
	"github.com/goverbs/goverbs/test/labtest"
	"github.com/goverbs/goverbs/uverbs"
)

// The soak's protocol, shared with the C peer (test/cpeer/soakpeer.c, where it is described in full): a
// labtest.CPeerRecord each way (W: size, slots, mode), then SIZE-byte messages (sequence number, CRC-32C of
// the payload, payload length, payload) from SLOTS slots, each returned by an 8-byte credit SEND once the
// receiver has checked it, between two TCP barriers (after connecting and posting receives; at the end, the
// receiver's count answered by the sender once every send has completed).
const (
	soakMagic       = 0x4b535647 // "GVSK"
	soakHeader      = 16
	soakPoolOffsets = 251
	soakPoolStride  = 4093
	soakSize        = 64 << 10
	soakSlots       = 16
)

// soakPool is the sender's read-only payload source: message seq carries the payload at offset
// soakPoolOffset(seq), whose CRC-32C is computed once.
type soakPool struct {
	buf  []byte
	sums [soakPoolOffsets]uint32
}

func newSoakPool(payload int) *soakPool {
	p := &soakPool{buf: make([]byte, soakPoolOffsets*soakPoolStride+payload)}
	x := uint64(0x9e3779b97f4a7c15)
	for i := range p.buf {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		p.buf[i] = byte(x >> 32)
	}
	for k := range p.sums {
		p.sums[k] = crc32.Checksum(p.buf[k*soakPoolStride:][:payload], castagnoli)
	}
	return p
}

func soakPoolOffset(seq uint64) int { return int((seq * 0x9e3779b97f4a7c15 >> 40) % soakPoolOffsets) }

// soakParams is one side of one leg.
type soakParams struct {
	dev    string
	sender bool
	write  bool
	count  uint64
	moved  *atomic.Uint64 // bytes this side has completed (sent and acknowledged, or received and checked)
}

// soakResult is what one side reports.
type soakResult struct {
	bytes  uint64
	events int
}

// soakSide is goverbs' side of a leg: everything is closed by close, in reverse order.
type soakSide struct {
	ctx     *uverbs.Context
	ch      *uverbs.CompChannel
	pd      *uverbs.PD
	cq      *uverbs.CQ
	buf     *uverbs.Buffer
	mr      *uverbs.MR
	poolBuf *uverbs.Buffer
	poolMR  *uverbs.MR
	qp      *uverbs.QP
	armed   bool
	events  int
}

func (s *soakSide) close() error {
	var errs []error
	add := func(what string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", what, err))
		}
	}
	if s.qp != nil {
		add("QP", s.qp.Close())
	}
	if s.cq != nil {
		add("CQ", s.cq.Close())
	}
	if s.poolMR != nil {
		add("pool MR", s.poolMR.Close())
	}
	if s.mr != nil {
		add("MR", s.mr.Close())
	}
	if s.poolBuf != nil {
		add("pool buffer", s.poolBuf.Close())
	}
	if s.buf != nil {
		add("buffer", s.buf.Close())
	}
	if s.pd != nil {
		add("PD", s.pd.Close())
	}
	if s.ch != nil {
		add("completion channel", s.ch.Close())
	}
	if s.ctx != nil {
		add("context", s.ctx.Close())
	}
	return errors.Join(errs...)
}

// next returns up to len(wcs) completions, waiting for a completion event when there are none.
func (s *soakSide) next(ctx context.Context, wcs []uverbs.WC) (int, error) {
	for {
		n, err := s.cq.Poll(wcs)
		if err != nil || n > 0 {
			return n, err
		}
		if !s.armed {
			if err := s.cq.ReqNotify(false); err != nil {
				return 0, err
			}
			s.armed = true
			continue
		}
		cq, err := s.ch.GetEvent(ctx)
		if err != nil {
			return 0, err
		}
		cq.AckEvents(1)
		s.armed = false
		s.events++
	}
}

// state says, after a wait that failed, what the side's CQ and QP hold: completions waiting in the CQ mean
// an event was lost on the way to the waiter; none, with the QP's send PSN ahead of what was acknowledged,
// mean the device stopped completing.
func (s *soakSide) state(wcs []uverbs.WC) string {
	var b strings.Builder
	n, err := s.cq.Poll(wcs)
	fmt.Fprintf(&b, "%d events; the CQ then held %d completions", s.events, n)
	if err != nil {
		fmt.Fprintf(&b, " (poll: %v)", err)
	}
	for i := range wcs[:n] {
		fmt.Fprintf(&b, " [%v %d %v]", wcs[i].Opcode, wcs[i].WRID, wcs[i].Status)
	}
	if a, err := s.qp.Query(uverbs.QPAttrState | uverbs.QPAttrSQPSN | uverbs.QPAttrRQPSN); err != nil {
		fmt.Fprintf(&b, "; query QP: %v", err)
	} else {
		fmt.Fprintf(&b, "; QP %#x %v, SQ PSN %#x, RQ PSN %#x", s.qp.QPN(), a.State, a.SQPSN, a.RQPSN)
	}
	return b.String()
}

// runSoak is goverbs' side of a leg over conn (the TCP side channel, closed by the caller).
func runSoak(ctx context.Context, conn net.Conn, p soakParams) (res soakResult, err error) {
	const size, slots = soakSize, soakSlots
	payload := size - soakHeader
	s := &soakSide{}
	defer func() {
		if cerr := s.close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if s.ctx, err = uverbs.Open(p.dev); err != nil {
		return res, err
	}
	if s.ch, err = s.ctx.CreateCompChannel(nil); err != nil {
		return res, err
	}
	if s.pd, err = s.ctx.AllocPD(); err != nil {
		return res, err
	}
	if s.buf, err = uverbs.AllocBuffer(slots*size + slots*8); err != nil {
		return res, err
	}
	if s.mr, err = s.pd.RegMR(s.buf.Bytes(), uverbs.AccessLocalWrite|uverbs.AccessRemoteWrite); err != nil {
		return res, err
	}
	var pool *soakPool
	if p.sender {
		pool = newSoakPool(payload)
		if s.poolBuf, err = uverbs.AllocBuffer(len(pool.buf)); err != nil {
			return res, err
		}
		copy(s.poolBuf.Bytes(), pool.buf)
		if s.poolMR, err = s.pd.RegMR(s.poolBuf.Bytes(), 0); err != nil {
			return res, err
		}
	}
	if s.cq, err = s.ctx.CreateCQ(uverbs.CQAttr{CQE: 4 * slots, Channel: s.ch}); err != nil {
		return res, err
	}
	if s.qp, err = s.pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: s.cq, RecvCQ: s.cq,
		Cap: uverbs.QPCap{MaxSendWR: 2 * slots, MaxRecvWR: slots, MaxSendSGE: 2, MaxRecvSGE: 1}}); err != nil {
		return res, err
	}
	ep, err := s.qp.Endpoint(&uverbs.EndpointOptions{Port: 1, GIDIndex: 1, PSN: rand.Uint32() & 0xffffff})
	if err != nil {
		return res, err
	}
	buf := s.buf.Bytes()
	mode := uint32(0)
	if p.write {
		mode = 1
	}
	me := labtest.CPeerRecord{Magic: soakMagic, QPN: ep.QPN, PSN: ep.PSN, GID: ep.GID, Addr: s.mr.Addr(),
		RKey: s.mr.RKey(), W: [3]uint32{size, slots, mode}, Count: p.count}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	if _, err := conn.Write(me.Marshal()); err != nil {
		return res, fmt.Errorf("TCP write: %w", err)
	}
	rec := make([]byte, labtest.CPeerRecordSize)
	if _, err := io.ReadFull(conn, rec); err != nil {
		return res, fmt.Errorf("TCP read: %w", err)
	}
	them, err := labtest.ParseCPeerRecord(rec, soakMagic)
	if err != nil {
		return res, err
	}
	if them.W != me.W || them.Count != p.count {
		return res, fmt.Errorf("the peer runs another size, slot count, mode or message count: %+v", them)
	}
	opts := uverbs.DefaultConnectOptions()
	opts.MTU = uverbs.MTU1024
	opts.Timeout = 12 // 16.8 ms: a lost last packet (or its ACK) stalls the stream a quarter of the tools' 67 ms
	opts.Access = uverbs.AccessLocalWrite | uverbs.AccessRemoteWrite
	if err := s.qp.Connect(uverbs.Endpoint{QPN: them.QPN, PSN: them.PSN, GID: them.GID, Port: 1, MTU: uverbs.MTU1024}, &opts); err != nil {
		return res, err
	}

	credits := size * slots
	le := binary.LittleEndian
	wcs := make([]uverbs.WC, 32)
	rwr := []uverbs.RecvWR{{SGL: make([]uverbs.SGE, 1)}}
	postRecv := func(id uint64, off, n int) error {
		rwr[0].WRID = id
		rwr[0].SGL = rwr[0].SGL[:0]
		if n > 0 {
			rwr[0].SGL = append(rwr[0].SGL, s.mr.SGE(off, n))
		}
		_, err := s.qp.PostRecv(rwr)
		return err
	}
	swr := []uverbs.SendWR{{SGL: make([]uverbs.SGE, 2), Flags: uverbs.SendSignaled}}
	// barrier writes one byte and reads the peer's: after both have connected and posted their receives
	// (nothing is sent to a QP not yet ready for it), and at the end (below).
	barrier := func(what string) error {
		if _, err := conn.Write([]byte{'R'}); err != nil {
			return fmt.Errorf("TCP write (%s): %w", what, err)
		}
		if _, err := io.ReadFull(conn, rec[:1]); err != nil {
			return fmt.Errorf("TCP read (%s): %w", what, err)
		}
		return nil
	}
	if p.sender {
		var seq, completed, credited uint64
		for i := 0; i < slots; i++ {
			if err := postRecv(uint64(i), credits+i*8, 8); err != nil {
				return res, err
			}
		}
		if err := barrier("ready"); err != nil {
			return res, err
		}
		for completed < p.count || credited < p.count {
			for seq < p.count && seq < completed+slots && seq < credited+slots {
				slot, k := int(seq%slots), soakPoolOffset(seq)
				h := buf[slot*size:]
				le.PutUint64(h[0:], seq)
				le.PutUint32(h[8:], pool.sums[k])
				le.PutUint32(h[12:], uint32(payload))
				w := &swr[0]
				w.WRID = seq
				w.SGL[0] = s.mr.SGE(slot*size, soakHeader)
				w.SGL[1] = s.poolMR.SGE(k*soakPoolStride, payload)
				if p.write {
					w.Opcode, w.Imm = uverbs.WRRDMAWriteWithImm, uint32(seq)
					w.RemoteAddr, w.RKey = them.Addr+uint64(slot*size), them.RKey
				} else {
					w.Opcode = uverbs.WRSend
				}
				if _, err := s.qp.PostSend(swr); err != nil {
					return res, err
				}
				seq++
			}
			n, err := s.next(ctx, wcs)
			if err != nil {
				return res, fmt.Errorf("sent %d, %d completed, %d credited: %w (%s)", seq, completed, credited, err, s.state(wcs))
			}
			for i := range wcs[:n] {
				wc := &wcs[i]
				if err := wc.Err(); err != nil {
					return res, fmt.Errorf("work request %d: %w", wc.WRID, err)
				}
				if wc.Opcode&uverbs.WCRecv != 0 {
					if c := le.Uint64(buf[credits+int(wc.WRID)*8:]); c != credited {
						return res, fmt.Errorf("credit %d returned message %d", credited, c)
					}
					credited++
					if err := postRecv(wc.WRID, credits+int(wc.WRID)*8, 8); err != nil {
						return res, err
					}
					continue
				}
				if wc.WRID != completed {
					return res, fmt.Errorf("send %d completed as %d", completed, wc.WRID)
				}
				completed++
				res.bytes += size
				p.moved.Add(size)
			}
		}
		if _, err := io.ReadFull(conn, rec[:16]); err != nil {
			return res, fmt.Errorf("TCP read of the receiver's count: %w", err)
		}
		if c, b := le.Uint64(rec[0:]), le.Uint64(rec[8:]); c != p.count || b != res.bytes {
			return res, fmt.Errorf("the receiver checked %d messages, %d bytes; sent %d, %d", c, b, p.count, res.bytes)
		}
		// Every send has completed: the receiver may destroy its QP. Before this answer it must not: rxe
		// retries a retry count of 7 for ever, and a last ACK lost on its way here would leave this side
		// retransmitting towards a destroyed QP (TestLabSoak met it: "send go→go: sent 16, 15 completed,
		// 16 credited", completer_retry_err +5841, the CQ empty after the leg's bound).
		if _, err := conn.Write([]byte{'R'}); err != nil {
			return res, fmt.Errorf("TCP write of the end: %w", err)
		}
	} else {
		var expected, creditPosted, creditDone uint64
		const sqDepth = 2 * slots
		recvLen := size
		if p.write {
			recvLen = 0
		}
		for i := 0; i < slots; i++ {
			if err := postRecv(uint64(i), i*size, recvLen); err != nil {
				return res, err
			}
		}
		if err := barrier("ready"); err != nil {
			return res, err
		}
		for expected < p.count || creditDone < p.count {
			n, err := s.next(ctx, wcs)
			if err != nil {
				return res, fmt.Errorf("received %d, %d credits completed: %w (%s)", expected, creditDone, err, s.state(wcs))
			}
			for i := range wcs[:n] {
				wc := &wcs[i]
				if err := wc.Err(); err != nil {
					return res, fmt.Errorf("work request %d: %w", wc.WRID, err)
				}
				if wc.Opcode&uverbs.WCRecv == 0 {
					creditDone++
					continue
				}
				slot := int(expected % slots)
				m := buf[slot*size:][:size]
				var bad string
				switch {
				case wc.WRID != uint64(slot):
					bad = "completed in another slot"
				case wc.ByteLen != size:
					bad = fmt.Sprintf("has %d bytes", wc.ByteLen)
				case p.write && (wc.Flags&uverbs.WCWithImm == 0 || wc.Imm != uint32(expected)):
					bad = fmt.Sprintf("carries immediate %d", wc.Imm)
				case le.Uint64(m[0:]) != expected:
					bad = "carries another sequence number"
				case le.Uint32(m[12:]) != uint32(payload):
					bad = "carries another payload length"
				case crc32.Checksum(m[soakHeader:], castagnoli) != le.Uint32(m[8:]):
					bad = "fails its checksum"
				}
				if bad != "" {
					return res, fmt.Errorf("message %d %s (header seq %d)", expected, bad, le.Uint64(m[0:]))
				}
				res.bytes += size
				p.moved.Add(size)
				if err := postRecv(uint64(slot), slot*size, recvLen); err != nil {
					return res, err
				}
				expected++
			}
			for ; creditPosted < expected && creditPosted-creditDone < sqDepth; creditPosted++ {
				off := credits + int(creditPosted%slots)*8
				le.PutUint64(buf[off:], creditPosted)
				w := &swr[0]
				w.WRID, w.Opcode = creditPosted, uverbs.WRSend
				w.SGL = w.SGL[:1]
				w.SGL[0] = s.mr.SGE(off, 8)
				if _, err := s.qp.PostSend(swr); err != nil {
					return res, err
				}
			}
		}
		le.PutUint64(rec[0:], p.count)
		le.PutUint64(rec[8:], res.bytes)
		if _, err := conn.Write(rec[:16]); err != nil {
			return res, fmt.Errorf("TCP write of the count: %w", err)
		}
		if _, err := io.ReadFull(conn, rec[:1]); err != nil { // the sender has every acknowledgment
			return res, fmt.Errorf("TCP read of the end: %w", err)
		}
	}
	res.events = s.events
	return res, nil
}

// soakSample is one point of the resource curve.
type soakSample struct {
	at              time.Duration
	leg             string
	moved           uint64 // bytes in all legs so far
	rss, heap       uint64
	goroutines, fds int
	cRSS            uint64 // the C peer's, when one runs
}

func (s soakSample) String() string {
	c := "-"
	if s.cRSS > 0 {
		c = strconv.FormatUint(s.cRSS>>10, 10)
	}
	return fmt.Sprintf("%8.1f %-14s %10.1f %8d %8d %4d %4d %8s", s.at.Seconds(), s.leg, float64(s.moved)/(1<<20),
		s.rss>>10, s.heap>>10, s.goroutines, s.fds, c)
}

const soakSampleHeader = "   t [s] leg              MiB moved  RSS KiB heap KiB  gor  fds  C RSS KiB"

// rssOf reads VmRSS of /proc/PID/status (0 when the process is gone).
func rssOf(pid string) uint64 {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

func fdCount() int {
	ents, _ := os.ReadDir("/proc/self/fd")
	return len(ents)
}

// TestLabSoak streams checksummed messages over RC between the two hosts under netem loss (1 % both ways by
// default): SEND and RDMA WRITE WITH IMM, goverbs → rdma-core's libibverbs, libibverbs → goverbs, and goverbs →
// goverbs, each leg GOVERBS_SOAK_BYTES (default 16 MiB; `make soak` runs 2 GiB per leg, 12 GiB in all). Every
// message is checked on arrival (order, length, CRC-32C); the test records the resource curve of its own
// process (RSS, heap, goroutines, fds) and of the C peer, and fails if goverbs' side grows.
func TestLabSoak(t *testing.T) {
	peer := labtest.TwoHosts(t)
	perLeg := uint64(16 << 20)
	if v := os.Getenv("GOVERBS_SOAK_BYTES"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n < soakSize {
			t.Fatalf("GOVERBS_SOAK_BYTES=%q: want a byte count of at least %d", v, soakSize)
		}
		perLeg = n
	}
	spec := "loss 1%"
	if v := os.Getenv("GOVERBS_SOAK_NETEM"); v != "" {
		spec = v
	}
	count := perLeg / soakSize
	cpeer := labtest.BuildCPeer(t, "soakpeer")
	drops, _ := netem(t, peer, spec)
	before := [2]map[string]int64{counters(t, labtest.Device()), counters(t, peer.Device)}

	baseGoroutines, baseFDs := runtime.NumGoroutine(), fdCount()
	var moved atomic.Uint64
	var legName atomic.Value
	legName.Store("start")
	var cPID atomic.Value
	cPID.Store("")
	start := time.Now()
	var samples []soakSample
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		s := soakSample{at: time.Since(start), leg: legName.Load().(string), moved: moved.Load(),
			rss: rssOf("self"), heap: ms.HeapInuse, goroutines: runtime.NumGoroutine(), fds: fdCount()}
		if pid := cPID.Load().(string); pid != "" {
			s.cRSS = rssOf(pid)
		}
		samples = append(samples, s)
	}
	sample()
	every := 2 * time.Second
	if perLeg >= 256<<20 {
		every = 15 * time.Second
	}
	stop, stopped := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	go func() {
		defer close(stopped)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				mu.Lock()
				sample()
				mu.Unlock()
			}
		}
	}()

	type leg struct {
		name     string
		write    bool
		goSender bool // goverbs sends; otherwise it receives
		cPeer    bool // the other side is rdma-core's libibverbs (soakpeer), else goverbs
	}
	legs := []leg{
		{"send go→c", false, true, true}, {"send c→go", false, false, true},
		{"write go→c", true, true, true}, {"write c→go", true, false, true},
		{"send go→go", false, true, false}, {"write go→go", true, true, false},
	}
	// A leg may take 1 s per MiB (ten times the slowest rate seen) plus set-up.
	legTimeout := time.Duration(perLeg>>20)*time.Second + 2*time.Minute
	if v := os.Getenv("GOVERBS_SOAK_LEGS"); v != "" { // a regular expression on the legs' names, to rerun one
		re, err := regexp.Compile(v)
		if err != nil {
			t.Fatalf("GOVERBS_SOAK_LEGS: %v", err)
		}
		legs = slices.DeleteFunc(legs, func(l leg) bool { return !re.MatchString(l.name) })
		if len(legs) == 0 {
			t.Fatalf("GOVERBS_SOAK_LEGS=%q names no leg", v)
		}
	}
	var rssAfterFirst uint64
	for i, l := range legs {
		legName.Store(strings.ReplaceAll(l.name, " ", "-"))
		legStart := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), legTimeout)
		var out string
		var err error
		if l.cPeer {
			out, err = soakWithC(ctx, t, peer, cpeer, l.write, l.goSender, count, &moved, &cPID)
		} else {
			err = soakGoGo(ctx, peer, l.write, count, &moved)
		}
		cancel()
		if err != nil {
			now := [2]map[string]int64{counters(t, labtest.Device()), counters(t, peer.Device)}
			d0, d1 := drops()
			t.Fatalf("%s: %v\nsince the soak began: netem dropped %d on %s, %d on %s; %s: %s; %s: %s", l.name, err,
				d0, labtest.Netdev(), d1, peer.Netdev, labtest.Device(), delta(before[0], now[0], recoveryCounters...),
				peer.Device, delta(before[1], now[1], recoveryCounters...))
		}
		el := time.Since(legStart)
		t.Logf("%s: %d messages of %d B = %.1f MiB intact and in order in %v (%.1f MiB/s)%s", l.name, count, soakSize,
			float64(count*soakSize)/(1<<20), el.Round(time.Millisecond), float64(count*soakSize)/(1<<20)/el.Seconds(), out)
		if i == 0 {
			mu.Lock()
			sample()
			rssAfterFirst = samples[len(samples)-1].rss
			mu.Unlock()
		}
	}
	close(stop)
	<-stopped
	legName.Store("end")
	sample()
	after := [2]map[string]int64{counters(t, labtest.Device()), counters(t, peer.Device)}
	d0, d1 := drops()
	t.Logf("netem %q: dropped %d on %s, %d on %s; %s: %s; %s: %s", spec, d0, labtest.Netdev(), d1, peer.Netdev,
		labtest.Device(), delta(before[0], after[0], recoveryCounters...),
		peer.Device, delta(before[1], after[1], recoveryCounters...))

	var maxRSS uint64
	var curve strings.Builder
	curve.WriteString(soakSampleHeader + "\n")
	for _, s := range samples {
		curve.WriteString(s.String() + "\n")
		if s.rss > maxRSS {
			maxRSS = s.rss
		}
	}
	t.Logf("resource curve (every %v; goverbs is this test process):\n%s", every, curve.String())
	t.Logf("%.1f MiB in %d legs in %v; RSS after the first leg %d KiB, at most %d KiB after it",
		float64(moved.Load())/(1<<20), len(legs), time.Since(start).Round(time.Second), rssAfterFirst>>10, maxRSS>>10)
	// Nothing per message may stay behind: after the first leg every buffer size is known, so RSS may move
	// with the garbage collector's cycles, not grow with the volume.
	const slack = 32 << 20
	if maxRSS > rssAfterFirst+slack {
		t.Errorf("RSS grew from %d KiB after the first leg to %d KiB (slack %d KiB)", rssAfterFirst>>10, maxRSS>>10, slack>>10)
	}
	// Every leg closed its objects, channels, connections and goroutines.
	waitUntil := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > baseGoroutines && time.Now().Before(waitUntil) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > baseGoroutines {
		t.Errorf("%d goroutines after the soak, %d before", n, baseGoroutines)
	}
	if n := fdCount(); n > baseFDs {
		t.Errorf("%d file descriptors after the soak, %d before", n, baseFDs)
	}
}

var soakPort atomic.Int32

// soakWithC runs one leg against the C peer on the other host: the peer listens, goverbs connects.
func soakWithC(ctx context.Context, t *testing.T, peer *labtest.PeerHost, cpeer string, write, goSender bool,
	count uint64, moved *atomic.Uint64, cPID *atomic.Value) (string, error) {
	port := 18700 + int(soakPort.Add(1))
	mode, role := "send", "receiver"
	if write {
		mode = "write"
	}
	if !goSender {
		role = "sender"
	}
	cmd := exec.CommandContext(ctx, cpeer, "-d", peer.Device, "-g", "1", "-m", mode, "-r", role,
		"-s", strconv.Itoa(soakSize), "-n", strconv.FormatUint(count, 10), "-w", strconv.Itoa(soakSlots),
		"-p", strconv.Itoa(port))
	peer.Enter(cmd)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(done) }()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { // a C peer that fails ends goverbs' wait for it
		select {
		case <-done:
			if waitErr != nil {
				cancel()
			}
		case <-ctx.Done():
		}
	}()
	cPID.Store(strconv.Itoa(cmd.Process.Pid))
	defer cPID.Store("")
	fail := func(err error) (string, error) {
		cmd.Process.Kill()
		<-done
		return "", fmt.Errorf("%w; C peer: %v, stderr %q", err, waitErr, stderr.String())
	}
	if err := interop.WaitListeningIn(cmd.Process.Pid, port, 60*time.Second, done); err != nil {
		return fail(err)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(peer.Addr, strconv.Itoa(port)))
	if err != nil {
		return fail(err)
	}
	res, err := runSoak(ctx, conn, soakParams{dev: labtest.Device(), sender: goSender, write: write, count: count, moved: moved})
	conn.Close()
	if err != nil {
		return fail(err)
	}
	<-done
	if waitErr != nil {
		return "", fmt.Errorf("C peer: %v, stderr %q", waitErr, stderr.String())
	}
	want := fmt.Sprintf("soakpeer: %s %s: %d messages, %d bytes intact and in order", map[bool]string{true: "received", false: "sent"}[goSender], mode, count, count*soakSize)
	if !strings.HasPrefix(stdout.String(), want) {
		return "", fmt.Errorf("C peer printed %q, want %q...", stdout.String(), want)
	}
	return fmt.Sprintf("; goverbs waited for %d completion events; %s", res.events, strings.TrimSpace(strings.TrimPrefix(stdout.String(), "soakpeer: "))), nil
}

// soakGoGo runs one leg between two goverbs sides in this process: rxe0 sends, the peer host's device
// receives (the TCP side channel stays on the loopback; the RDMA traffic crosses the veth).
func soakGoGo(ctx context.Context, peer *labtest.PeerHost, write bool, count uint64, moved *atomic.Uint64) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go func() { <-ctx.Done(); ln.Close() }() // a sender that never dials must not leave Accept waiting
	errc := make(chan error, 2)
	var recvMoved atomic.Uint64
	side := func(name string, dial bool, p soakParams) {
		var conn net.Conn
		var err error
		if dial {
			var d net.Dialer
			conn, err = d.DialContext(ctx, "tcp", ln.Addr().String())
		} else {
			conn, err = ln.Accept()
		}
		if err == nil {
			_, err = runSoak(ctx, conn, p)
			conn.Close()
		}
		if err != nil {
			err = fmt.Errorf("%s: %w", name, err)
			cancel() // the other side would wait for its peer until the leg's deadline
		}
		errc <- err
	}
	go side("receiver", false, soakParams{dev: peer.Device, write: write, count: count, moved: &recvMoved})
	go side("sender", true, soakParams{dev: labtest.Device(), sender: true, write: write, count: count, moved: moved})
	return errors.Join(<-errc, <-errc)
}
