package main

import "testing"

// parseRows reads rstream's rows whatever their size suffixes ("1k", "125k", "1m"), and only _lat/_bw rows.
func TestRowRE(t *testing.T) {
	out := []byte("name      bytes   xfers   iters   total       time     Gb/sec    usec/xfer\n64_lat    64      1       1k      125k        0.20s      0.01     101.62\n4k_bw     4k      10k     1       78m         2.01s      0.33     100.00\n1m_lat    1m      1       100     200m        2.50s      0.33   25041.04\ncustom    1000    50      1       97k         0.01s      0.08     102.73\n")
	r := parseRows(out)
	if len(r) != 3 || r[0].name != "64_lat" || r[1].usec != 100 || r[2].gbps != 0.33 {
		t.Fatalf("%+v", r)
	}
}
