package uverbs_test

import (
	"errors"
	"fmt"

	"github.com/goverbs/goverbs/uverbs"
)

// ODP capabilities print with the names ibv_devinfo uses; rxe on Linux 6.16 and later reports these for RC.
func ExampleODPTransportCap() {
	rc := uverbs.ODPSend | uverbs.ODPRecv | uverbs.ODPWrite | uverbs.ODPRead | uverbs.ODPAtomic |
		uverbs.ODPSRQRecv | uverbs.ODPFlush | uverbs.ODPAtomicWrite
	fmt.Println(uverbs.ODPSupport)
	fmt.Println(rc)
	fmt.Println(rc&(uverbs.ODPWrite|uverbs.ODPRead) == uverbs.ODPWrite|uverbs.ODPRead)
	fmt.Println(uverbs.AdvicePrefetchWrite, uverbs.AdviseMRFlush)
	// Output:
	// ODP_SUPPORT
	// SUPPORT_SEND|SUPPORT_RECV|SUPPORT_WRITE|SUPPORT_READ|SUPPORT_ATOMIC|SUPPORT_SRQ|SUPPORT_FLUSH|SUPPORT_ATOMIC_WRITE
	// true
	// PREFETCH_WRITE FLUSH
}

// An on-demand paging MR over memory nothing has touched yet, its pages prefetched for writing before the
// first transfer. On a kernel without ODP (rxe before Linux 6.15) RegMR says so with ErrNotSupported; without
// prefetch (before 6.17) AdviseMR does.
func ExamplePD_AdviseMR() {
	ctx, err := uverbs.Open("rxe0")
	if err != nil {
		return
	}
	defer ctx.Close()
	attr, err := ctx.QueryDevice()
	if err != nil {
		return
	}
	fmt.Println("general:", attr.ODPGeneralCaps, "RC:", attr.ODPRCCaps)
	pd, _ := ctx.AllocPD()
	defer pd.Close()
	buf, _ := uverbs.AllocBuffer(64 << 20) // anonymous mmap: no page is present until used
	defer buf.Close()
	mr, err := pd.RegMR(buf.Bytes(), uverbs.AccessLocalWrite|uverbs.AccessRemoteWrite|uverbs.AccessOnDemand)
	if errors.Is(err, uverbs.ErrNotSupported) {
		fmt.Println("no on-demand paging here:", err)
		return
	} else if err != nil {
		fmt.Println(err)
		return
	}
	defer mr.Close()
	// Fault the first megabyte in now (synchronously, with AdviseMRFlush) rather than on the first transfer.
	err = pd.AdviseMR(uverbs.AdvicePrefetchWrite, uverbs.AdviseMRFlush, []uverbs.SGE{mr.SGE(0, 1<<20)})
	fmt.Println(err)
}
