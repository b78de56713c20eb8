package uverbs_test

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/uverbs"
)

// ringAllocator gives a parent domain's QPs, SRQs and CQs their rings from anonymous mappings (outside the Go
// heap, page-aligned, as an Allocator must), and lets the provider allocate anything else itself.
type ringAllocator struct{ bufs map[*byte]*uverbs.Buffer }

func (a *ringAllocator) Alloc(pd *uverbs.PD, size, alignment int, res uverbs.ResourceType) ([]byte, error) {
	if res != uverbs.ResourceQP && res != uverbs.ResourceCQ {
		return nil, nil // the provider's default allocation
	}
	b, err := uverbs.AllocBuffer(size) // whole pages, page-aligned
	if err != nil {
		return nil, err
	}
	a.bufs[&b.Bytes()[0]] = b
	return b.Bytes(), nil
}

func (a *ringAllocator) Free(pd *uverbs.PD, buf []byte, res uverbs.ResourceType) {
	if b := a.bufs[&buf[0]]; b != nil {
		delete(a.bufs, &buf[0])
		b.Close()
	}
}

// A QP used by one goroutine only: made in a parent domain with a thread domain, it posts without locks and,
// on mlx5, rings the thread domain's own BlueFlame register. rxe has no thread domains (ErrNotSupported).
func ExampleContext_AllocParentDomain() {
	ctx, err := uverbs.Open("mlx5_0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ctx.Close()
	pd, err := ctx.AllocPD()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pd.Close()
	td, err := ctx.AllocTD()
	if errors.Is(err, uverbs.ErrNotSupported) && errors.Is(err, unix.EOPNOTSUPP) {
		fmt.Println("no thread domains here:", err)
		return
	} else if err != nil {
		fmt.Println(err)
		return
	}
	defer td.Close() // after the parent domain (defers run last first)
	dom, err := ctx.AllocParentDomain(uverbs.ParentDomainAttr{PD: pd, TD: td,
		Allocator: &ringAllocator{bufs: map[*byte]*uverbs.Buffer{}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dom.Close() // after the QP and the CQ
	cq, err := ctx.CreateCQEx(uverbs.CQExAttr{CQE: 64, ParentDomain: dom, Flags: uverbs.CQSingleThreaded})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cq.Close()
	qp, err := dom.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: cq, RecvCQ: cq,
		Cap: uverbs.QPCap{MaxSendWR: 64, MaxRecvWR: 64, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer qp.Close()
	// Memory registered in the parent domain belongs to its protection domain.
	fmt.Println(qp.QPN(), dom.IsParentDomain(), dom.Protection() == pd, dom.TD() == td)
}
