package hw

import (
	"github.com/goverbs/goverbs/internal/provider"

	"bytes"
	"sync"
	"syscall"
	"testing"

	"github.com/goverbs/goverbs/verbs"

	"github.com/goverbs/goverbs/mmio"
)

func sendWR(id uint64, sges ...SGE) SendWR {
	return SendWR{WRID: id, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGL: sges}
}

func TestBlueFlameSingleWQEAlternatesHalves(t *testing.T) {
	ts := newTestSQ(t, QPTypeRC, 256, false)
	for i, wantOff := range []int{0, 256, 0} {
		if got := ts.bf.Offset(); got != wantOff {
			t.Fatalf("ring %d: BlueFlame offset = %d, want %d", i, got, wantOff)
		}
		if _, st := ts.sq.PostSend([]SendWR{sendWR(uint64(i), gS1)}); st != provider.OK {
			t.Fatal(st)
		}
		pos := i * 64
		if got := ts.reg[wantOff : wantOff+64]; !bytes.Equal(got, ts.ring[pos:pos+64]) {
			t.Errorf("ring %d: BlueFlame register half at %d = %x, want WQE %x", i, wantOff, got, ts.ring[pos:pos+64])
		}
		ts.sq.tail = ts.sq.head // retire
	}
}

func TestBlueFlameCopyWrapsAtRingEnd(t *testing.T) {
	ts := newTestSQ(t, QPTypeRC, 256, false)
	ts.sq.curPost = 7
	pl := payload()
	if _, st := ts.sq.PostSend([]SendWR{{Opcode: verbs.WRSend, Flags: verbs.SendInline,
		SGL: []SGE{{Addr: addrOf(pl), Length: 100}}}}); st != provider.OK {
		t.Fatal(st)
	}
	want := append(append([]byte{}, ts.ring[7*64:]...), ts.ring[:64]...)
	if !bytes.Equal(ts.reg[:128], want) {
		t.Errorf("BlueFlame copy of a wrapping WQE\n got %x\nwant %x", ts.reg[:128], want)
	}
}

func TestDoorbellOnlyCases(t *testing.T) {
	pl := payload()
	inline := SendWR{Opcode: verbs.WRSend, Flags: verbs.SendInline, SGL: []SGE{{Addr: addrOf(pl), Length: 8}}}
	big := SendWR{Opcode: verbs.WRSend, SGL: []SGE{gS1, gS2, gS3, gS1}} // ds 5
	for _, c := range []struct {
		name       string
		bfSize     int
		inlineOnly bool
		wrs        []SendWR
		blueFlame  bool
	}{
		{"batch of two", 256, false, []SendWR{sendWR(1, gS1), sendWR(2, gS2)}, false},
		{"no BlueFlame register", 0, false, []SendWR{sendWR(1, gS1)}, false},
		{"prefer_bf off, not inline", 256, true, []SendWR{sendWR(1, gS1)}, false},
		{"prefer_bf off, inline", 256, true, []SendWR{inline}, true},
		{"WQE larger than the half", 64, false, []SendWR{big}, false},
		{"WQE fits the half", 128, false, []SendWR{big}, true},
		{"ds 1 (no data)", 256, false, []SendWR{{Opcode: verbs.WRSend}}, false},
		// rdma-core counts a request as inline only when it has an SGE to inline.
		{"prefer_bf off, inline flag without SGEs", 256, true, []SendWR{{Opcode: verbs.WRRDMAWrite,
			Flags: verbs.SendInline, RemoteAddr: 1, RKey: 2}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts := newTestSQ(t, QPTypeRC, c.bfSize, false)
			ts.sq.preferBF = !c.inlineOnly
			if _, st := ts.sq.PostSend(c.wrs); st != provider.OK {
				t.Fatal(st)
			}
			checkRing(t, ts, c.wrs, c.blueFlame, c.bfSize)
		})
		// The same single request through the batch path: a second, invalid request stops the batch after
		// one, so the doorbell decision is the loop's rather than the single-request path's.
		if len(c.wrs) != 1 {
			continue
		}
		t.Run(c.name+" (batch path)", func(t *testing.T) {
			ts := newTestSQ(t, QPTypeRC, c.bfSize, false)
			ts.sq.preferBF = !c.inlineOnly
			if n, st := ts.sq.PostSend([]SendWR{c.wrs[0], {Opcode: 99}}); n != 1 || st != provider.BadOpcode {
				t.Fatalf("PostSend = %d, %v", n, st)
			}
			checkRing(t, ts, c.wrs, c.blueFlame, c.bfSize)
		})
	}
}

