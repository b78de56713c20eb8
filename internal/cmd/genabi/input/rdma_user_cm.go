//go:build ignore

// cgo -godefs input for <rdma/rdma_user_cm.h>. internal/cmd/genabi appends the type,
// constant and size declarations it derives from the header itself; this file
// only holds the C preamble.

package abi

/*
#include <rdma/rdma_user_cm.h>
*/
import "C"
