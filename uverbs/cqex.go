package uverbs

import (
	"fmt"
	"sync"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/enumstr"
	"github.com/goverbs/goverbs/internal/provider"
	"golang.org/x/sys/unix"
)

// WCExFlags name the fields the completions of an extended CQ carry (enum ibv_create_cq_wc_flags,
// IBV_WC_EX_WITH_*). The standard ones are in every WC goverbs returns, asked for or not; asking for them
// tells the device to report them, as libibverbs' create does. The others are fields a WC does not have:
// a CQ that asks for one the device cannot report is refused at creation (ErrNotSupported), as libibverbs
// refuses it.
type WCExFlags uint64

// Completion fields.
const (
	WCExWithByteLen                      WCExFlags = 1 << 0
	WCExWithImm                          WCExFlags = 1 << 1
	WCExWithQPNum                        WCExFlags = 1 << 2
	WCExWithSrcQP                        WCExFlags = 1 << 3
	WCExWithSLID                         WCExFlags = 1 << 4
	WCExWithSL                           WCExFlags = 1 << 5
	WCExWithDLIDPathBits                 WCExFlags = 1 << 6
	WCExWithCompletionTimestamp          WCExFlags = 1 << 7
	WCExWithCVLAN                        WCExFlags = 1 << 8
	WCExWithFlowTag                      WCExFlags = 1 << 9
	WCExWithTMInfo                       WCExFlags = 1 << 10
	WCExWithCompletionTimestampWallclock WCExFlags = 1 << 11

	// WCStandardFlags are the fields of a classic work completion (IBV_WC_STANDARD_FLAGS).
	WCStandardFlags = WCExWithByteLen | WCExWithImm | WCExWithQPNum | WCExWithSrcQP | WCExWithSLID | WCExWithSL |
		WCExWithDLIDPathBits
	// wcExKnown are the flags libibverbs knows (IBV_CREATE_CQ_SUP_WC_FLAGS).
	wcExKnown = WCExWithCompletionTimestampWallclock<<1 - 1
)

var wcExFlagNames = [...]string{"BYTE_LEN", "IMM", "QP_NUM", "SRC_QP", "SLID", "SL", "DLID_PATH_BITS",
	"COMPLETION_TIMESTAMP", "CVLAN", "FLOW_TAG", "TM_INFO", "COMPLETION_TIMESTAMP_WALLCLOCK"}

func (f WCExFlags) String() string { return enumstr.Flags(wcExFlagNames[:], uint64(f)) }

// CQCreateFlags are the options of an extended CQ (enum ibv_create_cq_attr_flags).
type CQCreateFlags uint32

// CQ creation flags.
const (
	// CQSingleThreaded: one goroutine at a time polls the CQ, so StartPoll … EndPoll take no lock
	// (IBV_CREATE_CQ_ATTR_SINGLE_THREADED). Poll is unaffected.
	CQSingleThreaded CQCreateFlags = 1 << 0
	// CQIgnoreOverrun: the device does not report a CQ overrun as an error (IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN,
	// the kernel's IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN); devices without it refuse the CQ with ErrNotSupported.
	CQIgnoreOverrun CQCreateFlags = 1 << 1

	cqCreateKnown = CQIgnoreOverrun<<1 - 1
)

var cqCreateFlagNames = [...]string{"SINGLE_THREADED", "IGNORE_OVERRUN"}

func (f CQCreateFlags) String() string { return enumstr.Flags(cqCreateFlagNames[:], uint64(f)) }

// CQExAttr are the attributes of CreateCQEx (struct ibv_cq_init_attr_ex).
type CQExAttr struct {
	CQE        int          // minimum number of entries
	Channel    *CompChannel // completion channel, or nil
	CompVector int          // completion vector, < Context.NumCompVectors()
	WCFlags    WCExFlags    // the fields the completions carry
	Flags      CQCreateFlags
	// ParentDomain is the parent domain (AllocParentDomain) the CQ is made in, or nil
	// (ibv_cq_init_attr_ex.parent_domain, IBV_CQ_INIT_ATTR_MASK_PD): its Allocator supplies the CQ's ring, and
	// it cannot be closed before the CQ. A PD that is not a parent domain is EINVAL, as libmlx5 refuses it.
	ParentDomain *PD
}

