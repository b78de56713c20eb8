package uverbs

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// CreateCQEx refuses what it cannot create before it reaches the kernel: unknown bits (EINVAL), completion
// fields no goverbs provider reports (ErrNotSupported), no entries (EINVAL). The device-facing cases are in
// test/conformance.
func TestCreateCQExRefusals(t *testing.T) {
	c := &Context{}
	c.dev.Name = "fake0"
	for _, tc := range []struct {
		name string
		attr CQExAttr
		want error
	}{
		{"unknown field", CQExAttr{CQE: 1, WCFlags: 1 << 12}, unix.EINVAL},
		{"unknown flag", CQExAttr{CQE: 1, Flags: 1 << 2}, unix.EINVAL},
		{"timestamp", CQExAttr{CQE: 1, WCFlags: WCExWithCompletionTimestamp}, ErrNotSupported},
		{"wallclock", CQExAttr{CQE: 1, WCFlags: WCStandardFlags | WCExWithCompletionTimestampWallclock}, ErrNotSupported},
		{"flow tag", CQExAttr{CQE: 1, WCFlags: WCExWithFlowTag}, ErrNotSupported},
		{"no entries", CQExAttr{CQE: 0, WCFlags: WCStandardFlags}, unix.EINVAL},
	} {
		cq, err := c.CreateCQEx(tc.attr)
		if cq != nil || !errors.Is(err, tc.want) {
			t.Errorf("%s: CreateCQEx(%+v) = %v, %v; want %v", tc.name, tc.attr, cq, err, tc.want)
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Device != "fake0" {
			t.Errorf("%s: %v does not name the device", tc.name, err)
		}
	}
}

// The poll calls refuse a CQ made by CreateCQ and a NextPoll without a poll in progress; EndPoll then does
// nothing.
func TestStartPollRefusals(t *testing.T) {
	classic := &CQ{ctx: &Context{}}
	if _, err := classic.StartPoll(); !errors.Is(err, unix.EINVAL) {
		t.Errorf("StartPoll of a classic CQ: %v, want EINVAL", err)
	}
	if _, err := classic.NextPoll(); !errors.Is(err, unix.EINVAL) {
		t.Errorf("NextPoll of a classic CQ: %v, want EINVAL", err)
	}
	classic.EndPoll()
	ex := &CQ{ctx: &Context{}, ex: &cqCursor{locking: true}}
	if _, err := ex.NextPoll(); !errors.Is(err, unix.EINVAL) {
		t.Errorf("NextPoll without StartPoll: %v, want EINVAL", err)
	}
	ex.EndPoll()
	ex.ex.mu.Lock() // EndPoll without a poll in progress left the lock alone
	ex.ex.mu.Unlock()
}
