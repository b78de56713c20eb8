// Package faults holds the lab's fault-injection tests (issue #14): RC and UD traffic between two hosts in one
// VM (test/labtest.TwoHosts) through tc netem loss, duplication, corruption, reordering and delay, a partition
// longer than the retry budget, the port going down and up under an open device, and the device deleted under
// traffic. Each test checks the data end to end and that the application is told what happened, as the verbs
// say it should be.
//
// The short versions run in `make test`; `make faults` runs them longer (GOVERBS_FAULTS_SCALE multiplies the
// traffic).
package faults
