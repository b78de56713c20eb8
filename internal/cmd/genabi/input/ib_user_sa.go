//go:build ignore

// cgo -godefs input for <rdma/ib_user_sa.h>. internal/cmd/genabi appends the type,
// constant and size declarations it derives from the header itself; this file
// only holds the C preamble.

package abi

/*
#include <rdma/ib_user_sa.h>
*/
import "C"
