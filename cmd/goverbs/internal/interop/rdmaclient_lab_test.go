package interop_test

import (
	"fmt"
	"github.com/goverbs/goverbs/test/interop"
	"testing"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/rdmaclient"
	"github.com/goverbs/goverbs/test/labtest"
)

var (
	rdmaServerTool = ppTool{"rdma_server", rdmaclient.MainServer}
	rdmaClientTool = ppTool{"rdma_client", rdmaclient.MainClient}
)

func TestLabRdmaServerClientInterop(t *testing.T) {
	labtest.Require(t)
	interop.NeedTool(t, "rdma_server", "rdmacm-utils")
	port := interop.Port(800)
	for _, goServer := range []bool{false, true} {
		port++
		p := port
		t.Run(fmt.Sprintf("goServer=%v", goServer), func(t *testing.T) {
			serve, connect := cPP, goPP
			if goServer {
				serve, connect = goPP, cPP
			}
			done := make(chan ppResult, 1)
			go func() { done <- serve(rdmaServerTool, []string{"-s", labIP, "-p", interop.Itoa(p)}) }()
			if err := interop.WaitCMListening(labtest.Device(), uint16(p), 60e9); err != nil {
				t.Fatal(err)
			}
			c := connect(rdmaClientTool, []string{"-s", labIP, "-p", interop.Itoa(p)})
			s := <-done
			if c.rc != 0 || s.rc != 0 || c.out != "rdma_client: start\nrdma_client: end 0\n" ||
				s.out != "rdma_server: start\nrdma_server: end 0\n" {
				t.Fatalf("client rc %d %q %q\nserver rc %d %q %q", c.rc, c.out, c.err, s.rc, s.out, s.err)
			}
		})
	}
}

func TestLabRdmaClientErrorsMatchC(t *testing.T) {
	labtest.Require(t)
	interop.NeedTool(t, "rdma_client", "rdmacm-utils")
	for _, args := range [][]string{
		{"-x"},
		{"-s", labIP, "-p", interop.Itoa(interop.Port(810))}, // no listener: rdma_connect: Connection refused
		{}, // 127.0.0.1: rdma_create_ep: No such device
	} {
		t.Run(fmt.Sprint(args), func(t *testing.T) {
			c := cPP(rdmaClientTool, args)
			g := goPP(rdmaClientTool, args)
			if c.rc != g.rc || c.out != g.out || c.err != g.err {
				t.Errorf("C: rc %d\n%s%s\nGo: rc %d\n%s%s", c.rc, c.out, c.err, g.rc, g.out, g.err)
			}
		})
	}
}
