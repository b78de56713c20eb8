package verbsdev

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/sysfs"
)

func TestList(t *testing.T) {
	var errb bytes.Buffer
	devs, err := Lister{FS: sysfs.Under("../testdata/mlx5"), Stderr: &errb}.List()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]Device{}
	for _, d := range devs {
		names[d.Name] = d
	}
	d, ok := names["mlx5_1"]
	if len(devs) != 2 || !ok {
		t.Fatalf("devices %v", devs)
	}
	if d.DevName != "uverbs1" || d.NodeType != NodeCA || d.Transport != TransportIB || d.ABIVersion != 1 {
		t.Errorf("mlx5_1 = %+v", d)
	}
	if g := NodeGUID(d); g != 0xb8599f0300d4a7a1 {
		t.Errorf("NodeGUID = %#x", g)
	}
}

func TestListErrors(t *testing.T) {
	_, err := Lister{FS: sysfs.Under("../testdata/empty")}.List()
	if !errors.Is(err, unix.ENOSYS) {
		t.Errorf("empty tree: %v, want ENOSYS", err)
	}
	var errb bytes.Buffer
	_, err = Lister{FS: sysfs.Under("../testdata/verbs_badabi"), Stderr: &errb}.List()
	if !errors.Is(err, unix.ENOSYS) || errb.String() != "libibverbs: Fatal: kernel ABI version 7 doesn't match library version 6.\n" {
		t.Errorf("bad ABI: %v %q", err, errb.String())
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		content string
		size    int
		want    string
		err     bool
	}{
		{"rxe0\n", 64, "rxe0", false},
		{"rxe0", 64, "rxe0", false},
		{"rxe0", 4, "", true},
		{"rxe0\n", 5, "rxe0", false},
		{"a\x00b\n", 64, "a", false},
		{"", 8, "", false},
		{"a\n\n", 64, "a\n", false},
	}
	for i, tt := range tests {
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, []byte(tt.content), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadFile(p, tt.size)
		if got != tt.want || (err != nil) != tt.err {
			t.Errorf("%d: ReadFile(%q, %d) = %q, %v", i, tt.content, tt.size, got, err)
		}
	}
	if _, err := ReadFile(filepath.Join(dir, "missing"), 8); !errors.Is(err, unix.ENOENT) {
		t.Errorf("missing file: %v", err)
	}
}

func TestTransportOf(t *testing.T) {
	want := map[int]int{NodeUnknown: TransportUnknown, NodeCA: TransportIB, NodeSwitch: TransportIB, NodeRouter: TransportIB,
		NodeRNIC: TransportIWARP, NodeUSNIC: TransportUSNIC, NodeUSNICUDP: TransportUSNICUDP, NodeUnspecified: TransportUnspecified, 9: TransportUnknown}
	for n, tr := range want {
		if got := TransportOf(n); got != tr {
			t.Errorf("TransportOf(%d) = %d, want %d", n, got, tr)
		}
	}
}

func FuzzNodeGUID(f *testing.F) {
	f.Add("0042:acff:fe11:0002\n")
	f.Add("0:1:2")
	f.Add(" 0x1:-2:ffffff:3")
	f.Fuzz(func(t *testing.T, s string) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "node_guid"), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		g := NodeGUID(Device{IBDevPath: dir})
		if len(s) < 7 && g != 0 {
			t.Fatalf("%q: a GUID needs at least four groups, got %#x", s, g)
		}
	})
}
