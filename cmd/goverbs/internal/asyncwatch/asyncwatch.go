// Package asyncwatch is goverbs' clone of rdma-core 65's ibv_asyncwatch
// (libibverbs/examples/asyncwatch.c): it opens a device and prints every
// asynchronous event the device reports, with the C tool's lines, until it
// is killed. (Its one change since rdma-core 44, in 62: the event
// IBV_EVENT_DEVICE_SPEED_CHANGE is named instead of "unexpected".)
package asyncwatch

import (
	"context"
	"fmt"
	"io"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/getopt"
	"github.com/goverbs/goverbs/uverbs"
)

var longOpts = []getopt.LongOption{
	{Name: "ib-dev", HasArg: getopt.RequiredArgument, Val: 'd'},
	{Name: "help", HasArg: getopt.NoArgument, Val: 'h'},
}

func usage(w io.Writer, prog string) {
	fmt.Fprintf(w, "Usage:\n")
	fmt.Fprintf(w, "  %s            start an asyncwatch process\n", prog)
	fmt.Fprintf(w, "\n")
	fmt.Fprintf(w, "Options:\n")
	fmt.Fprintf(w, "  -d, --ib-dev=<dev>     use IB device <dev> (default first device found)\n")
	fmt.Fprintf(w, "  -h, --help             print a help text and exit\n")
}

// EventName is the C tool's event_name_str: the IBV_EVENT_* name of a port
// or device event, "unexpected" for the events of QPs, CQs and SRQs (which a
// watcher that created none cannot get) and unknown numbers.
func EventName(t uverbs.AsyncEventType) string {
	switch t {
	case uverbs.EventDeviceFatal:
		return "IBV_EVENT_DEVICE_FATAL"
	case uverbs.EventPortActive:
		return "IBV_EVENT_PORT_ACTIVE"
	case uverbs.EventPortErr:
		return "IBV_EVENT_PORT_ERR"
	case uverbs.EventLIDChange:
		return "IBV_EVENT_LID_CHANGE"
	case uverbs.EventPKeyChange:
		return "IBV_EVENT_PKEY_CHANGE"
	case uverbs.EventSMChange:
		return "IBV_EVENT_SM_CHANGE"
	case uverbs.EventClientReregister:
		return "IBV_EVENT_CLIENT_REREGISTER"
	case uverbs.EventGIDChange:
		return "IBV_EVENT_GID_CHANGE"
	case uverbs.EventDeviceSpeedChange:
		return "IBV_EVENT_DEVICE_SPEED_CHANGE"
	}
	return "unexpected"
}

// Line is the C tool's line for ev. The C tool prints the event's element
// union as a port number whatever the event; for an object event that is the
// low 32 bits of a pointer, here of the kernel's element (the object's handle).
func Line(ev uverbs.AsyncEvent) string {
	return fmt.Sprintf("  event_type %s (%d), port %d\n", EventName(ev.Type), int32(ev.Type), int32(ev.Element))
}

// Main runs ibv_asyncwatch: prog is argv[0], args the rest. It returns only
// on an error (status 1) or after -h (0).
func Main(prog string, args []string, stdout, stderr io.Writer) int {
	var devName string
	p := getopt.New(prog, args, "d:h", longOpts, stderr, false)
	for o := range p.All() {
		switch o.Val {
		case 'd':
			devName = o.Arg
		case 'h':
			usage(stdout, prog)
			return 0
		default:
			usage(stdout, prog)
			return 1
		}
	}
	devs, err := uverbs.Devices()
	if err != nil {
		fmt.Fprintf(stderr, "Failed to get IB devices list: %s\n", cstd.Strerror(cstd.ErrnoOf(err, unix.ENOSYS)))
		return 1
	}
	i := 0
	if devName != "" {
		for i < len(devs) && devs[i].Name != devName {
			i++
		}
	}
	if i == len(devs) {
		fmt.Fprintf(stderr, "IB device %s not found\n", devName)
		return 1
	}
	c, err := devs[i].Open()
	if err != nil {
		fmt.Fprintf(stderr, "Couldn't get context for %s\n", devs[i].Name)
		return 1
	}
	defer c.Close()
	fmt.Fprintf(stdout, "%s: async event FD %d\n", devs[i].Name, c.AsyncFD())
	for {
		ev, err := c.AsyncEvent(context.Background())
		if err != nil {
			return 1
		}
		io.WriteString(stdout, Line(ev))
	}
}
