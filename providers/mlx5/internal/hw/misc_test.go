package hw

import (
	"errors"
	"testing"

	"github.com/goverbs/goverbs/abi"
)

func TestIBAH(t *testing.T) {
	ah := NewIBAH(AHAttr{DLID: 0x1234, SL: 0x1f, SrcPathBits: 0xff, StaticRate: 6, IsGlobal: true,
		GRH: GRH{DGID: [16]byte{0xfe, 0x80, 15: 1}, FlowLabel: 0xfffff | 1<<20, SGIDIndex: 2, HopLimit: 9, TrafficClass: 7}})
	av := ah.AV
	if av[avOffFlMLID] != 0x7f || be.Uint16(av[avOffRLID:]) != 0x1234 {
		t.Errorf("fl_mlid/rlid = %#x/%#x", av[avOffFlMLID], be.Uint16(av[avOffRLID:]))
	}
	if av[avOffStatRateSL] != 11<<4|0xf { // IBV_RATE_20_GBPS (6) -> 11; SL masked to 4 bits
		t.Errorf("stat_rate_sl = %#x", av[avOffStatRateSL])
	}
	if g := be.Uint32(av[avOffGRHGIDFL:]); g != 1<<30|2<<20|0xfffff {
		t.Errorf("grh_gid_fl = %#x", g)
	}
	if av[avOffTClass] != 7 || av[avOffHopLimit] != 9 || av[avOffRGID] != 0xfe || av[avOffRGID+15] != 1 {
		t.Errorf("GRH fields not copied: %x", av[26:48])
	}
	for _, i := range []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11} {
		if av[i] != 0 {
			t.Errorf("byte %d (key/dqp, patched per WQE) = %#x", i, av[i])
		}
	}
	if local := NewIBAH(AHAttr{DLID: 1, StaticRate: 99}); local.AV[avOffGRHGIDFL] != 0 || local.AV[avOffStatRateSL] != 0 {
		t.Errorf("non-global IB AH: %x", local.AV)
	}
}

func TestRoCEAH(t *testing.T) {
	if _, err := NewRoCEAH(AHAttr{}, [6]byte{}, true, 0xc000); !errors.Is(err, errInvalid) {
		t.Errorf("RoCE without GRH: %v", err)
	}
	ah, err := NewRoCEAH(AHAttr{SL: 0xf, IsGlobal: true, GRH: GRH{SGIDIndex: 3}}, [6]byte{1, 2, 3, 4, 5, 6}, true, 0xd00d)
	if err != nil {
		t.Fatal(err)
	}
	if be.Uint16(ah.AV[avOffRLID:]) != 0xd00d {
		t.Errorf("v2 with zero flow label: sport = %#x, want the given 0xd00d", be.Uint16(ah.AV[avOffRLID:]))
	}
	if ah.AV[avOffStatRateSL] != 7<<1 || be.Uint32(ah.AV[avOffGRHGIDFL:])>>30 != 0 {
		t.Errorf("stat_rate_sl %#x grh %#x", ah.AV[avOffStatRateSL], be.Uint32(ah.AV[avOffGRHGIDFL:]))
	}
	if string(ah.AV[avOffRMAC:avOffRMAC+6]) != "\x01\x02\x03\x04\x05\x06" {
		t.Errorf("rmac = %x", ah.AV[avOffRMAC:avOffRMAC+6])
	}
	v1, _ := NewRoCEAH(AHAttr{IsGlobal: true, GRH: GRH{FlowLabel: 5}}, [6]byte{}, false, 0xd00d)
	if be.Uint16(v1.AV[avOffRLID:]) != 0 {
		t.Errorf("RoCE v1 rlid = %#x, want 0", be.Uint16(v1.AV[avOffRLID:]))
	}
	for _, c := range []struct {
		fl   uint32
		want uint16
	}{{0, 0xc000}, {1, 0xc001}, {0x4000, 0xc001}, {0x12345, 0xc000 | (0x2345 ^ 0x4)}, {0xfffff, 0xc000 | (0x3fff ^ 0x3f)}} {
		if got := FlowLabelToUDPSport(c.fl); got != c.want {
			t.Errorf("FlowLabelToUDPSport(%#x) = %#x, want %#x", c.fl, got, c.want)
		}
	}
}

