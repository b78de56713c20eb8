package rcopy

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// usageText is what rdmacm-utils 44's rcopy prints for wrong usage (captured from /usr/bin/rcopy).
const usageText = "usage 1: rcopy [options]\n" +
	"\t     starts the server application\n" +
	"\t[-p  port_number]\n" +
	"usage 2: rcopy source server[:destination] [options]\n" +
	"\t     source - file name and path\n" +
	"\t     server - name or address\n" +
	"\t     destination - file name and path\n" +
	"\t[-p  port_number]\n"

func runMain(args ...string) (int, string, string) {
	var o, e bytes.Buffer
	rc := Main("rcopy", args, &o, &e)
	return rc, o.String(), e.String()
}

// TestUsage checks wrong usage and getaddrinfo failures against the C tool's output and status (captured on a
// host without an RDMA device: these paths end before any rsocket call).
func TestUsage(t *testing.T) {
	for _, c := range []struct {
		args     []string
		rc       int
		out, err string
	}{
		{[]string{"-x"}, 1, usageText, "rcopy: invalid option -- 'x'\n"},
		{[]string{"a"}, 1, usageText, ""},
		{[]string{"-p"}, 1, usageText, "rcopy: option requires an argument -- 'p'\n"},
		{[]string{"a", "b", "-q"}, 1, usageText, "rcopy: invalid option -- 'q'\n"},
		{[]string{"-p", "abc"}, 248, "getaddrinfo failed: Servname not supported for ai_socktype\n", ""},
		{[]string{"/etc/hostname", "127.0.0.1", "-p", "abc"}, 248, "getaddrinfo failed: Servname not supported for ai_socktype\n", ""},
	} {
		rc, out, err := runMain(c.args...)
		if rc != c.rc || out != c.out || err != c.err {
			t.Errorf("rcopy %q: rc %d, stdout %q, stderr %q; want %d, %q, %q", c.args, rc, out, err, c.rc, c.out, c.err)
		}
	}
}

func TestLookupPort(t *testing.T) {
	for _, c := range []struct {
		in   string
		port uint16
		eai  int
	}{{"7427", 7427, 0}, {"70000", 70000 & 0xffff, 0}, {"", 0, 0}, {"abc", 0, eaiService}} {
		if p, eai := lookupPort(c.in); p != c.port || eai != c.eai {
			t.Errorf("lookupPort(%q) = %d, %d; want %d, %d", c.in, p, eai, c.port, c.eai)
		}
	}
}

// pair runs the server's connection loop on one end of a pipe and the client's transfer on the other.
func pair(t *testing.T, srv *state, src, dst string) (crc int, cout, sout string) {
	t.Helper()
	a, b := net.Pipe()
	var so, co bytes.Buffer
	srv.stdout = &so
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.serverProcess(b)
		b.Close()
	}()
	cl := &client{state: &state{stdout: &co, stderr: io.Discard}, src: src, dstFile: dst}
	crc = cl.transfer(a)
	<-done
	return crc, co.String(), so.String()
}

var perfLine = regexp.MustCompile(`^\d+ bytes in \d+\.\d\d seconds = (\d+\.\d\d|inf) Gb/sec\n$`)

func TestTransferOverPipe(t *testing.T) {
	dir := t.TempDir()
	srv := &state{stderr: io.Discard}
	for _, size := range []int{1, 6, 4097, 1<<20 + 3} {
		data := make([]byte, size)
		rand.Read(data)
		src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
		if err := os.WriteFile(src, data, 0o640); err != nil {
			t.Fatal(err)
		}
		rc, cout, sout := pair(t, srv, src, dst)
		head := "opening...transferring...closing...done\n"
		if rc != 0 || len(cout) < len(head) || cout[:len(head)] != head || !perfLine.MatchString(cout[len(head):]) {
			t.Errorf("%d bytes: client rc %d, %q", size, rc, cout)
		}
		if want := "opening: " + dst + ", transferring..." + strconv.Itoa(size) + " bytes...closing...done\n"; sout != want {
			t.Errorf("%d bytes: server %q, want %q", size, sout, want)
		}
		got, err := os.ReadFile(dst)
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%d bytes: destination differs (%v)", size, err)
		}
		if st, err := os.Stat(dst); err != nil || st.Mode().Perm() != 0o640&^umask() {
			t.Errorf("%d bytes: destination mode %v (%v)", size, st.Mode(), err)
		}
	}
}

func umask() os.FileMode {
	f := filepath.Join(os.TempDir(), "rcopy-umask-probe")
	os.Remove(f)
	os.WriteFile(f, nil, 0o777)
	defer os.Remove(f)
	st, _ := os.Stat(f)
	return 0o777 &^ st.Mode().Perm()
}

