package pingpong

import (
	"fmt"
	"io"
	"net"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
)

// doneMsg is what the client sends last: "done" and its NUL.
const doneMsg = "done\x00"

// clientExchange connects to the server and swaps one record each way (pp_client_exch_dest of rc, uc and
// ud_pingpong).
func clientExchange(server string, port int, my dest, stderr io.Writer) (*dest, bool) {
	conn, ok := dial(server, port, stderr)
	if !ok {
		return nil, false
	}
	defer conn.Close()
	if _, err := conn.Write(my.encode()); err != nil {
		fmt.Fprintf(stderr, "Couldn't send local address\n")
		return nil, false
	}
	msg := make([]byte, msgSize)
	if _, err := io.ReadFull(conn, msg); err != nil {
		// A read that met the end of the stream (the server gave up, e.g. when its QP could not reach RTS, as on
		// iWARP) sets no errno in C, so perror prints the one left over: ENOSPC, from the probe libibverbs makes
		// at every ibv_open_device (has_ioctl_write's UVERBS_METHOD_INVOKE_WRITE, refused on purpose), the last
		// failed system call before the exchange (strace of rdma-core 44's and 65's client on siw0).
		fmt.Fprintf(stderr, "client read/write: %s\n", cstd.Strerror(cstd.ErrnoOf(err, unix.ENOSPC)))
		fmt.Fprintf(stderr, "Couldn't read/write remote address\n")
		return nil, false
	}
	if _, err := conn.Write([]byte(doneMsg)); err != nil {
		fmt.Fprintf(stderr, "client read/write: %s\n", cstd.Strerror(cstd.ErrnoOf(err, unix.EPIPE)))
		fmt.Fprintf(stderr, "Couldn't read/write remote address\n")
		return nil, false
	}
	rem := decodeDest(msg)
	return &rem, true
}

// serverExchange waits for one client, reads its record, connects the QP to it with connect (whose error text
// is printed), sends its own record and waits for "done" (pp_server_exch_dest of rc, uc and ud_pingpong).
func serverExchange(port int, my dest, connect func(rem *dest) error, stderr io.Writer) (*dest, bool) {
	conn, ok := acceptOne(port, stderr)
	if !ok {
		return nil, false
	}
	defer conn.Close()
	msg := make([]byte, msgSize)
	if n, err := io.ReadFull(conn, msg); err != nil {
		fmt.Fprintf(stderr, "server read: %s\n", cstd.Strerror(cstd.ErrnoOf(err, unix.ECONNRESET)))
		fmt.Fprintf(stderr, "%d/%d: Couldn't read remote address\n", n, msgSize)
		return nil, false
	}
	rem := decodeDest(msg)
	if err := connect(&rem); err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		fmt.Fprintf(stderr, "Couldn't connect to remote QP\n")
		return nil, false
	}
	if _, err := conn.Write(my.encode()); err != nil {
		fmt.Fprintf(stderr, "Couldn't send/recv local address\n")
		return nil, false
	}
	// The client answers with "done" and its NUL: exactly 5 bytes in one read.
	if n, err := conn.Read(msg); err != nil || n != len(doneMsg) {
		fmt.Fprintf(stderr, "Couldn't send/recv local address\n")
		return nil, false
	}
	return &rem, true
}

// srqClientExchange swaps srq_pingpong's maxQP records each way: all of ours, then all of the server's (read
// until complete), then "done". As in rdma-core, a failed read ends the exchange early with the records read
// so far (the rest zero), and a failed "done" is only reported: the run goes on either way.
func srqClientExchange(server string, port int, my []dest, stderr io.Writer) ([]dest, bool) {
	conn, ok := dial(server, port, stderr)
	if !ok {
		return nil, false
	}
	defer conn.Close()
	for i := range my {
		if _, err := conn.Write(my[i].encode()); err != nil {
			fmt.Fprintf(stderr, "Couldn't send local address\n")
			return nil, false
		}
	}
	rem, ok := readRecords(conn, len(my), "client", stderr)
	if !ok {
		return rem, true
	}
	if _, err := conn.Write([]byte(doneMsg)); err != nil {
		fmt.Fprintf(stderr, "client write: %s\n", cstd.Strerror(cstd.ErrnoOf(err, unix.EPIPE)))
	}
	return rem, true
}

// readRecords reads srq_pingpong's n records from conn, each read until complete; side ("client" or "server")
// names the reader in the messages of a failed read. On a failure ok is false and rem has the records read so
// far, the rest zero.
func readRecords(conn net.Conn, n int, side string, stderr io.Writer) (rem []dest, ok bool) {
	rem = make([]dest, n)
	msg := make([]byte, msgSize)
	for i := range rem {
		if got, err := readFull(conn, msg); err != nil {
			fmt.Fprintf(stderr, "%s read: %s\n", side, cstd.Strerror(cstd.ErrnoOf(err, unix.ECONNRESET)))
			fmt.Fprintf(stderr, "%d/%d: Couldn't read remote address [%d]\n", got, msgSize, i)
			return rem, false
		}
		rem[i] = decodeDest(msg)
	}
	return rem, true
}

// srqServerExchange is srq_pingpong's server side: read the client's records, connect the QPs with connect
// (whose error text is printed), send ours, and wait for "done" in one read. As in rdma-core, a failed read
// of the client's records returns those read so far without connecting.
func srqServerExchange(port int, my []dest, connect func(rem []dest) error, stderr io.Writer) ([]dest, bool) {
	conn, ok := acceptOne(port, stderr)
	if !ok {
		return nil, false
	}
	defer conn.Close()
	rem, ok := readRecords(conn, len(my), "server", stderr)
	if !ok {
		return rem, true
	}
	if err := connect(rem); err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		fmt.Fprintf(stderr, "Couldn't connect to remote QP\n")
		return nil, false
	}
	for i := range my {
		if _, err := conn.Write(my[i].encode()); err != nil {
			fmt.Fprintf(stderr, "Couldn't send local address\n")
			return nil, false
		}
	}
	n, err := conn.Read(make([]byte, msgSize))
	if err != nil || n != len(doneMsg) {
		// rdma-core reports this with perror("client write"); a short read leaves errno at 0.
		errno := unix.Errno(0)
		if err != nil && err != io.EOF {
			errno = cstd.ErrnoOf(err, unix.ECONNRESET)
		}
		fmt.Fprintf(stderr, "client write: %s\n", cstd.Strerror(errno))
		return nil, false
	}
	return rem, true
}
