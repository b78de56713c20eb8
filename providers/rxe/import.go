package rxe

import "github.com/goverbs/goverbs/internal/provider"

var (
	_ provider.ContextImporter = driver{}
	_ provider.PDImporter      = (*context)(nil)
)

// ImportContext builds the context state on an imported command file: rxe keeps none from GET_CONTEXT (its
// rings and doorbells are the command file's), so the kernel's QUERY_CONTEXT is all there is to run. The
// kernel's rxe has no query_ucontext, so today that query is refused (EOPNOTSUPP), as rdma-core's rxe provider,
// which has no import_context, refuses the import; a kernel that gains it makes the import work unchanged.
func (driver) ImportContext(dev *provider.Device, query provider.Exec) (provider.Context, error) {
	if err := query(nil, nil); err != nil {
		return nil, err
	}
	return newContext(dev), nil
}

// ImportPD: an rxe PD has no provider state.
func (c *context) ImportPD(uint32) (provider.PD, error) { return pd{}, nil }
