//go:build ignore

// cgo -godefs input for <rdma/mlx5_user_ioctl_cmds.h>. internal/cmd/genabi appends the type,
// constant and size declarations it derives from the header itself; this file
// only holds the C preamble.

package abi

/*
#include <rdma/mlx5_user_ioctl_cmds.h>
*/
import "C"