// cqCursor is the state of an extended CQ's StartPoll … EndPoll: the completion being read, and the lock a poll
// holds from its start to its end (none with CQSingleThreaded).
type cqCursor struct {
	mu      sync.Mutex
	locking bool
	active  bool
	wcFlags WCExFlags
	flags   CQCreateFlags
	wc      [1]WC
}

// CreateCQEx creates a completion queue with the extended attributes (ibv_create_cq_ex): the completion fields
// it reports and its creation flags. Besides Poll, such a CQ is read one completion at a time, in place, with
// StartPoll, NextPoll and EndPoll. Unknown flag bits are refused with EINVAL; fields and flags the device
// cannot report or honour with ErrNotSupported, as libibverbs and its providers refuse them.
func (c *Context) CreateCQEx(attr CQExAttr) (*CQ, error) {
	op := func() string {
		return fmt.Sprintf("create extended CQ (cqe %d, vector %d, fields %v, flags %v)", attr.CQE, attr.CompVector, attr.WCFlags, attr.Flags)
	}
	if attr.WCFlags&^wcExKnown != 0 {
		return nil, wrap(op(), c.dev.Name, fmt.Errorf("unknown completion fields %v: %w", attr.WCFlags&^wcExKnown, unix.EINVAL))
	}
	if attr.Flags&^cqCreateKnown != 0 {
		return nil, wrap(op(), c.dev.Name, fmt.Errorf("unknown flags %v: %w", attr.Flags&^cqCreateKnown, unix.EINVAL))
	}
	if extra := attr.WCFlags &^ WCStandardFlags; extra != 0 {
		return nil, wrap(op(), c.dev.Name, fmt.Errorf("completion fields %v: goverbs' provider for %v does not report them: %w",
			extra, c.dev.DriverID, ErrNotSupported))
	}
	if attr.CQE < 1 {
		return nil, wrap(op(), c.dev.Name, fmt.Errorf("cqe %d: %w", attr.CQE, unix.EINVAL))
	}
	if d := attr.ParentDomain; d != nil && (d.dom == nil || d.ctx != c) {
		return nil, wrap(op(), c.dev.Name, fmt.Errorf("%v is not a parent domain of this context: %w", d, unix.EINVAL))
	}
	var kflags uint32
	if attr.Flags&CQIgnoreOverrun != 0 {
		kflags |= abi.IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN
	}
	if attr.Channel != nil {
		if err := attr.Channel.enter(); err != nil {
			return nil, wrap(op(), c.dev.Name, fmt.Errorf("completion channel: %w", err))
		}
		defer attr.Channel.exit()
	}
	var dom provider.ParentDomain
	if attr.ParentDomain != nil {
		var err error
		if dom, err = attr.ParentDomain.enterDomain(); err != nil {
			return nil, wrap(op(), c.dev.Name, err)
		}
	}
	cq, err := c.createCQIn(CQAttr{CQE: attr.CQE, Channel: attr.Channel, CompVector: attr.CompVector}, kflags, attr.ParentDomain, dom)
	if attr.ParentDomain != nil {
		attr.ParentDomain.exitDomain(err == nil)
	}
	if err != nil {
		return nil, err
	}
	cq.ex = &cqCursor{locking: attr.Flags&CQSingleThreaded == 0, wcFlags: attr.WCFlags, flags: attr.Flags}
	return cq, nil
}

// Extended reports whether the CQ was made by CreateCQEx.
func (cq *CQ) Extended() bool { return cq.ex != nil }

// WCFlags are the completion fields an extended CQ was created with (0 for CreateCQ's).
func (cq *CQ) WCFlags() WCExFlags {
	if cq.ex == nil {
		return 0
	}
	return cq.ex.wcFlags
}

