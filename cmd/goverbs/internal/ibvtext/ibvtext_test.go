package ibvtext

import (
	"testing"

	"github.com/goverbs/goverbs/verbs"
)

func TestWCStatusStr(t *testing.T) {
	for _, tc := range []struct {
		s    verbs.WCStatus
		want string
	}{
		{verbs.WCSuccess, "success"},
		{verbs.WCWRFlushErr, "Work Request Flushed Error"},
		{verbs.WCRetryExcErr, "transport retry counter exceeded"},
		{verbs.WCTMRndvIncomplete, "TM software rendezvous"},
		{verbs.WCStatus(99), "unknown"},
	} {
		if got := WCStatusStr(tc.s); got != tc.want {
			t.Errorf("WCStatusStr(%d) = %q, want %q", uint32(tc.s), got, tc.want)
		}
	}
}
