package perftest

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Result table framing and headers, byte for byte as perftest 6.24 prints them (MiB/sec since 6.22).
const (
	resultLine   = "---------------------------------------------------------------------------------------\n"
	resultFmt    = " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]"
	resultFmtG   = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
	resultFmtLat = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] "
	resultFmtDur = " #bytes        #iterations       t_avg[usec]    tps average"
)

// cAltHex formats v like C's "%#0Nx": the 0x prefix counts in the width and is left out for zero.
func cAltHex(v uint64, width int) string {
	if v == 0 {
		return fmt.Sprintf("%0*d", width, 0)
	}
	digits := strconv.FormatUint(v, 16)
	if pad := width - 2 - len(digits); pad > 0 {
		digits = strings.Repeat("0", pad) + digits
	}
	return "0x" + digits
}

// cFloat formats like C's printf %f family for non-finite values ("inf", "-nan"), else like Go.
func cFloat(format string, v float64) string {
	switch {
	case math.IsInf(v, 1):
		return cPad(format, "inf")
	case math.IsInf(v, -1):
		return cPad(format, "-inf")
	case math.IsNaN(v):
		return cPad(format, "-nan")
	}
	return fmt.Sprintf(format, v)
}

// cPad applies the width and '-' flag of a %[-]W.Pf verb to s.
func cPad(format string, s string) string {
	f := strings.TrimPrefix(format, "%")
	left := strings.HasPrefix(f, "-")
	f = strings.TrimPrefix(f, "-")
	w := 0
	for len(f) > 0 && f[0] >= '0' && f[0] <= '9' {
		w = w*10 + int(f[0]-'0')
		f = f[1:]
	}
	if len(s) >= w {
		return s
	}
	if left {
		return s + strings.Repeat(" ", w-len(s))
	}
	return strings.Repeat(" ", w-len(s)) + s
}

// devRecognized reports whether perftest's ib_dev_name knows the device (it then allows inline data) and
// whether it is one that uses the ibv_wr_* post API.
func devRecognized(vendorID, partID uint32) (known, newPost bool) {
	if vendorID == 5157 {
		switch partID >> 12 {
		case 10, 4, 11, 5, 6:
			return true, false
		}
		return false, false
	}
	if vendorID == 0x8086 {
		return true, false
	}
	switch partID {
	case 4113, 4115, 4116, 4117, 4118, 4119, 4120, 4121, 4122, 4123, 4124, 4125, 4126, 4127, 4129,
		41682, 41683, 41686, 41692, 61344, 61345:
		return true, true
	case 4099, 4100, 4103, 4104, 26418, 26428, 26438, 26448, 26458, 26468, 26478, 25408, 25418, 25428, 25448,
		1824, 5684, 5700, 5716, 5718, 5734, 32880, 32881, 32882, 32883, 32912, 33136, 33168,
		5638, 5652, 5824, 5825, 5827, 5839, 5846, 5847, 5848, 5849, 5855, 5858, 5859, 5861, 5867, 5869, 5871,
		5872, 5873, 5968, 55296, 55298, 55300:
		return true, false
	}
	return false, false
}

// testInfo is what ctx_print_test_info needs beyond Params.
type testInfo struct {
	DevName    string
	Transport  string // "IB", "IW" or "Unknown"
	LinkLayer  string // "IB", "Ethernet" or "Unknown"
	OldPost    bool   // ibv_wr* API OFF
	RelaxOrder bool   // PCIe relax order ON
	ROWarning  bool   // CPU not PCIe relaxed ordering compliant
	EQNum      int
}

func testTitle(p *Params, sep string) string {
	var b strings.Builder
	b.WriteString(testsStr[p.Verb] + sep)
	if p.Verb == VerbAtomic {
		b.WriteString(atomicTypesStr[p.AtomicType] + sep)
	}
	if p.Kind == KindBW {
		if p.Duplex {
			b.WriteString("Bidirectional" + sep)
		}
		if p.PostList > 1 {
			b.WriteString("Post" + sep + "List" + sep)
		}
		b.WriteString("BW" + sep)
	} else {
		b.WriteString("Latency" + sep)
	}
	b.WriteString("Test")
	return b.String()
}

// printTestInfo is ctx_print_test_info.
func printTestInfo(w io.Writer, p *Params, ti *testInfo) {
	if p.Output != outFull {
		return
	}
	io.WriteString(w, resultLine)
	for _, l := range testInfoLines(p, ti) {
		io.WriteString(w, l.text)
	}
	if p.WorkRDMACM && p.Server {
		io.WriteString(w, "\n")
		io.WriteString(w, resultLine)
		fmt.Fprintf(w, " Waiting for client rdma_cm QP to connect\n")
		fmt.Fprintf(w, " Please run the same command with the IB/RoCE interface IP")
	}
	io.WriteString(w, "\n")
	io.WriteString(w, resultLine)
}