// StartPoll begins reading an extended CQ's completions in place (ibv_start_poll). It returns the first
// completion, or nil when the CQ is empty, in which case no poll is in progress and EndPoll is not needed.
// After a completion, NextPoll returns the following ones, and EndPoll ends the poll: every path that got a
// completion from StartPoll calls EndPoll. The WC returned is the CQ's own and valid until the next
// NextPoll or EndPoll; it allocates nothing. A poll in progress holds the CQ's poll lock, so another
// goroutine's StartPoll waits for its EndPoll, and a goroutine that calls StartPoll again before its own
// EndPoll waits forever, as ibv_start_poll spins; a CQSingleThreaded CQ has no lock and answers that second
// StartPoll with EINVAL. The error is otherwise Poll's: ErrClosed, or EIO for a completion the provider cannot
// match; a CQ made by CreateCQ is EINVAL.
func (cq *CQ) StartPoll() (*WC, error) {
	x := cq.ex
	if x == nil {
		return nil, wrapf(cq.ctx.dev.Name, fmt.Errorf("made by CreateCQ, not CreateCQEx: %w", unix.EINVAL), "start poll of CQ %#x", cq.handle)
	}
	if x.locking {
		x.mu.Lock()
	}
	if x.active {
		if x.locking {
			x.mu.Unlock()
		}
		return nil, wrapf(cq.ctx.dev.Name, fmt.Errorf("a poll is in progress (EndPoll was not called): %w", unix.EINVAL), "start poll of CQ %#x", cq.handle)
	}
	wc, err := cq.pollCursor(x)
	if wc == nil {
		if x.locking {
			x.mu.Unlock()
		}
		return nil, err
	}
	x.active = true
	return wc, nil
}

// NextPoll returns the next completion of the poll StartPoll began (ibv_next_poll), or nil when there is none
// now; the poll stays in progress until EndPoll. Without a poll in progress it returns EINVAL.
func (cq *CQ) NextPoll() (*WC, error) {
	x := cq.ex
	if x == nil || !x.active {
		return nil, wrapf(cq.ctx.dev.Name, fmt.Errorf("no poll in progress (StartPoll did not return a completion): %w", unix.EINVAL), "next poll of CQ %#x", cq.handle)
	}
	return cq.pollCursor(x)
}

// EndPoll ends the poll StartPoll began (ibv_end_poll). Without a poll in progress it does nothing.
func (cq *CQ) EndPoll() {
	x := cq.ex
	if x == nil || !x.active {
		return
	}
	x.active = false
	if x.locking {
		x.mu.Unlock()
	}
}

// pollCursor reads the next completion into the cursor: a pointer to it, or nil when the CQ is empty (err
// non-nil when polling failed).
func (cq *CQ) pollCursor(x *cqCursor) (*WC, error) {
	if !cq.g.Enter() {
		return nil, cq.ctx.dpErrs.get(opPollCQ, provider.Destroyed)
	}
	n, st := cq.prov.Poll(x.wc[:])
	cq.g.Exit()
	if st != provider.OK {
		return nil, cq.ctx.dpErrs.get(opPollCQ, st)
	}
	if n == 0 {
		return nil, nil
	}
	return &x.wc[0], nil
}

// CQModeration is a CQ's event moderation (struct ibv_moderate_cq): an event when Count completions have
// arrived or Period microseconds have passed since the first unreported one.
type CQModeration struct {
	Count  uint16
	Period uint16 // microseconds
}

// Moderate sets the CQ's event moderation (ibv_modify_cq with IBV_CQ_ATTR_MODERATE) through the kernel's
// extended MODIFY_CQ command. Devices without moderation answer ErrNotSupported (rxe).
func (cq *CQ) Moderate(m CQModeration) error {
	if err := cq.enter(); err != nil {
		return wrapf(cq.ctx.dev.Name, err, "moderate CQ %#x", cq.handle)
	}
	err := cq.ctx.cmdModifyCQ(cq.handle, m)
	cq.exit()
	if err != nil {
		return wrapf(cq.ctx.dev.Name, err, "moderate CQ %#x (count %d, period %d us)", cq.handle, m.Count, m.Period)
	}
	return nil
}