var limits = QueueLimits{MaxSQDescSz: 512, MaxRQDescSz: 512, MaxSendWQEBB: 32768, MaxRecvWR: 32768}

// TestSizeQP checks rdma-core's sizing arithmetic on the shapes ibv_rc_pingpong, perftest and UD use.
func TestSizeQP(t *testing.T) {
	for _, c := range []struct {
		name string
		typ  QPType
		caps QPCaps
		srq  bool
		want QPLayout
	}{
		{"RC pingpong", QPTypeRC, QPCaps{MaxSendWR: 1, MaxRecvWR: 500, MaxSendSGE: 1, MaxRecvSGE: 1}, false,
			QPLayout{SQWQECount: 4, SQMaxPost: 1, SQWQESize: 256, RQWQECount: 512, RQWQEShift: 4, RQMaxPost: 512,
				SQOffset: 8192, BufSize: 12288,
				Caps: QPCaps{MaxSendWR: 1, MaxRecvWR: 512, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInlineData: 60}}},
		{"RC inline 220", QPTypeRC, QPCaps{MaxSendWR: 128, MaxRecvWR: 0, MaxSendSGE: 1, MaxInlineData: 220}, false,
			// 192 + align(4+220, 16) = 416 -> 448-byte WQEs; 128*448 rounds up to 65536 bytes = 146 WQEs.
			QPLayout{SQWQECount: 1024, SQMaxPost: 146, SQWQESize: 448, SQOffset: 0, BufSize: 65536,
				Caps: QPCaps{MaxSendWR: 146, MaxSendSGE: 1, MaxInlineData: 252}}},
		{"UD", QPTypeUD, QPCaps{MaxSendWR: 64, MaxRecvWR: 64, MaxSendSGE: 1, MaxRecvSGE: 2}, false,
			QPLayout{SQWQECount: 128, SQMaxPost: 64, SQWQESize: 128, RQWQECount: 64, RQWQEShift: 5, RQMaxPost: 64,
				SQOffset: 2048, BufSize: 12288,
				Caps: QPCaps{MaxSendWR: 64, MaxRecvWR: 64, MaxSendSGE: 1, MaxRecvSGE: 2, MaxInlineData: 60}}},
		{"RC with SRQ", QPTypeRC, QPCaps{MaxSendWR: 16, MaxRecvWR: 64, MaxSendSGE: 2}, true,
			QPLayout{SQWQECount: 64, SQMaxPost: 16, SQWQESize: 256, BufSize: 4096,
				Caps: QPCaps{MaxSendWR: 16, MaxSendSGE: 2, MaxInlineData: 60}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := SizeQP(c.typ, c.caps, c.srq, limits, 4096)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
	for name, c := range map[string]QPCaps{
		"too many SGEs":   {MaxSendWR: 1, MaxSendSGE: 40},
		"inline too big":  {MaxSendWR: 1, MaxInlineData: 400},
		"too many blocks": {MaxSendWR: 1 << 16, MaxSendSGE: 1},
		"too many recvs":  {MaxRecvWR: 1 << 20},
		"recv WQE big":    {MaxRecvWR: 1, MaxRecvSGE: 64},
	} {
		if _, err := SizeQP(QPTypeRC, c, false, limits, 4096); !errors.Is(err, errInvalid) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	if _, err := SizeQP(9, QPCaps{}, false, limits, 4096); !errors.Is(err, ErrNotSupported) {
		t.Errorf("bad type: %v", err)
	}
}

// TestSizedQueuesWork builds queues from SizeQP's layout, proving the two agree.
func TestSizedQueuesWork(t *testing.T) {
	l, err := SizeQP(QPTypeRC, QPCaps{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 2, MaxRecvSGE: 2, MaxInlineData: 64},
		false, limits, 4096)
	if err != nil {
		t.Fatal(err)
	}
	buf := aligned(l.BufSize)
	d, _ := NewDoorbellRecord(aligned(8))
	bf := newTestSQ(t, QPTypeRC, 256, false).bf
	if _, err := NewSendQueue(SendQueueConfig{Buf: buf[l.SQOffset:], WQECount: l.SQWQECount, MaxPost: l.SQMaxPost,
		MaxSGE: l.Caps.MaxSendSGE, MaxInline: l.Caps.MaxInlineData, QPN: 1, Type: QPTypeRC, DBR: d, BF: bf}); err != nil {
		t.Errorf("send queue from layout: %v", err)
	}
	if _, err := NewRecvQueue(RecvQueueConfig{Buf: buf[:l.SQOffset], WQECount: l.RQWQECount, WQEShift: l.RQWQEShift,
		MaxPost: l.RQMaxPost, DBR: d}); err != nil {
		t.Errorf("receive queue from layout: %v", err)
	}
	s, err := SizeSRQ(100, 3, limits)
	if err != nil || s != (SRQLayout{WQECount: 128, WQEShift: 6, MaxSGE: 3, MaxWR: 127}) {
		t.Errorf("SizeSRQ = %+v, %v", s, err)
	}
	if s, _ := SizeSRQ(1, 0, limits); s.WQEShift != 5 || s.WQECount != 2 {
		t.Errorf("minimal SRQ = %+v", s)
	}
	if _, err := SizeSRQ(0, 1, limits); err == nil {
		t.Error("zero-WR SRQ accepted")
	}
}

func TestCapsAndBfregs(t *testing.T) {
	r := abi.Mlx5IbAllocUcontextResp{BfRegSize: 512, CqeVersion: 1, LogUarSize: 12, NumUarsPerPage: 1}
	c := CapsFromResp(&r, 4096)
	if !c.BlueFlame || c.ContextFlags() != MLX5DV_CONTEXT_FLAGS_CQE_V1|MLX5DV_CONTEXT_FLAGS_BLUEFLAME {
		t.Errorf("caps %+v flags %#x", c, c.ContextFlags())
	}
	// The kernel zeroes bf_reg_size when its write-combining test fails: no BlueFlame flag (rdma-core v58).
	c = CapsFromResp(&abi.Mlx5IbAllocUcontextResp{}, 65536)
	if c.BlueFlame || c.ContextFlags() != 0 || c.UARSize != 65536 || c.UARsPerPage != 1 {
		t.Errorf("no-WC caps %+v flags %#x", c, c.ContextFlags())
	}
}

// FuzzCapsFromResp feeds arbitrary GET_CONTEXT responses (the kernel writes only the fields it knows; the rest
// stay zero) to the capability derivation the provider runs on them.
func FuzzCapsFromResp(f *testing.F) {
	f.Add(make([]byte, 72))
	f.Add(make([]byte, 16))
	f.Fuzz(func(t *testing.T, b []byte) {
		var r abi.Mlx5IbAllocUcontextResp
		copy(bytesOf(&r), b)
		c := CapsFromResp(&r, 4096)
		// As rdma-core's adjust_uar_info: a response with neither UAR field (an old kernel) means one UAR of a
		// page per page; otherwise the kernel's numbers are taken as given — including 0 UARs per page, which
		// the provider then refuses (allocContext: "0 UARs per page", EINVAL; found by make fuzz, where this
		// check used to require at least one).
		wantPerPage := int(r.NumUarsPerPage)
		if r.LogUarSize == 0 && r.NumUarsPerPage == 0 {
			wantPerPage = 1
		}
		if c.BlueFlame != (r.BfRegSize != 0) || c.UARsPerPage != wantPerPage || c.UARSize < 1 {
			t.Fatalf("caps %+v from %+v", c, r)
		}
		_ = c.ContextFlags()
	})
}
