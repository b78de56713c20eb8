package rsocket_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"time"

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

// A header and a body sent as one stream without joining them first (rwritev), read back into two buffers
// (rreadv) after a look at the first bytes (MSG_PEEK).
func ExampleConn_WriteBuffers() {
	nc, err := rsocket.Dial("rdma", "10.233.0.1:7471")
	if err != nil {
		log.Fatal(err)
	}
	c := nc.(*rsocket.Conn)
	defer c.Close()
	hdr, body := []byte("LEN 5\n"), []byte("hello")
	if _, err := c.WriteBuffers(net.Buffers{hdr, body}); err != nil {
		log.Fatal(err)
	}
	first := make([]byte, 4)
	if _, err := c.Peek(first); err != nil { // the answer's first bytes, left in place
		log.Fatal(err)
	}
	h, b := make([]byte, 6), make([]byte, 64)
	n, err := c.ReadBuffers(net.Buffers{h, b}) // what has arrived, h first
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q: %d bytes\n", first, n)
}

// The options a connection runs with (rgetsockopt), and what may change once it exists (rsetsockopt).
func ExampleConn_SocketOptions() {
	nc, err := rsocket.Dial("rdma", "10.233.0.1:7471")
	if err != nil {
		log.Fatal(err)
	}
	c := nc.(*rsocket.Conn)
	defer c.Close()
	o := c.SocketOptions()
	fmt.Println("buffers", o.SendBuffer, o.RecvBuffer, "inline", o.InlineSize, "queues", o.SQSize, o.RQSize)
	c.SetKeepAlivePeriod(30 * time.Second)
	c.SetKeepAlive(true)
	if err := c.SetReadBuffer(1 << 20); err != nil { // fixed at creation: Options.RecvBuffer
		var oe *rsocket.OptionError
		fmt.Println(errors.As(err, &oe), oe.Field)
	}
	if err := c.SocketError(); err != nil { // SO_ERROR
		log.Print(err)
	}
}