// checkRing checks that posting wrs rang ts's register with a BlueFlame copy of the last WQE or only the 8-byte
// doorbell, and toggled the half once.
func checkRing(t *testing.T, ts *testSQ, wrs []SendWR, blueFlame bool, bfSize int) {
	t.Helper()
	last := 0
	if len(wrs) == 2 {
		last = 64
	}
	ctrl := ts.ring[last : last+8]
	if blueFlame {
		if !bytes.Equal(ts.reg[:64], ts.ring[last:last+64]) {
			t.Errorf("want BlueFlame copy of %x, register = %x", ts.ring[last:last+64], ts.reg[:64])
		}
	} else if !bytes.Equal(ts.reg[:8], ctrl) || !bytes.Equal(ts.reg[8:], make([]byte, len(ts.reg)-8)) {
		t.Errorf("want only the 8-byte doorbell %x, register = %x", ctrl, ts.reg[:min(len(ts.reg), 64)])
	}
	if wantOff := bfSize; ts.bf.Offset() != wantOff {
		t.Errorf("offset after one ring = %d, want %d", ts.bf.Offset(), wantOff)
	}
}

// TestPostSendErrors pins the status of every refused send and that it carries the errno rdma-core's providers
// (and goverbs' rxe provider) give for the same condition.
func TestPostSendErrors(t *testing.T) {
	pl := payload()
	rxeAH := &AHData{Num: 3} // another provider's address handle
	big := SGE{Length: 0xffffffff, LKey: 1, Addr: 0x1000}
	for _, c := range []struct {
		name   string
		typ    QPType
		wrs    []SendWR
		posted int
		st     provider.Status
		errno  syscall.Errno
	}{
		{"queue full after two", QPTypeRC, []SendWR{sendWR(1, gS1), sendWR(2, gS1), sendWR(3, gS1)}, 2, provider.QueueFull, syscall.ENOMEM},
		{"too many SGEs", QPTypeRC, []SendWR{sendWR(1, gS1), sendWR(2, gS1, gS1, gS1, gS1, gS1)}, 1, provider.TooManySGE, syscall.EINVAL},
		{"lengths over 2^32-1", QPTypeRC, []SendWR{sendWR(1, big, gS1)}, 0, provider.TooLong, syscall.EINVAL},
		{"inline too large", QPTypeRC, []SendWR{{Opcode: verbs.WRSend, Flags: verbs.SendInline,
			SGL: []SGE{{Addr: addrOf(pl), Length: 129}}}}, 0, provider.InlineTooLong, syscall.EINVAL},
		{"inline too large in two SGEs", QPTypeRC, []SendWR{{Opcode: verbs.WRSend, Flags: verbs.SendInline,
			SGL: []SGE{{Addr: addrOf(pl), Length: 100}, {Addr: addrOf(pl), Length: 29}}}}, 0, provider.InlineTooLong, syscall.EINVAL},
		{"read on UC", QPTypeUC, []SendWR{{Opcode: verbs.WRRDMARead, SGL: []SGE{gS1}}}, 0, provider.BadOpcode, syscall.EINVAL},
		{"atomic on UD", QPTypeUD, []SendWR{{Opcode: verbs.WRAtomicFetchAndAdd, SGL: []SGE{gS3}}}, 0, provider.BadOpcode, syscall.EINVAL},
		{"write on UD", QPTypeUD, []SendWR{{Opcode: verbs.WRRDMAWrite, SGL: []SGE{gS3}}}, 0, provider.BadOpcode, syscall.EINVAL},
		{"unaligned atomic", QPTypeRC, []SendWR{{Opcode: verbs.WRAtomicCmpAndSwp, RemoteAddr: 0x1004, SGL: []SGE{gS3}}}, 0, provider.BadAtomic, syscall.EINVAL},
		{"short atomic", QPTypeRC, []SendWR{{Opcode: verbs.WRAtomicFetchAndAdd, SGL: []SGE{{Length: 4, LKey: 1, Addr: 0x1000}}}}, 0, provider.BadAtomic, syscall.EINVAL},
		{"UD without AH", QPTypeUD, []SendWR{sendWR(1, gS1)}, 0, provider.NoAH, syscall.EINVAL},
		{"UD with another provider's AH", QPTypeUD, []SendWR{{Opcode: verbs.WRSend, AH: rxeAH, SGL: []SGE{gS1}}}, 0, provider.BadAH, syscall.EINVAL},
		{"local invalidate", QPTypeRC, []SendWR{{Opcode: verbs.WRLocalInv}}, 0, provider.OpcodeNotSupported, syscall.EOPNOTSUPP},
		{"bind MW", QPTypeRC, []SendWR{{Opcode: verbs.WRBindMW}}, 0, provider.OpcodeNotSupported, syscall.EOPNOTSUPP},
		{"TSO", QPTypeUD, []SendWR{{Opcode: wrTSO}}, 0, provider.OpcodeNotSupported, syscall.EOPNOTSUPP},
		{"unknown opcode", QPTypeRC, []SendWR{{Opcode: 99}}, 0, provider.BadOpcode, syscall.EINVAL},
		{"undefined opcode 12", QPTypeRC, []SendWR{{Opcode: 12}}, 0, provider.BadOpcode, syscall.EINVAL},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts := newTestSQ(t, c.typ, 256, false)
			n, st := ts.sq.PostSend(c.wrs)
			if n != c.posted || st != c.st || st.Errno() != c.errno {
				t.Fatalf("PostSend = %d, status %d (%v); want %d, status %d (%v)", n, st, st.Err(), c.posted, c.st, c.errno)
			}
			wantDBR := []byte{0, 0, 0, 0}
			if c.posted > 0 {
				wantDBR = []byte{0, 0, 0, byte(c.posted)}
			}
			if !bytes.Equal(ts.dbr[4:8], wantDBR) {
				t.Errorf("send doorbell record = %x, want %x (only the posted WQEs rung)", ts.dbr[4:8], wantDBR)
			}
			if ts.sq.Outstanding() != c.posted {
				t.Errorf("outstanding = %d, want %d", ts.sq.Outstanding(), c.posted)
			}
		})
	}
	t.Run("atomics disabled", func(t *testing.T) {
		ts := newTestSQ(t, QPTypeRC, 256, false)
		ts.sq.atomics = false
		ts.sq.setOps()
		if _, st := ts.sq.PostSend([]SendWR{{Opcode: verbs.WRAtomicCmpAndSwp, SGL: []SGE{gS3}}}); st != provider.OpcodeNotSupported {
			t.Fatalf("status = %d (%v), want OpcodeNotSupported", st, st.Err())
		}
	})
}

