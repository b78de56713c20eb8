package ibvtext

import (
	"testing"

	"github.com/goverbs/goverbs/uverbs"
	"github.com/goverbs/goverbs/verbs"
)

// The lab compares every value with libibverbs itself (TestLabTextsMatchLibibverbs in cmd/goverbs/internal/
// interop); this pins a few texts and the edges where C returns "unknown" on the host.
func TestTexts(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{WCStatus(verbs.WCSuccess), "success"},
		{WCStatus(verbs.WCWRFlushErr), "Work Request Flushed Error"},
		{WCStatus(verbs.WCMWBindErr), "memory management operation error"},
		{WCStatus(verbs.WCRetryExcErr), "transport retry counter exceeded"},
		{WCStatus(verbs.WCTMRndvIncomplete), "TM software rendezvous"},
		{WCStatus(verbs.WCTMRndvIncomplete + 1), "unknown"},
		{NodeType(uverbs.NodeType(0)), "unknown"},
		{NodeType(1), "InfiniBand channel adapter"},
		{NodeType(4), "iWARP NIC"},
		{NodeType(7), "unspecified"},
		{NodeType(8), "unknown"},
		{PortState(verbs.PortNOP), "no state change (NOP)"},
		{PortState(verbs.PortActive), "active"},
		{PortState(verbs.PortActiveDefer + 1), "unknown"},
		{Event(uverbs.EventCQErr), "CQ error"},
		{Event(uverbs.EventPKeyChange), "P_Key change"},
		{Event(uverbs.EventDeviceSpeedChange), "Device link speed change"},
		{Event(uverbs.EventDeviceSpeedChange + 1), "unknown"},
		{WROpcode(verbs.WRRDMAWrite), "rdma-write"},
		{WROpcode(verbs.WRSendWithInv), "send-with-inv"},
		{WROpcode(12), "unknown"},
		{WROpcode(verbs.WRFlush), "flush"},
		{WROpcode(verbs.WRAtomicWrite), "atomic-write"},
		{WROpcode(verbs.WRAtomicWrite + 1), "unknown"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
