package hw

import (
	"github.com/goverbs/goverbs/internal/provider"

	"bytes"
	"encoding/binary"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/goverbs/goverbs/verbs"

	"github.com/goverbs/goverbs/mmio"
	"github.com/goverbs/goverbs/providers/mlx5/internal/mlx5emu"
)

// These tests run this package's queues against mlx5emu, an emulated ConnectX written independently from the
// same specification: the emulator executes the WQEs we write, checks every doorbell and BlueFlame copy, and
// writes CQEs that our poller must parse. A disagreement here means one of the two misreads rdma-core's formats;
// the golden vectors (generated from mlx5dv.h) decide which.

type emuHost struct {
	t   *testing.T
	dev *mlx5emu.Device
	bf  int // bf_reg_size
	uar mmio.Reg
	pdn uint32
	nbf int // registers handed out
}

func newEmuHost(t *testing.T, opts mlx5emu.Options) *emuHost {
	t.Helper()
	dev := mlx5emu.NewForTest(t, opts)
	uar, err := mmio.RegFromBytes(dev.UAR())
	if err != nil {
		t.Fatal(err)
	}
	return &emuHost{t: t, dev: dev, bf: opts.BFRegSize, uar: uar, pdn: 1}
}

type emuCQ struct {
	cq  *CQ
	cqn uint32
}

func (h *emuHost) newCQ(n int) *emuCQ {
	h.t.Helper()
	buf, dbrb := aligned(n*CQESize), aligned(8)
	dbr, _ := NewDoorbellRecord(dbrb)
	StampCQBuffer(buf)
	cqn, err := h.dev.CreateCQ(buf, dbrb)
	if err != nil {
		h.t.Fatal(err)
	}
	cq, err := NewCQ(CQConfig{Buf: buf, CQECount: n, CQN: cqn, DBR: dbr, UAR: h.uar, CQEVersion: 1})
	if err != nil {
		h.t.Fatal(err)
	}
	return &emuCQ{cq: cq, cqn: cqn}
}

type emuQP struct {
	qp  *QP
	qpn uint32
}

// newQP creates a QP sized by SizeQP, with its own BlueFlame register (or doorbell slot).
// newSRQ creates an SRQ of maxWR receives of maxSGE SGEs on the host and the emulated device; it returns the
// SRQ, its number and its layout.
func (h *emuHost) newSRQ(maxWR, maxSGE int) (*SRQ, uint32, SRQLayout) {
	h.t.Helper()
	sl, err := SizeSRQ(maxWR, maxSGE, QueueLimits{MaxRecvWR: 1 << 15, MaxRQDescSz: 512})
	if err != nil {
		h.t.Fatal(err)
	}
	sbuf, sdb := aligned(sl.WQECount<<sl.WQEShift), aligned(8)
	sd, _ := NewDoorbellRecord(sdb)
	srq, err := NewSRQ(SRQConfig{Buf: sbuf, WQECount: sl.WQECount, WQEShift: sl.WQEShift, DBR: sd})
	if err != nil {
		h.t.Fatal(err)
	}
	srqn, err := h.dev.CreateSRQ(mlx5emu.SRQConfig{PDN: h.pdn, Buf: sbuf, WQECnt: sl.WQECount, WQEShift: sl.WQEShift, DBR: sdb})
	if err != nil {
		h.t.Fatal(err)
	}
	srq.srqn = srqn
	return srq, srqn, sl
}

