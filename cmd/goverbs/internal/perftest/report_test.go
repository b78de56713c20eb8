package perftest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

var rxeGID = [16]byte{10: 0xff, 11: 0xff, 12: 10, 13: 233, 15: 1}

// The goldens under testdata/c_*.txt are the stdout of Debian sid's perftest 6.24 binaries run in the lab on
// rxe0 with -n 20 (TestLabPerftestInterop keeps its reference pair's stdout under $GOVERBS_LAB_OUT/perftest-6.24);
// the tests parse the same command line, render the run with our formatting and compare bytes.
func TestFormatMatchesC(t *testing.T) {
	rxeInfo := testInfo{DevName: "rxe0", Transport: "IB", LinkLayer: "Ethernet", OldPost: true, RelaxOrder: true}
	// run parses args as the C tool did (its warnings go to b) and sets what the device and the peer decide.
	run := func(t *testing.T, b *bytes.Buffer, verb Verb, kind Kind, args ...string) *Params {
		p := &Params{Verb: verb, Kind: kind}
		var e bytes.Buffer
		if rc := parse(p, "ib_x", append([]string{"-n", "20"}, args...), b, &e); rc != -1 {
			t.Fatalf("parse: %d %s", rc, e.String())
		}
		p.CurrMTU, p.GIDIndex = 3, 1
		if p.Verb != VerbRead && p.Verb != VerbAtomic {
			p.InlineSize = 0
		}
		return p
	}
	cases := []struct {
		golden string
		render func(t *testing.T, b *bytes.Buffer)
	}{
		{"c_write_bw_client.txt", func(t *testing.T, b *bytes.Buffer) {
			p := run(t, b, VerbWrite, KindBW, "host")
			printTestInfo(b, p, &rxeInfo)
			printDest(b, p, &Dest{QPN: 0x10d, PSN: 0xeed92d, RKey: 0xf7bc, VAddr: 0x562eaf9b0000, GID: rxeGID}, "local")
			printDest(b, p, &Dest{QPN: 0x10c, PSN: 0x30bbf9, RKey: 0xf6ce, VAddr: 0x5655501a4000, GID: rxeGID}, "remote")
			printBWHeader(b, p)
			b.WriteString(formatBWLine(p, &BWReport{Size: 65536, Iters: 20, BWPeak: 50.49, BWAvg: 48.90, MsgRateAvg: 0.000782}))
			b.WriteString(resultLine)
		}},
		{"c_send_ud_server.txt", func(t *testing.T, b *bytes.Buffer) {
			p := run(t, b, VerbSend, KindBW, "-c", "UD") // the server's " WARNING: BW peak won't be measured"
			p.Size = 1024                                // the UD size is the MTU
			b.WriteString("\n************************************\n* Waiting for client to connect... *\n************************************\n")
			printTestInfo(b, p, &rxeInfo)
			printDest(b, p, &Dest{QPN: 0x136, PSN: 0xeb7ad6, GID: rxeGID}, "local")
			printDest(b, p, &Dest{QPN: 0x137, PSN: 0xea984c, GID: rxeGID}, "remote")
			printBWHeader(b, p)
			b.WriteString(formatBWLine(p, &BWReport{Size: 1024, Iters: 20, BWPeak: 0, BWAvg: 1.88, MsgRateAvg: 0.001922}))
			b.WriteString(resultLine)
		}},
		{"c_read_lat_client.txt", func(t *testing.T, b *bytes.Buffer) {
			p := run(t, b, VerbRead, KindLat, "host")
			p.OutReads = 128
			b.WriteString(resultLine) // "Device not recognized to implement inline feature"
			printTestInfo(b, p, &rxeInfo)
			printDest(b, p, &Dest{QPN: 0x12a, PSN: 0xfe7702, OutReads: 128, RKey: 0x11595, VAddr: 0x557477721000, GID: rxeGID}, "local")
			printDest(b, p, &Dest{QPN: 0x12b, PSN: 0xd92666, OutReads: 128, RKey: 0x114e5, VAddr: 0x5623310f1000, GID: rxeGID}, "remote")
			printLatHeader(b, p)
			b.WriteString(formatLatLine(p, &LatResult{Size: 2, Iters: 20, Min: 30.29, Max: 352.76, Typical: 30.73, Avg: 31.61,
				Stdev: 2.50, P99: 352.76, P999: 352.76}))
			b.WriteString(resultLine)
		}},
		{"c_write_lat_client.txt", func(t *testing.T, b *bytes.Buffer) {
			p := run(t, b, VerbWrite, KindLat, "host")
			info := rxeInfo
			info.RelaxOrder = false // ib_write_lat disables relaxed ordering
			printTestInfo(b, p, &info)
			printDest(b, p, &Dest{QPN: 0x119, PSN: 0x4ca427, RKey: 0x1034b, VAddr: 0x56228293f000, GID: rxeGID}, "local")
			printDest(b, p, &Dest{QPN: 0x118, PSN: 0xdaed3f, RKey: 0x10239, VAddr: 0x556714b85000, GID: rxeGID}, "remote")
			printLatHeader(b, p)
			b.WriteString(formatLatLine(p, &LatResult{Size: 2, Iters: 20, Min: 3923.40, Max: 4071.11, Typical: 3977.65,
				Avg: 3980.95, Stdev: 40.34, P99: 4071.11, P999: 4071.11}))
			b.WriteString(resultLine)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.golden, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("testdata", tc.golden))
			noErr(t, err)
			var b bytes.Buffer
			tc.render(t, &b)
			eq(t, string(want), b.String())
		})
	}
}

func TestFormatLines(t *testing.T) {
	p := &Params{Kind: KindBW, Output: outFull}
	cases := []struct {
		name string
		got  string
		want string
	}{
		{"bw", formatBWLine(p, &BWReport{Size: 65536, Iters: 5000, BWPeak: 1234.5678, BWAvg: 1200.1, MsgRateAvg: 0.0192}),
			" 65536      5000             1234.57            1200.10\t\t     0.019200\n"},
		{"bw gbits tiny", formatBWLine(&Params{ReportGbits: true, Output: outFull}, &BWReport{Size: 2, Iters: 1000, BWPeak: 0.5, BWAvg: 0.01, MsgRateAvg: 0.5}),
			" 2          1000           0.500000            0.010000            0.500000\n"},
		{"bw output bandwidth", formatBWLine(&Params{Output: outBW}, &BWReport{BWAvg: 3.5}), "3.500000\n"},
		{"lat inf", formatLatLine(&Params{}, &LatResult{Size: 2, Iters: 20, Min: posInf(), Max: posInf(), Typical: posInf(),
			Avg: posInf(), Stdev: nan(), P99: posInf(), P999: posInf()}),
			" 2       20          inf            inf          inf      \t       inf         \t-nan   \t\tinf     \t\tinf    \n"},
		{"lat dur", formatLatDurLine(&Params{}, 2, 1234, 12.345, 40000.5), " 2             1234            12.35          40000.50\n"},
		{"althex zero", cAltHex(0, 4), "0000"},
		{"althex wide", cAltHex(0x27b9a, 6), "0x27b9a"},
		{"althex pad", cAltHex(0x11, 6), "0x0011"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { eq(t, tc.want, tc.got) })
	}
}