// infoLine is one fact of the test's description as ctx_print_test_info prints it (text) and as the
// --out_json file's "test_info" has it (json); either is empty where only the other format has the fact.
type infoLine struct{ text, json string }

// testInfoLines is the test's description in both formats, in their order; the last line ("Data ex. method")
// has no line end in either.
func testInfoLines(p *Params, ti *testInfo) []infoLine {
	var ls []infoLine
	add := func(text, json string) { ls = append(ls, infoLine{text, json}) }
	add(fmt.Sprintf("                    %s\n", testTitle(p, " ")), fmt.Sprintf("\"test\": \"%s\",\n", testTitle(p, "_")))
	if p.UseEvent {
		add(fmt.Sprintf(" Test with events. Using %s_comp%d\n", ti.DevName, p.EQNum),
			fmt.Sprintf("\"Test with events\": \"Using_%s_comp%d\",\n", ti.DevName, p.EQNum))
	}
	add(fmt.Sprintf(" Dual-port       : %s\t\tDevice         : %s\n", "OFF", ti.DevName),
		fmt.Sprintf("\"Dual_port\": \"%s\",\n\"Device\": \"%s\",\n", "OFF", ti.DevName))
	add(fmt.Sprintf(" Number of qps   : %d\t\tTransport type : %s\n", p.NumQPs, ti.Transport),
		fmt.Sprintf("\"Number_of_qps\": %d,\n\"Transport_type\": \"%s\",\n", p.NumQPs, ti.Transport))
	add(fmt.Sprintf(" Connection type : %s\t\tUsing SRQ      : %s\n", connStr[p.Conn], "OFF"),
		fmt.Sprintf("\"Connection_type\": \"%s\",\n\"Using_SRQ\": \"%s\",\n", connStr[p.Conn], "OFF"))
	// Debian builds 6.24 with the thread domain API (--no_lock) and mlx5's out-of-order receive WRs (DDP).
	add(fmt.Sprintf(" PCIe relax order: %s\t\tLock-free      : %s\n", onOff(ti.RelaxOrder), "OFF"),
		fmt.Sprintf("\"PCIe_relax_order\": \"%s\",\n", onOff(ti.RelaxOrder)))
	if ti.ROWarning && ti.RelaxOrder {
		add(" WARNING: CPU is not PCIe relaxed ordering compliant.\n"+
			" WARNING: You should disable PCIe RO with `--disable_pcie_relaxed` for both server and client.\n",
			"\"WARNING1\": \"CPU is not PCIe relaxed ordering compliant\",\n"+
				"\"WARNING2\": \"You should disable PCIe RO with --disable_pcie_relaxed for both server and client\",\n")
	}
	add(fmt.Sprintf(" ibv_wr* API     : %s\t\tUsing DDP      : %s\n", onOff(!ti.OldPost), "OFF"),
		fmt.Sprintf("\"ibv_wr_API\": \"%s\",\n", onOff(!ti.OldPost)))
	if !p.Server || p.Duplex {
		add(fmt.Sprintf(" TX depth        : %d\n", p.TxDepth), fmt.Sprintf("\"TX_depth\": %d,\n", p.TxDepth))
	}
	if p.PostList > 1 {
		add(fmt.Sprintf(" Post List       : %d\n", p.PostList), fmt.Sprintf("\"Post_List\": %d,\n", p.PostList))
	}
	if p.Verb == VerbSend && (p.Server || p.Duplex) {
		add(fmt.Sprintf(" RX depth        : %d\n", p.RxDepth), fmt.Sprintf("\"RX_depth\": %d,\n", p.RxDepth))
	}
	if p.Kind == KindBW {
		add(fmt.Sprintf(" CQ Moderation   : %d\n", p.CQMod), fmt.Sprintf("\"CQ_Moderation\": %d,\n", p.CQMod))
	}
	add(fmt.Sprintf(" Mtu             : %d[B]\n", mtuBytes(p.CurrMTU)), fmt.Sprintf("\"Mtu\": %d,\n", mtuBytes(p.CurrMTU)))
	add(fmt.Sprintf(" Link type       : %s\n", ti.LinkLayer), fmt.Sprintf("\"Link_type\": \"%s\",\n", ti.LinkLayer))
	if p.GIDIndex != -1 {
		add(fmt.Sprintf(" GID index       : %d\n", p.GIDIndex), fmt.Sprintf("\"GID_index\": %d,\n", p.GIDIndex))
	}
	if p.Verb != VerbRead && p.Verb != VerbAtomic {
		add(fmt.Sprintf(" Max inline data : %d[B]\n", p.InlineSize), fmt.Sprintf("\"Max_inline_data\": %d,\n", p.InlineSize))
	} else {
		add(fmt.Sprintf(" Outstand reads  : %d\n", p.OutReads), fmt.Sprintf("\"Outstand_reads\": %d,\n", p.OutReads))
	}
	add(fmt.Sprintf(" rdma_cm QPs\t : %s\n", onOff(p.WorkRDMACM)), fmt.Sprintf("\"rdma_cm_QPs\": \"%s\",\n", onOff(p.WorkRDMACM)))
	add("", fmt.Sprintf("\"Use_ROCm_memory\": \"%s\",\n", "OFF"))
	add(fmt.Sprintf(" Data ex. method : %s", exchangeMethod(p)), fmt.Sprintf("\"Data_ex_method\": \"%s\"", exchangeMethod(p)))
	return ls
}

