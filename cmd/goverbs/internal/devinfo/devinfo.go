// Package devinfo is goverbs' clone of rdma-core 65's ibv_devinfo: device
// and port attributes, byte for byte like the C tool, with the same options
// (-d/--ib-dev, -i/--ib-port, -l/--list, -v/--verbose), diagnostics and exit
// statuses.
//
// The data comes from a Source (model.go documents which kernel query fills
// each field); WriteHCA formats a Model without any device.
package devinfo

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/getopt"
)

// Command is one configured ibv_devinfo.
type Command struct {
	// Prog is argv[0] as usage and diagnostics print it; "ibv_devinfo"
	// when empty.
	Prog string
	// Source supplies devices and query results; NewUverbsSource(stderr)
	// (the real system) when nil.
	Source Source
	// Posix stops option parsing at the first operand (POSIXLY_CORRECT);
	// when nil, the environment decides.
	Posix *bool
}

// Main is the tool as goverbs runs it: ibv_devinfo over the real system
// (NewUverbsSource), prog being argv[0] as usage and diagnostics print it.
func Main(prog string, args []string, stdout, stderr io.Writer) int {
	return Command{Prog: prog}.Run(args, stdout, stderr)
}

var longOpts = []getopt.LongOption{
	{Name: "ib-dev", HasArg: getopt.RequiredArgument, Val: 'd'},
	{Name: "ib-port", HasArg: getopt.RequiredArgument, Val: 'i'},
	{Name: "list", HasArg: getopt.NoArgument, Val: 'l'},
	{Name: "verbose", HasArg: getopt.NoArgument, Val: 'v'},
}

func usage(w io.Writer, prog string) {
	fmt.Fprintf(w, "Usage: %s             print the ca attributes\n", prog)
	fmt.Fprintf(w, "\n")
	fmt.Fprintf(w, "Options:\n")
	fmt.Fprintf(w, "  -d, --ib-dev=<dev>     use IB device <dev> (default all devices)\n")
	fmt.Fprintf(w, "  -i, --ib-port=<port>   use port <port> of IB device (default all ports)\n")
	fmt.Fprintf(w, "  -l, --list             print only the IB devices names\n")
	fmt.Fprintf(w, "  -v, --verbose          print all the attributes of the IB device(s)\n")
}

// status converts the C program's int return value to an exit status.
func status(ret int) int { return ret & 0xff }

func listFailed(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "Failed to get IB devices list: %s\n", cstd.Strerror(cstd.ErrnoOf(err, unix.EIO)))
	return status(-1)
}

// Run runs the command and returns the exit status the C tool would have.
func (c Command) Run(args []string, stdout, stderr io.Writer) int {
	prog := c.Prog
	if prog == "" {
		prog = "ibv_devinfo"
	}
	src := c.Source
	if src == nil {
		src = NewUverbsSource(stderr)
	}
	posix := os.Getenv("POSIXLY_CORRECT") != ""
	if c.Posix != nil {
		posix = *c.Posix
	}
	var (
		devName string
		haveDev bool
		ibPort  int32
		verbose bool
	)
	p := getopt.New(prog, args, "d:i:lv", longOpts, stderr, posix)
	for o := range p.All() {
		switch o.Val {
		case 'd':
			devName, haveDev = o.Arg, true
		case 'i':
			v, _, _ := cstd.Strtol(o.Arg, 0)
			ibPort = int32(v)
			if ibPort <= 0 {
				usage(stdout, prog)
				return 1
			}
		case 'v':
			verbose = true
		case 'l':
			devs, err := src.Devices()
			if err != nil {
				return listFailed(stderr, err)
			}
			s := "s"
			if len(devs) == 1 {
				s = ""
			}
			fmt.Fprintf(stdout, "%d HCA%s found:\n", len(devs), s)
			for _, d := range devs {
				fmt.Fprintf(stdout, "\t%s\n", d.Name)
			}
			fmt.Fprintf(stdout, "\n")
			return 0
		default:
			usage(stdout, prog)
			return status(-1)
		}
	}
	devs, err := src.Devices()
	if err != nil {
		return listFailed(stderr, err)
	}
	ret := 0
	if haveDev {
		var found *DeviceID
		for i := range devs {
			if devs[i].Name == devName {
				found = &devs[i]
				break
			}
		}
		if found == nil {
			fmt.Fprintf(stderr, "IB device '%s' wasn't found\n", devName)
			return status(-1)
		}
		ret |= printHCA(stdout, stderr, src, *found, uint8(ibPort), verbose)
	} else {
		if len(devs) == 0 {
			fmt.Fprintf(stderr, "No IB devices found\n")
			return status(-1)
		}
		for _, d := range devs {
			ret |= printHCA(stdout, stderr, src, d, uint8(ibPort), verbose)
		}
	}
	return status(ret)
}

