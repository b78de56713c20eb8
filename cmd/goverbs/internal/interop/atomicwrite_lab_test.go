package interop_test

import (
	"bytes"
	"context"
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

// TestLabAtomicWriteFlushPeers moves memory with RDMA ATOMIC WRITE and RDMA FLUSH between goverbs and a C
// program using libibverbs' extended work requests (ibv_wr_atomic_write, ibv_wr_flush: test/cpeer/wrpeer.c),
// run with trixie's libibverbs (rdma-core 56) and sid's (65) from their roots, in both directions: goverbs as
// the requester (uverbs.WRAtomicWrite, WRRDMAWrite, WRFlush) writing into the C program's memory, and the C
// program writing into goverbs'. Each side checks the completions' opcodes, the responder what landed. rxe has
// both operations from Linux 6.2; on 6.1 the test is skipped with that reason (TestLabFlushAtomicWrite pins the
// refusals there).
func TestLabAtomicWriteFlushPeers(t *testing.T) {
	labtest.Require(t)
	labtest.RequireRoot(t)
	if k := labtest.Kernel(); !k.AtLeast(6, 2) {
		t.Skipf("Linux %s: rxe has RDMA ATOMIC WRITE and FLUSH from 6.2 (the device reports neither capability)", k)
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
			name := era + "/go-requester"
			if !goRequester {
				name = era + "/c-requester"
			}
			port++
			t.Run(name, func(t *testing.T) { atomicWriteFlushPair(t, root, port, goRequester) })
		}
	}
}

const wrpeerMagic = 0x52575647 // "GVWR"

func atomicWriteFlushPair(t *testing.T, root string, port int, goRequester bool) {
	const value = uint64(0x1122334455667788)
	const payload = "flushed payload!"
	cRole := "responder"
	if !goRequester {
		cRole = "requester"
	}
	cmd := exec.Command("/tmp/wrpeer", "-d", labtest.Device(), "-g", "1", "-r", cRole, "-p", strconv.Itoa(port))
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
		access |= uverbs.AccessRemoteRead | uverbs.AccessRemoteAtomic | uverbs.AccessFlushGlobal
	}
	mr, err := pd.RegMR(buf.Bytes(), access)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mr.Close() })
	cq, err := ctx.CreateCQ(uverbs.CQAttr{CQE: 16})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cq.Close() })
	qp, err := pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: cq, RecvCQ: cq,
		Cap: uverbs.QPCap{MaxSendWR: 8, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { qp.Close() })
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
		if _, err := qp.PostSend([]uverbs.SendWR{
			{WRID: 1, Opcode: uverbs.WRAtomicWrite, Flags: uverbs.SendSignaled, RemoteAddr: them.Addr + 64, RKey: them.RKey, Swap: value},
			{WRID: 2, Opcode: uverbs.WRRDMAWrite, Flags: uverbs.SendSignaled, SGL: []uverbs.SGE{mr.SGE(0, len(payload))},
				RemoteAddr: them.Addr + 4096, RKey: them.RKey},
			{WRID: 3, Opcode: uverbs.WRFlush, Flags: uverbs.SendSignaled, RemoteAddr: them.Addr + 4096, RKey: them.RKey,
				Flush: uverbs.Flush{Length: uint32(len(payload)), Type: uverbs.FlushGlobal, Level: uverbs.FlushRange}},
		}); err != nil {
			cFailed("post: %v", err)
		}
		wcs := make([]uverbs.WC, 1)
		pctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for i, want := range []uverbs.WCOpcode{uverbs.WCAtomicWrite, uverbs.WCRDMAWrite, uverbs.WCFlush} {
			for {
				n, err := cq.Poll(wcs)
				if err != nil {
					t.Fatal(err)
				}
				if n == 1 {
					break
				}
				if pctx.Err() != nil {
					cFailed("completion %d: none after a minute", i+1)
				}
				time.Sleep(100 * time.Microsecond)
			}
			if err := wcs[0].Err(); err != nil || wcs[0].WRID != uint64(i+1) || wcs[0].Opcode != want {
				cFailed("completion %d: %+v (%v), want wr_id %d opcode %v", i+1, wcs[0], err, i+1, want)
			}
		}
		if _, err := conn.Write([]byte("done\x00\x00\x00\x00")); err != nil {
			cFailed("TCP write: %v", err)
		}
	} else {
		if _, err := io.ReadFull(conn, rec[:8]); err != nil {
			cFailed("waiting for the C requester: %v", err)
		}
		if got := binary.NativeEndian.Uint64(b[64:]); got != value {
			t.Errorf("ATOMIC WRITE from C left %#x at offset 64, want %#x", got, value)
		}
		if got := string(b[4096 : 4096+len(payload)]); got != payload {
			t.Errorf("RDMA WRITE+FLUSH from C left %q at offset 4096, want %q", got, payload)
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
	want := fmt.Sprintf("wrpeer: responder: word 0x%016x, bytes %s", value, payload)
	if !goRequester {
		want = fmt.Sprintf("wrpeer: requester: ATOMIC WRITE 0x%016x, RDMA WRITE and FLUSH completed", value)
	}
	if got := strings.TrimSpace(stdout.String()); got != want {
		t.Errorf("C %s printed %q, want %q", cRole, got, want)
	}
	t.Logf("%s", strings.TrimSpace(stdout.String()))
}
