package perftest

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/goverbs/goverbs/uverbs"
)

// Duration states (perftest's DurationStates).
const (
	stStart int32 = iota
	stSample
	stStopSample
	stEnd
)

// duration drives -D runs: margin, sample window, margin, end (catch_alarm's state machine on timers).
type duration struct {
	state     atomic.Int32
	sampleBeg atomic.Int64
	sampleEnd atomic.Int64
	iters     atomic.Uint64 // completions counted in the sample window
	timers    []*time.Timer
}

func (d *duration) start(p *Params) {
	d.state.Store(stStart)
	margin := time.Duration(p.Margin) * time.Second
	window := time.Duration(p.Duration-2*p.Margin) * time.Second
	toSample := func() {
		d.sampleBeg.Store(now())
		d.state.Store(stSample)
	}
	toStop := func() {
		d.sampleEnd.Store(now())
		d.state.Store(stStopSample)
	}
	if margin > 0 {
		d.timers = append(d.timers, time.AfterFunc(margin, toSample))
	} else {
		toSample()
	}
	d.timers = append(d.timers, time.AfterFunc(margin+window, func() {
		toStop()
		if margin == 0 {
			d.state.Store(stEnd)
		}
	}))
	if margin > 0 {
		d.timers = append(d.timers, time.AfterFunc(2*margin+window, func() { d.state.Store(stEnd) }))
	}
}

func (d *duration) reset() {
	d.stop()
	d.timers = d.timers[:0]
	d.state.Store(stStart)
	d.iters.Store(0)
	d.sampleBeg.Store(0)
	d.sampleEnd.Store(0)
}

// begin resets d for a run and, for a -D run, starts its timers; d.stop must follow.
func (d *duration) begin(p *Params, dur bool) {
	d.reset()
	if dur {
		d.start(p)
	}
}

func (d *duration) stop() {
	for _, t := range d.timers {
		t.Stop()
	}
}

// progress prints, every second of a -D run with --progress, the completions so far on stderr.
func progress(ctx context.Context, w io.Writer, count *atomic.Uint64) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var last uint64
	for s := 1; ; s++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n := count.Load()
			fmt.Fprintf(w, " progress: %d s, %d completions (+%d)\n", s, n, n-last)
			last = n
		}
	}
}

// sampled records a -D run's sample window as its first post and last completion and returns the
// completions counted in it: the iterations to report.
func (s *session) sampled() uint64 {
	s.tposted[0], s.tcompleted[0] = s.dur.sampleBeg.Load(), s.dur.sampleEnd.Load()
	return s.dur.iters.Load()
}

func (s *session) waitEvent() error {
	cq, err := s.ch.GetEvent(context.Background())
	if err != nil {
		return err
	}
	cq.AckEvents(1)
	return cq.ReqNotify(false)
}

// compErrSend prints perftest's report of a failed send completion and returns the error that ends the run.
func compErrSend(stderr io.Writer, wc *uverbs.WC, scnt, ccnt uint64) error {
	fmt.Fprintf(stderr, " Completion with error at client\n")
	fmt.Fprintf(stderr, " Failed status %d: wr_id %d syndrom 0x%x\n", wc.Status, wc.WRID, wc.VendorErr)
	fmt.Fprintf(stderr, "scnt=%d, ccnt=%d\n", scnt, ccnt)
	return fmt.Errorf("send completion status %d", wc.Status)
}

// compErrRecv prints perftest's report of a failed receive completion and returns the error that ends the run.
func compErrRecv(stderr io.Writer, wc *uverbs.WC, rcnt uint64) error {
	fmt.Fprintf(stderr, " Completion with error at server\n")
	fmt.Fprintf(stderr, " Failed status %d: wr_id %d\n", wc.Status, wc.WRID)
	fmt.Fprintf(stderr, " rcnt=%d\n", rcnt)
	return fmt.Errorf("receive completion status %d", wc.Status)
}

// pollFailed prints perftest's message for a failed CQ poll and returns err.
func pollFailed(stderr io.Writer, err error) error {
	fmt.Fprintf(stderr, "poll CQ failed %d\n", -1)
	return err
}

