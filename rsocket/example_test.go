package rsocket_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"

	"github.com/goverbs/goverbs/rsocket"
)

// net/http over RDMA: the server serves on an rsocket Listener, the client's Transport dials rsockets. Both
// sides speak librdmacm's rsockets protocol, so either could be a C program (rstream, or any program under
// LD_PRELOAD=librspreload.so). The address must be an IP of a netdev that carries an RDMA device (rdma_cm has
// no route over loopback).
func Example_http() {
	ln, err := rsocket.Listen("rdma", "10.233.0.1:8080")
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello over RDMA, %s\n", r.RemoteAddr)
	})}
	go srv.Serve(ln)
	defer srv.Close()

	var d rsocket.Dialer // nil-value options: librdmacm's defaults
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			return d.DialContext(ctx, "rdma", addr) // http dials "tcp": the same address over RDMA
		},
	}}
	resp, err := client.Get("http://10.233.0.1:8080/")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(body))
}

// Options size a connection as librdmacm's rsetsockopt does; a size the device or the process cannot give is a
// *rsocket.LimitError before anything is allocated.
func ExampleDialer() {
	d := rsocket.Dialer{Options: rsocket.Options{SendBuffer: 1 << 20, RecvBuffer: 1 << 20, InlineSize: 256}}
	c, err := d.DialContext(context.Background(), "rdma", "10.233.0.1:7471")
	if err != nil {
		var le *rsocket.LimitError
		if errors.As(err, &le) {
			log.Fatalf("the options ask too much: %v", le)
		}
		log.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("ping"))
}
