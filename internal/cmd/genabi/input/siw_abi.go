//go:build ignore

// cgo -godefs input for <rdma/siw-abi.h>. internal/cmd/genabi appends the type,
// constant and size declarations it derives from the header itself; this file
// only holds the C preamble.

package abi

/*
#include <rdma/siw-abi.h>
*/
import "C"
