package mlx5

import "github.com/goverbs/goverbs/internal/rdmaerr"

// ErrNotSupported is goverbs' one not-supported sentinel (the same value as uverbs.ErrNotSupported):
// errors.Is(err, ErrNotSupported) and errors.Is(err, errors.ErrUnsupported) hold for every error this provider
// returns for a feature it, the device or the kernel lacks.
var ErrNotSupported = rdmaerr.ErrNotSupported