func (h *emuHost) newQP(typ QPType, caps QPCaps, scq, rcq *emuCQ, srq *SRQ, srqn uint32, scatter bool) *emuQP {
	h.t.Helper()
	lim := QueueLimits{MaxSQDescSz: 512, MaxRQDescSz: 512, MaxSendWQEBB: 1 << 15, MaxRecvWR: 1 << 15}
	l, err := SizeQP(typ, caps, srq != nil, lim, 4096)
	if err != nil {
		h.t.Fatal(err)
	}
	buf, dbrb := aligned(l.BufSize), aligned(8)
	dbr, _ := NewDoorbellRecord(dbrb)
	uidx := uint32(100 + h.nbf)
	et := map[QPType]mlx5emu.QPType{QPTypeRC: mlx5emu.RC, QPTypeUC: mlx5emu.UC, QPTypeUD: mlx5emu.UD}[typ]
	qpn, err := h.dev.CreateQP(mlx5emu.QPConfig{Type: et, PDN: h.pdn, Buf: buf, SQWQECnt: l.SQWQECount,
		RQWQECnt: l.RQWQECount, RQWQEShift: l.RQWQEShift, DBR: dbrb, SendCQN: scq.cqn, RecvCQN: rcq.cqn,
		SRQN: srqn, UIDX: uidx, ScatterToCQE: scatter})
	if err != nil {
		h.t.Fatal(err)
	}
	slot := 0x100
	if h.bf != 0 {
		slot = h.bf
	}
	win := slot
	if h.bf == 0 {
		win = 8
	}
	bf, err := NewBFReg(h.uar.Sub(uintptr(BFOffset+h.nbf*slot), uintptr(win)), h.bf/2, false)
	if err != nil {
		h.t.Fatal(err)
	}
	h.nbf++
	sq, err := NewSendQueue(SendQueueConfig{Buf: buf[l.SQOffset:], WQECount: l.SQWQECount, MaxPost: l.SQMaxPost,
		MaxSGE: l.Caps.MaxSendSGE, MaxInline: l.Caps.MaxInlineData, QPN: qpn, Type: typ, DBR: dbr, BF: bf,
		Atomics: true})
	if err != nil {
		h.t.Fatal(err)
	}
	qp := &QP{QPN: qpn, UserIndex: uidx, SQ: sq, SRQ: srq}
	if srq == nil {
		qp.RQ, err = NewRecvQueue(RecvQueueConfig{Buf: buf[:l.SQOffset], WQECount: l.RQWQECount,
			WQEShift: l.RQWQEShift, MaxPost: l.RQMaxPost, DBR: dbr, QPN: qpn})
		if err != nil {
			h.t.Fatal(err)
		}
	}
	for _, c := range []*emuCQ{scq, rcq} {
		if err := c.cq.Attach(qp); err != nil {
			h.t.Fatal(err)
		}
	}
	return &emuQP{qp: qp, qpn: qpn}
}

// connect brings a and b to RTS, connected to each other (RC/UC) or with qkey (UD).
func (h *emuHost) connect(a, b *emuQP, qkey uint32) {
	h.t.Helper()
	acc := mlx5emu.AccessLocalWrite | mlx5emu.AccessRemoteWrite | mlx5emu.AccessRemoteRead | mlx5emu.AccessRemoteAtomic
	for _, p := range [][2]*emuQP{{a, b}, {b, a}} {
		for _, attr := range []mlx5emu.QPAttr{
			{State: mlx5emu.StateInit, Access: acc, QKey: qkey},
			{State: mlx5emu.StateRTR, DestQPN: p[1].qpn},
			{State: mlx5emu.StateRTS, RNRRetry: 1},
		} {
			if err := h.dev.ModifyQP(p[0].qpn, attr); err != nil {
				h.t.Fatal(err)
			}
		}
	}
}

func (h *emuHost) mr(n int) ([]byte, uint32) {
	h.t.Helper()
	b := aligned(n)
	acc := mlx5emu.AccessLocalWrite | mlx5emu.AccessRemoteWrite | mlx5emu.AccessRemoteRead | mlx5emu.AccessRemoteAtomic
	lkey, _, err := h.dev.RegisterMR(b, acc, h.pdn)
	if err != nil {
		h.t.Fatal(err)
	}
	return b, lkey
}

func pollAll(t *testing.T, c *emuCQ, want int) []WC {
	t.Helper()
	var out []WC
	var wcs [8]WC
	for i := 0; i < 100 && len(out) < want; i++ {
		n, st := c.cq.Poll(wcs[:])
		if st != provider.OK {
			t.Fatal(st)
		}
		out = append(out, wcs[:n]...)
	}
	if len(out) != want {
		t.Fatalf("polled %d completions, want %d: %+v", len(out), want, out)
	}
	return out
}

