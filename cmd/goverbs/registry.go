package main

import (
	"io"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/asyncwatch"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/cgrouptool"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/cmatose"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/cmtime"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/devices"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/devinfo"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/ibstat"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/ibstatus"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/mckey"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/perfquery"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/perftest"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/pingpong"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/rcopy"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/rdmaclient"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/rdmatool"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/rdmax"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/rping"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/rstream"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/showgids"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/udaddy"
)

// Main is the one shape of a tool: prog is argv[0] as the tool should print
// it, args exclude it, the result is the exit status. Every tool package
// exports its entry points in this shape (cmd/goverbs/internal/README.md).
type Main = func(prog string, args []string, stdout, stderr io.Writer) int

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
	// Run runs the tool.
	Run Main
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
	{Name: "devices", Aliases: []string{"ibv_devices"}, Summary: "list RDMA devices and node GUIDs", Run: devices.Main},
	{Name: "devinfo", Aliases: []string{"ibv_devinfo"}, Summary: "show device and port attributes", Run: devinfo.Main},
	{Name: "ibstat", Aliases: []string{"ibstat"}, Summary: "show InfiniBand CA and port state from sysfs", Run: ibstat.Main},
	{Name: "ibstatus", Aliases: []string{"ibstatus"}, Summary: "show port status from sysfs, same as infiniband-diags' ibstatus", Run: ibstatus.Main},
	{Name: "show_gids", Aliases: []string{"show_gids"}, Summary: "list RoCE GIDs with their index, netdev, version and IPv4, same as mlnx-tools' show_gids",
		Run: showgids.Main},
	{Name: "perfquery", Aliases: []string{"perfquery"}, Summary: "query PerfMgt port counters over the user MAD interface, same as infiniband-diags' perfquery",
		Run: perfquery.Main},
	{Name: "asyncwatch", Aliases: []string{"ibv_asyncwatch"}, Summary: "print a device's asynchronous events, same as ibv_asyncwatch", Run: asyncwatch.Main},
	{Name: "pingpong", Summary: "ping-pong tests wire compatible with rdma-core's: goverbs pingpong rc|uc|ud|srq|xsrq [options] [host]",
		Run: pingpong.Main},
	{Name: "rc_pingpong", Aliases: []string{"ibv_rc_pingpong"}, Summary: "RC ping-pong, same as ibv_rc_pingpong",
		Run: pingpong.MainRC},
	{Name: "uc_pingpong", Aliases: []string{"ibv_uc_pingpong"}, Summary: "UC ping-pong, same as ibv_uc_pingpong",
		Run: pingpong.MainUC},
	{Name: "ud_pingpong", Aliases: []string{"ibv_ud_pingpong"}, Summary: "UD ping-pong, same as ibv_ud_pingpong",
		Run: pingpong.MainUD},
	{Name: "srq_pingpong", Aliases: []string{"ibv_srq_pingpong"}, Summary: "RC ping-pong over N QPs sharing an SRQ, same as ibv_srq_pingpong",
		Run: pingpong.MainSRQ},
	{Name: "xsrq_pingpong", Aliases: []string{"ibv_xsrq_pingpong"}, Summary: "XRC SRQ ping-pong, ibv_xsrq_pingpong up to the XRC domain (no XRC QPs)",
		Run: pingpong.MainXSRQ},
	{Name: "cgroup", Summary: "show/set RDMA cgroup limits and usage; run a command in a cgroup", Run: cgrouptool.Main},
	{Name: "rdma", Aliases: []string{"rdma"}, Summary: "RDMA netlink tool, same as iproute2's rdma (dev, link, resource, system, statistic)",
		Run: rdmatool.Main},
	{Name: "perf", Summary: "perftest 6.06 clone: goverbs perf write_bw|write_lat|read_bw|read_lat|send_bw|send_lat|atomic_bw|atomic_lat [options] [host]",
		Run: perftest.Main},
	{Name: "write_bw", Aliases: []string{"ib_write_bw"}, Summary: "RDMA write bandwidth, same as ib_write_bw", Run: perftest.MainProg},
	{Name: "write_lat", Aliases: []string{"ib_write_lat"}, Summary: "RDMA write latency, same as ib_write_lat", Run: perftest.MainProg},
	{Name: "read_bw", Aliases: []string{"ib_read_bw"}, Summary: "RDMA read bandwidth, same as ib_read_bw", Run: perftest.MainProg},
	{Name: "read_lat", Aliases: []string{"ib_read_lat"}, Summary: "RDMA read latency, same as ib_read_lat", Run: perftest.MainProg},
	{Name: "send_bw", Aliases: []string{"ib_send_bw"}, Summary: "send bandwidth, same as ib_send_bw", Run: perftest.MainProg},
	{Name: "send_lat", Aliases: []string{"ib_send_lat"}, Summary: "send latency, same as ib_send_lat", Run: perftest.MainProg},
	{Name: "atomic_bw", Aliases: []string{"ib_atomic_bw"}, Summary: "atomic bandwidth, same as ib_atomic_bw", Run: perftest.MainProg},
	{Name: "atomic_lat", Aliases: []string{"ib_atomic_lat"}, Summary: "atomic latency, same as ib_atomic_lat", Run: perftest.MainProg},
	{Name: "rping", Aliases: []string{"rping"}, Summary: "RDMA CM ping-pong with RDMA READ/WRITE, same as rdmacm-utils' rping",
		Run: rping.Main},
	{Name: "rstream", Aliases: []string{"rstream"}, Summary: "rsockets stream benchmark over package rsocket, same as rdmacm-utils' rstream",
		Run: rstream.Main},
	{Name: "rcopy", Aliases: []string{"rcopy"}, Summary: "copy a file over rsockets (package rsocket), same as rdmacm-utils' rcopy",
		Run: rcopy.Main},
	{Name: "riostream", Aliases: []string{"riostream"}, Summary: "rsockets iomap/riowrite benchmark over package rsocket, same as rdmacm-utils' riostream",
		Run: rstream.MainRiostream},
	{Name: "udpong", Aliases: []string{"udpong"}, Summary: "UDP ping-pong, same as rdmacm-utils' udpong (-T s; datagram rsockets are refused, as they fail on RoCE in C too)",
		Run: rstream.MainUdpong},
	{Name: "ucmatose", Aliases: []string{"ucmatose"}, Summary: "RC connections through rdma_cm with SEND traffic, same as rdmacm-utils' ucmatose",
		Run: cmatose.Main},
	{Name: "udaddy", Aliases: []string{"udaddy"}, Summary: "UD QPs resolved through rdma_cm with SEND traffic, same as rdmacm-utils' udaddy",
		Run: udaddy.Main},
	{Name: "mckey", Aliases: []string{"mckey"}, Summary: "UD multicast joined through rdma_cm with SEND traffic, same as rdmacm-utils' mckey",
		Run: mckey.Main},
	{Name: "rdma_server", Aliases: []string{"rdma_server"}, Summary: "one 16-byte message each way over rdma_cm (server), same as rdmacm-utils' rdma_server",
		Run: rdmaclient.MainServer},
	{Name: "rdma_client", Aliases: []string{"rdma_client"}, Summary: "one 16-byte message each way over rdma_cm (client), same as rdmacm-utils' rdma_client",
		Run: rdmaclient.MainClient},
	{Name: "rdma_xserver", Aliases: []string{"rdma_xserver"}, Summary: "receive one 16-byte message over rdma_cm, RC mode (XRC is not supported), same as rdmacm-utils' rdma_xserver",
		Run: rdmax.MainServer},
	{Name: "rdma_xclient", Aliases: []string{"rdma_xclient"}, Summary: "send one 16-byte INLINE message over rdma_cm, RC mode (XRC is not supported), same as rdmacm-utils' rdma_xclient",
		Run: rdmax.MainClient},
	{Name: "cmtime", Aliases: []string{"cmtime"}, Summary: "time the rdma_cm steps of many connections, same as rdmacm-utils' cmtime",
		Run: cmtime.Main},
}