func TestSignalAll(t *testing.T) {
	ts := newTestSQ(t, QPTypeRC, 256, false)
	ts.sq.sigBits = CtrlCQUpdate
	if _, st := ts.sq.PostSend([]SendWR{{Opcode: verbs.WRSend, SGL: []SGE{gS1}}}); st != provider.OK {
		t.Fatal(st)
	}
	if ts.ring[11] != CtrlCQUpdate {
		t.Errorf("fm_ce_se = %#x, want CQ_UPDATE", ts.ring[11])
	}
}

func TestNewSendQueueValidation(t *testing.T) {
	d, _ := NewDoorbellRecord(aligned(8))
	r, _ := mmio.RegFromBytes(aligned(512))
	bf, _ := NewBFReg(r, 256, false)
	ok := SendQueueConfig{Buf: aligned(512), WQECount: 8, MaxPost: 8, MaxSGE: 1, QPN: 1, Type: QPTypeRC, DBR: d, BF: bf}
	if _, err := NewSendQueue(ok); err != nil {
		t.Fatalf("valid config rejected: %v", err)
	}
	for name, mut := range map[string]func(*SendQueueConfig){
		"count not pow2":  func(c *SendQueueConfig) { c.WQECount = 6 },
		"short buffer":    func(c *SendQueueConfig) { c.Buf = c.Buf[:448] },
		"too many posts":  func(c *SendQueueConfig) { c.MaxSGE = 4 }, // 2 blocks per WQE, 8 WQEs
		"zero max post":   func(c *SendQueueConfig) { c.MaxPost = 0 },
		"no register":     func(c *SendQueueConfig) { c.BF = nil },
		"no record":       func(c *SendQueueConfig) { c.DBR = DoorbellRecord{} },
		"bad type":        func(c *SendQueueConfig) { c.Type = 9 },
		"QPN over 24 bit": func(c *SendQueueConfig) { c.QPN = 1 << 24 },
	} {
		c := ok
		mut(&c)
		if _, err := NewSendQueue(c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestSharedBFRegConcurrent rings one shared register from two queues on two goroutines; with -race this proves
// the register state is only touched under its lock.
func TestSharedBFRegConcurrent(t *testing.T) {
	reg := aligned(512)
	r, _ := mmio.RegFromBytes(reg)
	bf, err := NewBFReg(r, 256, true)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for q := 0; q < 2; q++ {
		d, _ := NewDoorbellRecord(aligned(8))
		sq, err := NewSendQueue(SendQueueConfig{Buf: aligned(8 * 64), WQECount: 8, MaxPost: 8, MaxSGE: 1,
			QPN: uint32(q + 1), Type: QPTypeRC, DBR: d, BF: bf})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := []SendWR{sendWR(1, gS1)}
			for i := 0; i < 500; i++ {
				if _, st := sq.PostSend(w); st != provider.OK {
					t.Error(err)
					return
				}
				sq.tail = sq.head
			}
		}()
	}
	wg.Wait()
	if bf.Offset() != 0 { // 1000 toggles
		t.Errorf("offset after an even number of rings = %d", bf.Offset())
	}
}

func TestSendQueueReset(t *testing.T) {
	ts := newTestSQ(t, QPTypeRC, 256, false)
	if _, st := ts.sq.PostSend([]SendWR{sendWR(1, gS1)}); st != provider.OK {
		t.Fatal(st)
	}
	ts.sq.Reset()
	if ts.sq.Outstanding() != 0 || ts.sq.curPost != 0 || !bytes.Equal(ts.dbr[4:8], []byte{0, 0, 0, 0}) {
		t.Errorf("after reset: outstanding %d cur_post %d dbr %x", ts.sq.Outstanding(), ts.sq.curPost, ts.dbr[4:8])
	}
}

// TestPostSendAll: a chain posted whole writes the same WQEs and rings the same doorbell as PostSend (the
// extended QP's Complete, as libmlx5's wr_complete posts what ibv_post_send would), and a chain with a request
// the queue refuses posts nothing: no WQE counted, the doorbell record and register untouched, the producer
// where it was.
func TestPostSendAll(t *testing.T) {
	pl := payload()
	chains := [][]SendWR{
		{sendWR(1, gS1)},
		// one inline request alone (PostOne's path, as PostSend's): BlueFlamed the same way
		{{WRID: 3, Opcode: verbs.WRSend, Flags: verbs.SendSignaled | verbs.SendInline, SGL: []SGE{{Addr: addrOf(pl), Length: 32}}}},
		{{WRID: 1, Opcode: verbs.WRRDMAWrite, RemoteAddr: 0x2000, RKey: 7, SGL: []SGE{gS2}}, // the queue holds two
			{WRID: 2, Opcode: verbs.WRSendWithImm, Flags: verbs.SendSignaled | verbs.SendInline, Imm: 5,
				SGL: []SGE{{Addr: addrOf(pl), Length: 16}}}},
	}
	for _, wrs := range chains {
		a, b := newTestSQ(t, QPTypeRC, 256, false), newTestSQ(t, QPTypeRC, 256, false)
		if n, st := a.sq.PostSend(wrs); n != len(wrs) || st != provider.OK {
			t.Fatalf("PostSend = %d, %v", n, st)
		}
		if n, st := b.sq.PostSendAll(wrs); n != len(wrs) || st != provider.OK {
			t.Fatalf("PostSendAll = %d, %v", n, st)
		}
		if !bytes.Equal(a.ring, b.ring) || !bytes.Equal(a.dbr, b.dbr) || !bytes.Equal(a.reg, b.reg) ||
			a.sq.head != b.sq.head || a.sq.curPost != b.sq.curPost {
			t.Errorf("%d requests: PostSendAll wrote other WQEs or rang otherwise than PostSend", len(wrs))
		}
	}
	for _, c := range []struct {
		name string
		wrs  []SendWR
		bad  int
		st   provider.Status
	}{
		{"queue full at the third", []SendWR{sendWR(1, gS1), sendWR(2, gS1), sendWR(3, gS1)}, 2, provider.QueueFull},
		{"bad opcode second", []SendWR{sendWR(1, gS1), {Opcode: 99}}, 1, provider.BadOpcode},
		{"bad opcode alone", []SendWR{{Opcode: 99}}, 0, provider.BadOpcode},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts := newTestSQ(t, QPTypeRC, 256, false)
			head, cur := ts.sq.head, ts.sq.curPost
			dbr := append([]byte(nil), ts.dbr...)
			reg := append([]byte(nil), ts.reg...)
			bad, st := ts.sq.PostSendAll(c.wrs)
			if bad != c.bad || st != c.st {
				t.Fatalf("PostSendAll = %d, %v; want %d, %v", bad, st, c.bad, c.st)
			}
			if ts.sq.head != head || ts.sq.curPost != cur || ts.sq.Outstanding() != 0 ||
				!bytes.Equal(ts.dbr, dbr) || !bytes.Equal(ts.reg, reg) {
				t.Errorf("a refused chain moved the producer (head %d, cur %d, outstanding %d) or rang",
					ts.sq.head, ts.sq.curPost, ts.sq.Outstanding())
			}
			if n, st := ts.sq.PostSend([]SendWR{sendWR(1, gS1)}); n != 1 || st != provider.OK { // the queue works on
				t.Fatalf("PostSend after a refused chain = %d, %v", n, st)
			}
		})
	}
}
