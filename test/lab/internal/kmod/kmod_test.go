package kmod

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParseModinfo(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		deps    []string
		modName string
		wantErr bool
	}{
		{"typical", "license=GPL\x00depends=ib_core,udp-tunnel\x00name=rdma_rxe\x00", []string{"ib_core", "udp_tunnel"}, "rdma_rxe", false},
		{"no depends", "name=veth\x00", nil, "veth", false},
		{"empty depends", "depends=\x00name=ib_core\x00", nil, "ib_core", false},
		{"padding", "\x00\x00name=x\x00\x00\x00depends=a\x00\x00", []string{"a"}, "x", false},
		{"no trailing NUL", "name=x\x00depends=a,b", []string{"a", "b"}, "x", false},
		{"value with =", "parm=opt:a=b\x00name=x\x00", nil, "x", false},
		{"empty", "", nil, "", false},
		{"missing =", "name=x\x00garbage\x00", nil, "", true},
		{"empty key", "=v\x00", nil, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mi, err := ParseModinfo([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if got := mi.Depends(); !reflect.DeepEqual(got, tt.deps) {
				t.Errorf("Depends() = %q, want %q", got, tt.deps)
			}
			if got := mi.Name(); got != tt.modName {
				t.Errorf("Name() = %q, want %q", got, tt.modName)
			}
		})
	}
}

func TestParseModinfoRepeatedKeys(t *testing.T) {
	mi, err := ParseModinfo([]byte("alias=a\x00alias=b\x00"))
	if err != nil {
		t.Fatal(err)
	}
	if got := mi.Fields["alias"]; !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("alias = %q", got)
	}
}

func FuzzParseModinfo(f *testing.F) {
	f.Add([]byte("name=rdma_rxe\x00depends=ib_core,ib_uverbs\x00"))
	f.Add([]byte("\x00\x00"))
	f.Add([]byte("x"))
	f.Fuzz(func(t *testing.T, b []byte) {
		mi, err := ParseModinfo(b)
		if err != nil {
			return
		}
		for _, d := range mi.Depends() {
			if d == "" || strings.Contains(d, ",") || strings.Contains(d, "-") {
				t.Fatalf("bad dependency %q from %q", d, b)
			}
		}
		// Re-encoding the fields and parsing again gives the same fields.
		var re bytes.Buffer
		keys := make([]string, 0, len(mi.Fields))
		for k := range mi.Fields {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			for _, v := range mi.Fields[k] {
				re.WriteString(k + "=" + v + "\x00")
			}
		}
		mi2, err := ParseModinfo(re.Bytes())
		if err != nil || !reflect.DeepEqual(mi.Fields, mi2.Fields) {
			t.Fatalf("re-parse of %q: %v, %v != %v", re.Bytes(), err, mi2.Fields, mi.Fields)
		}
	})
}

// graph is a DepsFunc over a fixed dependency map; names in builtin are built in.
func graph(deps map[string][]string, builtin ...string) DepsFunc {
	return func(name string) ([]string, bool, error) {
		if slices.Contains(builtin, name) {
			return nil, true, nil
		}
		d, ok := deps[name]
		if !ok {
			return nil, false, errors.New("module " + name + " not found")
		}
		return d, false, nil
	}
}

func TestOrder(t *testing.T) {
	// The lab's real shape: rxe needs the IB core and UDP tunnels.
	deps := map[string][]string{
		"virtio_ring": nil, "virtio": nil,
		"virtio_pci":     {"virtio_ring", "virtio"},
		"9pnet":          nil,
		"9pnet_virtio":   {"virtio", "9pnet", "virtio_ring"},
		"crc32_generic":  nil,
		"ib_core":        nil,
		"ib_uverbs":      {"ib_core"},
		"udp_tunnel":     nil,
		"ip6_udp_tunnel": nil,
		"rdma_rxe":       {"ib_uverbs", "ib_core", "udp_tunnel", "ip6_udp_tunnel"},
		"rdma_ucm":       {"rdma_cm", "ib_core", "ib_uverbs"},
		"rdma_cm":        {"iw_cm", "ib_cm", "ib_core", "configfs"},
		"iw_cm":          {"ib_core"}, "ib_cm": {"ib_core"}, "configfs": nil,
	}
	tests := []struct {
		name    string
		roots   []string
		builtin []string
		want    []string
		wantErr string
	}{
		{
			name:  "rxe stack",
			roots: []string{"virtio_pci", "9pnet_virtio", "crc32_generic", "rdma_rxe", "rdma_ucm"},
			want: []string{"virtio_ring", "virtio", "virtio_pci", "9pnet", "9pnet_virtio", "crc32_generic",
				"ib_core", "ib_uverbs", "udp_tunnel", "ip6_udp_tunnel", "rdma_rxe",
				"iw_cm", "ib_cm", "configfs", "rdma_cm", "rdma_ucm"},
		},
		{
			name:    "builtin skipped",
			roots:   []string{"crc32_generic", "rdma_rxe"},
			builtin: []string{"crc32_generic", "udp_tunnel"},
			want:    []string{"ib_core", "ib_uverbs", "ip6_udp_tunnel", "rdma_rxe"},
		},
		{name: "dashes normalized", roots: []string{"ip6-udp-tunnel", "ip6_udp_tunnel"}, want: []string{"ip6_udp_tunnel"}},
		{name: "missing", roots: []string{"nosuch"}, wantErr: "nosuch not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Order(tt.roots, graph(deps, tt.builtin...))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Order = %q\nwant      %q", got, tt.want)
			}
			checkTopological(t, got, graph(deps, tt.builtin...))
		})
	}
}

