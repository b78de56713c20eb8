package interop_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"github.com/goverbs/goverbs/test/interop"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goverbs/goverbs/test/labtest"
	"github.com/goverbs/goverbs/uverbs"
)

// TestLabAtomicWriteFlushPeers moves memory with RDMA ATOMIC WRITE, RDMA WRITE, RDMA FLUSH and a SEND with
// immediate data between goverbs and a C program using libibverbs' extended work requests and extended CQ
// (ibv_wr_*, ibv_start_poll: test/cpeer/wrpeer.c), run with trixie's libibverbs (rdma-core 56) and sid's (65)
// from their roots, in both directions: goverbs as the requester writing into the C program's memory and
// sending to it, and the C program doing so to goverbs. goverbs' side runs twice: with PostSend and Poll
// ("post"), and with the work-request builder (QP.StartWR) and an extended CQ read with StartPoll ("builder"),
// the pairing of libibverbs' extended API with goverbs' counterpart both ways. Each side checks the
// completions (wr_id, opcode; the receive's byte_len, immediate data, flags and QP number), the responder what
// landed. rxe has ATOMIC WRITE and FLUSH from Linux 6.2: before it the chain is the RDMA WRITE and the SEND
// only (wrpeer -b; TestLabFlushAtomicWrite pins the refusals there, conformance's TestQPExAtomicWriteFlush the
// builder's).
func TestLabAtomicWriteFlushPeers(t *testing.T) {
	labtest.Require(t)
	labtest.RequireRoot(t)
	basic := !labtest.Kernel().AtLeast(6, 2)
	if basic {
		labtest.Note(t, "Linux %s: rxe has RDMA ATOMIC WRITE and FLUSH from 6.2: the pairs run the RDMA WRITE and the SEND with immediate only", labtest.Kernel())
	}
	bin := labtest.BuildCPeer(t, "wrpeer")
	port := 19750
	for _, era := range []string{"trixie", "sid"} {
		root := peerRoot(t, era)
		b, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "tmp", "wrpeer"), b, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, goRequester := range []bool{true, false} {
			for _, builder := range []bool{false, true} {
				name := era + "/go-requester"
				if !goRequester {
					name = era + "/c-requester"
				}
				if builder {
					name += "/builder"
				} else {
					name += "/post"
				}
				port++
				t.Run(name, func(t *testing.T) { atomicWriteFlushPair(t, root, port, goRequester, builder, basic) })
			}
		}
	}
}

const wrpeerMagic = 0x52575647 // "GVWR"