// runBW is run_iter_bw (the sender of a bandwidth test). It returns the iterations to report.
func (s *session) runBW(stderr io.Writer, count *atomic.Uint64) (uint64, error) {
	p := s.p
	nq := p.NumQPs
	cqMod := uint64(p.CQMod)
	iters := p.Iters
	dur := p.TestType == byDuration
	d := &s.dur
	d.begin(p, dur)
	defer d.stop()
	totIters := iters * uint64(nq)
	var totS, totC uint64
	if !dur && p.NoPeak {
		s.tposted[0] = now()
	}
	wc := s.wc
	y := newYielder(s.rate)
	for totS < totIters || totC < totIters || (dur && d.state.Load() != stEnd) {
		y.check()
		for idx := 0; idx < nq; idx++ {
			if err := s.postSends(stderr, idx, &totS, p.Verb != VerbSend); err != nil {
				return 0, err
			}
		}
		if totC < totIters || (dur && totC < totS) {
			if p.UseEvent {
				if err := s.waitEvent(); err != nil {
					fmt.Fprintf(stderr, "Couldn't request CQ notification\n")
					return 0, err
				}
			}
			ne, perr := s.sendCQ.Poll(wc)
			if perr != nil {
				return 0, pollFailed(stderr, perr)
			}
			for i := 0; i < ne; i++ {
				id := int(wc[i].WRID)
				if wc[i].Status != uverbs.WCSuccess {
					return 0, compErrSend(stderr, &wc[i], totS, totC)
				}
				s.ccnt[id] += cqMod
				totC += cqMod
				if !p.NoPeak {
					if totC > totIters {
						s.tcompleted[iters*uint64(nq)-1] = now()
					} else {
						s.tcompleted[totC-1] = now()
					}
				}
				if dur && d.state.Load() == stSample {
					d.iters.Add(cqMod)
				}
				if count != nil {
					count.Add(cqMod)
				}
			}
		}
	}
	if !dur && p.NoPeak {
		s.tcompleted[0] = now()
	}
	if dur {
		return s.sampled(), nil
	}
	return iters, nil
}

// runBWServer is run_iter_bw_server (the receiver of ib_send_bw).
func (s *session) runBWServer(stderr io.Writer, count *atomic.Uint64) (uint64, error) {
	p := s.p
	nq := p.NumQPs
	iters := p.Iters
	totIters := iters * uint64(nq)
	dur := p.TestType == byDuration
	d := &s.dur
	d.reset()
	rcnt := uint64(0)
	rcntQP := s.rcntQP
	posted := s.postedQP
	for i := range posted {
		rcntQP[i] = 0
		posted[i] = uint64(s.rposted)
	}
	first := true
	wc := s.wc
	y := newYielder(s.rate)
	defer d.stop()
	for rcnt < totIters || (dur && d.state.Load() != stEnd) {
		if p.UseEvent {
			if err := s.waitEvent(); err != nil {
				fmt.Fprintf(stderr, " Failed to notify events to CQ")
				return 0, err
			}
		}
		for {
			y.spin()
			if dur && d.state.Load() == stEnd {
				break
			}
			ne, perr := s.recvCQ.Poll(wc)
			if perr != nil {
				return 0, pollFailed(stderr, perr)
			}
			if ne == 0 {
				break
			}
			if first {
				if dur {
					d.start(p)
				} else {
					s.tposted[0] = now()
				}
				first = false
			}
			for i := 0; i < ne; i++ {
				id := int(wc[i].WRID)
				if wc[i].Status != uverbs.WCSuccess {
					return 0, compErrRecv(stderr, &wc[i], rcntQP[id])
				}
				rcntQP[id]++
				rcnt++
				if dur && d.state.Load() == stSample {
					d.iters.Add(1)
				}
				if count != nil {
					count.Add(1)
				}
				if dur || posted[id]+1 <= iters {
					if _, err := s.qps[id].PostRecv(s.rwr[id : id+1]); err != nil {
						fmt.Fprintf(stderr, "Couldn't post recv Qp=%d rcnt=%d\n", id, rcntQP[id])
						return 0, err
					}
					posted[id]++
					sz := p.Size
					if p.Conn == ConnUD {
						sz += udAddition
					}
					if sz <= uint64(p.CycleBuffer/2) {
						s.incLoc(&s.rsge[id], posted[id], s.rxAdr[id])
					}
				}
			}
		}
	}
	if dur {
		return s.sampled(), nil
	}
	s.tcompleted[0] = now()
	return iters, nil
}