func onOff(b bool) string {
	if b {
		return "ON"
	}
	return "OFF"
}

// mtuBytes is MTU_SIZE: 1 << (7 + enum).
func mtuBytes(mtu int) uint64 { return uint64(1) << (7 + uint(mtu)) }

// printDest is ctx_print_pingpong_data for side "local" or "remote".
func printDest(w io.Writer, p *Params, d *Dest, side string) {
	if p.Output != outFull {
		return
	}
	fmt.Fprintf(w, " %s address: LID %s QPN %s PSN %s", side, cAltHex(uint64(d.LID), 4), cAltHex(uint64(d.QPN), 6), cAltHex(uint64(d.PSN), 6))
	verb := p.Verb
	if p.UseRDMACM {
		verb = VerbSend // perftest prints with its -z channel's parameters, whose verb is SEND
	}
	switch verb {
	case VerbRead:
		fmt.Fprintf(w, " OUT %s", cAltHex(uint64(uint32(d.OutReads)), 4))
		fallthrough
	case VerbWrite:
		fmt.Fprintf(w, " RKey %s VAddr %s", cAltHex(uint64(d.RKey), 8), cAltHex(d.VAddr, 16))
	}
	io.WriteString(w, "\n")
	if p.GIDIndex > -1 {
		g := d.GID
		fmt.Fprintf(w, " %s: %02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d\n", "GID",
			g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10], g[11], g[12], g[13], g[14], g[15])
	}
}

// printBWHeader prints the bandwidth table head (RESULT_LINE, the column names, RESULT_EXT).
func printBWHeader(w io.Writer, p *Params) {
	if p.Output != outFull {
		return
	}
	writeBWHeader(w, p)
}

// writeBWHeader is printBWHeader's text, in every output format (--report-both prints it as it is).
func writeBWHeader(w io.Writer, p *Params) {
	io.WriteString(w, resultLine)
	if p.ReportGbits {
		io.WriteString(w, resultFmtG)
	} else {
		io.WriteString(w, resultFmt)
	}
	io.WriteString(w, "\n")
}

// printLatHeader prints the latency table head.
func printLatHeader(w io.Writer, p *Params) {
	if p.Output != outFull {
		return
	}
	io.WriteString(w, resultLine)
	if p.TestType == byIterations {
		io.WriteString(w, resultFmtLat)
	} else {
		io.WriteString(w, resultFmtDur)
	}
	io.WriteString(w, "\n")
}

// formatBWLine is print_full_bw_report's line (REPORT_FMT or, for tiny Gb/s values, REPORT_FMT_EXT), with
// its newline.
func formatBWLine(p *Params, r *BWReport) string {
	switch p.Output {
	case outBW:
		return fmt.Sprintf("%f\n", r.BWAvg)
	case outMR:
		return fmt.Sprintf("%f\n", r.MsgRateAvg)
	}
	if r.BWAvg < 0.1 && p.ReportGbits {
		return fmt.Sprintf(" %-7d    %d           %s            %s            %s\n", r.Size, r.Iters,
			cFloat("%-7.6f", r.BWPeak), cFloat("%-7.6f", r.BWAvg), cFloat("%-7.6f", r.MsgRateAvg))
	}
	return fmt.Sprintf(" %-7d    %-10d       %s            %s\t\t     %s\n", r.Size, r.Iters,
		cFloat("%-7.2f", r.BWPeak), cFloat("%-7.2f", r.BWAvg), cFloat("%-7.6f", r.MsgRateAvg))
}

