// Package faults holds the lab's fault campaign (issue #14): processes killed at random moments with the
// kernel's reclaim checked, hostile peers on the tools' TCP side channels, the port going down and up under an
// open device, and — between two hosts in one VM (test/labtest.TwoHosts, Linux 7.1+) — RC and UD traffic
// through tc netem loss, duplication, corruption, reordering and delay, a partition longer than the retry
// budget, and the device deleted under traffic. Each test checks the data end to end and that the
// application is told what happened, as the verbs say it should be.
//
// The short versions run in `make test`; `make faults` runs them longer (GOVERBS_FAULTS_SCALE multiplies the
// traffic and the kills; GOVERBS_FAULTS_SEED repeats a kill campaign's moments).
package faults