func checkTopological(t *testing.T, order []string, deps DepsFunc) {
	t.Helper()
	pos := map[string]int{}
	for i, m := range order {
		if _, dup := pos[m]; dup {
			t.Errorf("%s appears twice", m)
		}
		pos[m] = i
	}
	for i, m := range order {
		ds, _, _ := deps(m)
		for _, d := range ds {
			if _, builtin, _ := deps(d); builtin {
				continue
			}
			if p, ok := pos[d]; !ok || p > i {
				t.Errorf("%s is not loaded before %s", d, m)
			}
		}
	}
}

func TestOrderCycle(t *testing.T) {
	_, err := Order([]string{"a"}, graph(map[string][]string{"a": {"b"}, "b": {"c"}, "c": {"a"}}))
	if err == nil || !strings.Contains(err.Error(), "cycle a -> b -> c -> a") {
		t.Fatalf("error = %v, want a cycle a -> b -> c -> a", err)
	}
}

func signed(body []byte, sig []byte) []byte {
	info := make([]byte, sigInfoLen)
	n := len(sig)
	info[8], info[9], info[10], info[11] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	out := append(append(append([]byte{}, body...), sig...), info...)
	return append(out, sigMarker...)
}

func TestStripSignature(t *testing.T) {
	body := []byte("\x7fELF module body")
	tests := []struct {
		name    string
		in      []byte
		want    []byte
		wantErr bool
	}{
		{"unsigned", body, body, false},
		{"signed", signed(body, bytes.Repeat([]byte{0xaa}, 300)), body, false},
		{"zero length", signed(body, nil), nil, true},
		{"length past start", append(append(make([]byte, 8), 0, 1, 0, 0), sigMarker...), nil, true},
		{"truncated info", []byte("x" + sigMarker), nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := StripSignature(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tt.wantErr)
			}
			if !bytes.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func FuzzStripSignature(f *testing.F) {
	f.Add(signed([]byte("body"), []byte("sig")))
	f.Add([]byte(sigMarker))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := StripSignature(b)
		if err != nil {
			return
		}
		if !bytes.HasPrefix(b, got) {
			t.Fatalf("result is not a prefix of the input")
		}
	})
}

// TestRealKernel reads the modules of the lab's cached Debian kernel, when
// it is there (GOVERBS_LAB_CACHE or ~/.cache/goverbs-lab).
func TestRealKernel(t *testing.T) {
	cache := os.Getenv("GOVERBS_LAB_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "goverbs-lab")
	}
	dirs, _ := filepath.Glob(filepath.Join(cache, "kernels", "*", "lib", "modules", "*"))
	if len(dirs) == 0 {
		t.Skip("no unpacked lab kernel in " + cache)
	}
	tree, err := OpenTree(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	mods, err := tree.Closure([]string{"crc32_generic", "rdma_rxe"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range mods {
		names = append(names, m.Name)
		if bytes.HasSuffix(m.Image, []byte(sigMarker)) {
			t.Errorf("%s still carries its signature", m.Name)
		}
		mi, err := ReadModinfoELF(m.Image)
		if err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		if mi.Name() != m.Name {
			t.Errorf("modinfo name %q for %s", mi.Name(), m.Name)
		}
	}
	rxe := slices.Index(names, "rdma_rxe")
	for _, dep := range []string{"crc32_generic", "ib_core", "ib_uverbs", "udp_tunnel", "ip6_udp_tunnel"} {
		if i := slices.Index(names, dep); i < 0 || i > rxe {
			t.Errorf("%s missing or after rdma_rxe in %q", dep, names)
		}
	}
}