// runLatWrite is run_iter_lat_write: ping-pong by RDMA writes, each side polling the last byte of its buffer.
func (s *session) runLatWrite(stderr io.Writer) (uint64, error) {
	p := s.p
	w := &s.wr[0]
	w.SGL[0].Length = uint32(p.Size)
	w.Flags = uverbs.SendSignaled
	if p.Size <= uint64(p.InlineSize) {
		w.Flags |= uverbs.SendInline
	}
	mem := s.buf.Bytes()
	postOff := p.Size - 1
	pollOff := uint64(p.NumQPs)*buffSize(s.size, p.CycleBuffer) + p.Size - 1
	post := &mem[postOff]
	poll := (*uint8)(&mem[pollOff])
	iters := p.Iters
	dur := p.TestType == byDuration
	d := &s.dur
	d.begin(p, dur)
	defer d.stop()
	var scnt, ccnt, rcnt uint64
	wcs := s.wc[:1]
	y := newYielder(s.rate)
	for scnt < iters || ccnt < iters || rcnt < iters || (dur && d.state.Load() != stEnd) {
		if (rcnt < iters || dur) && !(scnt < 1 && p.Server) {
			rcnt++
			for atomicLoad8(poll) != uint8(rcnt) && d.state.Load() != stEnd {
				y.spin()
			}
		}
		if scnt < iters || dur {
			if p.LatencyGap > 0 {
				spinGap(p.LatencyGap, s.rate)
			}
			if !dur {
				s.tposted[scnt] = now()
			}
			scnt++
			atomicStore8(post, uint8(scnt))
			if _, err := s.qps[0].PostSend(s.wr[:1]); err != nil {
				fmt.Fprintf(stderr, "Couldn't post send: scnt=%d\n", scnt)
				return 0, err
			}
		}
		if dur && d.state.Load() == stEnd {
			break
		}
		if ccnt < iters || dur {
			ne := 0
			for ne == 0 {
				var perr error
				ne, perr = s.sendCQ.Poll(wcs)
				if perr != nil {
					return 0, pollFailed(stderr, perr)
				}
				y.spin()
			}
			if wcs[0].Status != uverbs.WCSuccess {
				return 0, compErrSend(stderr, &wcs[0], scnt, ccnt)
			}
			ccnt++
			if dur && d.state.Load() == stSample {
				d.iters.Add(1)
			}
		}
	}
	if dur {
		return s.sampled(), nil
	}
	return iters, nil
}

// runLat is run_iter_lat: the client's read or atomic round trips.
func (s *session) runLat(stderr io.Writer) (uint64, error) {
	p := s.p
	w := &s.wr[0]
	w.SGL[0].Length = uint32(p.Size)
	w.Flags = uverbs.SendSignaled
	iters := p.Iters
	dur := p.TestType == byDuration
	d := &s.dur
	d.begin(p, dur)
	defer d.stop()
	var scnt uint64
	wcs := s.wc[:1]
	y := newYielder(s.rate)
	for scnt < iters || (dur && d.state.Load() != stEnd) {
		if p.LatencyGap > 0 {
			spinGap(p.LatencyGap, s.rate)
		}
		if !dur {
			s.tposted[scnt] = now()
			scnt++
		}
		if _, err := s.qps[0].PostSend(s.wr[:1]); err != nil {
			fmt.Fprintf(stderr, "Couldn't post send: scnt=%d\n", scnt)
			return 0, err
		}
		if dur && d.state.Load() == stEnd {
			break
		}
		if p.UseEvent {
			if err := s.waitEvent(); err != nil {
				fmt.Fprintf(stderr, "Couldn't request CQ notification\n")
				return 0, err
			}
		}
		for {
			y.spin()
			ne, perr := s.sendCQ.Poll(wcs)
			if perr != nil {
				return 0, pollFailed(stderr, perr)
			}
			if ne > 0 {
				if wcs[0].Status != uverbs.WCSuccess {
					return 0, compErrSend(stderr, &wcs[0], scnt, scnt)
				}
				if dur && d.state.Load() == stSample {
					d.iters.Add(1)
				}
			}
			if p.UseEvent || ne != 0 {
				break
			}
		}
	}
	if dur {
		return s.sampled(), nil
	}
	return iters, nil
}

