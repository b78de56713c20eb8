package rxe_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

// Close racing with the data path (issue #14, item 5): goroutines post sends and receives to one QP, poll its
// CQ, arm it and wait for its completion events while another goroutine closes the QP, the CQ and the channel.
// Every call must return a clean result or ErrClosed (queue full, ENOMEM, is a clean result); none may touch a
// ring that Close unmapped (that would fault) or a handle the kernel freed. Repeated with the close landing at
// different moments; under the race detector:
//
//	go run ./test/lab/cmd/labsuite -race -run CloseRace ./providers/rxe
func TestLabCloseRace(t *testing.T) {
	e := newLab(t)
	rounds := 40
	if testing.Short() {
		rounds = 5
	}
	var stats closeRaceStats
	for r := 0; r < rounds && !t.Failed(); r++ {
		closeRaceRound(t, e, r, &stats)
	}
	t.Logf("%d rounds: %d posts, %d receives, %d polls, %d arms, %d events before close; %d calls refused with ErrClosed",
		rounds, stats.sends.Load(), stats.recvs.Load(), stats.polls.Load(), stats.arms.Load(), stats.events.Load(), stats.refused.Load())
	if stats.refused.Load() == 0 {
		t.Error("no call ever raced with Close")
	}
}

type closeRaceStats struct {
	sends, recvs, polls, arms, events, refused atomic.Int64
}

func closeRaceRound(t *testing.T, e *labEnv, round int, st *closeRaceStats) {
	ch, err := e.ctx.CreateCompChannel(nil)
	if err != nil {
		t.Fatal(err)
	}
	cq, err := e.ctx.CreateCQ(uverbs.CQAttr{CQE: 256, Channel: ch})
	if err != nil {
		t.Fatal(err)
	}
	peerCQ := e.cq(t, 256, nil)
	c := uverbs.QPCap{MaxSendWR: 32, MaxRecvWR: 32, MaxSendSGE: 1, MaxRecvSGE: 1}
	qp, err := e.pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: c})
	if err != nil {
		t.Fatal(err)
	}
	peer := e.qp(t, uverbs.QPTypeRC, peerCQ, peerCQ, nil, c)
	e.connectRC(t, qp, peer)
	e.connectRC(t, peer, qp)

	// ok reports whether err is a clean outcome; ErrClosed also ends the caller's loop.
	ok := func(who string, err error, clean ...unix.Errno) (done bool) {
		if err == nil {
			return false
		}
		if errors.Is(err, uverbs.ErrClosed) {
			st.refused.Add(1)
			return true
		}
		for _, e := range clean {
			if errors.Is(err, e) {
				return false
			}
		}
		t.Errorf("round %d: %s: %v", round, who, err)
		return true
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	run := func(f func()) {
		wg.Add(1)
		go func() { defer wg.Done(); <-start; f() }()
	}
	for g := 0; g < 3; g++ {
		run(func() { // RDMA WRITEs, every 8th signaled
			for i := 0; ; i++ {
				var fl uverbs.SendFlags
				if i%8 == 0 {
					fl = uverbs.SendSignaled
				}
				_, err := qp.PostSend([]uverbs.SendWR{{WRID: uint64(i), Opcode: uverbs.WRRDMAWrite, Flags: fl,
					SGL: []uverbs.SGE{e.mr.SGE(g*64, 64)}, RemoteAddr: e.mr.Addr() + uint64(65536+g*64), RKey: e.mr.RKey()}})
				if ok("post send", err, unix.ENOMEM) {
					return
				}
				st.sends.Add(1)
			}
		})
	}
	run(func() {
		for {
			_, err := qp.PostRecv([]uverbs.RecvWR{{SGL: []uverbs.SGE{e.mr.SGE(4096, 64)}}})
			if ok("post receive", err, unix.ENOMEM) {
				return
			}
			st.recvs.Add(1)
		}
	})
	for g := 0; g < 2; g++ {
		run(func() {
			wc := make([]uverbs.WC, 8)
			for {
				_, err := cq.Poll(wc)
				if ok("poll", err) {
					return
				}
				st.polls.Add(1)
			}
		})
	}
	run(func() {
		for {
			if ok("arm", cq.ReqNotify(false)) {
				return
			}
			st.arms.Add(1)
			time.Sleep(100 * time.Microsecond)
		}
	})
	run(func() { // every event is acknowledged, or CQ.Close would wait for it for ever
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			got, err := ch.GetEvent(ctx)
			cancel()
			if err == nil {
				got.AckEvents(1)
				st.events.Add(1)
				continue
			}
			if errors.Is(err, context.DeadlineExceeded) {
				continue
			}
			ok("get event", err)
			return
		}
	})

	close(start)
	time.Sleep(time.Duration(round%8) * 250 * time.Microsecond)
	check(t, qp.Close())
	check(t, cq.Close())
	check(t, ch.Close())
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("round %d: callers still running 60s after Close", round)
	}
	// After Close every verb is refused before it reaches the provider or the kernel.
	if _, err := qp.PostSend([]uverbs.SendWR{{Opcode: uverbs.WRSend}}); !errors.Is(err, uverbs.ErrClosed) {
		t.Errorf("post send after Close: %v", err)
	}
	if _, err := qp.PostRecv([]uverbs.RecvWR{{}}); !errors.Is(err, uverbs.ErrClosed) {
		t.Errorf("post receive after Close: %v", err)
	}
	if _, err := cq.Poll(make([]uverbs.WC, 1)); !errors.Is(err, uverbs.ErrClosed) {
		t.Errorf("poll after Close: %v", err)
	}
	if err := cq.ReqNotify(false); !errors.Is(err, uverbs.ErrClosed) {
		t.Errorf("arm after Close: %v", err)
	}
	if _, err := ch.GetEvent(context.Background()); !errors.Is(err, uverbs.ErrClosed) {
		t.Errorf("get event after Close: %v", err)
	}
}
