package labtest

import (
	"testing"

	"github.com/goverbs/goverbs/netlinkrdma"
)

// ResourceCounts is the kernel's count of every RDMA resource per device (rdma res show: "rxe0/qp" → 3), over
// RDMA netlink: what a test compares before and after to show that nothing leaked.
func ResourceCounts(t testing.TB) map[string]uint64 {
	t.Helper()
	c, err := netlinkrdma.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ss, err := c.ResourceSummaries()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]uint64{}
	for _, s := range ss {
		for _, rc := range s.Counts {
			m[s.DevName+"/"+rc.Name] = rc.Current
		}
	}
	return m
}