// runLatSend is run_iter_lat_send: send/receive ping-pong.
func (s *session) runLatSend(stderr io.Writer) (uint64, error) {
	p := s.p
	w := &s.wr[0]
	w.SGL[0].Length = uint32(p.Size)
	w.Flags = 0
	if p.Size <= uint64(p.InlineSize) {
		w.Flags |= uverbs.SendInline
	}
	iters := p.Iters
	dur := p.TestType == byDuration
	d := &s.dur
	d.reset()
	defer d.stop()
	sizePerQP := uint64(p.RxDepth)
	var scnt, rcnt uint64
	first := true
	poll := false
	wcs := s.wc[:1]
	swc := s.wc[1:2]
	y := newYielder(s.rate)
	for scnt < iters || rcnt < iters || (dur && d.state.Load() != stEnd) {
		if (rcnt < iters || dur) && !(scnt < 1 && !p.Server) {
			if p.UseEvent {
				if err := s.waitEvent(); err != nil {
					fmt.Fprintf(stderr, " Failed to notify events to CQ")
					return 0, err
				}
			}
			for {
				y.spin()
				ne, perr := s.recvCQ.Poll(wcs)
				if perr != nil {
					return 0, pollFailed(stderr, perr)
				}
				if dur && d.state.Load() == stEnd {
					break
				}
				if ne > 0 {
					if first {
						if dur {
							d.start(p)
						}
						first = false
					}
					if wcs[0].Status != uverbs.WCSuccess {
						return 0, compErrRecv(stderr, &wcs[0], rcnt)
					}
					rcnt++
					if dur && d.state.Load() == stSample {
						d.iters.Add(1)
					}
					if dur || rcnt+sizePerQP <= iters {
						id := wcs[0].WRID
						if _, err := s.qps[id].PostRecv(s.rwr[id : id+1]); err != nil {
							fmt.Fprintf(stderr, "Couldn't post recv: rcnt=%d\n", rcnt)
							return 0, err
						}
					}
				}
				if p.UseEvent || ne != 0 {
					break
				}
			}
		}
		if scnt < iters || (dur && d.state.Load() != stEnd) {
			if p.LatencyGap > 0 {
				spinGap(p.LatencyGap, s.rate)
			}
			if !dur {
				s.tposted[scnt] = now()
			}
			scnt++
			if scnt%uint64(p.CQMod) == 0 || (!dur && scnt == iters) {
				poll = true
				w.Flags |= uverbs.SendSignaled
			}
			if dur && d.state.Load() == stEnd {
				break
			}
			if _, err := s.qps[0].PostSend(s.wr[:1]); err != nil {
				fmt.Fprintf(stderr, "Couldn't post send: scnt=%d \n", scnt)
				return 0, err
			}
			if poll {
				if p.UseEvent {
					if err := s.waitEvent(); err != nil {
						fmt.Fprintf(stderr, " Failed to notify events to CQ")
						return 0, err
					}
				}
				ne := 0
				for {
					y.spin()
					var perr error
					ne, perr = s.sendCQ.Poll(swc)
					if perr != nil {
						return 0, pollFailed(stderr, perr)
					}
					if p.UseEvent || ne != 0 {
						break
					}
				}
				if ne > 0 && swc[0].Status != uverbs.WCSuccess {
					return 0, compErrSend(stderr, &swc[0], scnt, scnt)
				}
				poll = false
				w.Flags &^= uverbs.SendSignaled
			}
		}
	}
	if dur {
		return s.sampled(), nil
	}
	return iters, nil
}

