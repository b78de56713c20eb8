package mmio

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// inst is one disassembled instruction: its encoding in hex (as objdump prints it) and its Go-syntax text.
type inst struct{ hex, text string }

// amd64Args2 loads the two pointer arguments (MOVQ dst, DI; MOVQ src, SI), and amd64Copy64Stores are the eight
// ascending 8-byte load/store pairs of one 64-byte block (MOVQ 0(SI), AX; MOVQ AX, 0(DI); ...), which copy64
// makes and wcCopy64 makes between its SFENCEs.
var (
	amd64Args2        = []string{"488b7c2408", "488b742410"}
	amd64Copy64Stores = []string{
		"488b06", "488907",
		"488b4608", "48894708",
		"488b4610", "48894710",
		"488b4618", "48894718",
		"488b4620", "48894720",
		"488b4628", "48894728",
		"488b4630", "48894730",
		"488b4638", "48894738",
	}
)

// want pins, per architecture and function, the exact instruction encodings. Loads of the (stack) arguments are
// part of the pin so that the store's width and addressing cannot change unnoticed.
var want = map[string]map[string][]string{
	"amd64": {
		"ToDeviceBarrier":   {"c3"},                                       // RET: compiler barrier only
		"FromDeviceBarrier": {"0faee8", "c3"},                             // LFENCE
		"FlushWrites":       {"0faef8", "c3"},                             // SFENCE
		"WCStart":           {"0faef8", "c3"},                             // SFENCE
		"write64":           {"488b7c2408", "488b442410", "488907", "c3"}, // MOVQ AX, 0(DI): one 8-byte store
		"copy64":            slices.Concat(amd64Args2, amd64Copy64Stores, []string{"c3"}),
		"wcWrite64":         {"488b7c2408", "488b442410", "0faef8", "488907", "0faef8", "c3"}, // SFENCE; MOVQ; SFENCE
		"wcCopy64":          slices.Concat(amd64Args2, []string{"0faef8"}, amd64Copy64Stores, []string{"0faef8", "c3"}),
	},
	"arm64": {
		"ToDeviceBarrier":   {"d50332bf", "d65f03c0"},                                                 // DMB OSHST
		"FromDeviceBarrier": {"d50331bf", "d65f03c0"},                                                 // DMB OSHLD
		"FlushWrites":       {"d5033e9f", "d65f03c0"},                                                 // DSB ST
		"WCStart":           {"d5033e9f", "d65f03c0"},                                                 // DSB ST
		"write64":           {"f94007e0", "f9400be1", "f9000001", "d65f03c0"},                         // STR X1, [X0]: one 8-byte store
		"copy64":            {"f94007e0", "f9400be1", "4c402c20", "4c002c00", "d65f03c0"},             // LD1/ST1 {v0-v3.2d}
		"wcWrite64":         {"f94007e0", "f9400be1", "d5033e9f", "f9000001", "d5033e9f", "d65f03c0"}, // DSB ST; STR; DSB ST
		"wcCopy64": {"f94007e0", "f9400be1", "d5033e9f", "4c402c20", "4c002c00", "d5033e9f",
			"d65f03c0"}, // DSB ST; LD1/ST1; DSB ST
	},
}

// disasm runs `go tool objdump` on binary and returns the instructions of every mmio assembly function.
func disasm(t *testing.T, binary string) map[string][]inst {
	t.Helper()
	out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "tool", "objdump", "-s", `mmio\.[A-Za-z0-9]+\.abi0$`, binary).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool objdump %s: %v\n%s", binary, err, out)
	}
	funcs := map[string][]inst{}
	var cur string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "TEXT ") {
			name := strings.Fields(line)[1]
			name = strings.TrimSuffix(name[strings.LastIndex(name, "mmio.")+len("mmio."):], "(SB)")
			cur = strings.TrimSuffix(name, ".abi0")
			continue
		}
		f := strings.Split(strings.TrimSpace(line), "\t")
		var cols []string
		for _, c := range f {
			if c = strings.TrimSpace(c); c != "" {
				cols = append(cols, c)
			}
		}
		if cur == "" || len(cols) < 4 {
			continue
		}
		hex, text := cols[2], cols[3]
		if text == "?" || text == "INT $0x3" { // alignment padding after the function
			continue
		}
		funcs[cur] = append(funcs[cur], inst{hex: hex, text: text})
	}
	return funcs
}

func checkDisasm(t *testing.T, arch string, got map[string][]inst) {
	t.Helper()
	for fn, wantHex := range want[arch] {
		g := got[fn]
		var gotHex []string
		for _, in := range g {
			gotHex = append(gotHex, in.hex)
		}
		if strings.Join(gotHex, " ") != strings.Join(wantHex, " ") {
			var text []string
			for _, in := range g {
				text = append(text, in.text)
			}
			t.Errorf("%s %s: instructions changed\n got: %v\n     (%s)\nwant: %v", arch, fn, gotHex,
				strings.Join(text, "; "), wantHex)
		}
		for _, in := range g {
			if strings.Contains(in.text, "XCHG") || strings.Contains(in.text, "LOCK") ||
				strings.Contains(in.text, "STLR") || strings.Contains(in.text, "REP") {
				t.Errorf("%s %s: forbidden instruction %q", arch, fn, in.text)
			}
		}
	}
}

// buildProbe links the probe command (which references every primitive) for goarch, with its symbol table, and
// returns the binary's path.
func buildProbe(t *testing.T, goarch string) string {
	t.Helper()
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		t.Skip("go command not available; cannot build and disassemble")
	}
	bin := filepath.Join(t.TempDir(), "probe."+goarch)
	cmd := exec.Command(gobin, "build", "-o", bin, "./internal/disasmprobe")
	cmd.Env = append(os.Environ(), "GOARCH="+goarch, "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("GOARCH=%s go build: %v\n%s", goarch, err, out)
	}
	return bin
}

// TestDisassembly builds a binary for amd64 and arm64 and pins the instructions of every assembly function, so
// neither a toolchain change nor an edit can silently change a barrier, the doorbell store's width, or the order
// of the BlueFlame copy's stores. Both architectures are checked on any host (cross build).
func TestDisassembly(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		t.Run(arch, func(t *testing.T) {
			t.Parallel()
			checkDisasm(t, arch, disasm(t, buildProbe(t, arch)))
		})
	}
}
