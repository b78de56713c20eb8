package siw

import (
	"testing"

	"github.com/goverbs/goverbs/internal/provider"
)

// siw's rdma-core provider has no set_ece, query_ece, modify_qp_rate_limit, query_rt_values or alloc_null_mr op,
// so libibverbs answers EOPNOTSUPP for each; this provider implements none of the optional interfaces, so the
// core answers the same (uverbs.TestOptionalVerbsNotSupported; on rxe in the lab against libibverbs itself,
// conformance.TestRefusalsMatchLibibverbs).
func TestNoOptionalVerbs(t *testing.T) {
	if ops := provider.OptionalOps((*context)(nil), (*qp)(nil)); len(ops) != 0 {
		t.Errorf("siw implements %v, which its rdma-core provider lacks", ops)
	}
}