// TestClientErrors: the C client maps the source, so an empty file fails with EINVAL and a directory with ENODEV,
// after "opening..." and before any message; a missing file exits 255; a server-side open error is the status.
func TestClientErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o644)
	src := filepath.Join(dir, "src")
	os.WriteFile(src, []byte("hello\n"), 0o644)
	for _, c := range []struct {
		src, dst   string
		rc         int
		cout, sout string
	}{
		{empty, filepath.Join(dir, "d0"), 22, "opening...", ""},
		{dir, filepath.Join(dir, "dd"), 19, "opening...", ""},
		{filepath.Join(dir, "missing"), filepath.Join(dir, "dm"), 255, "opening...", ""},
		{src, filepath.Join(dir, "no/such/dir"), 2, "opening...",
			"opening: " + filepath.Join(dir, "no/such/dir") + ", unable to open destination file\n"},
	} {
		rc, cout, sout := pair(t, &state{stderr: io.Discard}, c.src, c.dst)
		if rc&0xff != c.rc || cout != c.cout || sout != c.sout {
			t.Errorf("%s -> %s: rc %d, client %q, server %q; want %d, %q, %q", c.src, c.dst, rc&0xff, cout, sout, c.rc, c.cout, c.sout)
		}
	}
}

// TestWire checks the bytes of the client's messages (host byte order, rcopy.c's structs).
func TestWire(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "s")
	os.WriteFile(src, []byte("abc"), 0o600)
	st, _ := os.Stat(src)
	a, b := net.Pipe()
	got := make(chan []byte, 1)
	go func() {
		var all []byte
		buf := make([]byte, 64)
		resp := func(cmd byte) {
			r := make([]byte, 16)
			r[1] = cmd | 0x80
			binary.NativeEndian.PutUint16(r[2:], 16)
			b.Write(r)
		}
		read := func(n int) {
			io.ReadFull(b, buf[:n])
			all = append(all, buf[:n]...)
		}
		read(16 + 8) // OPEN + "dst\0" padded to 8
		resp(1)
		read(24) // WRITE + size
		read(3)  // the data
		resp(3)
		read(16) // CLOSE
		resp(2)
		got <- all
		b.Close()
	}()
	var o bytes.Buffer
	cl := &client{state: &state{stdout: &o, stderr: io.Discard}, src: src, dstFile: "dst"}
	if rc := cl.transfer(a); rc != 0 {
		t.Fatalf("rc %d: %s", rc, o.String())
	}
	mode := make([]byte, 4)
	binary.NativeEndian.PutUint32(mode, uint32(0o100000|st.Mode().Perm()))
	le := func(v uint16) []byte { return binary.NativeEndian.AppendUint16(nil, v) }
	want := bytes.Join([][]byte{
		{0, 1}, le(24), mode, make([]byte, 8), []byte("dst\x00\x00\x00\x00\x00"),
		{0, 3}, le(24), make([]byte, 12), binary.NativeEndian.AppendUint64(nil, 3),
		[]byte("abc"),
		{0, 2}, le(16), make([]byte, 12),
	}, nil)
	if g := <-got; !bytes.Equal(g, want) {
		t.Errorf("wire:\n got % x\nwant % x", g, want)
	}
}

// TestServerKeepsFile: like the C server, a client that goes away without CLOSE leaves the file open, and every
// later OPEN is refused with EBUSY.
func TestServerKeepsFile(t *testing.T) {
	dir := t.TempDir()
	srv := &state{stderr: io.Discard}
	open := func(path string) (status uint32, out string) {
		a, b := net.Pipe()
		var so bytes.Buffer
		srv.stdout = &so
		done := make(chan struct{})
		go func() { defer close(done); srv.serverProcess(b); b.Close() }()
		n := (len(path) + 8) &^ 7
		m := make([]byte, 16+n)
		m[1] = cmdOpen
		binary.NativeEndian.PutUint16(m[2:], uint16(16+n))
		binary.NativeEndian.PutUint32(m[4:], 0o644)
		copy(m[16:], path)
		go a.Write(m) // net.Pipe is unbuffered: the server may answer before reading the path
		r := make([]byte, 16)
		io.ReadFull(a, r)
		a.Close()
		<-done
		return binary.NativeEndian.Uint32(r[4:]), so.String()
	}
	p1, p2 := filepath.Join(dir, "one"), filepath.Join(dir, "two")
	if st, out := open(p1); st != 0 || out != "opening: "+p1+", " {
		t.Fatalf("first open: status %d, %q", st, out)
	}
	if st, out := open(p2); st != 16 || out != "opening: cannot open another file\n" {
		t.Errorf("second open: status %d, %q", st, out)
	}
}