// noErr returns a checker for a post's (n, err) result.
func noErr(t *testing.T) func(int, provider.Status) {
	return func(n int, st provider.Status) {
		t.Helper()
		if st != provider.OK {
			t.Fatalf("post: %d posted, status %d (%v)", n, st, st.Err())
		}
	}
}

func TestEmuRC(t *testing.T) {
	for _, bfSize := range []int{512, 0} {
		t.Run(map[int]string{512: "BlueFlame", 0: "doorbell only"}[bfSize], func(t *testing.T) {
			h := newEmuHost(t, mlx5emu.Options{BFRegSize: bfSize, RequireDoorbell: true})
			scq, rcq := h.newCQ(16), h.newCQ(16)
			caps := QPCaps{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 2, MaxRecvSGE: 2, MaxInlineData: 64}
			a := h.newQP(QPTypeRC, caps, scq, rcq, nil, 0, false)
			b := h.newQP(QPTypeRC, caps, scq, rcq, nil, 0, false)
			h.connect(a, b, 0)
			src, slk := h.mr(4096)
			dst, dlk := h.mr(4096)
			for i := range src {
				src[i] = byte(i*13 + 1)
			}

			// SEND inline (BlueFlame when available) into a posted receive.
			noErr(t)(b.qp.RQ.PostRecv([]RecvWR{{WRID: 900, SGL: []SGE{{Addr: addrOf(dst), Length: 256, LKey: dlk}}}}))
			noErr(t)(a.qp.SQ.PostSend([]SendWR{{WRID: 1, Opcode: verbs.WRSendWithImm, Imm: 0xa1b2c3d4,
				Flags: verbs.SendSignaled | verbs.SendInline, SGL: []SGE{{Addr: addrOf(src), Length: 48}}}}))
			h.dev.Process()
			send, recv := pollAll(t, scq, 1)[0], pollAll(t, rcq, 1)[0]
			if send.Status != verbs.WCSuccess || send.WRID != 1 || send.QPNum != a.qpn {
				t.Errorf("send completion %+v", send)
			}
			if recv.Status != verbs.WCSuccess || recv.WRID != 900 || recv.ByteLen != 48 || recv.Imm != 0xa1b2c3d4 ||
				recv.Flags&verbs.WCWithImm == 0 || recv.QPNum != b.qpn {
				t.Errorf("receive completion %+v", recv)
			}
			if !bytes.Equal(dst[:48], src[:48]) {
				t.Errorf("received %x", dst[:48])
			}

			// RDMA write with two SGEs (unsignaled) + RDMA read (signaled) in one batch: 8-byte doorbell; the read's
			// completion retires the write.
			rbuf, rlk := h.mr(512)
			noErr(t)(a.qp.SQ.PostSend([]SendWR{
				{WRID: 2, Opcode: verbs.WRRDMAWrite, RemoteAddr: addrOf(dst) + 1024, RKey: dlk,
					SGL: []SGE{{Addr: addrOf(src), Length: 100, LKey: slk}, {Addr: addrOf(src) + 200, Length: 28, LKey: slk}}},
				{WRID: 3, Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled, RemoteAddr: addrOf(dst) + 1024,
					RKey: dlk, SGL: []SGE{{Addr: addrOf(rbuf), Length: 128, LKey: rlk}}},
			}))
			h.dev.Process()
			w := pollAll(t, scq, 1)[0]
			if w.WRID != 3 || w.Opcode != verbs.WCRDMARead || w.ByteLen != 128 || w.Status != verbs.WCSuccess {
				t.Errorf("read completion %+v", w)
			}
			want := append(append([]byte{}, src[:100]...), src[200:228]...)
			if !bytes.Equal(dst[1024:1152], want) || !bytes.Equal(rbuf[:128], want) {
				t.Errorf("write/read data mismatch")
			}
			if a.qp.SQ.Outstanding() != 0 {
				t.Errorf("outstanding after read completion = %d", a.qp.SQ.Outstanding())
			}

			// Atomics on host-endian words.
			binary.NativeEndian.PutUint64(dst[2048:], 40)
			noErr(t)(a.qp.SQ.PostSend([]SendWR{
				{WRID: 4, Opcode: verbs.WRAtomicFetchAndAdd, Flags: verbs.SendSignaled, RemoteAddr: addrOf(dst) + 2048,
					RKey: dlk, CompareAdd: 2, SGL: []SGE{{Addr: addrOf(rbuf) + 256, Length: 8, LKey: rlk}}},
				{WRID: 5, Opcode: verbs.WRAtomicCmpAndSwp, Flags: verbs.SendSignaled, RemoteAddr: addrOf(dst) + 2048,
					RKey: dlk, CompareAdd: 42, Swap: 7, SGL: []SGE{{Addr: addrOf(rbuf) + 264, Length: 8, LKey: rlk}}},
			}))
			h.dev.Process()
			ws := pollAll(t, scq, 2)
			if ws[0].Opcode != verbs.WCFetchAdd || ws[1].Opcode != verbs.WCCompSwap || ws[0].ByteLen != 8 {
				t.Errorf("atomic completions %+v", ws)
			}
			if got := binary.NativeEndian.Uint64(dst[2048:]); got != 7 {
				t.Errorf("atomic result %d, want 7", got)
			}
			if binary.NativeEndian.Uint64(rbuf[256:]) != 40 || binary.NativeEndian.Uint64(rbuf[264:]) != 42 {
				t.Errorf("atomic old values %x", rbuf[256:272])
			}

			// Many sends so both rings wrap several times.
			for i := 0; i < 40; i++ {
				noErr(t)(b.qp.RQ.PostRecv([]RecvWR{{WRID: uint64(1000 + i), SGL: []SGE{{Addr: addrOf(dst), Length: 64, LKey: dlk}}}}))
				noErr(t)(a.qp.SQ.PostSend([]SendWR{{WRID: uint64(i), Opcode: verbs.WRSend,
					Flags: verbs.SendSignaled, SGL: []SGE{{Addr: addrOf(src) + uint64(i), Length: 64, LKey: slk}}}}))
				h.dev.Process()
				ws := append(pollAll(t, scq, 1), pollAll(t, rcq, 1)...)
				for _, w := range ws {
					if w.Status != verbs.WCSuccess {
						t.Fatalf("iteration %d: %+v", i, w)
					}
				}
				if !bytes.Equal(dst[:64], src[i:i+64]) {
					t.Fatalf("iteration %d: data", i)
				}
			}
			st, _ := h.dev.QPStats(a.qpn)
			if bfSize != 0 && st.BlueFlameWrites == 0 {
				t.Errorf("no BlueFlame write seen: %+v", st)
			}
			if bfSize == 0 && st.BlueFlameWrites != 0 {
				t.Errorf("BlueFlame without a BlueFlame register: %+v", st)
			}
			if st.Doorbells == 0 {
				t.Errorf("no 8-byte doorbell seen: %+v", st)
			}
		})
	}
}

