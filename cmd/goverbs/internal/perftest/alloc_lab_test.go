package perftest

import (
	"fmt"
	"io"
	"testing"

	"github.com/goverbs/goverbs/test/labtest"
	"github.com/goverbs/goverbs/uverbs"
)

// labCtx opens the lab device and builds one side's resources the way Run does (without the TCP exchange).
func labCtx(t *testing.T, verb Verb, kind Kind, conn int, server bool, iters uint64) *session {
	t.Helper()
	p := &Params{Verb: verb, Kind: kind}
	args := []string{"-n", fmt.Sprint(iters), "-c", connStr[conn]}
	if !server {
		args = append(args, "peer")
	}
	if rc := parse(p, "ib_test", args, io.Discard, io.Discard); rc >= 0 {
		t.Fatalf("parse %v: %d", args, rc)
	}
	dev, err := uverbs.DeviceByName(labtest.Device())
	noErr(t, err)
	vc, err := dev.Open()
	noErr(t, err)
	c := &session{p: p, dev: dev, vc: vc}
	t.Cleanup(c.close)
	pa, err := vc.QueryPort(p.IBPort)
	noErr(t, err)
	if pa.LinkLayer == uverbs.LinkLayerEthernet {
		p.GIDIndex = 0
	}
	p.InlineSize = 0
	p.OutReads = 1
	if verb == VerbRead || verb == VerbAtomic {
		p.OutReads = 16
	}
	p.CurrMTU = int(pa.ActiveMTU)
	if conn == ConnUD && p.Size > mtuBytes(p.CurrMTU) {
		p.Size = mtuBytes(p.CurrMTU)
	}
	noErr(t, c.initResources(io.Discard))
	noErr(t, c.setUpConnection(pa))
	n := max(p.Iters*uint64(p.NumQPs), 1)
	c.tposted, c.tcompleted = make([]int64, n), make([]int64, n)
	return c
}

// labPair connects a client and a server context back to back.
func labPair(t *testing.T, verb Verb, kind Kind, conn int, iters uint64) (cli, srv *session) {
	cli = labCtx(t, verb, kind, conn, false, iters)
	srv = labCtx(t, verb, kind, conn, true, iters)
	cli.rem[0], srv.rem[0] = srv.my[0], cli.my[0]
	noErr(t, cli.connect(io.Discard))
	noErr(t, srv.connect(io.Discard))
	return cli, srv
}

// TestLabMeasuredLoopsAllocateNothing runs every measured loop on the lab device and checks that a whole run
// (set-up of the work requests, the loop, the completions) allocates nothing.
func TestLabMeasuredLoopsAllocateNothing(t *testing.T) {
	labtest.Require(t)
	const iters = 50
	oneSided := []struct {
		name string
		verb Verb
		kind Kind
	}{{"write_bw", VerbWrite, KindBW}, {"read_bw", VerbRead, KindBW}, {"atomic_bw", VerbAtomic, KindBW},
		{"read_lat", VerbRead, KindLat}, {"atomic_lat", VerbAtomic, KindLat}}
	for _, tc := range oneSided {
		t.Run(tc.name, func(t *testing.T) {
			cli, _ := labPair(t, tc.verb, tc.kind, ConnRC, iters)
			var err error
			allocs := testing.AllocsPerRun(3, func() {
				cli.setSendWQEs()
				if tc.kind == KindBW {
					_, err = cli.runBW(io.Discard, nil)
				} else {
					_, err = cli.runLat(io.Discard)
				}
			})
			noErr(t, err)
			eq(t, 0.0, allocs)
		})
	}
	twoSided := []struct {
		name string
		verb Verb
		kind Kind
		conn int
	}{{"write_lat", VerbWrite, KindLat, ConnRC}, {"send_bw", VerbSend, KindBW, ConnRC},
		{"send_lat", VerbSend, KindLat, ConnRC}, {"send_bw_ud", VerbSend, KindBW, ConnUD}}
	for _, tc := range twoSided {
		t.Run(tc.name, func(t *testing.T) {
			cli, srv := labPair(t, tc.verb, tc.kind, tc.conn, iters)
			cli.setSendWQEs()
			if tc.kind == KindLat { // the server sends too in a ping-pong
				srv.setSendWQEs()
			}
			start, ready, done := make(chan struct{}), make(chan struct{}), make(chan error)
			go func() {
				for range start {
					var err error
					if tc.verb == VerbSend {
						if err = srv.setRecvWQEs(io.Discard); err != nil {
							ready <- struct{}{}
							done <- err
							continue
						}
					}
					ready <- struct{}{}
					switch tc.name {
					case "write_lat":
						_, err = srv.runLatWrite(io.Discard)
					case "send_lat":
						_, err = srv.runLatSend(io.Discard)
					default:
						_, err = srv.runBWServer(io.Discard, nil)
					}
					done <- err
				}
			}()
			defer close(start)
			var cerr, serr error
			allocs := testing.AllocsPerRun(3, func() {
				if tc.name == "send_lat" { // both sides receive in a send ping-pong
					if cerr = cli.setRecvWQEs(io.Discard); cerr != nil {
						return
					}
				}
				start <- struct{}{}
				<-ready
				cli.setSendWQEs()
				switch tc.name {
				case "write_lat":
					_, cerr = cli.runLatWrite(io.Discard)
				case "send_lat":
					_, cerr = cli.runLatSend(io.Discard)
				default:
					_, cerr = cli.runBW(io.Discard, nil)
				}
				serr = <-done
			})
			noErr(t, cerr)
			noErr(t, serr)
			eq(t, 0.0, allocs)
		})
	}
}
