package main

import (
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestScannerFindsEveryMacro cross-checks the text scanner against the C
// preprocessor: every object-like macro with a value that gcc -E -dM sees
// after including a header, and whose name matches that header's
// allow-list, must be a generated constant (of this or another header).
func TestScannerFindsEveryMacro(t *testing.T) {
	cc := requireGenerationTools(t)
	generated, _ := scanInstalledHeaders(t)
	macro := regexp.MustCompile(`^#define ([A-Za-z_]\w*) (.+)$`)
	for _, spec := range headers {
		cmd := exec.Command(cc, "-E", "-dM", "-x", "c", "-")
		cmd.Stdin = strings.NewReader("#include <linux/netlink.h>\n#include <rdma/" + spec.name + ">\n")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s -E -dM <rdma/%s>: %v", cc, spec.name, err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			m := macro.FindStringSubmatch(line)
			if m == nil {
				continue // function-like, or defined without a value (include guards)
			}
			for _, p := range spec.prefixes {
				if strings.HasPrefix(m[1], p) && !generated[m[1]] {
					t.Errorf("<rdma/%s>: macro %s (= %s) matches prefix %s but is not generated", spec.name, m[1], m[2], p)
				}
			}
		}
	}
}

// TestScannerFindsEveryEnumeratorAndStruct cross-checks the scanner against
// the compiler's debug information: every enumerator that gcc records (with
// unused types kept) for a declaration in one of the headers must be a
// generated constant or deliberately skipped, and every named struct and
// union declared there must have a generated type.
func TestScannerFindsEveryEnumeratorAndStruct(t *testing.T) {
	cc := requireGenerationTools(t)
	known, scans := scanInstalledHeaders(t)
	records := map[string]bool{} // "struct tag" / "union tag"
	var src strings.Builder
	src.WriteString("#include <linux/netlink.h>\n")
	for i, spec := range headers {
		fmt.Fprintf(&src, "#include <rdma/%s>\n", spec.name)
		for _, rec := range scans[i].records {
			records[rec.kind+" "+rec.tag] = true
		}
	}
	obj := filepath.Join(t.TempDir(), "enums.o")
	cmd := exec.Command(cc, "-g", "-fno-eliminate-unused-debug-types", "-c", "-x", "c", "-o", obj, "-")
	cmd.Stdin = strings.NewReader(src.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, out)
	}
	f, err := elf.Open(obj)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := f.DWARF()
	if err != nil {
		t.Fatal(err)
	}
	r := d.Reader()
	var files []*dwarf.LineFile
	seen, nrecords := 0, 0
	for {
		e, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if e == nil {
			break
		}
		switch e.Tag {
		case dwarf.TagCompileUnit:
			lr, err := d.LineReader(e)
			if err != nil || lr == nil {
				t.Fatalf("line table: %v", err)
			}
			files = lr.Files()
		case dwarf.TagStructType, dwarf.TagUnionType:
			fi, ok := e.Val(dwarf.AttrDeclFile).(int64)
			name, _ := e.Val(dwarf.AttrName).(string)
			if ok && name != "" && int(fi) < len(files) && files[fi] != nil &&
				strings.Contains(files[fi].Name, "/rdma/") {
				kind := map[dwarf.Tag]string{dwarf.TagStructType: "struct", dwarf.TagUnionType: "union"}[e.Tag]
				if !records[kind+" "+name] {
					t.Errorf("<rdma/%s>: %s %s has no generated type", filepath.Base(files[fi].Name), kind, name)
				}
				nrecords++
			}
			r.SkipChildren()
		case dwarf.TagEnumerationType:
			fi, ok := e.Val(dwarf.AttrDeclFile).(int64)
			if !ok || int(fi) >= len(files) || files[fi] == nil ||
				!strings.Contains(files[fi].Name, "/rdma/") {
				r.SkipChildren()
				continue
			}
			header := filepath.Base(files[fi].Name)
			for {
				c, err := r.Next()
				if err != nil {
					t.Fatal(err)
				}
				if c == nil || c.Tag == 0 {
					break
				}
				name, _ := c.Val(dwarf.AttrName).(string)
				seen++
				if !known[name] {
					t.Errorf("<rdma/%s>: enumerator %s is not generated", header, name)
				}
			}
		}
	}
	t.Logf("%d enumerators and %d structs/unions checked", seen, nrecords)
	if nrecords < 150 {
		t.Errorf("only %d structs/unions found in the debug info; the cross-check is not working", nrecords)
	}
	if seen < 500 {
		t.Errorf("only %d enumerators found in the debug info; the cross-check is not working", seen)
	}
}

// scanInstalledHeaders scans each header of the table as installed under
// /usr/include/rdma and returns the names that are generated constants or
// deliberately left out (with a reason), and each header's scan, in table
// order.
func scanInstalledHeaders(t *testing.T) (generated map[string]bool, scans []*cHeader) {
	t.Helper()
	generated = map[string]bool{}
	for _, spec := range headers {
		text, err := os.ReadFile(filepath.Join("/usr/include/rdma", spec.name))
		if err != nil {
			t.Fatal(err)
		}
		h, err := scanHeader(string(text))
		if err != nil {
			t.Fatalf("%s: %v", spec.name, err)
		}
		consts, err := selectConsts(spec, h)
		if err != nil {
			t.Fatalf("%s: %v", spec.name, err)
		}
		for _, c := range consts {
			generated[c.name] = true
		}
		for name := range spec.skip {
			generated[name] = true
		}
		scans = append(scans, h)
	}
	return generated, scans
}