// warmUp is perform_warm_up: a round of tx_depth posts whose completions are drained before measuring.
func (s *session) warmUp(stderr io.Writer) error {
	p := s.p
	for i, qp := range s.qps {
		w := &s.wr[i*p.PostList]
		saved := w.Flags
		w.Flags |= uverbs.SendSignaled
		n := p.TxDepth
		for j := 0; j < n; j++ {
			if _, err := qp.PostSend(s.wr[i*p.PostList : i*p.PostList+1]); err != nil {
				fmt.Fprintf(stderr, "Couldn't post send during warm up: qp %d scnt=%d \n", i, j)
				return err
			}
		}
		got := 0
		for got < n {
			ne, perr := s.sendCQ.Poll(s.wc)
			if perr != nil {
				return pollFailed(stderr, perr)
			}
			for k := 0; k < ne; k++ {
				if s.wc[k].Status != uverbs.WCSuccess {
					fmt.Fprintf(stderr, "Failed to complete warm up\n")
					return fmt.Errorf("warm-up completion status %d", s.wc[k].Status)
				}
			}
			got += ne
		}
		w.Flags = saved
	}
	return nil
}

// spinGap is --latency_gap's wait before a post: it spins for gap microseconds (rate ticks each). The
// measured loops test p.LatencyGap > 0 themselves, so without the option they make no call.
func spinGap(gap int, rate float64) {
	end := now() + int64(float64(gap)*rate)
	for now() < end {
	}
}

// atomicLoad8 reads the byte at b through an atomic load of its aligned 32-bit word, so the polling loop sees
// the peer's RDMA write (the compiler may not keep it in a register).
func atomicLoad8(b *uint8) uint8 {
	a := uintptr(unsafe.Pointer(b))
	w := (*uint32)(unsafe.Add(unsafe.Pointer(b), -int(a&3)))
	return uint8(atomic.LoadUint32(w) >> ((a & 3) * 8))
}

// atomicStore8 stores v at b; the post that follows publishes it to the device.
func atomicStore8(b *byte, v uint8) { *b = v }

// runForever is run_iter_bw_infinitely (sender) or run_iter_bw_infinitely_server (receiver): it never returns
// unless a verb fails. count is the completion counter the periodic reports read.
func (s *session) runForever(stderr io.Writer, count *atomic.Uint64, server bool) error {
	p := s.p
	nq := p.NumQPs
	pl := uint64(p.PostList)
	cqMod := uint64(p.CQMod)
	wc := s.wc
	y := newYielder(s.rate)
	if server {
		for {
			y.spin()
			ne, perr := s.recvCQ.Poll(wc)
			if perr != nil {
				return pollFailed(stderr, perr)
			}
			for i := 0; i < ne; i++ {
				id := int(wc[i].WRID)
				if wc[i].Status != uverbs.WCSuccess {
					return compErrRecv(stderr, &wc[i], count.Load())
				}
				count.Add(1)
				if _, err := s.qps[id].PostRecv(s.rwr[id : id+1]); err != nil {
					fmt.Fprintf(stderr, "Couldn't post recv Qp=%d\n", id)
					return err
				}
			}
		}
	}
	var totS, totC uint64
	for {
		y.check()
		for idx := 0; idx < nq; idx++ {
			for s.scnt[idx]-s.ccnt[idx]+pl <= uint64(p.TxDepth) {
				w := &s.wr[idx*int(pl)]
				if pl == 1 && s.scnt[idx]%cqMod == 0 && cqMod > 1 {
					w.Flags &^= uverbs.SendSignaled
				}
				if _, err := s.qps[idx].PostSend(s.wr[idx*int(pl) : (idx+1)*int(pl)]); err != nil {
					fmt.Fprintf(stderr, "Couldn't post send: %d scnt=%d \n", idx, s.scnt[idx])
					return err
				}
				s.scnt[idx] += pl
				totS += pl
				if pl == 1 && s.scnt[idx]%cqMod == cqMod-1 {
					w.Flags |= uverbs.SendSignaled
				}
			}
		}
		if totC < totS {
			ne, perr := s.sendCQ.Poll(wc)
			if perr != nil {
				return pollFailed(stderr, perr)
			}
			for i := 0; i < ne; i++ {
				if wc[i].Status != uverbs.WCSuccess {
					return compErrSend(stderr, &wc[i], totS, totC)
				}
				s.ccnt[int(wc[i].WRID)] += cqMod
				totC += cqMod
				count.Add(cqMod)
			}
		}
	}
}

