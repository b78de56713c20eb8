package perftest

import (
	"bytes"
	"strings"
	"testing"
)

func parsed(t *testing.T, verb Verb, kind Kind, args ...string) (*Params, int, string, string) {
	t.Helper()
	p := &Params{Verb: verb, Kind: kind}
	var o, e bytes.Buffer
	rc := parse(p, "ib_x", args, &o, &e)
	return p, rc, o.String(), e.String()
}

func TestParseDefaults(t *testing.T) {
	p, rc, _, _ := parsed(t, VerbWrite, KindBW)
	eq(t, -1, rc)
	eq(t, uint64(65536), p.Size)
	eq(t, uint64(5000), p.Iters)
	eq(t, 128, p.TxDepth)
	eq(t, 1, p.CQMod) // size > 8 KiB turns CQ moderation off
	eq(t, true, p.Server)
	eq(t, 18515, p.Port)

	p, rc, _, _ = parsed(t, VerbSend, KindLat, "-c", "UD", "host")
	eq(t, -1, rc)
	eq(t, uint64(2), p.Size)
	eq(t, uint64(1000), p.Iters)
	eq(t, 1000, p.RxDepth) // UD/UC rx depth is min(iters, 16000), made even
	eq(t, false, p.Server)
	eq(t, "host", p.Servername)

	p, rc, _, _ = parsed(t, VerbAtomic, KindBW, "-A", "CMP_AND_SWAP", "-n", "50", "-D", "4")
	eq(t, -1, rc)
	eq(t, atomicCmpAndSwap, p.AtomicType)
	eq(t, uint64(0), p.Iters) // duration mode
	eq(t, 1, p.Margin)
	eq(t, true, p.NoPeak)
}

func TestParseOptions(t *testing.T) {
	p, rc, _, _ := parsed(t, VerbWrite, KindBW, "-s", "4K", "-n", "0x20", "-t", "64", "-Q", "2", "-q", "2",
		"--report_gbits", "-x", "3", "-m", "2048", "--out_json", "--out_json_file=/tmp/x.json", "-l", "4", "-i", "1")
	eq(t, -1, rc)
	eq(t, uint64(4096), p.Size)
	eq(t, uint64(32), p.Iters)
	eq(t, 32, p.TxDepth) // bounded by iters
	eq(t, 2, p.CQMod)
	eq(t, 2, p.NumQPs)
	eq(t, true, p.ReportGbits)
	eq(t, 3, p.GIDIndex)
	eq(t, true, p.UseGIDUser)
	eq(t, 2048, p.MTU)
	eq(t, "/tmp/x.json", p.OutJSONFile)
	eq(t, 4, p.PostList)

	p, rc, _, _ = parsed(t, VerbWrite, KindBW, "--run_infinitely", "-D", "2")
	eq(t, -1, rc)
	eq(t, runInfinitely, p.TestMethod)
	eq(t, byDuration, p.TestType)

	p, rc, _, _ = parsed(t, VerbRead, KindLat, "-a", "-o", "4", "-F", "-U")
	eq(t, -1, rc)
	eq(t, runAll, p.TestMethod)
	eq(t, uint64(maxSize), p.Size)
	eq(t, 4, p.OutReads)
	eq(t, true, p.Unsorted)

	p, rc, _, _ = parsed(t, VerbRead, KindBW, "--odp")
	eq(t, -1, rc)
	eq(t, true, p.UseODP)
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		verb Verb
		kind Kind
		args []string
		out  string // on stdout or stderr
	}{
		{VerbWrite, KindBW, []string{"-n", "3"}, " Iteration num should be between 5 and 4294967296\n"},
		{VerbWrite, KindBW, []string{"-n", "1x"}, " Iteration num argument 1x should be uint64_t\n"},
		{VerbRead, KindBW, []string{"-c", "UC"}, " UC connection not possible in READ/ATOMIC verbs\n"},
		{VerbWrite, KindBW, []string{"-c", "UD"}, " UD connection only possible in SEND verb\n"},
		{VerbWrite, KindBW, []string{"-c", "XX"}, " Invalid Connection type. Please choose from {RC,UC,UD,XRC,DC,SRD}\n"},
		{VerbWrite, KindBW, []string{"-e"}, " Events feature not available on WRITE verb\n"},
		{VerbWrite, KindLat, []string{"-q", "2"}, " Multiple QPs only available on bw tests\n"},
		{VerbRead, KindBW, []string{"-I", "10"}, " Inline feature not available on READ/Atomic verbs\n"},
		{VerbAtomic, KindBW, []string{"-s", "16"}, "Message size cannot be changed for Atomic tests \n"},
		{VerbWrite, KindBW, []string{"-A", "FETCH_AND_ADD"}, " You are not running the atomic_lat/bw test!\n"},
		{VerbWrite, KindLat, []string{"--run_infinitely"}, " run_infinitely exists only in BW tests for now.\n"},
		{VerbWrite, KindBW, []string{"-l", "3", "-n", "10"}, "Number of iterations must be a multiple of post list size\n"},
		{VerbWrite, KindBW, []string{"-D", "2", "-f", "1"}, "please check that DURATION > 2*MARGIN\n"},
		{VerbWrite, KindBW, []string{"a", "b"}, " Invalid Command line. Please check command rerun \n"},
		{VerbSend, KindBW, []string{"-R", "-c", "UC"}, " UC is not supported in librdmacm\n"},
		{VerbWrite, KindBW, []string{"-s", "0"}, " Message Size should be between 1 and 2147483647\n"},
		{VerbWrite, KindBW, []string{"-s", "64", "--size=128"}, " Duplicated argument: -s \n"},
		{VerbWrite, KindBW, []string{"--report_gbits", "--report_gbits"}, " Duplicated argument: report_gbits \n"},
		{VerbRead, KindBW, []string{"--write_with_imm"}, "Write_with_imm can only be used with write_lat and write_bw tests\n"},
		{VerbWrite, KindBW, []string{"--use_cuda=0"}, " Unsupported memory type\n"},
		{VerbWrite, KindBW, []string{"--use_rss"}, "RSS isn't supported\n"},
		{VerbWrite, KindBW, []string{"-f", "-1"}, " Margin must be non-negative int\n"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, rc, o, e := parsed(t, tc.verb, tc.kind, tc.args...)
			if rc != 1 && rc != exitFail {
				t.Fatalf("parse returned %d, want a failure", rc)
			}
			if !strings.Contains(o+e, tc.out) {
				t.Fatalf("output %q lacks %q", o+e, tc.out)
			}
		})
	}
}

func TestParseVersionHelp(t *testing.T) {
	_, rc, o, _ := parsed(t, VerbWrite, KindBW, "-V")
	eq(t, versionExit, rc)
	eq(t, "Version: 6.24\n", o)
	_, rc, o, _ = parsed(t, VerbWrite, KindBW, "--help")
	eq(t, helpExit, rc)
	if !strings.HasPrefix(o, "Usage:\n") || !strings.Contains(o, "--run_infinitely") {
		t.Fatalf("help: %q", o)
	}
}

func TestRunUnknownTool(t *testing.T) {
	var o, e bytes.Buffer
	eq(t, 1, MainProg("ib_frob_bw", nil, &o, &e))
	o.Reset()
	e.Reset()
	eq(t, 1, MainProg("/usr/bin/ib_write_bw", []string{"-V"}, &o, &e)) // VERSION_EXIT: status 1, no parser error
	eq(t, "Version: 6.24\n", o.String())
	eq(t, "", e.String())
}
