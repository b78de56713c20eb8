package labtest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/uverbs"
)

func TestDeviceFromEnv(t *testing.T) {
	if *device != "" {
		t.Skip("-device given")
	}
	t.Setenv("GOVERBS_DEVICE", "mlx5_0")
	if got := Device(); got != "mlx5_0" {
		t.Errorf("Device() with GOVERBS_DEVICE=mlx5_0 = %q", got)
	}
	t.Setenv("GOVERBS_DEVICE", "")
	t.Setenv("GOVERBS_LAB", "1")
	t.Setenv(ProviderEnv, "")
	if got := Device(); got != "rxe0" {
		t.Errorf("Device() in the lab = %q, want rxe0", got)
	}
	t.Setenv(ProviderEnv, "siw")
	if got, p := Device(), Provider(); got != "siw0" || p != "siw" {
		t.Errorf("Device(), Provider() in a siw lab = %q, %q, want siw0, siw", got, p)
	}
}

// TestRequireInLab checks, inside the lab, that Require does not skip and
// that the lab's device and netdev are what the design promises.
func TestRequireInLab(t *testing.T) {
	if !InLab() {
		t.Skip("checks the lab VM itself")
	}
	Require(t)
	state, err := os.ReadFile(filepath.Join("/sys/class/infiniband", Device(), "ports", "1", "state"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(state), "ACTIVE") {
		t.Errorf("port 1 of %s is %q, want ACTIVE", Device(), state)
	}
	ndev, err := os.ReadFile(filepath.Join("/sys/class/infiniband", Device(), "ports", "1", "gid_attrs", "ndevs", "1"))
	if err != nil || strings.TrimSpace(string(ndev)) != Netdev() {
		t.Errorf("netdev of %s = %q, %v; want %s", Device(), ndev, err, Netdev())
	}
	if wd, _ := os.Getwd(); !strings.HasSuffix(wd, "test/labtest") {
		t.Errorf("working directory %q is not the package directory", wd)
	}
}

func TestParseRelease(t *testing.T) {
	for _, tc := range []struct {
		rel          string
		major, minor int
	}{{"6.1.0-56-amd64", 6, 1}, {"6.12.117+deb13-amd64", 6, 12}, {"7.3.4+deb13-amd64", 7, 3}} {
		k := parseRelease(tc.rel)
		if k.Major != tc.major || k.Minor != tc.minor {
			t.Errorf("parseRelease(%q) = %d.%d, want %d.%d", tc.rel, k.Major, k.Minor, tc.major, tc.minor)
		}
	}
	if k := parseRelease("6.12.117"); !k.AtLeast(6, 4) || k.AtLeast(6, 13) || !k.AtLeast(6, 12) || k.AtLeast(7, 0) {
		t.Errorf("AtLeast wrong for %+v", k)
	}
	if k := Kernel(); k.Major == 0 {
		t.Errorf("Kernel() = %+v", k)
	}
}

func TestCPeerRecordRoundTrip(t *testing.T) {
	r := CPeerRecord{Magic: 0x4b535647, QPN: 0x123456, PSN: 0xabcdef, GID: uverbs.GID{0xfe, 0x80, 15: 1}, Addr: 1 << 40,
		RKey: 0xdeadbeef, W: [3]uint32{65536, 16, 1}, Count: 1 << 33}
	b := r.Marshal()
	if got, err := ParseCPeerRecord(b, r.Magic); err != nil || got != r {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, r)
	}
	if _, err := ParseCPeerRecord(b, 0x52575647); err == nil {
		t.Error("a record with another magic parsed")
	}
	if _, err := ParseCPeerRecord(b[:63], r.Magic); err == nil {
		t.Error("a short record parsed")
	}
}

func FuzzParseCPeerRecord(f *testing.F) {
	f.Add(CPeerRecord{Magic: 1, QPN: 2}.Marshal())
	f.Add([]byte("short"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseCPeerRecord(b, 1)
		if err != nil {
			return
		}
		if !bytes.Equal(r.Marshal(), b) { // every byte is a field: a parsed record re-encodes to its input
			t.Fatalf("record %+v re-encodes differently", r)
		}
	})
}
