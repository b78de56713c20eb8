package hw

import "sync/atomic"

// A queue's tail (work requests retired by completions) is written by the goroutine polling the CQ, under the
// CQ's lock, and read by the goroutine posting to the queue, under the queue's lock (rdma-core reads wq->tail the
// same way, from post_send and post_recv, without the CQ lock). The read is an atomic load: a plain MOV on amd64,
// LDAR on arm64. The store must not become visible before the poller's loads of the retired entry (wr_id,
// wqe_head) that precede it, or a poster could overwrite the entry first: amd64's stores are ordered after earlier
// loads (TSO), so a plain store suffices there (tail_store_amd64.go); elsewhere, and in race builds where the
// detector needs the edge, it is an atomic store (STLR on arm64).

func loadTail(p *uint32) uint32 { return atomic.LoadUint32(p) }
