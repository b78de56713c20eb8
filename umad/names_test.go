package umad

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestNames(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Class(ClassSMI).String(), "Subn"},
		{ClassSubnDirectedRoute.String(), "Subn"},
		{Class(ClassSA).String(), "SubnAdm"},
		{Class(ClassPMA).String(), "Perf"},
		{ClassCongestionMgmt.String(), "CongestionManagment"},
		{Class(0x0c).String(), "Vendor"},
		{Class(0x40).String(), "Vendor"},
		{Class(0x20).String(), "Application"},
		{Class(0x80).String(), "<unknown>"},
		{Method(MethodGetResp).Name(ClassPMA), "GetResp"},
		{MethodSAGetTable.Name(ClassSA), "GetTable"},
		{MethodSAGetTable.Name(ClassPMA), "<unknown"},
		{Method(MethodGet).Name(ClassSA), "Get"},
		{Status(0).String(), "Success"},
		{StatusMethodNotSupported.String(), "Method not supported"},
		{(StatusBusy | StatusInvalidAttrValue).String(), "Busy"},
		{Status(0x0300).SAString(), "No Records"},
		{Status(0x0900).SAString(), "Undefined Error"},
		{AttrID(0x0015).Name(ClassSMI), "PortInfo"},
		{AttrID(0x0035).Name(ClassSA), "PathRecord"},
		{AttrID(0x0010).Name(ClassCM), "ConnectRequest"},
		{AttrID(AttrClassPortInfo).Name(ClassPMA), "Class Port Info"},
		{AttrID(AttrPortCounters).Name(ClassPMA), "<unknown>"},
		{Method(MethodGetResp).String(), "GetResp"},
		{MethodSAGetTable.String(), "0x12"},
		{AttrID(AttrClassPortInfo).String(), "Class Port Info"},
		{AttrID(0x0035).String(), "0x0035"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// TestNamesMatchLibibumad compares every name with libibumad's own (umad_class_str, umad_method_str,
// umad_common_mad_status_str, umad_sa_mad_status_str, umad_attribute_str) for every class, every method of
// six classes, every status and every attribute id of six classes: testdata/umadnames.c, built with gcc
// against the installed libibumad.so.3 (Debian's libibumad3, a dependency of infiniband-diags). Without gcc
// or the library it skips, unless GOVERBS_REQUIRE_GOLDEN=1.
func TestNamesMatchLibibumad(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "umadnames")
	lib := "/usr/lib/x86_64-linux-gnu/libibumad.so.3"
	if m, _ := filepath.Glob("/usr/lib/*/libibumad.so.3"); len(m) > 0 {
		lib = m[0]
	}
	out, err := exec.Command("gcc", "-O1", "-o", bin, "testdata/umadnames.c", lib).CombinedOutput()
	if err != nil {
		if os.Getenv("GOVERBS_REQUIRE_GOLDEN") == "1" {
			t.Fatalf("GOVERBS_REQUIRE_GOLDEN=1 but the libibumad comparison cannot be built: %v\n%s", err, out)
		}
		t.Skipf("no gcc or libibumad.so.3 (%v): %s", err, out)
	}
	c, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	classes := []Class{0x01, 0x81, 0x03, 0x04, 0x07, 0x10}
	var g bytes.Buffer
	w := bufio.NewWriter(&g)
	for i := 0; i < 256; i++ {
		fmt.Fprintf(w, "class %d %s\n", i, Class(i))
	}
	for _, cl := range classes {
		for i := 0; i < 256; i++ {
			fmt.Fprintf(w, "method %d %d %s\n", cl, i, Method(i).Name(cl))
		}
	}
	for i := 0; i < 65536; i++ {
		fmt.Fprintf(w, "status %d %s|%s\n", i, Status(i), Status(i).SAString())
	}
	for _, cl := range classes {
		for i := 0; i < 65536; i++ {
			fmt.Fprintf(w, "attr %d %d %s\n", cl, i, AttrID(i).Name(cl))
		}
	}
	w.Flush()
	if !bytes.Equal(g.Bytes(), c) {
		gl, cl := bytes.Split(g.Bytes(), []byte("\n")), bytes.Split(c, []byte("\n"))
		for i := range min(len(gl), len(cl)) {
			if !bytes.Equal(gl[i], cl[i]) {
				t.Fatalf("line %d: goverbs %q, libibumad %q", i+1, gl[i], cl[i])
			}
		}
		t.Fatalf("goverbs printed %d lines, libibumad %d", len(gl), len(cl))
	}
	t.Logf("%d names equal libibumad's", bytes.Count(c, []byte("\n")))
}
