package siw

import (
	"testing"

	"github.com/goverbs/goverbs/internal/provider"
)

// siw's rdma-core provider has no set_ece, query_ece, modify_qp_rate_limit, query_rt_values, alloc_null_mr,
// create_wq, create_rwq_ind_table, alloc_dm, import_dm or reg_dmabuf_mr op,
// so libibverbs answers EOPNOTSUPP for each; this provider implements none of the optional interfaces, so the
// core answers the same (uverbs.TestOptionalVerbsNotSupported, uverbs.TestWQNotSupported, uverbs.TestDMNotSupported,
// uverbs.TestImportDMNotSupported, uverbs.TestDmabufMRNotSupported; on rxe in the lab against libibverbs itself,
// conformance.TestRefusalsMatchLibibverbs).
func TestNoOptionalVerbs(t *testing.T) {
	if ops := provider.OptionalOps((*context)(nil), (*qp)(nil)); len(ops) != 0 {
		t.Errorf("siw implements %v, which its rdma-core provider lacks", ops)
	}
}
