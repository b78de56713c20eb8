package labtest

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/goverbs/goverbs/uverbs"
)

// BuildCPeer compiles the test-only C peer test/cpeer/NAME.c against the installed libibverbs (rdma-core's C
// library, the peer goverbs is measured against) with gcc, and returns the binary's path (in t's temporary
// directory). In the lab gcc and the headers are the host's (`make deps` installs them); the binary runs with
// the host's libibverbs, or in another release's root with that release's (its ABI is stable). The C code is
// a test harness: nothing of it is in goverbs.
//
// libs are further libraries to link, by their -l name ("rdmacm" for a librdmacm peer).
func BuildCPeer(t testing.TB, name string, libs ...string) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), name)
	src := filepath.Join(root, "test", "cpeer", name+".c")
	args := []string{"-O2", "-msse4.2", "-Wall", "-Werror", "-o", bin, src, "-libverbs"}
	for _, l := range libs {
		args = append(args, "-l"+l)
	}
	out, err := exec.Command("gcc", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("build the C peer %s (needs gcc, libibverbs-dev and librdmacm-dev: make deps): %v\n%s", src, err, out)
	}
	return bin
}

// moduleRoot is the directory of go.mod above the working directory (a test runs in its package's directory).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
	}
}

// CPeerRecordSize is the size of the connection record the C peers exchange over TCP.
const CPeerRecordSize = 64

// CPeerRecord is the connection record of test/cpeer/cpeer.h: magic, version 1, QP number, PSN, GID, buffer
// address and rkey, three words and a count whose meaning is the peer program's (soakpeer: message size,
// slots, mode, message count). Little-endian.
type CPeerRecord struct {
	Magic    uint32
	QPN, PSN uint32
	GID      uverbs.GID
	Addr     uint64
	RKey     uint32
	W        [3]uint32
	Count    uint64
}

// Marshal encodes r.
func (r CPeerRecord) Marshal() []byte {
	b := make([]byte, CPeerRecordSize)
	le := binary.LittleEndian
	le.PutUint32(b[0:], r.Magic)
	le.PutUint32(b[4:], 1)
	le.PutUint32(b[8:], r.QPN)
	le.PutUint32(b[12:], r.PSN)
	copy(b[16:32], r.GID[:])
	le.PutUint64(b[32:], r.Addr)
	le.PutUint32(b[40:], r.RKey)
	for i, w := range r.W {
		le.PutUint32(b[44+4*i:], w)
	}
	le.PutUint64(b[56:], r.Count)
	return b
}

// ParseCPeerRecord decodes a record that must carry magic.
func ParseCPeerRecord(b []byte, magic uint32) (CPeerRecord, error) {
	le := binary.LittleEndian
	if len(b) != CPeerRecordSize {
		return CPeerRecord{}, fmt.Errorf("C peer record of %d bytes, want %d", len(b), CPeerRecordSize)
	}
	if le.Uint32(b[0:]) != magic || le.Uint32(b[4:]) != 1 {
		return CPeerRecord{}, fmt.Errorf("C peer record with magic %#x version %d, want %#x version 1",
			le.Uint32(b[0:]), le.Uint32(b[4:]), magic)
	}
	r := CPeerRecord{Magic: magic, QPN: le.Uint32(b[8:]), PSN: le.Uint32(b[12:]), Addr: le.Uint64(b[32:]),
		RKey: le.Uint32(b[40:]), Count: le.Uint64(b[56:])}
	copy(r.GID[:], b[16:32])
	for i := range r.W {
		r.W[i] = le.Uint32(b[44+4*i:])
	}
	return r, nil
}

// ReachableCopy copies the executable at path into a fresh directory of mode 0755 under the system's temporary
// directory (not t.TempDir, which is 0700) and returns the copy's path; cleanup removes it. A test that runs
// itself (or a binary of the checkout) as an unprivileged user needs it: the checkout may lie below directories
// that user cannot enter (a clone in a 0700 home directory, or in mktemp -d).
func ReachableCopy(t testing.TB, path string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "goverbs-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, filepath.Base(path))
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return dst
}
