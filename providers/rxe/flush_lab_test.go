package rxe_test

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/goverbs/goverbs/test/labtest"
	"github.com/goverbs/goverbs/uverbs"
)

// RDMA ATOMIC WRITE and RDMA FLUSH against the kernel: rxe has them from Linux 6.2 (the capability bits, the
// MR access flags and the opcodes together); on 6.1 goverbs refuses each as not supported before the kernel
// sees it.
func TestLabFlushAtomicWrite(t *testing.T) {
	e := newLab(t)
	attr, err := e.ctx.QueryDevice()
	if err != nil {
		t.Fatal(err)
	}
	caps := attr.DeviceCapFlags
	t.Logf("Linux %s: %s device caps include %v", labtest.Kernel(), labtest.Device(),
		caps&(uverbs.DeviceCapFlushGlobal|uverbs.DeviceCapFlushPersistent|uverbs.DeviceCapAtomicWrite))
	b, err := uverbs.AllocBuffer(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { check(t, b.Close()) })
	target := b.Bytes()
	flushAccess := uverbs.AccessLocalWrite | uverbs.AccessRemoteWrite | uverbs.AccessFlushGlobal

	if !labtest.Kernel().AtLeast(6, 2) {
		if caps&(uverbs.DeviceCapFlushGlobal|uverbs.DeviceCapFlushPersistent|uverbs.DeviceCapAtomicWrite) != 0 {
			t.Errorf("Linux %s advertises %v; rxe has FLUSH and ATOMIC WRITE from 6.2", labtest.Kernel(), caps)
		}
		if mr, err := e.pd.RegMR(target, flushAccess); !errors.Is(err, uverbs.ErrNotSupported) {
			if err == nil {
				mr.Close()
			}
			t.Errorf("RegMR with FLUSH_GLOBAL access: %v, want ErrNotSupported", err)
		}
		p := e.rcPair(t, labCap, nil)
		for _, wr := range []uverbs.SendWR{
			{Opcode: uverbs.WRAtomicWrite, RemoteAddr: e.mr.Addr(), RKey: e.mr.RKey()},
			{Opcode: uverbs.WRFlush, RemoteAddr: e.mr.Addr(), RKey: e.mr.RKey(), Flush: uverbs.Flush{Length: 8, Type: uverbs.FlushGlobal}},
		} {
			if _, err := p.a.PostSend([]uverbs.SendWR{wr}); !errors.Is(err, uverbs.ErrNotSupported) {
				t.Errorf("post %v: %v, want ErrNotSupported", wr.Opcode, err)
			}
		}
		return
	}

	if caps&uverbs.DeviceCapFlushGlobal == 0 || caps&uverbs.DeviceCapAtomicWrite == 0 {
		t.Fatalf("Linux %s (64-bit) rxe should advertise FLUSH_GLOBAL and ATOMIC_WRITE: caps %v", labtest.Kernel(), caps)
	}
	mr, err := e.pd.RegMR(target, flushAccess)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { check(t, mr.Close()) })
	// The responder's QP must grant the flush placement too (rxe checks qp_access_flags as for REMOTE_WRITE).
	p := e.flushPair(t)

	// ATOMIC WRITE: 8 bytes land at once at the remote address.
	binary.NativeEndian.PutUint64(target[64:], 0xdeaddeaddeaddead)
	if _, err := p.a.PostSend([]uverbs.SendWR{{WRID: 1, Opcode: uverbs.WRAtomicWrite, Flags: uverbs.SendSignaled,
		RemoteAddr: mr.Addr() + 64, RKey: mr.RKey(), Swap: 0x1122334455667788}}); err != nil {
		t.Fatal(err)
	}
	if w := poll(t, p.cqA, 1)[0]; w.WRID != 1 || w.Opcode != uverbs.WCAtomicWrite {
		t.Errorf("atomic write completion %+v", w)
	}
	if v := binary.NativeEndian.Uint64(target[64:]); v != 0x1122334455667788 {
		t.Errorf("remote word %#x after ATOMIC WRITE", v)
	}

	// RDMA WRITE then FLUSH (global visibility) of that range, and of the whole MR.
	copy(e.buf[:16], "flushed payload!")
	if _, err := p.a.PostSend([]uverbs.SendWR{
		{WRID: 2, SGL: []uverbs.SGE{e.mr.SGE(0, 16)}, Opcode: uverbs.WRRDMAWrite, RemoteAddr: mr.Addr() + 4096, RKey: mr.RKey()},
		{WRID: 3, Opcode: uverbs.WRFlush, Flags: uverbs.SendSignaled, RemoteAddr: mr.Addr() + 4096, RKey: mr.RKey(),
			Flush: uverbs.Flush{Length: 16, Type: uverbs.FlushGlobal, Level: uverbs.FlushRange}},
		{WRID: 4, Opcode: uverbs.WRFlush, Flags: uverbs.SendSignaled, RemoteAddr: mr.Addr(), RKey: mr.RKey(),
			Flush: uverbs.Flush{Type: uverbs.FlushGlobal, Level: uverbs.FlushMR}},
	}); err != nil {
		t.Fatal(err)
	}
	for i, w := range poll(t, p.cqA, 2) {
		if w.WRID != uint64(3+i) || w.Opcode != uverbs.WCFlush {
			t.Errorf("flush completion %d: %+v", i, w)
		}
	}
	if got := string(target[4096 : 4096+16]); got != "flushed payload!" {
		t.Errorf("remote range %q after WRITE+FLUSH", got)
	}

	// A FLUSH the target MR does not allow (e.mr has no flush access): the responder refuses it.
	q := e.flushPair(t)
	if _, err := q.a.PostSend([]uverbs.SendWR{{WRID: 5, Opcode: uverbs.WRFlush, Flags: uverbs.SendSignaled,
		RemoteAddr: e.mr.Addr(), RKey: e.mr.RKey(), Flush: uverbs.Flush{Length: 8, Type: uverbs.FlushGlobal}}}); err != nil {
		t.Fatal(err)
	}
	wc := make([]uverbs.WC, 1)
	for deadline := time.Now().Add(30 * time.Second); ; {
		n, err := q.cqA.Poll(wc)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no completion for the refused FLUSH after 30s")
		}
	}
	if wc[0].WRID != 5 || !errors.Is(wc[0].Err(), uverbs.WCRemAccessErr) {
		t.Errorf("FLUSH to an MR without flush access: %+v (%v), want REM_ACCESS_ERR", wc[0], wc[0].Err())
	}
}

