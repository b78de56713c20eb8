package rdmatool

import (
	"context"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/netlinkrdma"
)

// eventSource is what rdma monitor needs of a *netlinkrdma.Monitor.
type eventSource interface {
	Next(ctx context.Context) (netlinkrdma.Event, error)
	Close() error
}

var _ eventSource = (*netlinkrdma.Monitor)(nil)

// dialMonitor subscribes to the kernel's device events; tests replace it.
var dialMonitor = func() (eventSource, error) { return netlinkrdma.NewMonitor() }

func (t *tool) cmdMon() int {
	return t.execCmd([]command{{"", t.monShow}, {"help", t.monHelp}}, "mon command")
}

func (t *tool) monHelp() int {
	t.outf("Usage: rdma monitor [ -j ]\n")
	return 0
}

// monShow prints device events until killed, as iproute2 7.3's rdma
// monitor: it first asks the kernel whether it sends them (the monitor mode
// of `rdma system`, Linux 6.12+).
func (t *tool) monShow() int {
	s, err := t.be.System()
	if err != nil {
		t.errf("Failed to check if RDMA monitoring is supported\n")
		return -1
	}
	if !s.Monitor {
		t.errf("RDMA monitoring is not supported by the kernel\n")
		return -int(unix.ENOENT)
	}
	m, err := t.newMonitor()
	if err != nil {
		t.errf("Failed to open NETLINK_RDMA socket. Error: %s\n", errText(err))
		return -int(unix.ENODEV)
	}
	defer m.Close()
	p := t.p
	p.newJSONObj()
	for {
		e, err := m.Next(context.Background())
		if err != nil {
			t.errf("Failed to listen to rdma socket\n")
			p.deleteJSONObj()
			return -1
		}
		printEvent(p, e)
		if err := t.flush(); err != nil {
			return -1
		}
	}
}

// printEvent prints one event as mon_show_cb does:
// "[NETDEV_ATTACH]\tdev 3 rxe1 port 1 netdev 4 veth1".
func printEvent(p *printer, e netlinkrdma.Event) {
	has := e.Present.Has
	p.openObject("")
	p.str(printAny, "event_type", "%s\t", "["+e.Type.String()+"]")
	if has(abi.RDMA_NLDEV_ATTR_DEV_INDEX) {
		p.uint(printAny, "rdma_index", "dev %d", e.DevIndex)
	}
	if has(abi.RDMA_NLDEV_ATTR_DEV_NAME) {
		p.str(printAny, "rdma_dev", " %s", e.DevName)
	}
	if has(abi.RDMA_NLDEV_ATTR_PORT_INDEX) {
		p.uint(printAny, "port", " port %d", e.Port)
	}
	if has(abi.RDMA_NLDEV_ATTR_NDEV_INDEX) {
		p.uint(printAny, "netdev_idx", " netdev %d", e.NetdevIndex)
	}
	if has(abi.RDMA_NLDEV_ATTR_NDEV_NAME) {
		p.str(printAny, "netdev_name", " %s", e.NetdevName)
	}
	p.newline()
}
