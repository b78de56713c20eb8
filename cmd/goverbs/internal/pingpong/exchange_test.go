package pingpong

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strconv"
	"testing"
)

// freePort returns a TCP port nothing listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// dialRetry connects to a server that may not listen yet.
func dialRetry(t *testing.T, port int) net.Conn {
	t.Helper()
	for {
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			return c
		}
		var op *net.OpError
		if !errors.As(err, &op) {
			t.Fatal(err)
		}
	}
}

func records(n int, base int) []dest {
	d := make([]dest, n)
	for i := range d {
		d[i] = dest{lid: base + i, qpn: 0x100 + base + i, psn: 0x1000 + base + i, gid: roceGID}
	}
	return d
}

func TestSingleExchange(t *testing.T) {
	port := freePort(t)
	srvRec, cliRec := records(1, 1)[0], records(1, 50)[0]
	type result struct {
		rem       *dest
		ok        bool
		connected *dest
		stderr    string
	}
	done := make(chan result, 1)
	go func() {
		var e bytes.Buffer
		var connected *dest
		rem, ok := serverExchange(port, srvRec, func(r *dest) error { c := *r; connected = &c; return nil }, &e)
		done <- result{rem, ok, connected, e.String()}
	}()
	var e bytes.Buffer
	var rem *dest
	var ok bool
	for {
		// The client gives up when nothing listens yet, as the C tool does; retry until the server is up.
		e.Reset()
		if rem, ok = clientExchange("127.0.0.1", port, cliRec, &e); ok || e.String() != "Couldn't connect to 127.0.0.1:"+strconv.Itoa(port)+"\n" {
			break
		}
	}
	s := <-done
	if !ok || !s.ok || e.String() != "" || s.stderr != "" {
		t.Fatalf("client ok %v %q, server ok %v %q", ok, e.String(), s.ok, s.stderr)
	}
	if *rem != srvRec || *s.rem != cliRec || s.connected == nil || *s.connected != cliRec {
		t.Errorf("client got %+v, server got %+v and connected to %+v", *rem, *s.rem, s.connected)
	}
}

// srqServerResult is what srqServerExchange returned, the records it connected with and what it printed.
type srqServerResult struct {
	rem       []dest
	ok        bool
	connected []dest
	stderr    string
}

// goSRQServer runs srqServerExchange on port with the records my in a goroutine; its connect step returns
// connectErr.
func goSRQServer(port int, my []dest, connectErr error) <-chan srqServerResult {
	done := make(chan srqServerResult, 1)
	go func() {
		var e bytes.Buffer
		var connected []dest
		rem, ok := srqServerExchange(port, my, func(r []dest) error { connected = append([]dest{}, r...); return connectErr }, &e)
		done <- srqServerResult{rem, ok, connected, e.String()}
	}()
	return done
}

// A client that writes its records in odd pieces and reads the answer the same way: the srq server must
// gather whole records, connect with all of them, and answer with all of its own.
func TestSRQServerExchange(t *testing.T) {
	port := freePort(t)
	srv, cli := records(srqMaxQP, 0), records(srqMaxQP, 0x40)
	done := goSRQServer(port, srv, nil)
	conn := dialRetry(t, port)
	var out []byte
	for _, d := range cli {
		out = append(out, d.encode()...)
	}
	for len(out) > 0 {
		n := min(7, len(out))
		if _, err := conn.Write(out[:n]); err != nil {
			t.Fatal(err)
		}
		out = out[n:]
	}
	in := make([]byte, srqMaxQP*msgSize)
	if _, err := io.ReadFull(conn, in); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write([]byte(doneMsg)); err != nil {
		t.Fatal(err)
	}
	s := <-done
	conn.Close()
	if !s.ok || s.stderr != "" {
		t.Fatalf("server ok %v, stderr %q", s.ok, s.stderr)
	}
	for i := range cli {
		if s.rem[i] != cli[i] || s.connected[i] != cli[i] {
			t.Fatalf("record %d: server got %+v, connected to %+v, want %+v", i, s.rem[i], s.connected[i], cli[i])
		}
		if got := decodeDest(in[i*msgSize : (i+1)*msgSize]); got != srv[i] {
			t.Fatalf("record %d from the server: %+v, want %+v", i, got, srv[i])
		}
	}
}

// A server that answers with only some records and hangs up: rdma-core's client reports the short read and
// goes on with what it has.
func TestSRQClientExchangeShortAnswer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	srv := records(3, 7)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		io.ReadFull(conn, make([]byte, srqMaxQP*msgSize))
		for _, d := range srv {
			conn.Write(d.encode())
		}
		conn.Write([]byte("0001:")) // a piece of one more
	}()
	var e bytes.Buffer
	rem, ok := srqClientExchange("127.0.0.1", port, records(srqMaxQP, 0), &e)
	want := "client read: Connection reset by peer\n5/52: Couldn't read remote address [3]\n"
	if !ok || e.String() != want {
		t.Fatalf("ok %v, stderr %q, want %q", ok, e.String(), want)
	}
	for i, d := range rem {
		if i < len(srv) && d != srv[i] || i >= len(srv) && d != (dest{}) {
			t.Fatalf("record %d: %+v", i, d)
		}
	}
}

// A client that never says "done": the srq server fails as rdma-core's does.
func TestSRQServerExchangeNoDone(t *testing.T) {
	port := freePort(t)
	done := goSRQServer(port, records(srqMaxQP, 0), nil)
	conn := dialRetry(t, port)
	for _, d := range records(srqMaxQP, 1) {
		conn.Write(d.encode())
	}
	io.ReadFull(conn, make([]byte, srqMaxQP*msgSize))
	conn.Write([]byte("do"))
	conn.Close()
	if s := <-done; s.ok || s.stderr != "client write: Success\n" {
		t.Errorf("ok %v, stderr %q", s.ok, s.stderr)
	}
}

// The srq server reports the connect step's failure and gives up.
func TestSRQServerExchangeConnectFails(t *testing.T) {
	port := freePort(t)
	done := goSRQServer(port, records(srqMaxQP, 0), errors.New("Failed to modify QP[0] to RTR"))
	conn := dialRetry(t, port)
	defer conn.Close()
	for _, d := range records(srqMaxQP, 1) {
		conn.Write(d.encode())
	}
	if s := <-done; s.ok || s.stderr != "Failed to modify QP[0] to RTR\nCouldn't connect to remote QP\n" {
		t.Errorf("ok %v, stderr %q", s.ok, s.stderr)
	}
}