// runBi is run_iter_bi: both sides of a bidirectional send test send and receive at once. The server starts
// sending only once the client's first message arrived.
func (s *session) runBi(stderr io.Writer, count *atomic.Uint64) (uint64, error) {
	p := s.p
	nq := p.NumQPs
	cqMod := uint64(p.CQMod)
	iters := p.Iters
	dur := p.TestType == byDuration
	d := &s.dur
	d.reset()
	defer d.stop()
	rcntQP, posted := s.rcntQP, s.postedQP
	for i := range posted {
		rcntQP[i], posted[i] = 0, uint64(s.rposted)
	}
	beforeFirstRx := p.Server
	if !p.Server && dur {
		d.start(p)
	}
	if p.NoPeak && !dur {
		s.tposted[0] = now()
	}
	totIters := iters * uint64(nq)
	var totS, totC, totR uint64
	wc := s.wc
	y := newYielder(s.rate)
	for (dur && d.state.Load() != stEnd) || totC < totIters || totR < totIters {
		y.check()
		for idx := 0; idx < nq; idx++ {
			if !beforeFirstRx {
				if err := s.postSends(stderr, idx, &totS, false); err != nil {
					return 0, err
				}
			}
		}
		if p.UseEvent {
			if err := s.waitEvent(); err != nil {
				fmt.Fprintf(stderr, "Failed to notify events to CQ")
				return 0, err
			}
		}
		ne, perr := s.recvCQ.Poll(wc)
		if perr != nil {
			return 0, pollFailed(stderr, perr)
		}
		if ne > 0 && beforeFirstRx {
			beforeFirstRx = false
			if dur {
				d.start(p)
			}
		}
		for i := 0; i < ne; i++ {
			id := int(wc[i].WRID)
			if wc[i].Status != uverbs.WCSuccess {
				return 0, compErrRecv(stderr, &wc[i], totR)
			}
			rcntQP[id]++
			totR++
			if dur && d.state.Load() == stSample {
				d.iters.Add(1)
			}
			if dur || posted[id]+1 <= iters {
				if _, err := s.qps[id].PostRecv(s.rwr[id : id+1]); err != nil {
					fmt.Fprintf(stderr, "Couldn't post recv Qp=%d rcnt=%d\n", id, rcntQP[id])
					return 0, err
				}
				posted[id]++
				sz := p.Size
				if p.Conn == ConnUD && p.Server {
					sz += udAddition
				}
				if sz <= uint64(p.CycleBuffer/2) {
					s.incLoc(&s.rsge[id], posted[id], s.rxAdr[id])
				}
			}
		}
		ne, perr = s.sendCQ.Poll(wc)
		if perr != nil {
			return 0, pollFailed(stderr, perr)
		}
		for i := 0; i < ne; i++ {
			if wc[i].Status != uverbs.WCSuccess {
				return 0, compErrSend(stderr, &wc[i], totS, totC)
			}
			totC += cqMod
			s.ccnt[int(wc[i].WRID)] += cqMod
			if !p.NoPeak {
				if !dur && totC > totIters {
					s.tcompleted[totIters-1] = now()
				} else {
					s.tcompleted[totC-1] = now()
				}
			}
			if dur && d.state.Load() == stSample {
				d.iters.Add(cqMod)
			}
			if count != nil {
				count.Add(cqMod)
			}
		}
	}
	if p.NoPeak && !dur {
		s.tcompleted[0] = now()
	}
	if dur {
		return s.sampled(), nil
	}
	return iters, nil
}

