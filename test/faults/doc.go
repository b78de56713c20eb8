// Package faults holds the lab's fault campaign (issue #14): processes killed at random moments with the
// kernel's reclaim checked, hostile peers on the tools' TCP side channels, the port going down and up under an
// open device, and — between two hosts in one VM (test/labtest.TwoHosts, Linux 7.1+) — RC and UD traffic
// through tc netem loss, duplication, corruption, reordering and delay, a partition longer than the retry
// budget, the device deleted under traffic, and the soak: checksummed RC SEND and RDMA WRITE streams through
// netem loss, goverbs against rdma-core's libibverbs (a test-only C peer, test/cpeer/soakpeer.c) and against
// itself, with the resource curve of both processes. Each test checks the data end to end and that the
// application is told what happened, as the verbs say it should be.
//
// The short versions run in `make test`; `make faults` runs them longer (GOVERBS_FAULTS_SCALE multiplies the
// traffic and the kills; GOVERBS_FAULTS_SEED repeats a kill campaign's moments), `make soak` runs the soak
// (GOVERBS_SOAK_BYTES per leg, GOVERBS_SOAK_NETEM).
package faults