func TestEmuErrorsAndFlush(t *testing.T) {
	h := newEmuHost(t, mlx5emu.Options{BFRegSize: 512})
	scq, rcq := h.newCQ(16), h.newCQ(16)
	caps := QPCaps{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1}
	a := h.newQP(QPTypeRC, caps, scq, rcq, nil, 0, false)
	b := h.newQP(QPTypeRC, caps, scq, rcq, nil, 0, false)
	h.connect(a, b, 0)
	src, slk := h.mr(256)
	dst, dlk := h.mr(256)
	noErr(t)(a.qp.SQ.PostSend([]SendWR{
		{WRID: 1, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled, RemoteAddr: addrOf(dst), RKey: dlk + 77,
			SGL: []SGE{{Addr: addrOf(src), Length: 16, LKey: slk}}},
		{WRID: 2, Opcode: verbs.WRSend, SGL: []SGE{{Addr: addrOf(src), Length: 16, LKey: slk}}},
	}))
	h.dev.Process()
	ws := pollAll(t, scq, 2)
	if ws[0].WRID != 1 || ws[0].Status != verbs.WCRemAccessErr {
		t.Errorf("bad rkey: %+v", ws[0])
	}
	if ws[1].WRID != 2 || ws[1].Status != verbs.WCWRFlushErr {
		t.Errorf("flushed unsignaled WQE: %+v", ws[1])
	}
	if a.qp.SQ.Outstanding() != 0 {
		t.Errorf("outstanding %d", a.qp.SQ.Outstanding())
	}
}