// yielder makes a measured loop give up its P every 2 ms. The runtime preempts a goroutine that has run for
// 10 ms with a signal (asynchronous preemption), and a spinning loop is exactly such a goroutine: in a CPU
// profile of a Go send_lat client under QEMU TCG, 15% of the samples were in runtime.asyncPreempt. A loop that
// yields by itself is never preempted; with one P, Gosched just puts the goroutine back on the run queue and
// picks it again (no thread switch, no allocation).
type yielder struct {
	every int64
	last  int64
	n     uint32
}

func newYielder(rate float64) yielder { return yielder{every: int64(2000 * rate), last: now()} }

// spin is called in spin-waits: it looks at the counter every 64th call.
func (y *yielder) spin() {
	y.n++
	if y.n%64 == 0 {
		y.check()
	}
}

// check is called once per round of a loop that does real work each round (posts, polls).
func (y *yielder) check() {
	if t := now(); t-y.last > y.every {
		runtime.Gosched()
		y.last = t
	}
}

// postSends is perftest's inner posting loop for QP idx (shared by run_iter_bw and run_iter_bi): while the QP has
// room in its tx depth it posts one work request (or a post list), leaves all but every cq_mod-th unsignaled,
// time-stamps the posts for the peak bandwidth, and moves the local address (and, with bumpRemote, the remote
// one) through the cycle buffer.
//
// It is the sender's hot loop, so everything that does not change between posts is loaded once, and the two
// periodic conditions (every cq_mod-th post, the end of the cycle buffer) are counters instead of a division
// per post; the sequence of work requests is the same as perftest's.
func (s *session) postSends(stderr io.Writer, idx int, totS *uint64, bumpRemote bool) error {
	p := s.p
	pl := uint64(p.PostList)
	cqMod := uint64(p.CQMod)
	iters := p.Iters
	dur := p.TestType == byDuration
	d := &s.dur
	scnt, tot := s.scnt[idx], *totS
	room := uint64(p.TxDepth) + s.ccnt[idx] // tx depth: post while scnt+pl <= room
	if (scnt >= iters && !dur) || scnt+pl > room {
		return nil // the common case when called after each poll: no room yet
	}
	qp := s.qps[idx]
	wrs := s.wr[idx*int(pl) : (idx+1)*int(pl)]
	w := &wrs[0]
	single := pl == 1
	unsignal := single && cqMod > 1
	last := iters - 1 // with !dur, the last post is always signaled
	var modPos uint64 // scnt % cqMod
	if single {
		modPos = scnt % cqMod
	}
	bump := single && p.Size <= uint64(p.CycleBuffer/2)
	var step, cycLen, cycPos, myAdr, remAd uint64
	if bump {
		step = inc(p.Size, p.CacheLine)
		cycLen = uint64(p.CycleBuffer) / step
		cycPos = (scnt + 1) % cycLen
		myAdr, remAd = s.myAdr[idx], s.remAd[idx]
	}
	tposted := s.tposted
	var err error
	for (scnt < iters || dur) && scnt+pl <= room {
		if unsignal && modPos == 0 && (dur || scnt != last) {
			w.Flags &^= uverbs.SendSignaled
		}
		if !p.NoPeak {
			tposted[tot] = now()
		}
		if dur && d.state.Load() == stEnd {
			break
		}
		if _, err = qp.PostSend(wrs); err != nil {
			fmt.Fprintf(stderr, "Couldn't post send: qp %d scnt=%d \n", idx, scnt)
			break
		}
		if bump {
			// incLoc and incRem with the cycle position kept as a counter: (scnt+1) % cycLen.
			w.SGL[0].Addr += step
			if bumpRemote {
				w.RemoteAddr += step
			}
			if cycPos == 0 {
				w.SGL[0].Addr = myAdr
				if bumpRemote {
					w.RemoteAddr = remAd
				}
			}
			if cycPos++; cycPos == cycLen {
				cycPos = 0
			}
		}
		scnt += pl
		tot += pl
		if single {
			if modPos++; modPos == cqMod {
				modPos = 0
			}
			if modPos == cqMod-1 || (!dur && scnt == last) {
				w.Flags |= uverbs.SendSignaled
			}
		}
	}
	s.scnt[idx], *totS = scnt, tot
	return err
}
