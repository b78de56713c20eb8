package rdmacm

import (
	"fmt"
	"testing"

	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

// The ECE choices CreateQP and a CONNECT_RESPONSE make, as librdmacm's init_ece and
// ucma_process_conn_resp_ece (cma.c) make them; rxe's side (no ECE: the local ECE stays zero, a vendor id of 0
// is refused and ignored) is proven in the lab by TestLabECE.
func TestECEChoices(t *testing.T) {
	mlx := ECE{VendorID: uverbs.VendorMellanox, AttrMod: 0x10000003}
	for _, tc := range []struct {
		local, remote ECE
		set           uverbs.ECE
		apply         bool
	}{
		{mlx, ECE{}, uverbs.ECE{}, false}, // an active id's QP, or a passive one whose REQ had no ECE
		{mlx, ECE{VendorID: uverbs.VendorMellanox, AttrMod: 0x10000005}, uverbs.ECE{VendorID: uverbs.VendorMellanox, Options: 0x10000005}, true},
		{mlx, ECE{VendorID: 0x1234, AttrMod: 7}, uverbs.ECE{VendorID: uverbs.VendorMellanox}, true}, // another vendor: none
		{ECE{}, ECE{VendorID: 0x1234, AttrMod: 7}, uverbs.ECE{}, true},                              // rxe: refused (vendor 0), ignored
	} {
		set, apply := requestECE(tc.local, tc.remote)
		if set != tc.set || apply != tc.apply {
			t.Errorf("requestECE(%+v, %+v) = %+v, %v; want %+v, %v", tc.local, tc.remote, set, apply, tc.set, tc.apply)
		}
	}
	if got := replyECE(mlx, ECE{}); got != (uverbs.ECE{VendorID: uverbs.VendorMellanox}) {
		t.Errorf("REP without ECE: %+v", got)
	}
	if got := replyECE(mlx, ECE{VendorID: uverbs.VendorMellanox, AttrMod: 9}); got != (uverbs.ECE{VendorID: uverbs.VendorMellanox, Options: 9}) {
		t.Errorf("REP with ECE: %+v", got)
	}
	for _, err := range []error{unix.EOPNOTSUPP, uverbs.ErrNotSupported, fmt.Errorf("set ECE of QP 0x11: %w", unix.EOPNOTSUPP)} {
		if ignoreNoECE(err) != nil {
			t.Errorf("%v not ignored", err)
		}
	}
	if ignoreNoECE(unix.EINVAL) == nil {
		t.Error("EINVAL ignored")
	}
}
