package cpio

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// entry is one archive member as the test reader sees it.
type entry struct {
	name         string
	mode         uint32
	ino, nlink   uint32
	major, minor uint32
	data         []byte
}

// readArchive is an independent newc reader for the tests.
func readArchive(b []byte) ([]entry, error) {
	var out []entry
	off := 0
	align := func() { off = (off + 3) &^ 3 }
	for {
		if off+headerLen > len(b) {
			return nil, fmt.Errorf("truncated header at %d", off)
		}
		h := b[off : off+headerLen]
		if string(h[:6]) != "070701" {
			return nil, fmt.Errorf("bad magic %q at %d", h[:6], off)
		}
		field := func(i int) uint32 {
			v, err := strconv.ParseUint(string(h[6+8*i:14+8*i]), 16, 32)
			if err != nil {
				panic(err)
			}
			return uint32(v)
		}
		e := entry{ino: field(0), mode: field(1), nlink: field(4), major: field(9), minor: field(10)}
		size, nameSize := int(field(6)), int(field(11))
		off += headerLen
		if off+nameSize > len(b) || nameSize == 0 || b[off+nameSize-1] != 0 {
			return nil, fmt.Errorf("bad name at %d", off)
		}
		e.name = string(b[off : off+nameSize-1])
		off += nameSize
		align()
		if off+size > len(b) {
			return nil, fmt.Errorf("truncated data of %q", e.name)
		}
		e.data = b[off : off+size]
		off += size
		align()
		if e.name == Trailer {
			if off != len(b) {
				return nil, fmt.Errorf("%d bytes after trailer", len(b)-off)
			}
			return out, nil
		}
		out = append(out, e)
	}
}

func buildSample(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.WriteDir("dev", 0o755))
	must(w.WriteHeader(&Header{Name: "dev/console", Mode: TypeChar | 0o600, DevMajor: 5, DevMinor: 1}))
	must(w.WriteFile("/init", 0o755, []byte("#!/bin/sh\necho hi\n")))
	must(w.WriteFile("lab/empty", 0o644, nil))
	must(w.WriteFile("lab/odd", 0o644, []byte{1, 2, 3, 4, 5}))
	must(w.WriteHeader(&Header{Name: "bin/sh", Mode: TypeSymlink | 0o777, Size: int64(len("busybox"))}))
	_, err := w.Write([]byte("busy"))
	must(err)
	_, err = w.Write([]byte("box"))
	must(err)
	must(w.Close())
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	b := buildSample(t)
	got, err := readArchive(b)
	if err != nil {
		t.Fatal(err)
	}
	want := []entry{
		{name: "dev", mode: TypeDir | 0o755, nlink: 2},
		{name: "dev/console", mode: TypeChar | 0o600, nlink: 1, major: 5, minor: 1},
		{name: "init", mode: TypeRegular | 0o755, nlink: 1, data: []byte("#!/bin/sh\necho hi\n")},
		{name: "lab/empty", mode: TypeRegular | 0o644, nlink: 1},
		{name: "lab/odd", mode: TypeRegular | 0o644, nlink: 1, data: []byte{1, 2, 3, 4, 5}},
		{name: "bin/sh", mode: TypeSymlink | 0o777, nlink: 1, data: []byte("busybox")},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d entries, want %d: %+v", len(got), len(want), got)
	}
	inos := map[uint32]bool{}
	for i := range want {
		g, w := got[i], want[i]
		if g.name != w.name || g.mode != w.mode || g.nlink != w.nlink || g.major != w.major || g.minor != w.minor || !bytes.Equal(g.data, w.data) {
			t.Errorf("entry %d = %+v, want %+v", i, g, w)
		}
		if inos[g.ino] {
			t.Errorf("entry %q reuses inode %d", g.name, g.ino)
		}
		inos[g.ino] = true
	}
	if len(b)%4 != 0 {
		t.Errorf("archive length %d is not 4-aligned", len(b))
	}
}

// TestCpioToolLists cross-checks the archive with GNU cpio when installed.
func TestCpioToolLists(t *testing.T) {
	if _, err := exec.LookPath("cpio"); err != nil {
		t.Skip("cpio not installed")
	}
	path := filepath.Join(t.TempDir(), "a.cpio")
	if err := os.WriteFile(path, buildSample(t), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command("cpio", "-t", "--quiet")
	cmd.Stdin = f
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cpio -t: %v: %s", err, out)
	}
	want := "dev\ndev/console\ninit\nlab/empty\nlab/odd\nbin/sh\n"
	if string(out) != want {
		t.Errorf("cpio -t listed %q, want %q", out, want)
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name string
		run  func(w *Writer) error
		want string
	}{
		{"short data", func(w *Writer) error {
			if err := w.WriteHeader(&Header{Name: "a", Mode: TypeRegular, Size: 3}); err != nil {
				return err
			}
			return w.WriteDir("b", 0o755)
		}, "missing 3 bytes"},
		{"short data at close", func(w *Writer) error {
			if err := w.WriteHeader(&Header{Name: "a", Mode: TypeRegular, Size: 3}); err != nil {
				return err
			}
			return w.Close()
		}, "missing 3 bytes"},
		{"long data", func(w *Writer) error {
			if err := w.WriteHeader(&Header{Name: "a", Mode: TypeRegular, Size: 1}); err != nil {
				return err
			}
			_, err := w.Write([]byte("ab"))
			return err
		}, "write too long"},
		{"empty name", func(w *Writer) error { return w.WriteDir("/", 0o755) }, "invalid entry name"},
		{"NUL in name", func(w *Writer) error { return w.WriteDir("a\x00b", 0o755) }, "invalid entry name"},
		{"data for a dir", func(w *Writer) error {
			return w.WriteHeader(&Header{Name: "d", Mode: TypeDir, Size: 1})
		}, "without data"},
		{"socket", func(w *Writer) error {
			return w.WriteHeader(&Header{Name: "s", Mode: 0o140000})
		}, "unsupported mode"},
		{"after close", func(w *Writer) error {
			if err := w.Close(); err != nil {
				return err
			}
			return w.WriteDir("d", 0o755)
		}, "after close"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run(NewWriter(io.Discard))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

type failWriter struct{ n int }

var errDisk = errors.New("disk full")

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n -= len(p); f.n < 0 {
		return 0, errDisk
	}
	return len(p), nil
}

func TestUnderlyingErrorSticks(t *testing.T) {
	w := NewWriter(&failWriter{n: 10})
	if err := w.WriteFile("a", 0o644, []byte("data")); !errors.Is(err, errDisk) {
		t.Fatalf("WriteFile error = %v, want %v", err, errDisk)
	}
	if err := w.Close(); !errors.Is(err, errDisk) {
		t.Errorf("Close error = %v, want %v", err, errDisk)
	}
}

// FuzzRoundTrip checks that any name and data the writer accepts reads back
// unchanged.
func FuzzRoundTrip(f *testing.F) {
	f.Add("init", []byte("x"), uint16(0o755))
	f.Add("a/b/c", []byte{}, uint16(0o644))
	f.Fuzz(func(t *testing.T, name string, data []byte, perm uint16) {
		var buf bytes.Buffer
		w := NewWriter(&buf)
		if err := w.WriteFile(name, uint32(perm), data); err != nil {
			return // rejected names are fine
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := readArchive(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].name != strings.TrimPrefix(name, "/") || !bytes.Equal(got[0].data, data) ||
			got[0].mode != TypeRegular|uint32(perm)&0o7777 {
			t.Fatalf("round trip of %q (%d bytes) gave %+v", name, len(data), got)
		}
	})
}
