package rdmacm_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/goverbs/rdmacm"
	"github.com/goverbs/goverbs/test/labtest"
	"github.com/goverbs/goverbs/uverbs"
)

// remoteBuf is the private data the server computes in Setup: the address, rkey and length of a buffer it
// registered there, big-endian (as rdma-core's examples put such a description on the wire).
func remoteBuf(mr *uverbs.MR, n int) []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint64(b[0:], mr.Addr())
	binary.BigEndian.PutUint32(b[8:], mr.RKey())
	binary.BigEndian.PutUint32(b[12:], uint32(n))
	return b
}

// readableServer accepts one request on l with a Setup that registers a buffer holding text for remote
// reading and puts its description into the ACCEPT with Conn.SetPrivateData (the pattern issue 30's user
// could not express), then waits for the client's DISCONNECT and releases everything.
// check, when not nil, looks at the accepted connection.
func readableServer(t *testing.T, l *rdmacm.Listener, text string, check func(*rdmacm.Conn) error) (sent chan []byte, done chan error) {
	sent, done = make(chan []byte, 1), make(chan error, 1)
	go func() {
		ctx := testCtx(t)
		req, err := l.Accept(ctx)
		if err != nil {
			done <- err
			return
		}
		buf, err := uverbs.AllocBuffer(4096)
		if err != nil {
			req.Reject(nil)
			done <- err
			return
		}
		defer buf.Close()
		copy(buf.Bytes(), text)
		var mr *uverbs.MR
		defer func() { mr.Close() }()
		c, err := req.Accept(ctx, &rdmacm.Options{Setup: func(c *rdmacm.Conn) error {
			var err error
			if mr, err = c.PD().RegMR(buf.Bytes(), uverbs.AccessLocalWrite|uverbs.AccessRemoteRead); err != nil {
				return err
			}
			pd := remoteBuf(mr, len(text))
			sent <- pd
			return c.SetPrivateData(pd)
		}})
		if err != nil {
			done <- err
			return
		}
		if check != nil {
			if err := check(c); err != nil {
				mr.Close()
				c.Close()
				done <- err
				return
			}
		}
		_, err = c.WaitEvent(ctx) // the client's DISCONNECT
		// The MR registered on the connection's PD goes first: Close deallocates the PD.
		done <- errors.Join(err, mr.Close(), c.Close())
	}()
	return sent, done
}

// Private data computed in Setup reaches a C client on ACCEPT (issue 30): rdma-core's librdmacm client
// (test/cpeer/cmpriv.c, rdma_client's shape) reads it from the ESTABLISHED event and RDMA READs the buffer it
// describes. Run with the host's librdmacm.
func TestLabAcceptPrivateDataCPeer(t *testing.T) {
	labtest.Require(t)
	bin := labtest.BuildCPeer(t, "cmpriv", "rdmacm")
	const port = 20131
	l := mustListen(t, labAddr(port), nil)
	defer l.Close()
	const text = "registered in Setup, described in ACCEPT"
	sent, done := readableServer(t, l, text, nil)
	cmd := exec.Command(bin, labIP.String(), strconv.Itoa(port))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := runBounded(cmd, 60*time.Second); err != nil {
		t.Fatalf("C client: %v\n%s", err, out.String())
	}
	if err := <-done; err != nil {
		t.Fatalf("server: %v", err)
	}
	pd := <-sent
	want := fmt.Sprintf("cmpriv: private data %x\ncmpriv: read %s\n", pd, text)
	if out.String() != want {
		t.Fatalf("C client printed\n%s\nwant\n%s", out.String(), want)
	}
}

// runBounded runs cmd, killing it after d.
func runBounded(cmd *exec.Cmd, d time.Duration) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	t := time.AfterFunc(d, func() { cmd.Process.Kill() })
	defer t.Stop()
	return cmd.Wait()
}

// The same from goverbs' Dial: the ACCEPT's data as the CM delivers it (zero-padded), and the buffer readable
// through it; Request.Accept's options refine the Listener's (the Listener's Cap stays when the accept sets
// only Setup); SetPrivateData refuses data longer than the message can carry and data after ACCEPT went.
func TestLabAcceptPrivateDataGo(t *testing.T) {
	labtest.Require(t)
	ctx := testCtx(t)
	const port = 20132
	l := mustListen(t, labAddr(port), &rdmacm.Options{Cap: uverbs.QPCap{MaxSendWR: 8, MaxRecvWR: 24, MaxSendSGE: 1, MaxRecvSGE: 1}})
	defer l.Close()
	const text = "read me through the ACCEPT's private data"
	sent, done := readableServer(t, l, text, func(c *rdmacm.Conn) error {
		if got := c.QP().Cap(); got.MaxRecvWR < 24 || got.MaxSendWR < 8 {
			return fmt.Errorf("accepted QP's caps %+v: the Listener's Cap (8 send, 24 receive WRs) was not kept", got)
		}
		return nil
	})
	buf, err := uverbs.AllocBuffer(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	var mr *uverbs.MR
	c, err := rdmacm.Dial(ctx, labAddr(port), &rdmacm.Options{Setup: func(c *rdmacm.Conn) error {
		long := make([]byte, rdmacm.MaxConnectPrivateData+1)
		if err := c.SetPrivateData(long); !errors.Is(err, rdmacm.ErrPrivateDataTooLong) {
			return fmt.Errorf("SetPrivateData(%d bytes) = %v, want ErrPrivateDataTooLong", len(long), err)
		}
		var err error
		mr, err = c.PD().RegMR(buf.Bytes(), uverbs.AccessLocalWrite)
		return err
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetPrivateData([]byte("late")); err == nil {
		t.Error("SetPrivateData after CONNECT succeeded")
	}
	pd := <-sent
	got := c.PrivateData()
	if len(got) < len(pd) || !bytes.Equal(got[:len(pd)], pd) || strings.Trim(string(got[len(pd):]), "\x00") != "" {
		t.Fatalf("accept private data %x, want %x zero-padded", got, pd)
	}
	addr, rkey, n := binary.BigEndian.Uint64(got), binary.BigEndian.Uint32(got[8:]), binary.BigEndian.Uint32(got[12:])
	wr := []uverbs.SendWR{{WRID: 1, Opcode: uverbs.WRRDMARead, Flags: uverbs.SendSignaled,
		SGL: []uverbs.SGE{mr.SGE(0, int(n))}, RemoteAddr: addr, RKey: rkey}}
	if _, err := c.QP().PostSend(wr); err != nil {
		t.Fatal(err)
	}
	waitWC(t, c.SendCQ())
	if s := string(buf.Bytes()[:n]); s != text {
		t.Fatalf("read %q through the ACCEPT's description, want %q", s, text)
	}
	if err := errors.Join(mr.Close(), c.Close()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("server: %v", err)
	}
}
