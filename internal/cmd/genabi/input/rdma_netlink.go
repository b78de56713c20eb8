//go:build ignore

// cgo -godefs input for <rdma/rdma_netlink.h>. internal/cmd/genabi appends the type,
// constant and size declarations it derives from the header itself; this file
// only holds the C preamble.

package abi

/*
#include <linux/netlink.h> // RDMA_NLA_TYPE_MASK uses NLA_F_NESTED and NLA_F_NET_BYTEORDER; the header does not include it
#include <rdma/rdma_netlink.h>
*/
import "C"
