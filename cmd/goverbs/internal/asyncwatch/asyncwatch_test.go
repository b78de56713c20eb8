package asyncwatch

import (
	"bytes"
	"testing"

	"github.com/goverbs/goverbs/uverbs"
)

func TestLine(t *testing.T) {
	for _, tc := range []struct {
		ev   uverbs.AsyncEvent
		want string
	}{
		{uverbs.AsyncEvent{Type: uverbs.EventGIDChange, Port: 1, Element: 1}, "  event_type IBV_EVENT_GID_CHANGE (18), port 1\n"},
		{uverbs.AsyncEvent{Type: uverbs.EventPortErr, Port: 2, Element: 2}, "  event_type IBV_EVENT_PORT_ERR (10), port 2\n"},
		{uverbs.AsyncEvent{Type: uverbs.EventPortActive, Port: 1, Element: 1}, "  event_type IBV_EVENT_PORT_ACTIVE (9), port 1\n"},
		{uverbs.AsyncEvent{Type: uverbs.EventDeviceFatal}, "  event_type IBV_EVENT_DEVICE_FATAL (8), port 0\n"},
		{uverbs.AsyncEvent{Type: uverbs.EventDeviceSpeedChange, Element: 1}, "  event_type IBV_EVENT_DEVICE_SPEED_CHANGE (20), port 1\n"},
		// Object events print as the C tool prints them: "unexpected", the element's low 32 bits as the port.
		{uverbs.AsyncEvent{Type: uverbs.EventQPFatal, Element: 0x1_0000_0007}, "  event_type unexpected (1), port 7\n"},
		{uverbs.AsyncEvent{Type: 99}, "  event_type unexpected (99), port 0\n"},
	} {
		if got := Line(tc.ev); got != tc.want {
			t.Errorf("Line(%v) = %q, want %q", tc.ev, got, tc.want)
		}
	}
}

// Usage texts and statuses as rdma-core's: -h prints the usage on stdout and exits 0, a bad option 1.
func TestUsage(t *testing.T) {
	const usage = "Usage:\n  ibv_asyncwatch            start an asyncwatch process\n\nOptions:\n" +
		"  -d, --ib-dev=<dev>     use IB device <dev> (default first device found)\n" +
		"  -h, --help             print a help text and exit\n"
	for _, tc := range []struct {
		args   []string
		rc     int
		stderr string
	}{
		{[]string{"-h"}, 0, ""},
		{[]string{"--help"}, 0, ""},
		{[]string{"-x"}, 1, "ibv_asyncwatch: invalid option -- 'x'\n"},
		{[]string{"-d"}, 1, "ibv_asyncwatch: option requires an argument -- 'd'\n"},
	} {
		var o, e bytes.Buffer
		if rc := Main("ibv_asyncwatch", tc.args, &o, &e); rc != tc.rc || o.String() != usage || e.String() != tc.stderr {
			t.Errorf("%q: status %d, stdout %q, stderr %q", tc.args, rc, o.String(), e.String())
		}
	}
}
