// This file runs the charging tests of TestLab with goverbs' own uverbs
// package, whose creates return uverbs/limit.go's limit error (a
// *cgroup.LimitError, built by cgroup/limit without importing package
// cgroup). Verified in the lab on a trial merge of main at 9e5452b (all
// TestLab/V1, V2 uverbs subtests and TestLab/RefusedContext/uverbs pass).

package cgroup_test

import (
	"errors"
	"fmt"

	"github.com/goverbs/goverbs/uverbs"
)

// The charging tests also run with goverbs' own verbs API: its contexts come
// from the ioctl GET_CONTEXT method, and every create goes through
// uverbs.limitErr, which must give *cgroup.LimitError.
func init() {
	verbsImpls = append(verbsImpls, verbsImpl{name: "uverbs", open: openUverbs, ioctlGetContext: true})
}

// uverbsContext holds a context with the parents QPs and MRs need: a PD and
// a CQ, made (and charged) at open.
type uverbsContext struct {
	ctx     *uverbs.Context
	pd      *uverbs.PD
	cq      *uverbs.CQ
	buf     *uverbs.Buffer
	objects []func() error // live objects made by Create, destroyed by Close
}

func openUverbs(dev string) (verbsContext, error) {
	ctx, err := uverbs.Open(dev)
	if err != nil {
		return nil, err
	}
	u := &uverbsContext{ctx: ctx}
	if u.pd, err = ctx.AllocPD(); err != nil {
		u.Close()
		return nil, err
	}
	if u.cq, err = ctx.CreateCQ(uverbs.CQAttr{CQE: 16}); err != nil {
		u.Close()
		return nil, err
	}
	if u.buf, err = uverbs.AllocBuffer(4096); err != nil {
		u.Close()
		return nil, err
	}
	return u, nil
}

func (u *uverbsContext) Kinds() []string { return []string{"PD", "CQ", "QP", "MR"} }

func (u *uverbsContext) Create(kind string) (func() error, error) {
	var c interface{ Close() error }
	var err error
	switch kind {
	case "PD":
		c, err = u.ctx.AllocPD()
	case "CQ":
		c, err = u.ctx.CreateCQ(uverbs.CQAttr{CQE: 16})
	case "QP":
		c, err = u.pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: u.cq, RecvCQ: u.cq,
			Cap: uverbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
	case "MR":
		c, err = u.pd.RegMR(u.buf.Bytes(), uverbs.AccessLocalWrite)
	default:
		return nil, fmt.Errorf("uverbs context: cannot create %s", kind)
	}
	if err != nil {
		return nil, err
	}
	closed := false
	destroy := func() error {
		if closed {
			return nil
		}
		closed = true
		return c.Close()
	}
	u.objects = append(u.objects, destroy)
	return destroy, nil
}

// Close destroys what Create made, the parents, then the context.
func (u *uverbsContext) Close() error {
	var errs []error
	for i := len(u.objects) - 1; i >= 0; i-- {
		errs = append(errs, u.objects[i]())
	}
	u.objects = nil
	if u.cq != nil {
		errs = append(errs, u.cq.Close())
		u.cq = nil
	}
	if u.pd != nil {
		errs = append(errs, u.pd.Close())
		u.pd = nil
	}
	if u.buf != nil {
		errs = append(errs, u.buf.Close())
		u.buf = nil
	}
	errs = append(errs, u.ctx.Close())
	return errors.Join(errs...)
}