// flushPair is rcPair with QPs that also grant RDMA FLUSH with global visibility.
func (e *labEnv) flushPair(t *testing.T) rcPair {
	var p rcPair
	p.cqA, p.cqB = e.cq(t, 64, nil), e.cq(t, 64, nil)
	p.a = e.qp(t, uverbs.QPTypeRC, p.cqA, p.cqA, nil, labCap)
	p.b = e.qp(t, uverbs.QPTypeRC, p.cqB, p.cqB, nil, labCap)
	eo := &uverbs.EndpointOptions{Port: 1, GIDIndex: int(e.gidIndex)}
	for _, qp := range []*uverbs.QP{p.a, p.b} {
		if _, err := qp.Endpoint(eo); err != nil {
			t.Fatal(err)
		}
	}
	o := uverbs.DefaultConnectOptions()
	o.MTU, o.MaxRdAtomic, o.MaxDestRdAtomic, o.MinRNRTimer = uverbs.MTU1024, 4, 4, 1
	o.Access |= uverbs.AccessFlushGlobal
	for _, x := range [][2]*uverbs.QP{{p.a, p.b}, {p.b, p.a}} {
		ep, err := x[1].Endpoint(eo)
		if err != nil {
			t.Fatal(err)
		}
		if err := x[0].Connect(ep, &o); err != nil {
			t.Fatal(err)
		}
	}
	return p
}
