package main

import (
	"fmt"
	"io"

	"github.com/goverbs/goverbs/internal/tools/cgrouptool"
	"github.com/goverbs/goverbs/internal/tools/cmatose"
	"github.com/goverbs/goverbs/internal/tools/devices"
	"github.com/goverbs/goverbs/internal/tools/devinfo"
	"github.com/goverbs/goverbs/internal/tools/devinfo/uverbssrc"
	"github.com/goverbs/goverbs/internal/tools/ibstat"
	"github.com/goverbs/goverbs/internal/tools/perftest"
	"github.com/goverbs/goverbs/internal/tools/pingpong"
	"github.com/goverbs/goverbs/internal/tools/rdmaclient"
	"github.com/goverbs/goverbs/internal/tools/rdmatool"
	"github.com/goverbs/goverbs/internal/tools/rping"
	"github.com/goverbs/goverbs/internal/tools/rstream"
	"github.com/goverbs/goverbs/internal/tools/udaddy"
)

// Command is one goverbs tool.
type Command struct {
	// Name is the subcommand: "goverbs NAME ...".
	Name string
	// Aliases are program names that run the tool when goverbs is invoked
	// through a link of that name. The first is the C tool's name, which
	// the tool reports as its program name when run as a subcommand, so
	// that "goverbs devinfo" prints exactly what "ibv_devinfo" prints.
	Aliases []string
	// Summary is the one-line description "goverbs help" shows.
	Summary string
	// Run runs the tool: prog is argv[0] as the tool should print it,
	// args exclude it; the result is the exit status.
	Run func(prog string, args []string, stdout, stderr io.Writer) int
}

// progName is the program name the tool reports when run as a subcommand.
func (c Command) progName() string {
	if len(c.Aliases) > 0 {
		return c.Aliases[0]
	}
	return "goverbs " + c.Name
}

