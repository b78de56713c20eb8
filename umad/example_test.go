package umad_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/goverbs/goverbs/umad"
)

// A PerfMgt GET of PortCounters, as perfquery sends it: the MAD's common header says what it asks for.
func ExampleNewPMAGet() {
	mad := umad.NewPMAGet(0x1234, umad.AttrPortCounters, 1)
	h, err := umad.ParseMADHdr(mad)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(mad), "bytes:", h)
	// Output: 256 bytes: class 0x04 v1 method 0x01 status 0x0000 tid 0x0000000000001234 attr 0x0012 mod 0x00000000
}

// Reading a port's PerfMgt counters (perfquery's job): open the port's umad device, register a PerfMgt
// agent, and Call its own port's QP1. On a RoCE port (rxe, mlx5 in Ethernet mode) the MAD goes by GRH to a
// GID, since RoCE has no LIDs.
func ExamplePort_Call() {
	p, err := umad.Open("rxe0", 1)
	if err != nil {
		log.Fatal(err) // no such device: *umad.Error, errors.Is(err, umad.ErrNoDevice)
	}
	defer p.Close()
	a, err := p.Register(umad.Registration{Class: umad.ClassPMA, ClassVersion: 1})
	if err != nil {
		log.Fatal(err)
	}
	var gid [16]byte // the port's GID at index 1 (/sys/class/infiniband/rxe0/ports/1/gids/1)
	addr := umad.Addr{QPN: 1, QKey: umad.QP1QKey, GRH: true, GIDIndex: 1, HopLimit: 255, GID: gid}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := p.Call(ctx, a, addr, umad.NewPMAGet(p.NewTID(), umad.AttrPortCounters, 1), time.Second, 2)
	if err != nil {
		log.Fatal(err) // umad.ErrTimeout: no answer; *umad.StatusError: the MAD layer's refusal
	}
	pc, err := umad.ParsePortCounters(resp)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("PortXmitData:", pc.PortXmitData, "PortRcvData:", pc.PortRcvData)
}
