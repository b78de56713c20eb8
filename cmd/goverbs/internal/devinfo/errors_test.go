package devinfo

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// These paths cannot be provoked on a real device, so the expectations
// follow rdma-core 65's devinfo.c (unchanged there since 44): the message, where output stops, and the
// return value print_hca_cap contributes (OR-ed into the exit status).
func TestErrorPaths(t *testing.T) {
	twoPorts := func() *Model {
		m := rxeModel(0x0042acfffe110002)
		m.Attr.PhysPortCnt = 2
		m.Ports = append(m.Ports, m.Ports[0])
		return m
	}
	devA := DeviceID{Name: "rxe0", Transport: 0}
	devB := DeviceID{Name: "rxe1", Transport: 0}
	tests := []struct {
		name     string
		args     string
		models   map[string]*Model
		errs     map[string]error
		devs     []DeviceID
		status   int
		stdout   []string // substrings, in order
		noStdout []string
		stderr   string
	}{
		{
			name: "open fails", args: "", devs: []DeviceID{devA},
			errs:   map[string]error{"rxe0": &QueryError{Stage: StageOpen, Err: unix.EACCES}},
			status: 1, stderr: "Failed to open device\n",
		},
		{
			name: "any other error counts as open", args: "", devs: []DeviceID{devA},
			errs:   map[string]error{"rxe0": errors.New("boom")},
			status: 1, stderr: "Failed to open device\n",
		},
		{
			name: "query device fails", args: "", devs: []DeviceID{devA},
			errs:   map[string]error{"rxe0": &QueryError{Stage: StageQueryDevice, Err: unix.EINVAL}},
			status: 2, stderr: "Failed to query device props\n",
		},
		{
			name: "query device and close fail", args: "", devs: []DeviceID{devA},
			errs:   map[string]error{"rxe0": &QueryError{Stage: StageQueryDevice, Err: unix.EINVAL, CloseErr: unix.EIO}},
			status: 3, stderr: "Failed to query device props\nFailed to close device",
		},
		{
			name: "statuses of devices are OR-ed", args: "", devs: []DeviceID{devA, devB},
			errs:   map[string]error{"rxe0": &QueryError{Stage: StageOpen, Err: unix.EACCES}, "rxe1": &QueryError{Stage: StageQueryDevice, Err: unix.EIO}},
			status: 3, stderr: "Failed to open device\nFailed to query device props\n",
		},
		{
			name: "second port query fails", args: "", devs: []DeviceID{devA},
			models: map[string]*Model{"rxe0": func() *Model {
				m := twoPorts()
				m.Ports[1].Err = fmt.Errorf("query port 2: %w", unix.EPERM)
				return m
			}()},
			status: int(unix.EPERM), stdout: []string{"\t\tport:\t1\n"}, noStdout: []string{"port:\t2"},
			stderr: "Failed to query port 2 props\n",
		},
		{
			name: "failed port not selected", args: "-i 1", devs: []DeviceID{devA},
			models: map[string]*Model{"rxe0": func() *Model {
				m := twoPorts()
				m.Ports[1].Err = unix.EPERM
				return m
			}()},
			status: 0, stdout: []string{"\t\tport:\t1\n"}, noStdout: []string{"port:\t2"},
		},
		{
			name: "missing port entry", args: "", devs: []DeviceID{devA},
			models: map[string]*Model{"rxe0": func() *Model {
				m := twoPorts()
				m.Ports = m.Ports[:1]
				return m
			}()},
			status: int(unix.EINVAL), stdout: []string{"\t\tport:\t1\n"}, stderr: "Failed to query port 2 props\n",
		},
		{
			name: "gid query fails after index 0", args: "-v", devs: []DeviceID{devA},
			models: map[string]*Model{"rxe0": func() *Model {
				m := rxeModel(0x0042acfffe110002)
				m.Ports[0].GIDFailure = &GIDFailure{Index: 1, Err: unix.EIO}
				return m
			}()},
			status: 255, stdout: []string{"GID[  0]:\t\tfe80::42:acff:fe11:2, RoCE v2\n"}, noStdout: []string{"GID[  1]", "\n\n"},
			stderr: "Failed to query gid to port 1, index 1\n",
		},
		{
			name: "gid failure not looked at without -v", args: "", devs: []DeviceID{devA},
			models: map[string]*Model{"rxe0": func() *Model {
				m := rxeModel(0x0042acfffe110002)
				m.Ports[0].GIDFailure = &GIDFailure{Index: 0, Err: unix.EIO}
				return m
			}()},
			status: 0, stdout: []string{"link_layer:\t\tEthernet\n\n"},
		},
		{
			name: "close fails after output", args: "", devs: []DeviceID{devA},
			models: map[string]*Model{"rxe0": func() *Model {
				m := rxeModel(0x0042acfffe110002)
				m.CloseErr = unix.EBADF
				return m
			}()},
			status: 3, stdout: []string{"hca_id:\trxe0\n"}, stderr: "Failed to close device",
		},
		{
			name: "invalid port then next device", args: "-i 2", devs: []DeviceID{devA, devB},
			models: map[string]*Model{"rxe0": rxeModel(1), "rxe1": func() *Model { m := twoPorts(); m.Name = "rxe1"; return m }()},
			status: 4, stdout: []string{"hca_id:\trxe1\n", "\t\tport:\t2\n"}, noStdout: []string{"hca_id:\trxe0", "port:\t1"},
			stderr: "Invalid port requested for device\n",
		},
		{
			name: "no devices", args: "", status: 255, stderr: "No IB devices found\n",
		},
		{
			name: "named device in an empty list", args: "-d rxe0", status: 255, stderr: "IB device 'rxe0' wasn't found\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			st := Command{Source: fixture{devs: tt.devs, models: tt.models, errs: tt.errs}, Posix: new(bool)}.Run(strings.Fields(tt.args), &out, &errb)
			if st != tt.status || errb.String() != tt.stderr {
				t.Errorf("status %d stderr %q; want %d %q", st, errb.String(), tt.status, tt.stderr)
			}
			rest := out.String()
			for _, s := range tt.stdout {
				i := strings.Index(rest, s)
				if i < 0 {
					t.Errorf("stdout lacks %q (in order):\n%s", s, out.String())
					break
				}
				rest = rest[i+len(s):]
			}
			for _, s := range tt.noStdout {
				if strings.Contains(out.String(), s) {
					t.Errorf("stdout has %q:\n%s", s, out.String())
				}
			}
		})
	}
}

