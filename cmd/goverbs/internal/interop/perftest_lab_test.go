// Package interop runs goverbs' tools against rdma-core's and perftest's C tools in the lab.
package interop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/goverbs/goverbs/test/interop"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/perftest"
	"github.com/goverbs/goverbs/test/labtest"
)

// toolEnv makes the test binary act as a goverbs tool: re-executed with GOVERBS_INTEROP_TOOL=ib_write_bw it
// runs that perftest with its arguments, so the lab needs no separate goverbs binary.
const toolEnv = "GOVERBS_INTEROP_TOOL"

func TestMain(m *testing.M) {
	if tool := os.Getenv(toolEnv); tool != "" {
		os.Exit(perftest.MainProg(tool, os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// serverAddr is the lab's veth0 address, where rxe0 lives.
const serverAddr = "10.233.0.1"

type side struct {
	impl string // "go", "c", "c@ERA" (another Debian release's C tool, run from its root: peers_lab_test.go) or srcImpl
	out  bytes.Buffer
	err  bytes.Buffer
	rc   int
}

func command(ctx context.Context, t *testing.T, impl, tool string, args []string) *exec.Cmd {
	t.Helper()
	if impl == "c" {
		return exec.CommandContext(ctx, tool, args...)
	}
	if impl == srcImpl { // perftest built from its source (perftestsrc_lab_test.go)
		cmd := exec.CommandContext(ctx, filepath.Join(os.Getenv(perftestBinEnv), tool), args...)
		cmd.Args[0] = tool
		return cmd
	}
	if era, ok := strings.CutPrefix(impl, "c@"); ok { // another Debian release's C tool, from its root
		cmd := exec.CommandContext(ctx, "/usr/bin/"+tool, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: peerRoot(t, era)}
		cmd.Dir = "/"
		return cmd
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Env = append(os.Environ(), toolEnv+"="+tool)
	return cmd
}

// waitListen waits until a TCP socket of process pid's network namespace listens on port (the servers accept
// only one connection, so probing by connecting would consume it).
func waitListen(t *testing.T, pid, port int, exited <-chan struct{}) {
	t.Helper()
	if err := interop.WaitListeningIn(pid, port, 60*time.Second, exited); err != nil {
		t.Fatal(err)
	}
}

// cClockFlake is what perftest prints when its CPU frequency sampling fails (frequent under QEMU TCG); the run
// then reports no or infinite numbers, so the pair is run again.
const cClockFlake = "Correlation coefficient"

// cClockReruns is how many times a pair is run again after a C side's clock sampling failed. Under a loaded
// host (the clean clone's unit phase beside two lab VMs) the sampling failed four times in a row once
// (2026-11-28, 6.12, ib_send_lat UD -R and ib_write_bw -D 2): each rerun is a new, independent sampling.
const cClockReruns = 6

// runPair runs a server and a client of tool on the lab's device, again (up to cClockReruns more times) while a C side's
// clock sampling failed.
func runPair(t *testing.T, tool, srvImpl, cliImpl string, port int, args []string) (*side, *side) {
	t.Helper()
	return runPairOn(t, tool, endpoint{impl: srvImpl}, endpoint{impl: cliImpl}, port, args)
}

// endpoint is one side of a pair: an implementation ("go", "c", "c@ERA") and the host it runs on.
type endpoint struct {
	impl string
	peer *labtest.PeerHost // nil: the lab's own namespace, rxe0 on veth0 (serverAddr)
	args []string          // arguments for this side only, after the common ones
}

func (e endpoint) device() string {
	if e.peer != nil {
		return e.peer.Device
	}
	return labtest.Device()
}

func (e endpoint) addr() string {
	if e.peer != nil {
		return e.peer.Addr
	}
	return serverAddr
}

func (e endpoint) String() string {
	if e.peer != nil {
		return e.impl + " in " + e.peer.NetNS
	}
	return e.impl
}

// command is command() run on e's host.
func (e endpoint) command(ctx context.Context, t *testing.T, tool string, args []string) *exec.Cmd {
	cmd := command(ctx, t, e.impl, tool, args)
	if e.peer != nil {
		e.peer.Enter(cmd)
	}
	return cmd
}

// runPairOn is runPair with each side on a host of its own.
func runPairOn(t *testing.T, tool string, srv, cli endpoint, port int, args []string) (*side, *side) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		s, c := runPairOnce(t, tool, srv, cli, port+attempt*1000, args)
		if attempt == cClockReruns || !strings.Contains(s.err.String()+c.err.String(), cClockFlake) {
			return s, c
		}
		labtest.Note(t, "%s-server/%s-client: C clock sampling failed, running the pair again", srv, cli)
	}
}

func runPairOnce(t *testing.T, tool string, srvEnd, cliEnd endpoint, port int, args []string) (*side, *side) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	defer notePair(t, srvEnd.String(), cliEnd.String(), time.Now())
	withDev := func(e endpoint) []string {
		a := append([]string{"-d", e.device(), "-p", fmt.Sprint(port)}, args...)
		return append(a, e.args...)
	}
	srv, cli := &side{impl: srvEnd.impl}, &side{impl: cliEnd.impl}
	sc := srvEnd.command(ctx, t, tool, withDev(srvEnd))
	sc.Stdout, sc.Stderr = &srv.out, &srv.err
	if err := sc.Start(); err != nil {
		t.Fatalf("start %s server: %v", srvEnd, err)
	}
	exited := make(chan struct{})
	go func() { sc.Wait(); close(exited) }()
	waitListen(t, sc.Process.Pid, port, exited)
	cc := cliEnd.command(ctx, t, tool, append(withDev(cliEnd), srvEnd.addr()))
	cc.Stdout, cc.Stderr = &cli.out, &cli.err
	cc.Run()
	<-exited
	srv.rc, cli.rc = sc.ProcessState.ExitCode(), cc.ProcessState.ExitCode()
	return srv, cli
}

// slowPair is how long a pair of perftests may take before the summary notes it: a pair takes 1–3 s under TCG
// (-D 2: 5 s); one that took far longer waited on something (a retransmission, a peer's race) worth knowing even
// when it passed.
const slowPair = 20 * time.Second

// notePair notes a pair that took longer than slowPair.
func notePair(t *testing.T, srv, cli string, start time.Time) {
	if d := time.Since(start); d > slowPair {
		labtest.Note(t, "%s-server/%s-client took %v", srv, cli, d.Round(time.Millisecond))
	}
}

var (
	// BW average is printed %-7.2f: below 1000 MiB/sec it is padded with blanks before the tabs. perftest 6.24
	// (trixie, sid) puts five blanks after the tabs where 6.06 puts three.
	// With --report_gbits and an average below 0.1 Gb/s (TCG does that at 1 KiB) perftest switches to
	// REPORT_FMT_EXT: three %-7.6f columns and no tabs. Which one a run prints depends on the figure, so both
	// are result lines.
	bwLine = regexp.MustCompile(`^ \d+ +\d+ +\d+\.\d+ +\d+\.\d+ *\t\t +\d+\.\d{6}$|^ \d+ +\d+ +\d+\.\d{6} +\d+\.\d{6} +\d+\.\d{6}$`)
	// perftest's standard deviation overflows an int for outliers of tens of ms and prints -nan; so do we.
	latLine = regexp.MustCompile(`^ \d+ +\d+ +((\d+\.\d+|-?nan|inf)[ \t]*){7}$|^ \d+ +\d+ +\d+\.\d+ +\d+\.\d+$`)
	// perftest prints -nan for an overflowed standard deviation and inf for a failed clock: numbers too.
	number = regexp.MustCompile(`0x[0-9a-f]+|\d+(\.\d+)?|-?\bnan\b|\binf\b`)
	spaces = regexp.MustCompile(`[ \t]+`)
)

// resultLines are the stdout lines that carry results.
func resultLines(out string, kind string) []string {
	re := bwLine
	if kind == "lat" {
		re = latLine
	}
	var r []string
	for _, l := range strings.Split(out, "\n") {
		if re.MatchString(l) {
			r = append(r, l)
		}
	}
	return r
}

// shape is the output with numbers and runs of blanks made uniform, to compare a goverbs side's lines with
// a C side's lines of the same role.
func shape(out string) string {
	lines := strings.Split(number.ReplaceAllString(out, "N"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(spaces.ReplaceAllString(l, " "), " ")
	}
	return strings.Join(lines, "\n")
}

type pcase struct {
	tool string
	conn string
	args []string
}

func cases() []pcase {
	var cs []pcase
	for _, tool := range []string{"ib_write_bw", "ib_write_lat", "ib_read_bw", "ib_read_lat", "ib_send_bw",
		"ib_send_lat", "ib_atomic_bw", "ib_atomic_lat"} {
		cs = append(cs, pcase{tool, "RC", nil})
		if strings.HasPrefix(tool, "ib_send") {
			cs = append(cs, pcase{tool, "UD", nil})
		}
		if strings.HasPrefix(tool, "ib_send") || strings.HasPrefix(tool, "ib_write") {
			cs = append(cs, pcase{tool, "UC", nil})
		}
	}
	// Options that change the protocol or the loops: bidirectional, several QPs, post lists, durations.
	cs = append(cs,
		pcase{"ib_write_bw", "RC", []string{"-b"}},
		pcase{"ib_read_bw", "RC", []string{"-b"}},
		pcase{"ib_send_bw", "RC", []string{"-b"}},
		pcase{"ib_send_bw", "UD", []string{"-b"}},
		pcase{"ib_write_bw", "RC", []string{"-q", "2"}},
		pcase{"ib_send_bw", "RC", []string{"-q", "2", "-l", "4"}},
		pcase{"ib_write_bw", "RC", []string{"-D", "2"}},
		pcase{"ib_read_lat", "RC", []string{"-D", "2"}},
		pcase{"ib_send_lat", "RC", []string{"-s", "4096"}},
		pcase{"ib_write_bw", "RC", []string{"-s", "1024", "--report_gbits"}},
		pcase{"ib_send_bw", "RC", []string{"-e"}},
		pcase{"ib_read_lat", "RC", []string{"-e"}},
		pcase{"ib_atomic_bw", "RC", []string{"-A", "CMP_AND_SWAP"}},
		pcase{"ib_send_lat", "UD", []string{"-a"}},
	)
	return cs
}

// refImpl is the perftest goverbs' output is compared with: sid's 6.24 (the version goverbs clones), run from
// its root; the lab's own Debian 12 perftest 6.06 ("c") is the wire peer.
const refImpl = "c@sid"

// refPair is the C pair of impl ("c@ERA" in both roles) that a case's goverbs sides are compared with: both
// roles' stdout as an earlier run recorded it on this kernel with the same binaries (labtest.RefKey), else
// run now by run and recorded when both sides succeeded. fromCache reports which. The C pair tests nothing of
// goverbs; it is the reference for the output's shape, and was a third of the perftest tests' lab time.
func refPair(t *testing.T, tool, impl string, run func() (*side, *side)) (srv, cli *side, fromCache bool) {
	t.Helper()
	key := labtest.RefKey(t, strings.TrimPrefix(impl, "c@"), tool)
	if f := labtest.LoadRef(key, "server.txt", "client.txt"); f != nil {
		srv, cli = &side{impl: impl}, &side{impl: impl}
		srv.out.Write(f[0])
		cli.out.Write(f[1])
		return srv, cli, true
	}
	srv, cli = run()
	if srv.rc == 0 && cli.rc == 0 {
		labtest.SaveRef(t, key, map[string][]byte{"server.txt": srv.out.Bytes(), "client.txt": cli.out.Bytes()})
	}
	return srv, cli, false
}

// refCount counts a test's reference pairs, for the note that says how many came from the lab cache.
type refCount struct {
	mu            sync.Mutex
	cached, fresh int
}

func (c *refCount) add(fromCache bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if fromCache {
		c.cached++
	} else {
		c.fresh++
	}
}

// note notes the counts (labsuite's summary keeps it): what the run compared with.
func (c *refCount) note(t *testing.T, what string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	labtest.Note(t, "%s reference pairs: %d from the lab cache (recorded by an earlier run on this kernel with the same binaries), %d run now", what, c.cached, c.fresh)
}

// saveRef keeps the reference pair's stdout under $GOVERBS_LAB_OUT/perftest-6.24 (labsuite's out-KERNEL, or out-KERNEL-interop under -j 2
// directory on the host), where cmd/goverbs/internal/perftest/testdata/c_*.txt are taken from.
func saveRef(t *testing.T, srv, cli *side) {
	dir := os.Getenv("GOVERBS_LAB_OUT")
	if dir == "" {
		return
	}
	dir = filepath.Join(dir, "perftest-6.24")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Log(err)
		return
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	for i, s := range []*side{srv, cli} {
		f := filepath.Join(dir, name+"-"+[2]string{"server", "client"}[i]+".txt")
		if err := os.WriteFile(f, s.out.Bytes(), 0o644); err != nil {
			t.Log(err)
		}
	}
}

// TestLabPerftestInterop runs every goverbs perftest against Debian 12's perftest 6.06 in both directions (RC;
// UD for send; UC for write and send) and checks that both sides succeed, that each side reports what perftest
// 6.24 reports in that role, and that the goverbs side's output has the shape of 6.24's (sid's C pair in the
// same roles).
func TestLabPerftestInterop(t *testing.T) {
	labtest.Require(t)
	labtest.RequireRoot(t)
	if _, err := exec.LookPath("ib_write_bw"); err != nil {
		t.Fatalf("perftest's C binaries are not installed: %v", err)
	}
	peerRoot(t, "sid")
	port := 18600
	var refs refCount
	defer refs.note(t, "6.24")
	for _, pc := range cases() {
		pc := pc
		t.Run(strings.Join(append([]string{pc.tool, pc.conn}, pc.args...), "/"), func(t *testing.T) {
			kind := "bw"
			if strings.HasSuffix(pc.tool, "_lat") {
				kind = "lat"
			}
			args := append([]string{"-n", "20", "-c", pc.conn}, pc.args...)
			// 6.24's C pair in the same roles gives the reference shape.
			runs := map[string][2]*side{}
			for _, dir := range [][2]string{{"go", "c"}, {"c", "go"}, {refImpl, refImpl}} {
				port++
				var srv, cli *side
				if dir[0] == refImpl {
					var cached bool
					srv, cli, cached = refPair(t, pc.tool, refImpl, func() (*side, *side) { return runPair(t, pc.tool, dir[0], dir[1], port, args) })
					refs.add(cached)
				} else {
					srv, cli = runPair(t, pc.tool, dir[0], dir[1], port, args)
				}
				runs[dir[0]+"-"+dir[1]] = [2]*side{srv, cli}
				for _, s := range []*side{srv, cli} {
					if s.rc != 0 {
						t.Fatalf("%s-server/%s-client: %s side exited %d\nstdout:\n%s\nstderr:\n%s", dir[0], dir[1], s.impl, s.rc, s.out.String(), s.err.String())
					}
				}
			}
			ref := runs[refImpl+"-"+refImpl]
			saveRef(t, ref[0], ref[1])
			for _, dir := range []string{"go-c", "c-go"} {
				srv, cli := runs[dir][0], runs[dir][1]
				for i, s := range []*side{srv, cli} {
					role := [2]string{"server", "client"}[i]
					want := len(resultLines(ref[i].out.String(), kind))
					got := resultLines(s.out.String(), kind)
					if len(got) != want {
						t.Errorf("%s: %s %s printed %d result lines, 6.24 prints %d\n%s\nthe 6.24 pair's %s printed:\n%s", dir, s.impl,
							role, len(got), want, s.out.String(), role, ref[i].out.String())
					}
					if s.impl == "go" && shape(s.out.String()) != shape(ref[i].out.String()) {
						t.Errorf("%s: goverbs %s output differs in shape from 6.24's\ngoverbs:\n%s\n6.24:\n%s", dir, role, s.out.String(), ref[i].out.String())
					}
				}
				// A bandwidth server of write/read/atomic prints the client's report: the same figures (6.06 and
				// 6.24 lay the row out with different blanks).
				if kind == "bw" && pc.tool != "ib_send_bw" {
					s, c := resultLines(srv.out.String(), kind), resultLines(cli.out.String(), kind)
					if len(s) == 1 && len(c) == 1 && strings.Join(strings.Fields(s[0]), " ") != strings.Join(strings.Fields(c[0]), " ") {
						t.Errorf("%s: server reports %q, client %q", dir, s[0], c[0])
					}
				}
			}
		})
	}
}

// TestLabPerftestJSON compares goverbs' --out_json files with perftest 6.24's: a goverbs pair and a sid pair run
// the same test, each side writing its own file; with numbers made uniform the files must be equal (or both
// absent), and goverbs' must be valid JSON wherever 6.24's is.
func TestLabPerftestJSON(t *testing.T) {
	labtest.Require(t)
	labtest.RequireRoot(t)
	root := peerRoot(t, "sid")
	port := 24600
	var refs refCount
	defer refs.note(t, "6.24 --out_json")
	for _, pc := range []pcase{
		{"ib_write_bw", "RC", nil},
		{"ib_send_bw", "RC", nil},
		{"ib_read_lat", "RC", nil},
		{"ib_send_lat", "UD", nil},
		{"ib_read_lat", "RC", []string{"-D", "2"}},
		{"ib_write_bw", "RC", []string{"--output=bandwidth"}},
		{"ib_atomic_bw", "RC", []string{"--report_gbits"}},
	} {
		t.Run(strings.Join(append([]string{pc.tool, pc.conn}, pc.args...), "/"), func(t *testing.T) {
			args := append([]string{"-n", "20", "-c", pc.conn, "--out_json"}, pc.args...)
			files := map[string][2][]byte{}
			for _, impl := range []string{"go", refImpl} {
				key := ""
				if impl == refImpl {
					// The C pair's files as an earlier run recorded them on this kernel with the same binaries
					// (refPair): "present" lists the roles that wrote one.
					key = labtest.RefKey(t, strings.TrimPrefix(refImpl, "c@"), pc.tool)
					if f := labtest.LoadRef(key, "present", "server.json", "client.json"); f != nil {
						var got [2][]byte
						for i, role := range []string{"server", "client"} {
							if strings.Contains(string(f[0]), role) {
								got[i] = f[1+i]
							}
						}
						files[impl] = got
						refs.add(true)
						continue
					}
				}
				var ends [2]endpoint
				var paths [2]string
				for i, role := range []string{"server", "client"} {
					paths[i] = fmt.Sprintf("/tmp/perftest-json-%s-%s.json", strings.TrimPrefix(impl, "c@"), role)
					ends[i] = endpoint{impl: impl, args: []string{"--out_json_file=" + paths[i]}}
					if impl != "go" {
						paths[i] = filepath.Join(root, paths[i])
					}
					os.Remove(paths[i])
				}
				port++
				srv, cli := runPairOn(t, pc.tool, ends[0], ends[1], port, args)
				for _, s := range []*side{srv, cli} {
					if s.rc != 0 {
						t.Fatalf("%s pair: %s side exited %d\nstdout:\n%s\nstderr:\n%s", impl, s.impl, s.rc, s.out.String(), s.err.String())
					}
				}
				var got [2][]byte
				for i := range paths {
					got[i], _ = os.ReadFile(paths[i]) // nil: no file
				}
				files[impl] = got
				if impl == refImpl {
					present := ""
					for i, role := range []string{"server", "client"} {
						if got[i] != nil {
							present += role + "\n"
						}
					}
					labtest.SaveRef(t, key, map[string][]byte{"present": []byte(present), "server.json": got[0], "client.json": got[1]})
					refs.add(false)
				}
			}
			for i, role := range []string{"server", "client"} {
				g, c := files["go"][i], files[refImpl][i]
				if role == "client" && c == nil {
					t.Errorf("6.24's client wrote no --out_json file")
				}
				if (g == nil) != (c == nil) || shape(string(g)) != shape(string(c)) {
					t.Errorf("%s: goverbs' --out_json file differs from 6.24's\ngoverbs:\n%s\n6.24:\n%s", role, g, c)
				}
				if c != nil && json.Valid(c) && !json.Valid(g) {
					t.Errorf("%s: goverbs' --out_json file is not valid JSON where 6.24's is:\n%s", role, g)
				}
			}
		})
	}
}
