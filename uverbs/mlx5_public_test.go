package uverbs

import (
	"errors"
	"fmt"
	"testing"

	"github.com/goverbs/goverbs/verbs"
	"golang.org/x/sys/unix"
)

// TestMlx5PublicPathAllocs checks that the public data path over the mlx5 provider allocates nothing: QP.PostSend
// (one request, through the provider's PostOne, and a list), QP.PostRecv and CQ.Poll, with the provider's locks
// and in a thread domain, on success and on the errors a post or poll returns most (wrong QP state, closed).
func TestMlx5PublicPathAllocs(t *testing.T) {
	for _, td := range []bool{false, true} {
		for _, op := range []string{"inline", "doorbell", "list16", "recv", "pollsend", "pollrecv"} {
			t.Run(fmt.Sprintf("td=%v/%s", td, op), func(t *testing.T) {
				e := newMlx5Emu(t, td)
				// 32 polls of 16 are two passes over the 256-entry CQ: the owner bits are back where the next
				// run writes them.
				n := 64
				if op == "pollsend" || op == "pollrecv" {
					n = 32
				}
				if a := testing.AllocsPerRun(5, func() {
					if err := e.run(op, n, nil); err != nil {
						t.Fatal(err)
					}
				}); a != 0 {
					t.Errorf("%v allocations per run of %d", a, n)
				}
			})
		}
	}
}

// TestMlx5PublicPathErrors checks the public layer's errors over the mlx5 provider: a send outside RTS and SQD and
// a receive in RESET are EINVAL naming the QP state, posts and polls after Close are ErrClosed, and none of them
// allocates.
func TestMlx5PublicPathErrors(t *testing.T) {
	for _, td := range []bool{false, true} {
		t.Run(fmt.Sprintf("td=%v", td), func(t *testing.T) {
			e := newMlx5Emu(t, td)
			const stateMsg = "post send on mlx5_emu: QP state does not allow posting: invalid argument"
			e.qp.prov.StateChanged(verbs.QPStateRTR)
			if n, err := e.qp.PostSend(e.inline); n != 0 || !errors.Is(err, unix.EINVAL) || err.Error() != stateMsg {
				t.Errorf("PostSend in RTR = %d, %v", n, err)
			}
			if n, err := e.qp.PostRecv(e.recv); n != 1 || err != nil {
				t.Errorf("PostRecv in RTR = %d, %v", n, err)
			}
			e.qp.prov.StateChanged(verbs.QPStateReset)
			if n, err := e.qp.PostRecv(e.recv); n != 0 || !errors.Is(err, unix.EINVAL) {
				t.Errorf("PostRecv in RESET = %d, %v", n, err)
			}
			if a := testing.AllocsPerRun(20, func() {
				e.qp.PostSend(e.inline)
				e.qp.PostRecv(e.recv)
			}); a != 0 {
				t.Errorf("refused posts: %v allocations", a)
			}

			for _, l := range []*life{&e.qp.life, &e.cq.life} {
				if err := l.g.Close(func() error { return nil }); err != nil {
					t.Fatal(err)
				}
			}
			var wc [4]WC
			for _, c := range []struct {
				name string
				call func() (int, error)
			}{
				{"PostSend", func() (int, error) { return e.qp.PostSend(e.inline) }},
				{"PostRecv", func() (int, error) { return e.qp.PostRecv(e.recv) }},
				{"Poll", func() (int, error) { return e.cq.Poll(wc[:]) }},
			} {
				if n, err := c.call(); n != 0 || !errors.Is(err, ErrClosed) {
					t.Errorf("%s after Close = %d, %v", c.name, n, err)
				}
				if a := testing.AllocsPerRun(20, func() { c.call() }); a != 0 {
					t.Errorf("%s after Close: %v allocations", c.name, a)
				}
			}
		})
	}
}