type listErr struct{ err error }

func (l listErr) Devices() ([]DeviceID, error)   { return nil, l.err }
func (l listErr) Query(DeviceID) (*Model, error) { return nil, l.err }

func TestListError(t *testing.T) {
	for _, args := range []string{"", "-l", "-d x"} {
		var out, errb bytes.Buffer
		st := Command{Source: listErr{fmt.Errorf("list: %w", unix.EPERM)}}.Run(strings.Fields(args), &out, &errb)
		if st != 255 || out.Len() != 0 || errb.String() != "Failed to get IB devices list: Operation not permitted\n" {
			t.Errorf("%q: status %d stdout %q stderr %q", args, st, out.String(), errb.String())
		}
	}
}

// Verbose sections that rxe does not exercise, in the C tool's formats.
func TestVerboseCaps(t *testing.T) {
	m := rxeModel(1)
	a := &m.Attr
	a.MaxFMR, a.MaxMapPerFMR = 4, 7
	a.DeviceCapFlags |= 1<<31 | 1<<15
	a.ODPGeneralCaps = ODPSupport | ODPSupportImplicit | 1<<40
	a.RCODPCaps = ODPSupportSend | ODPSupportSRQRecv | 1<<7
	a.CompletionTimestampMask = 0x7fffffffffff
	a.HCACoreClock = 156250
	a.RawPacketCaps = 0xf
	a.DeviceCapFlagsEx = 1<<34 | 1<<36 | 1<<40 | 0x1234
	a.TSO = TSOCaps{MaxTSO: 262144, SupportedQPTs: 1<<8 | 1<<4 | 1<<2}
	a.RSS = RSSCaps{SupportedQPTs: 1 << 8, MaxRWQIndirectionTables: 65536, MaxRWQIndirectionTableSize: 2048, RxHashFieldsMask: 0x800000ff, RxHashFunction: 1}
	a.PacketPacing = PacketPacingCaps{QPRateLimitMin: 1, QPRateLimitMax: 100000000, SupportedQPTs: 1 << 8}
	a.TM = TMCaps{MaxRndvHdrSize: 64, MaxNumTags: 127, Flags: 1, MaxOps: 32768, MaxSGE: 1}
	a.CQMod = CQModerationCaps{MaxCQCount: 65535, MaxCQPeriod: 4095}
	a.MaxDMSize = 131072
	var out bytes.Buffer
	if rc := WriteHCA(&out, &out, m, 0, true); rc != 0 {
		t.Fatalf("rc %d", rc)
	}
	for _, want := range []string{
		"\tmax_fmr:\t\t\t4\n\tmax_map_per_fmr:\t\t7\n",
		"\t\t\t\t\tMEM_WINDOW_TYPE_2B\n\t\t\t\t\tUnknown flags: 0x80008000\n",
		"\tgeneral_odp_caps:\n\t\t\t\t\tODP_SUPPORT\n\t\t\t\t\tODP_SUPPORT_IMPLICIT\n\t\t\t\t\tUnknown flags: 0x10000000000\n",
		"\trc_odp_caps:\n\t\t\t\t\tSUPPORT_SEND\n\t\t\t\t\tSUPPORT_SRQ\n\t\t\t\t\tSUPPORT_ATOMIC_WRITE\n\tuc_odp_caps:\n\t\t\t\t\tNO SUPPORT\n", // 0x80: ATOMIC_WRITE since rdma-core 58
		"\tcompletion timestamp_mask:\t\t\t0x00007fffffffffff\n",
		"\thca_core_clock:\t\t\t156250kHZ\n",
		"\traw packet caps:\n\t\t\t\t\tC-VLAN stripping offload\n\t\t\t\t\tScatter FCS offload\n\t\t\t\t\tIP csum offload\n\t\t\t\t\tDelay drop\n",
		"\tdevice_cap_flags_ex:\t\t0x11400001234\n\t\t\t\t\tRAW_SCATTER_FCS\n\t\t\t\t\tPCI_WRITE_END_PADDING\n\t\t\t\t\tUnknown flags: 0x10000000000\n",
		"\ttso_caps:\n\t\tmax_tso:\t\t\t262144\n\t\tsupported_qp:\n\t\t\t\t\tSUPPORT_RAW_PACKET\n\t\t\t\t\tSUPPORT_UD\n\t\t\t\t\tUnknown flags: 0x4\n",
		"\t\trx_hash_function:\t\t\t\t0x1\n\t\trx_hash_fields_mask:\t\t\t\t0x800000FF\n\t\tsupported_qp:\n\t\t\t\t\tSUPPORT_RAW_PACKET\n",
		"\t\tqp_rate_limit_min:\t1kbps\n\t\tqp_rate_limit_max:\t100000000kbps\n\t\tsupported_qp:\n\t\t\t\t\tSUPPORT_RAW_PACKET\n",
		"\tmax_rndv_hdr_size:\t\t64\n\tmax_num_tags:\t\t\t127\n\tmax_ops:\t\t\t32768\n\tmax_sge:\t\t\t1\n\tflags:\n\t\t\t\t\tIBV_TM_CAP_RC\n",
		"\n\tcq moderation caps:\n\t\tmax_cq_count:\t65535\n\t\tmax_cq_period:\t4095 us\n\n",
		"\tmaximum available device memory:\t131072Bytes\n\n\tnum_comp_vectors:\t\t1\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// GID lines: InfiniBand ports print hex without a type; entries of unknown
// type and entries with a zero interface id print nothing.
func TestGIDLines(t *testing.T) {
	var ib, zero, unknown [16]byte
	ib[0], ib[1], ib[15] = 0xfe, 0x80, 0x01
	zero[0] = 0xfe
	unknown[15] = 2
	p := Port{Attr: PortAttr{GIDTblLen: 4, LinkLayer: LinkLayerInfiniBand}, GIDs: []GIDEntry{
		{Index: 0, GID: ib, Type: GIDTypeIB}, {Index: 1, GID: zero, Type: GIDTypeIB}, {Index: 2, GID: unknown, Type: GIDTypeUnknown},
		{Index: 3, GID: ib, Type: GIDTypeRoCEv2}, {Index: 4, GID: ib, Type: GIDTypeIB},
	}}
	var out bytes.Buffer
	if rc := writeGIDs(&out, &out, &p, 1); rc != 0 {
		t.Fatal(rc)
	}
	want := "\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:0000:0000:0000:0001\n\t\t\tGID[  3]:\t\tfe80::1\n"
	if out.String() != want {
		t.Errorf("got %q\nwant %q", out.String(), want)
	}
	p.Attr.LinkLayer = LinkLayerEthernet
	p.GIDs[0].Type = GIDTypeRoCEv1
	out.Reset()
	writeGIDs(&out, &out, &p, 1)
	want = "\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:0000:0000:0000:0001, RoCE v1\n\t\t\tGID[  3]:\t\tfe80::1, RoCE v2\n"
	if out.String() != want {
		t.Errorf("got %q\nwant %q", out.String(), want)
	}
}

func FuzzInetNtop6(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		var a [16]byte
		copy(a[:], b)
		s := InetNtop6(a)
		if strings.Count(s, "::") > 1 || len(s) > len("ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255") {
			t.Fatalf("%x -> %q", a, s)
		}
	})
}
