// Package verbs is the vocabulary of the RDMA data path: the values a program builds and reads on every post
// and poll — scatter/gather elements, send and receive work requests, work completions — and the enums and
// capacities of queue pairs. It is a leaf package (it imports no other public goverbs package) so that the verbs
// core (package uverbs) and every provider share one definition; package uverbs re-exports each name
// (uverbs.SendWR is verbs.SendWR), and most programs never import this package directly.
//
// Every enum has a String method giving its canonical name: the verbs specification's name without the C
// prefix ("RC", "RTS", "SEND", "RETRY_EXC_ERR"). The texts rdma-core's tools print (ibv_wc_status_str,
// ibv_port_state_str) belong to goverbs' tools, not to this package.
//
// The values are plain structs in caller-owned slices: posting and polling never allocate, and WC has exactly
// the kernel's struct ib_uverbs_wc layout (48 bytes).
package verbs
