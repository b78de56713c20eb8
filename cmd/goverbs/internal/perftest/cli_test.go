package perftest

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCLIMatchesC replays testdata/c624/cases.txt: command lines that perftest 6.24 (Debian sid's and trixie's
// perftest 25.01.0+0.80) answers before it opens a device (help, version, argument errors), captured with
// testdata/c624/capture.sh. goverbs must print the same stdout and stderr and exit with the same status.
func TestCLIMatchesC(t *testing.T) {
	t.Setenv("POSIXLY_CORRECT", "")
	dir := filepath.Join("testdata", "c624")
	f, err := os.Open(filepath.Join(dir, "cases.txt"))
	noErr(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		name, tool, args := fields[0], fields[1], fields[2:]
		n++
		t.Run(name, func(t *testing.T) {
			read := func(ext string) string {
				b, err := os.ReadFile(filepath.Join(dir, name+"."+ext))
				noErr(t, err)
				return string(b)
			}
			status, err := strconv.Atoi(strings.TrimSpace(read("status")))
			noErr(t, err)
			var o, e bytes.Buffer
			rc := MainProg("/usr/bin/"+tool, args, &o, &e)
			eq(t, read("stdout"), o.String())
			eq(t, read("stderr"), e.String())
			eq(t, status, rc)
		})
	}
	noErr(t, sc.Err())
	if n == 0 {
		t.Fatal("no cases")
	}
}

// TestResolveError checks check_add_port's message for addresses of the wrong family (glibc's getaddrinfo says
// EAI_ADDRFAMILY for them).
func TestResolveError(t *testing.T) {
	eq(t, "Address family for hostname not supported for ai_family: 2 service: ::1 port: 18515\n",
		resolveError(&Params{Port: 18515}, "::1"))
	eq(t, "Address family for hostname not supported for ai_family: a service: 10.233.0.1 port: 7\n",
		resolveError(&Params{Port: 7, IPv6Addr: true}, "10.233.0.1"))
	eq(t, "", resolveError(&Params{Port: 7}, "10.233.0.1"))
	eq(t, "", resolveError(&Params{Port: 7, IPv6Addr: true}, "fe80::1"))
}