// bwJSON is the --out_json file for a bandwidth result (6.24's JSON, keys and strings quoted).
func bwJSON(p *Params, ti *testInfo, r *BWReport) string {
	var b strings.Builder
	writeJSONHead(&b, p, ti)
	switch {
	case p.Output == outBW:
		fmt.Fprintf(&b, "\"bw_avg\": %f,\n", r.BWAvg)
	case p.Output == outMR:
		fmt.Fprintf(&b, "\"msgRate_avg\": %f,\n", r.MsgRateAvg)
	case r.BWAvg < 0.1 && p.ReportGbits:
		fmt.Fprintf(&b, "\"MsgSize\": %d,\n\"n_iterations\": %d,\n\"BW_peak\": %s,\n\"BW_average\": %s,\n\"MsgRate\": %s", r.Size, r.Iters,
			cFloat("%.6f", r.BWPeak), cFloat("%.6f", r.BWAvg), cFloat("%.6f", r.MsgRateAvg))
	default:
		fmt.Fprintf(&b, "\"MsgSize\": %d,\n\"n_iterations\": %d,\n\"BW_peak\": %s,\n\"BW_average\": %s,\n\"MsgRate\": %s", r.Size, r.Iters,
			cFloat("%.2f", r.BWPeak), cFloat("%.2f", r.BWAvg), cFloat("%.6f", r.MsgRateAvg))
	}
	b.WriteString("\n}\n}\n")
	return b.String()
}

// writeJSONHead starts an --out_json file: the opening brace, the test_info object and the opening of the
// results object, which the caller writes and closes.
func writeJSONHead(b *strings.Builder, p *Params, ti *testInfo) {
	b.WriteString("{\n\"test_info\": {\n")
	for _, l := range testInfoLines(p, ti) {
		b.WriteString(l.json)
	}
	b.WriteString("\n},\n\"results\": {\n")
}

// LatResult is the summary of a latency run (print_report_lat's numbers, in the report's units).
type LatResult struct {
	Size      uint64
	Iters     uint64
	Min, Max  float64
	Typical   float64
	Avg       float64
	Stdev     float64
	P99, P999 float64
	Samples   []float64 // sorted, for -H
	Unsorted  []float64 // for -U
	Units     string
}

// formatLatLine is REPORT_FMT_LAT with its newline (or the --output=latency value).
func formatLatLine(p *Params, r *LatResult) string {
	if p.Output == outLat {
		return fmt.Sprintf("%f\n", r.Avg)
	}
	return fmt.Sprintf(" %-7d %d          %s        %s      %s  \t       %s     \t%s\t\t%s \t\t%s\n", r.Size, r.Iters,
		cFloat("%-7.2f", r.Min), cFloat("%-7.2f", r.Max), cFloat("%-7.2f", r.Typical), cFloat("%-7.2f", r.Avg),
		cFloat("%-7.2f", r.Stdev), cFloat("%-7.2f", r.P99), cFloat("%-7.2f", r.P999))
}

func latJSON(p *Params, ti *testInfo, r *LatResult) string {
	var b strings.Builder
	writeJSONHead(&b, p, ti)
	if p.Output == outLat {
		fmt.Fprintf(&b, "\"avg_lat\": %f\n", r.Avg)
	} else {
		fmt.Fprintf(&b, "\"MsgSize\": %d,\n\"n_iterations\": %d,\n\"t_min\": %s,\n\"t_max\": %s,\n\"t_typical\": %s,\n\"t_avg\": %s,\n\"t_stdev\": %s,\n\"percentile_99\": %s,\n\"percentile_99.9\": %s\n",
			r.Size, r.Iters, cFloat("%.2f", r.Min), cFloat("%.2f", r.Max), cFloat("%.2f", r.Typical), cFloat("%.2f", r.Avg),
			cFloat("%.2f", r.Stdev), cFloat("%.2f", r.P99), cFloat("%.2f", r.P999))
	}
	b.WriteString("}\n}\n")
	return b.String()
}

// formatLatDurLine is REPORT_FMT_LAT_DUR with its newline.
func formatLatDurLine(p *Params, size, iters uint64, lat, tps float64) string {
	if p.Output == outLat {
		return fmt.Sprintf("%f\n", lat)
	}
	return fmt.Sprintf(" %-7d       %d            %s        %s\n", size, iters, cFloat("%-7.2f", lat), cFloat("%-7.2f", tps))
}

func latDurJSON(p *Params, ti *testInfo, size, iters uint64, lat, tps float64) string {
	var b strings.Builder
	writeJSONHead(&b, p, ti)
	if p.Output == outLat {
		fmt.Fprintf(&b, "\"t_avg\": %f\n", lat)
	} else {
		fmt.Fprintf(&b, "\"MsgSize\": %d,\n\"n_iterations\": %d,\n\"t_avg\": %s,\n\"tps_average\": %s\n", size, iters, cFloat("%.2f", lat), cFloat("%.2f", tps))
	}
	b.WriteString("}\n}\n")
	return b.String()
}

// cG formats like C's %g.
func cG(v float64) string {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return cFloat("%g", v)
	}
	s := strconv.FormatFloat(v, 'g', 6, 64)
	// C prints exponents with at least two digits (1e-05); Go prints 1e-05 too, so they agree.
	return s
}

// exchangeMethod names the out-of-band channel (exchange_state).
func exchangeMethod(p *Params) string {
	if p.UseRDMACM {
		return "rdma_cm"
	}
	return "Ethernet"
}
