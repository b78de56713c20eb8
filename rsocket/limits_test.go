package rsocket

import (
	"errors"
	"testing"

	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

// rxeAttr is what rxe reports for the limits plan reads (max_qp_wr 0x4000, max_cqe 0x7fff; max_mr_size all ones).
var rxeAttr = &uverbs.DeviceAttr{MaxQPWR: 0x4000, MaxCQE: 0x7fff, MaxMRSize: ^uint64(0)}

func TestPlan(t *testing.T) {
	for _, tc := range []struct {
		name   string
		o      Options
		attr   *uverbs.DeviceAttr
		sq, rq uint16
		opt    string // the LimitError's option, "" for success
	}{
		{"defaults", Options{}, rxeAttr, 384, 384, ""},
		{"clamped to max_qp_wr, then the CQ", Options{SQSize: 1 << 20, RQSize: 1 << 20}, rxeAttr, 16384, 16383, ""},
		{"one queue deep", Options{SQSize: 1 << 20}, rxeAttr, 16384, 384, ""},
		{"below the minimum", Options{SQSize: 1, RQSize: -5}, rxeAttr, 16, 16, ""},
		{"send buffer 1<<34", Options{SendBuffer: 1 << 34}, rxeAttr, 384, 384, "SendBuffer"},
		{"recv buffer 1<<40", Options{RecvBuffer: 1 << 40}, rxeAttr, 384, 384, "RecvBuffer"},
		{"over max_mr_size", Options{RecvBuffer: 1 << 21}, &uverbs.DeviceAttr{MaxMRSize: 1 << 20}, 384, 384, "RecvBuffer"},
		{"max_qp_wr below the minimum", Options{}, &uverbs.DeviceAttr{MaxQPWR: 8}, 384, 384, "SQSize"},
		{"no device limits known", Options{SQSize: 1 << 20}, nil, 0xFFFE, 384, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := plan(&tc.o, "rxe0", tc.attr)
			if tc.opt != "" {
				var le *LimitError
				if !errors.As(err, &le) || le.Option != tc.opt || !errors.Is(err, unix.EINVAL) {
					t.Fatalf("plan = %v, want a *LimitError for %s", err, tc.opt)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.sq != tc.sq || s.rq != tc.rq {
				t.Fatalf("queues %d/%d, want %d/%d", s.sq, s.rq, tc.sq, tc.rq)
			}
		})
	}
}

// FuzzOptions: whatever the sizes asked for and the device's limits, plan does not panic, and a plan it
// accepts fits the protocol and the device; what it refuses is a *LimitError.
func FuzzOptions(f *testing.F) {
	f.Add(0, 0, 0, 0, 0, 0, uint32(0x4000), uint32(0x7fff), ^uint64(0))
	f.Add(1<<34, 1<<40, 1<<20, 1<<20, 1<<20, 1<<20, uint32(16), uint32(32), uint64(1<<20))
	f.Add(-1, -1, -1, -1, -1, -1, uint32(0), uint32(0), uint64(0))
	f.Fuzz(func(t *testing.T, sb, rb, inline, sq, rq, iomap int, maxWR, maxCQE uint32, maxMR uint64) {
		o := Options{SendBuffer: sb, RecvBuffer: rb, InlineSize: inline, SQSize: sq, RQSize: rq, IOMapSize: iomap}
		attr := &uverbs.DeviceAttr{MaxQPWR: maxWR, MaxCQE: maxCQE, MaxMRSize: maxMR}
		s, err := plan(&o, "dev", attr)
		if err != nil {
			var le *LimitError
			if !errors.As(err, &le) || le.Error() == "" {
				t.Fatalf("plan error %T %v is not a *LimitError", err, err)
			}
			return
		}
		if s.sq < qpMinSize || s.rq < qpMinSize || s.sq > qpMaxSize || s.rq > qpMaxSize {
			t.Fatalf("queues %d/%d outside [%d, %d]", s.sq, s.rq, qpMinSize, qpMaxSize)
		}
		if maxWR > 0 && (uint32(s.sq) > maxWR || uint32(s.rq) > maxWR) {
			t.Fatalf("queues %d/%d over max_qp_wr %d", s.sq, s.rq, maxWR)
		}
		if maxCQE > 0 && uint32(s.sq)+uint32(s.rq) > maxCQE {
			t.Fatalf("queues %d+%d over max_cqe %d", s.sq, s.rq, maxCQE)
		}
		if s.sbuf < 2*sndLowat || s.rbuf < 2*sndLowat || s.sbuf > maxBufferSize || s.rbuf > maxBufferSize {
			t.Fatalf("buffers %d/%d outside [%d, %d]", s.sbuf, s.rbuf, 2*sndLowat, maxBufferSize)
		}
		if maxMR > 0 && (uint64(s.sbuf+ctrlSlots*sgeLen) > maxMR || uint64(s.rbuf) > maxMR) {
			t.Fatalf("buffers %d/%d over max_mr_size %d", s.sbuf, s.rbuf, maxMR)
		}
		if s.inline < 0 || s.iomap < 0 || s.iomap > maxIOMapSize || s.pinned() < uint64(s.sbuf+s.rbuf) {
			t.Fatalf("plan %+v", s)
		}
	})
}