func atomicWriteFlushPair(t *testing.T, root string, port int, goRequester, builder, basic bool) {
	const value = uint64(0x1122334455667788)
	const payload = "flushed payload!"
	const message, imm = "immediate hello!", uint32(0x600d)
	cRole := "responder"
	if !goRequester {
		cRole = "requester"
	}
	args := []string{"-d", labtest.Device(), "-g", "1", "-r", cRole, "-p", strconv.Itoa(port)}
	if basic {
		args = append(args, "-b")
	}
	cmd := exec.Command("/tmp/wrpeer", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
	cmd.Dir = "/"
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	cFailed := func(format string, args ...any) {
		t.Helper()
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s; C %s: %v\nstdout: %s\nstderr: %s", fmt.Sprintf(format, args...), cRole, waitErr, &stdout, &stderr)
	}
	if err := interop.WaitListeningIn(cmd.Process.Pid, port, 60*time.Second, done); err != nil {
		cFailed("%v", err)
	}

	ctx, err := uverbs.Open(labtest.Device())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctx.Close() })
	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pd.Close() })
	buf, err := uverbs.AllocBuffer(8192)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { buf.Close() })
	access := uverbs.AccessLocalWrite | uverbs.AccessRemoteWrite
	if !goRequester {
		access |= uverbs.AccessRemoteRead | uverbs.AccessRemoteAtomic
		if !basic {
			access |= uverbs.AccessFlushGlobal
		}
	}
	mr, err := pd.RegMR(buf.Bytes(), access)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mr.Close() })
	var cq *uverbs.CQ
	var sendOps uverbs.SendOps
	if builder {
		cq, err = ctx.CreateCQEx(uverbs.CQExAttr{CQE: 16, WCFlags: uverbs.WCStandardFlags})
		sendOps = uverbs.SendOpRDMAWrite | uverbs.SendOpSendWithImm
		if !basic {
			sendOps |= uverbs.SendOpAtomicWrite | uverbs.SendOpFlush
		}
	} else {
		cq, err = ctx.CreateCQ(uverbs.CQAttr{CQE: 16})
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cq.Close() })
	qp, err := pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: cq, RecvCQ: cq, SendOps: sendOps,
		Cap: uverbs.QPCap{MaxSendWR: 8, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { qp.Close() })
	// next waits up to a minute for one completion: with Poll, or with StartPoll … EndPoll on the extended CQ.
	wcs := make([]uverbs.WC, 1)
	next := func(i int) uverbs.WC {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Microsecond) {
			var n int
			var err error
			if builder {
				var wc *uverbs.WC
				if wc, err = cq.StartPoll(); wc != nil {
					wcs[0], n = *wc, 1
					cq.EndPoll()
				}
			} else {
				n, err = cq.Poll(wcs)
			}
			if err != nil {
				t.Fatal(err)
			}
			if n == 1 {
				return wcs[0]
			}
			if time.Now().After(deadline) {
				cFailed("completion %d: none after a minute", i)
			}
		}
	}
	ep, err := qp.Endpoint(&uverbs.EndpointOptions{Port: 1, GIDIndex: 1, PSN: 0x4242})
	if err != nil {
		t.Fatal(err)
	}

	conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 30*time.Second)
	if err != nil {
		cFailed("%v", err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Minute))
	me := labtest.CPeerRecord{Magic: wrpeerMagic, QPN: ep.QPN, PSN: ep.PSN, GID: ep.GID, Addr: mr.Addr(), RKey: mr.RKey(),
		W: [3]uint32{uint32(value & 0xffffffff), uint32(value >> 32)}}
	rec := make([]byte, labtest.CPeerRecordSize)
	if _, err := conn.Write(me.Marshal()); err != nil {
		cFailed("TCP write: %v", err)
	}
	if _, err := io.ReadFull(conn, rec); err != nil {
		cFailed("TCP read: %v", err)
	}
	them, err := labtest.ParseCPeerRecord(rec, wrpeerMagic)
	if err != nil {
		cFailed("%v", err)
	}
	opts := uverbs.DefaultConnectOptions()
	opts.MTU, opts.Access = uverbs.MTU1024, access
	if err := qp.Connect(uverbs.Endpoint{QPN: them.QPN, PSN: them.PSN, GID: them.GID, Port: 1, MTU: uverbs.MTU1024}, &opts); err != nil {
		cFailed("%v", err)
	}
	if !goRequester { // after RESET: rxe refuses a receive posted there
		if _, err := qp.PostRecv([]uverbs.RecvWR{{WRID: 5, SGL: []uverbs.SGE{mr.SGE(6144, 64)}}}); err != nil {
			t.Fatal(err)
		}
	}

	// Both sides are connected before a request flows (the C side says so too).
	if _, err := conn.Write([]byte("ready\x00\x00\x00")); err != nil {
		cFailed("TCP write: %v", err)
	}
	if _, err := io.ReadFull(conn, rec[:8]); err != nil {
		cFailed("TCP read: %v", err)
	}
	b := buf.Bytes()
	if goRequester {
		copy(b, payload)
		copy(b[256:], message)
		type step struct {
			id uint64
			op uverbs.WCOpcode
		}
		steps := []step{{1, uverbs.WCAtomicWrite}, {2, uverbs.WCRDMAWrite}, {3, uverbs.WCFlush}, {4, uverbs.WCSend}}
		wrs := []uverbs.SendWR{
			{WRID: 1, Opcode: uverbs.WRAtomicWrite, Flags: uverbs.SendSignaled, RemoteAddr: them.Addr + 64, RKey: them.RKey, Swap: value},
			{WRID: 2, Opcode: uverbs.WRRDMAWrite, Flags: uverbs.SendSignaled, SGL: []uverbs.SGE{mr.SGE(0, len(payload))},
				RemoteAddr: them.Addr + 4096, RKey: them.RKey},
			{WRID: 3, Opcode: uverbs.WRFlush, Flags: uverbs.SendSignaled, RemoteAddr: them.Addr + 4096, RKey: them.RKey,
				Flush: uverbs.Flush{Length: uint32(len(payload)), Type: uverbs.FlushGlobal, Level: uverbs.FlushRange}},
			{WRID: 4, Opcode: uverbs.WRSendWithImm, Flags: uverbs.SendSignaled, SGL: []uverbs.SGE{mr.SGE(256, len(message))}, Imm: imm},
		}
		if basic {
			steps = []step{steps[1], steps[3]}
			wrs = []uverbs.SendWR{wrs[1], wrs[3]}
		}
		if builder {
			w := qp.StartWR()
			if !basic {
				w.AtomicWrite(1, uverbs.SendSignaled, them.RKey, them.Addr+64, value)
			}
			w.RDMAWrite(2, uverbs.SendSignaled, them.RKey, them.Addr+4096).SetSGE(mr.LKey(), mr.Addr(), uint32(len(payload)))
			if !basic {
				w.Flush(3, uverbs.SendSignaled, them.RKey, them.Addr+4096, uint32(len(payload)), uverbs.FlushGlobal, uverbs.FlushRange)
			}
			w.SendImm(4, uverbs.SendSignaled, imm).SetSGE(mr.LKey(), mr.Addr()+256, uint32(len(message)))
			if err := w.Complete(); err != nil {
				cFailed("complete: %v", err)
			}
		} else if _, err := qp.PostSend(wrs); err != nil {
			cFailed("post: %v", err)
		}
		for _, st := range steps {
			wc := next(int(st.id))
			if err := wc.Err(); err != nil || wc.WRID != st.id || wc.Opcode != st.op {
				cFailed("completion %d: %+v (%v), want wr_id %d opcode %v", st.id, wc, err, st.id, st.op)
			}
		}
		if _, err := conn.Write([]byte("done\x00\x00\x00\x00")); err != nil {
			cFailed("TCP write: %v", err)
		}
	} else {
		if _, err := io.ReadFull(conn, rec[:8]); err != nil {
			cFailed("waiting for the C requester: %v", err)
		}
		if got := binary.NativeEndian.Uint64(b[64:]); got != value && !basic {
			t.Errorf("ATOMIC WRITE from C left %#x at offset 64, want %#x", got, value)
		}
		if got := string(b[4096 : 4096+len(payload)]); got != payload {
			t.Errorf("RDMA WRITE+FLUSH from C left %q at offset 4096, want %q", got, payload)
		}
		wc := next(5)
		if err := wc.Err(); err != nil || wc.WRID != 5 || wc.Opcode != uverbs.WCRecv || wc.ByteLen != uint32(len(message)) ||
			wc.Flags&uverbs.WCWithImm == 0 || wc.Imm != imm || wc.QPNum != qp.QPN() {
			t.Errorf("receive of the C SEND with immediate: %+v (%v), want wr_id 5, RECV, %d bytes, immediate %#x, QP %#x",
				wc, err, len(message), imm, qp.QPN())
		}
		if got := string(b[6144 : 6144+len(message)]); got != message {
			t.Errorf("SEND from C left %q, want %q", got, message)
		}
	}
	select {
	case <-done:
	case <-time.After(time.Minute):
		cFailed("the C %s did not exit", cRole)
	}
	if waitErr != nil {
		cFailed("C %s failed", cRole)
	}
	want := fmt.Sprintf("wrpeer: responder: word 0x%016x, bytes %s, received %s with immediate 0x600d", value, payload, message)
	switch {
	case !goRequester && basic:
		want = "wrpeer: requester: RDMA WRITE and SEND with immediate completed"
	case !goRequester:
		want = fmt.Sprintf("wrpeer: requester: ATOMIC WRITE 0x%016x, RDMA WRITE, FLUSH and SEND with immediate completed", value)
	case basic:
		want = fmt.Sprintf("wrpeer: responder: bytes %s, received %s with immediate 0x600d", payload, message)
	}
	if got := strings.TrimSpace(stdout.String()); got != want {
		t.Errorf("C %s printed %q, want %q", cRole, got, want)
	}
	t.Logf("%s", strings.TrimSpace(stdout.String()))
}
