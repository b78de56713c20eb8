// Package siwlab checks the lab's soft-iWARP device with rdma-core's own C tools: the lab run with
// GOVERBS_LAB_PROVIDER=siw (labsuite -provider siw) has siw0 on veth0, from a siw.ko the lab builds out of
// tree from Debian's source (test/lab's EnsureSIW). On the default rxe lab the tests skip.
//
//	go run ./test/lab/cmd/labsuite -provider siw -kernels 6.1 -j 1 ./test/siwlab
package siwlab
