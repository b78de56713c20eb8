// Package labdiff holds the lab tests that run goverbs' tool clones and the
// rdma-core C tools they mirror (rdma-core 65, Debian sid's, run from the
// lab's sid root by chroot) side by side on rxe0 in the lab VM and require
// identical output, errors and exit status. It has no non-test code.
//
//	go run ./test/lab/cmd/labsuite ./cmd/goverbs/internal/labdiff
package labdiff