func TestEmuUDAndSRQAndScatter(t *testing.T) {
	h := newEmuHost(t, mlx5emu.Options{BFRegSize: 256})
	scq, rcq := h.newCQ(8), h.newCQ(8)
	// SRQ of 8 WQEs, 2 SGEs each.
	srq, srqn, _ := h.newSRQ(7, 2)
	caps := QPCaps{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInlineData: 32}
	ua := h.newQP(QPTypeUD, caps, scq, rcq, nil, 0, false)
	ub := h.newQP(QPTypeUD, caps, scq, rcq, srq, srqn, false)
	h.connect(ua, ub, 0x11111111)
	src, slk := h.mr(256)
	dst, dlk := h.mr(512)
	for i := range src {
		src[i] = byte(255 - i)
	}
	// UD receives carry a 40-byte GRH area first.
	for i := 0; i < 3; i++ {
		noErr(t)(srq.PostRecv([]RecvWR{{WRID: uint64(50 + i), SGL: []SGE{{Addr: addrOf(dst) + uint64(i*128), Length: 128, LKey: dlk}}}}))
	}
	ah := NewIBAH(AHAttr{DLID: 1, SL: 2})
	for i := 0; i < 3; i++ {
		noErr(t)(ua.qp.SQ.PostSend([]SendWR{{WRID: uint64(i), Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
			AH: ah, RemoteQPN: ub.qpn, RemoteQKey: 0x11111111, SGL: []SGE{{Addr: addrOf(src) + uint64(i), Length: 20, LKey: slk}}}}))
	}
	h.dev.Process()
	sends := pollAll(t, scq, 3)
	recvs := pollAll(t, rcq, 3)
	for i := 0; i < 3; i++ {
		if sends[i].Status != verbs.WCSuccess || sends[i].WRID != uint64(i) {
			t.Errorf("UD send %d: %+v", i, sends[i])
		}
		r := recvs[i]
		if r.Status != verbs.WCSuccess || r.WRID != uint64(50+i) || r.ByteLen != 40+20 || r.SrcQP != ua.qpn {
			t.Errorf("UD receive %d: %+v", i, r)
		}
		if !bytes.Equal(dst[i*128+40:i*128+60], src[i:i+20]) {
			t.Errorf("UD payload %d", i)
		}
	}
	// The SRQ WQEs came back to the free list: three more receives fit.
	noErr(t)(srq.PostRecv(make([]RecvWR, 3)))

	// RC with scatter-to-CQE: a 24-byte SEND arrives inside the CQE and is copied to the receive buffer.
	c1, c2 := h.newCQ(8), h.newCQ(8)
	rcaps := QPCaps{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}
	a := h.newQP(QPTypeRC, rcaps, c1, c1, nil, 0, false)
	b := h.newQP(QPTypeRC, rcaps, c2, c2, nil, 0, true)
	h.connect(a, b, 0)
	clear(dst)
	noErr(t)(b.qp.RQ.PostRecv([]RecvWR{{WRID: 77, SGL: []SGE{{Addr: addrOf(dst) + 8, Length: 64, LKey: dlk}}}}))
	noErr(t)(a.qp.SQ.PostSend([]SendWR{{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
		SGL: []SGE{{Addr: addrOf(src), Length: 24, LKey: slk}}}}))
	// Arm the receive CQ first: the CQE must fire an event.
	c2.cq.Arm(false)
	h.dev.Process()
	r := pollAll(t, c2, 1)[0]
	if r.WRID != 77 || r.ByteLen != 24 || r.Status != verbs.WCSuccess {
		t.Errorf("scatter-to-CQE receive %+v", r)
	}
	if !bytes.Equal(dst[8:32], src[:24]) {
		t.Errorf("scattered payload not copied: %x", dst[8:32])
	}
	if ev := h.dev.Events(); len(ev) != 1 || ev[0] != c2.cqn {
		t.Errorf("events %v, want [%d]", ev, c2.cqn)
	}
	pollAll(t, c1, 1)
	// After the event the next arm uses the next sequence number; a CQE must fire it again.
	c2.cq.Event()
	c2.cq.Arm(true)
	noErr(t)(b.qp.RQ.PostRecv([]RecvWR{{WRID: 78, SGL: []SGE{{Addr: addrOf(dst), Length: 64, LKey: dlk}}}}))
	noErr(t)(a.qp.SQ.PostSend([]SendWR{{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled | verbs.SendSolicited,
		SGL: []SGE{{Addr: addrOf(src), Length: 8, LKey: slk}}}}))
	h.dev.Process()
	if ev := h.dev.Events(); len(ev) != 1 || ev[0] != c2.cqn {
		t.Errorf("solicited event: %v", ev)
	}
	pollAll(t, c2, 1)
	pollAll(t, c1, 1)
}