// commands is the registry; adding a tool is one entry.
var commands = []Command{
	{Name: "devices", Aliases: []string{"ibv_devices"}, Summary: "list RDMA devices and node GUIDs",
		Run: func(_ string, a []string, o, e io.Writer) int {
			return devices.Command{Source: uverbssrc.New(e)}.Run(a, o, e)
		}},
	{Name: "devinfo", Aliases: []string{"ibv_devinfo"}, Summary: "show device and port attributes",
		Run: func(p string, a []string, o, e io.Writer) int {
			return devinfo.Command{Prog: p, Source: uverbssrc.New(e)}.Run(a, o, e)
		}},
	{Name: "ibstat", Aliases: []string{"ibstat"}, Summary: "show InfiniBand CA and port state from sysfs",
		Run: func(p string, a []string, o, e io.Writer) int { return ibstat.Command{Prog: p}.Run(a, o, e) }},
	{Name: "pingpong", Summary: "ping-pong tests wire compatible with rdma-core's: goverbs pingpong rc|uc|ud|srq|xsrq [options] [host]",
		Run: runPingpong},
	{Name: "rc_pingpong", Aliases: []string{"ibv_rc_pingpong"}, Summary: "RC ping-pong, same as ibv_rc_pingpong",
		Run: pingpong.RunRC},
	{Name: "uc_pingpong", Aliases: []string{"ibv_uc_pingpong"}, Summary: "UC ping-pong, same as ibv_uc_pingpong",
		Run: pingpong.RunUC},
	{Name: "ud_pingpong", Aliases: []string{"ibv_ud_pingpong"}, Summary: "UD ping-pong, same as ibv_ud_pingpong",
		Run: pingpong.RunUD},
	{Name: "srq_pingpong", Aliases: []string{"ibv_srq_pingpong"}, Summary: "RC ping-pong over N QPs sharing an SRQ, same as ibv_srq_pingpong",
		Run: pingpong.RunSRQ},
	{Name: "xsrq_pingpong", Aliases: []string{"ibv_xsrq_pingpong"}, Summary: "XRC SRQ ping-pong, ibv_xsrq_pingpong up to the XRC domain (no XRC QPs)",
		Run: pingpong.RunXSRQ},
	{Name: "cgroup", Summary: "show/set RDMA cgroup limits and usage; run a command in a cgroup",
		Run: func(_ string, a []string, o, e io.Writer) int { return cgrouptool.Run(a, o, e) }},
	{Name: "rdma", Aliases: []string{"rdma"}, Summary: "RDMA netlink tool, same as iproute2's rdma (dev, link, resource, system, statistic)",
		Run: func(_ string, a []string, o, e io.Writer) int { return rdmatool.Run(a, o, e) }},
	{Name: "perf", Summary: "perftest 6.06 clone: goverbs perf write_bw|write_lat|read_bw|read_lat|send_bw|send_lat|atomic_bw|atomic_lat [options] [host]",
		Run: runPerf},
	{Name: "write_bw", Aliases: []string{"ib_write_bw"}, Summary: "RDMA write bandwidth, same as ib_write_bw", Run: perftest.Run},
	{Name: "write_lat", Aliases: []string{"ib_write_lat"}, Summary: "RDMA write latency, same as ib_write_lat", Run: perftest.Run},
	{Name: "read_bw", Aliases: []string{"ib_read_bw"}, Summary: "RDMA read bandwidth, same as ib_read_bw", Run: perftest.Run},
	{Name: "read_lat", Aliases: []string{"ib_read_lat"}, Summary: "RDMA read latency, same as ib_read_lat", Run: perftest.Run},
	{Name: "send_bw", Aliases: []string{"ib_send_bw"}, Summary: "send bandwidth, same as ib_send_bw", Run: perftest.Run},
	{Name: "send_lat", Aliases: []string{"ib_send_lat"}, Summary: "send latency, same as ib_send_lat", Run: perftest.Run},
	{Name: "atomic_bw", Aliases: []string{"ib_atomic_bw"}, Summary: "atomic bandwidth, same as ib_atomic_bw", Run: perftest.Run},
	{Name: "atomic_lat", Aliases: []string{"ib_atomic_lat"}, Summary: "atomic latency, same as ib_atomic_lat", Run: perftest.Run},
	{Name: "rping", Aliases: []string{"rping"}, Summary: "RDMA CM ping-pong with RDMA READ/WRITE, same as rdmacm-utils' rping",
		Run: rping.Run},
	{Name: "rstream", Aliases: []string{"rstream"}, Summary: "rsockets stream benchmark over package rsocket, same as rdmacm-utils' rstream",
		Run: rstream.Run},
	{Name: "ucmatose", Aliases: []string{"ucmatose"}, Summary: "RC connections through rdma_cm with SEND traffic, same as rdmacm-utils' ucmatose",
		Run: cmatose.Run},
	{Name: "udaddy", Aliases: []string{"udaddy"}, Summary: "UD QPs resolved through rdma_cm with SEND traffic, same as rdmacm-utils' udaddy",
		Run: udaddy.Run},
	{Name: "rdma_server", Aliases: []string{"rdma_server"}, Summary: "one 16-byte message each way over rdma_cm (server), same as rdmacm-utils' rdma_server",
		Run: rdmaclient.RunServer},
	{Name: "rdma_client", Aliases: []string{"rdma_client"}, Summary: "one 16-byte message each way over rdma_cm (client), same as rdmacm-utils' rdma_client",
		Run: rdmaclient.RunClient},
}

// pingpongTransports maps "goverbs pingpong TRANSPORT" to the tool and the C name it reports as its program.
var pingpongTransports = map[string]struct {
	prog string
	run  func(prog string, args []string, stdout, stderr io.Writer) int
}{
	"rc":   {"ibv_rc_pingpong", pingpong.RunRC},
	"uc":   {"ibv_uc_pingpong", pingpong.RunUC},
	"ud":   {"ibv_ud_pingpong", pingpong.RunUD},
	"srq":  {"ibv_srq_pingpong", pingpong.RunSRQ},
	"xsrq": {"ibv_xsrq_pingpong", pingpong.RunXSRQ},
}

// runPerf runs "goverbs perf TEST ...": TEST is write_bw, read_lat, ... (the perftest name without "ib_").
func runPerf(_ string, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		if _, ok := perftest.Tests["ib_"+args[0]]; ok {
			return perftest.Run("ib_"+args[0], args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "usage: goverbs perf {write,read,send,atomic}_{bw,lat} [options] [host]\n")
	return 1
}

// runPingpong runs "goverbs pingpong TRANSPORT ...".
func runPingpong(_ string, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		if t, ok := pingpongTransports[args[0]]; ok {
			return t.run(t.prog, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "usage: goverbs pingpong rc|uc|ud|srq|xsrq [options] [host]\n")
	return 1
}