// printHCA is ibv_devinfo's print_hca_cap: query, print, and return the C
// function's return value.
func printHCA(stdout, stderr io.Writer, src Source, dev DeviceID, ibPort uint8, verbose bool) int {
	m, err := src.Query(dev)
	if err != nil {
		var qe *QueryError
		if errors.As(err, &qe) && qe.Stage == StageQueryDevice {
			fmt.Fprintf(stderr, "Failed to query device props\n")
			rc := 2
			if qe.CloseErr != nil {
				fmt.Fprintf(stderr, "Failed to close device")
				rc = 3
			}
			return rc
		}
		fmt.Fprintf(stderr, "Failed to open device\n")
		return 1
	}
	rc := WriteHCA(stdout, stderr, m, ibPort, verbose)
	if m.CloseErr != nil {
		fmt.Fprintf(stderr, "Failed to close device")
		rc = 3
	}
	return rc
}

// WriteHCA prints one device like ibv_devinfo (ibPort 0 = all ports) and
// returns what the C print_hca_cap returns before closing the device: 0,
// 4 for an invalid port, the errno of a failed port query, or -1 for a
// failed GID query. Diagnostics go to stderr.
func WriteHCA(stdout, stderr io.Writer, m *Model, ibPort uint8, verbose bool) int {
	a := &m.Attr
	if ibPort != 0 && ibPort > a.PhysPortCnt {
		fmt.Fprintf(stderr, "Invalid port requested for device\n")
		return 4
	}
	p := func(format string, args ...any) { fmt.Fprintf(stdout, format, args...) }
	p("hca_id:\t%s\n", m.Name)
	p("\ttransport:\t\t\t%s (%d)\n", transportStr(m.Transport), m.Transport)
	if a.FWVer != "" {
		p("\tfw_ver:\t\t\t\t%s\n", a.FWVer)
	}
	p("\tnode_guid:\t\t\t%s\n", guidStr(a.NodeGUID))
	p("\tsys_image_guid:\t\t\t%s\n", guidStr(a.SysImageGUID))
	p("\tvendor_id:\t\t\t0x%04x\n", a.VendorID)
	p("\tvendor_part_id:\t\t\t%d\n", int32(a.VendorPartID))
	p("\thw_ver:\t\t\t\t0x%X\n", a.HWVer)
	if m.BoardID != "" {
		p("\tboard_id:\t\t\t%s\n", m.BoardID)
	}
	p("\tphys_port_cnt:\t\t\t%d\n", a.PhysPortCnt)
	if verbose {
		writeVerboseDevice(stdout, m)
	}
	for port := uint32(1); port <= uint32(a.PhysPortCnt); port++ {
		if ibPort != 0 && port != uint32(ibPort) {
			continue
		}
		var pt *Port
		if int(port) <= len(m.Ports) {
			pt = &m.Ports[port-1]
		}
		if pt == nil || pt.Err != nil {
			fmt.Fprintf(stderr, "Failed to query port %d props\n", port)
			if pt == nil {
				return int(unix.EINVAL)
			}
			return int(cstd.ErrnoOf(pt.Err, unix.EIO))
		}
		pa := &pt.Attr
		p("\t\tport:\t%d\n", port)
		p("\t\t\tstate:\t\t\t%s (%d)\n", portStateStr(pa.State), pa.State)
		p("\t\t\tmax_mtu:\t\t%s (%d)\n", mtuStr(pa.MaxMTU), pa.MaxMTU)
		p("\t\t\tactive_mtu:\t\t%s (%d)\n", mtuStr(pa.ActiveMTU), pa.ActiveMTU)
		p("\t\t\tsm_lid:\t\t\t%d\n", pa.SMLID)
		p("\t\t\tport_lid:\t\t%d\n", pa.LID)
		p("\t\t\tport_lmc:\t\t0x%02x\n", pa.LMC)
		p("\t\t\tlink_layer:\t\t%s\n", linkLayerStr(pa.LinkLayer))
		if verbose {
			p("\t\t\tmax_msg_sz:\t\t0x%x\n", pa.MaxMsgSz)
			p("\t\t\tport_cap_flags:\t\t0x%08x\n", pa.PortCapFlags)
			p("\t\t\tport_cap_flags2:\t0x%04x\n", pa.PortCapFlags2)
			p("\t\t\tmax_vl_num:\t\t%s (%d)\n", vlStr(pa.MaxVLNum), pa.MaxVLNum)
			p("\t\t\tbad_pkey_cntr:\t\t0x%x\n", pa.BadPkeyCntr)
			p("\t\t\tqkey_viol_cntr:\t\t0x%x\n", pa.QkeyViolCntr)
			p("\t\t\tsm_sl:\t\t\t%d\n", pa.SMSL)
			p("\t\t\tpkey_tbl_len:\t\t%d\n", pa.PkeyTblLen)
			p("\t\t\tgid_tbl_len:\t\t%d\n", pa.GIDTblLen)
			p("\t\t\tsubnet_timeout:\t\t%d\n", pa.SubnetTimeout)
			p("\t\t\tinit_type_reply:\t%d\n", pa.InitTypeReply)
			p("\t\t\tactive_width:\t\t%sX (%d)\n", widthStr(pa.ActiveWidth), pa.ActiveWidth)
			speed := uint32(pa.ActiveSpeed)
			if pa.ActiveSpeedEx != 0 {
				speed = pa.ActiveSpeedEx
			}
			p("\t\t\tactive_speed:\t\t%s (%d)\n", speedStr(speed), int32(speed))
			if pt.EffectiveSpeed != nil {
				p("\t\t\teffective_speed:\t%.1f Gbps\n", float64(*pt.EffectiveSpeed)/10)
			}
			if m.Transport == 0 {
				p("\t\t\tphys_state:\t\t%s (%d)\n", portPhyStateStr(pa.PhysState), pa.PhysState)
			}
			if rc := writeGIDs(stdout, stderr, pt, port); rc != 0 {
				return rc
			}
		}
		p("\n")
	}
	return 0
}

// writeGIDs is print_all_port_gids.
func writeGIDs(stdout, stderr io.Writer, pt *Port, port uint32) int {
	next := 0
	for i := 0; i < int(pt.Attr.GIDTblLen); i++ {
		if pt.GIDFailure != nil && pt.GIDFailure.Index == i {
			fmt.Fprintf(stderr, "Failed to query gid to port %d, index %d\n", port, i)
			return -1
		}
		for next < len(pt.GIDs) && pt.GIDs[next].Index < i {
			next++
		}
		if next < len(pt.GIDs) && pt.GIDs[next].Index == i {
			e := &pt.GIDs[next]
			if !nullGID(&e.GID) {
				writeGID(stdout, e, pt.Attr.LinkLayer)
			}
		}
	}
	return 0
}