// TestEmuBackground runs the emulated device in its own goroutine while this goroutine posts and polls, as with
// real hardware: WQEs, doorbell records and CQEs cross goroutines only through the orderings the data path
// relies on. Under -race this proves those orderings are complete (doorbell-record stores are atomic in race
// builds; CQE ownership is read with an atomic load).
func TestEmuBackground(t *testing.T) {
	h := newEmuHost(t, mlx5emu.Options{BFRegSize: 512})
	scq, rcq := h.newCQ(64), h.newCQ(64)
	caps := QPCaps{MaxSendWR: 32, MaxRecvWR: 32, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInlineData: 64}
	a := h.newQP(QPTypeRC, caps, scq, rcq, nil, 0, false)
	b := h.newQP(QPTypeRC, caps, scq, rcq, nil, 0, false)
	h.connect(a, b, 0)
	src, slk := h.mr(64 * 200)
	dst, dlk := h.mr(64 * 200)
	for i := range src {
		src[i] = byte(i * 31)
	}
	h.dev.Start()
	defer h.dev.Stop()

	const total = 200
	var wcs [16]WC
	sent, recvd, posted := 0, 0, 0
	for spins := 0; sent < total || recvd < total; spins++ {
		if spins > 50_000_000 {
			t.Fatalf("no progress: %d sent, %d received of %d", sent, recvd, total)
		}
		// Keep up to 8 messages in flight.
		if posted < total && posted-sent < 8 && a.qp.SQ.Outstanding() < 8 {
			off := uint64(posted * 64)
			noErr(t)(b.qp.RQ.PostRecv([]RecvWR{{WRID: uint64(posted), SGL: []SGE{{Addr: addrOf(dst) + off, Length: 64, LKey: dlk}}}}))
			flags := verbs.SendSignaled
			if posted%2 == 0 {
				flags |= verbs.SendInline
			}
			noErr(t)(a.qp.SQ.PostSend([]SendWR{{WRID: uint64(posted), Opcode: verbs.WRSend, Flags: flags,
				SGL: []SGE{{Addr: addrOf(src) + off, Length: 64, LKey: slk}}}}))
			posted++
		}
		n, st := scq.cq.Poll(wcs[:])
		if st != provider.OK {
			t.Fatal(st)
		}
		for _, w := range wcs[:n] {
			if w.Status != verbs.WCSuccess || w.WRID != uint64(sent) {
				t.Fatalf("send completion %d: %+v", sent, w)
			}
			sent++
		}
		n, st = rcq.cq.Poll(wcs[:])
		if st != provider.OK {
			t.Fatal(st)
		}
		for _, w := range wcs[:n] {
			if w.Status != verbs.WCSuccess || w.WRID != uint64(recvd) || w.ByteLen != 64 {
				t.Fatalf("receive completion %d: %+v", recvd, w)
			}
			recvd++
		}
		if n == 0 {
			runtime.Gosched()
		}
	}
	if !bytes.Equal(dst[:total*64], src[:total*64]) {
		t.Error("received data differs")
	}
}

// TestEmuSRQConcurrent receives on two QPs that share one SRQ and complete into two CQs, each CQ polled by its own
// goroutine while this goroutine posts sends and SRQ receives and the emulated device runs in a third: the SRQ's
// free list is shared by all of them (its internal lock is what makes this race-free).
func TestEmuSRQConcurrent(t *testing.T) {
	h := newEmuHost(t, mlx5emu.Options{BFRegSize: 256})
	srq, srqn, sl := h.newSRQ(15, 1)
	scq := h.newCQ(64)
	rcqs := [2]*emuCQ{h.newCQ(64), h.newCQ(64)}
	caps := QPCaps{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1}
	var senders, receivers [2]*emuQP
	for i := range senders {
		senders[i] = h.newQP(QPTypeRC, caps, scq, scq, nil, 0, false)
		receivers[i] = h.newQP(QPTypeRC, caps, scq, rcqs[i], srq, srqn, false)
		h.connect(senders[i], receivers[i], 0)
	}
	src, slk := h.mr(64)
	dst, dlk := h.mr(64)
	h.dev.Start()
	defer h.dev.Stop()

	const total = 400
	var recvd atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i, c := range rcqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var wcs [8]WC
			for {
				n, st := c.cq.Poll(wcs[:])
				if st != provider.OK {
					t.Errorf("receive CQ %d: %v", i, st)
					return
				}
				for _, w := range wcs[:n] {
					if w.Status != verbs.WCSuccess || w.WRID < 1000 || w.QPNum != receivers[i].qpn {
						t.Errorf("receive CQ %d: %+v", i, w)
						return
					}
				}
				recvd.Add(int64(n))
				if n == 0 {
					select {
					case <-stop:
						return
					default:
						runtime.Gosched()
					}
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()

	var wcs [16]WC
	recvPosted, sent, sendDone := 0, 0, 0
	for spins := 0; sendDone < total; spins++ {
		if spins > 50_000_000 || t.Failed() {
			t.Fatalf("stuck: %d sent, %d send completions, %d received", sent, sendDone, recvd.Load())
		}
		if recvPosted < total && recvPosted-int(recvd.Load()) < sl.MaxWR {
			noErr(t)(srq.PostRecv([]RecvWR{{WRID: uint64(1000 + recvPosted), SGL: []SGE{{Addr: addrOf(dst), Length: 64, LKey: dlk}}}}))
			recvPosted++
		}
		if sent < recvPosted && sent-sendDone < 8 {
			q := senders[sent%2]
			noErr(t)(q.qp.SQ.PostSend([]SendWR{{WRID: uint64(sent), Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
				SGL: []SGE{{Addr: addrOf(src), Length: 64, LKey: slk}}}}))
			sent++
		}
		n, st := scq.cq.Poll(wcs[:])
		if st != provider.OK {
			t.Fatal(st)
		}
		for _, w := range wcs[:n] {
			if w.Status != verbs.WCSuccess {
				t.Fatalf("send completion: %+v", w)
			}
		}
		sendDone += n
		if n == 0 {
			runtime.Gosched()
		}
	}
	for spins := 0; recvd.Load() < total; spins++ {
		if spins > 50_000_000 || t.Failed() {
			t.Fatalf("received %d of %d", recvd.Load(), total)
		}
		runtime.Gosched()
	}
}
