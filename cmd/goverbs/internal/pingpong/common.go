package pingpong

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/uverbs"
)

const (
	recvWRID = 1
	sendWRID = 2
)

// findDevice picks the device named name, or the first one when name is empty, printing the tools' messages
// when there is none.
func findDevice(name string, stderr io.Writer) (uverbs.Device, bool) {
	devs, err := deviceList()
	if err != nil {
		fmt.Fprintf(stderr, "Failed to get IB devices list: %s\n", cstd.Strerror(cstd.ErrnoOf(err, unix.ENOSYS)))
		return uverbs.Device{}, false
	}
	if name == "" {
		if len(devs) == 0 {
			fmt.Fprintf(stderr, "No IB devices found\n")
			return uverbs.Device{}, false
		}
		return devs[0], true
	}
	for _, d := range devs {
		if d.Name == name {
			return d, true
		}
	}
	fmt.Fprintf(stderr, "IB device %s not found\n", name)
	return uverbs.Device{}, false
}

// deviceList is ibv_get_device_list: the devices, or ENOSYS where libibverbs finds neither RDMA netlink (no
// ib_core: no /sys/class/infiniband) nor /sys/class/infiniband_verbs.
func deviceList() ([]uverbs.Device, error) {
	devs, err := uverbs.Devices()
	if err != nil || len(devs) > 0 {
		return devs, err
	}
	_, errCore := os.Stat("/sys/class/infiniband")
	_, errVerbs := os.Stat("/sys/class/infiniband_verbs")
	if errCore != nil && errVerbs != nil {
		return nil, fmt.Errorf("get device list: %w", unix.ENOSYS)
	}
	return devs, nil
}

// queryGID reads the port's GID at index as libibverbs' ibv_query_gid does: an empty table entry (ENODATA)
// reads as the zero GID, not as an error.
func queryGID(ctx *uverbs.Context, port, index int) (uverbs.GID, error) {
	g, err := ctx.QueryGID(port, index)
	if err != nil && !errors.Is(err, unix.ENODATA) {
		return uverbs.GID{}, err
	}
	return g.GID, nil
}

// dial connects to the server's TCP port, printing the tools' messages on failure.
func dial(server string, port int, stderr io.Writer) (net.Conn, bool) {
	conn, err := net.Dial("tcp", net.JoinHostPort(server, strconv.Itoa(port)))
	if err != nil {
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) {
			fmt.Fprintf(stderr, "Name or service not known for %s:%d\n", server, port)
			return nil, false
		}
		fmt.Fprintf(stderr, "Couldn't connect to %s:%d\n", server, port)
		return nil, false
	}
	return conn, true
}

// acceptOne listens on port and accepts a single client, printing the tools' messages on failure.
func acceptOne(port int, stderr io.Writer) (net.Conn, bool) {
	ln, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		fmt.Fprintf(stderr, "Couldn't listen to port %d\n", port)
		return nil, false
	}
	conn, err := ln.Accept()
	ln.Close()
	if err != nil {
		fmt.Fprintf(stderr, "accept() failed\n")
		return nil, false
	}
	return conn, true
}

// readFull reads len(buf) bytes as the srq tool's read loop does, returning how many arrived before an error
// or the end of the stream.
func readFull(conn net.Conn, buf []byte) (int, error) {
	n, err := io.ReadFull(conn, buf)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = io.EOF
	}
	return n, err
}

// report prints the two result lines every pingpong tool ends with, from the time the loop took.
func report(w io.Writer, elapsed time.Duration, size, iters int) {
	// rdma-core computes in float microseconds from gettimeofday.
	usec := float32(elapsed.Microseconds())
	bytes := int64(size) * int64(iters) * 2
	fmt.Fprintf(w, "%d bytes in %.2f seconds = %.2f Mbit/sec\n", bytes, float64(usec)/1000000., float64(bytes)*8./float64(usec))
	fmt.Fprintf(w, "%d iters in %.2f seconds = %.2f usec/iter\n", iters, float64(usec)/1000000., float64(usec)/float64(iters))
}

// printDest prints a "local address" or "remote address" line; sep stands before " GID" (ud_pingpong's local
// line has a colon there, the others a comma).
func printDest(w io.Writer, label string, d *dest, sep string) {
	fmt.Fprintf(w, "  %s LID 0x%04x, QPN 0x%06x, PSN 0x%06x%s GID %s\n", label, d.lid, d.qpn, d.psn, sep, cstd.InetNtop6(d.gid))
}

// finish is the end of rc, uc, ud and srq_pingpong's main after the loop: the report, the client's -c check of
// payload, the acknowledgement of the CQ's numEvents events, pp_close_ctx's steps and the buffer's release. It
// returns the exit status.
func finish(o *options, stdout, stderr io.Writer, elapsed time.Duration, numEvents int, cq *uverbs.CQ,
	payload []byte, steps []closeStep, buf *uverbs.Buffer) int {
	report(stdout, elapsed, o.size, o.iters)
	if o.server == "" && o.validate {
		checkPages(stdout, payload, os.Getpagesize())
	}
	cq.AckEvents(numEvents)
	if !closeAll(stderr, steps) {
		return 1
	}
	buf.Close()
	return 0
}

// markPages and checkPages are the tools' -c (validate) steps: the client stores i / page_size % sizeof(char),
// which is always 0, in the first byte of every page of the payload; the server reports pages where that byte
// differs after the run.
func markPages(payload []byte, pageSize int) {
	for i := 0; i < len(payload); i += pageSize {
		payload[i] = 0
	}
}

func checkPages(w io.Writer, payload []byte, pageSize int) {
	for i := 0; i < len(payload); i += pageSize {
		if payload[i] != 0 {
			fmt.Fprintf(w, "invalid data in page %d\n", i/pageSize)
		}
	}
}

// closeStep is one destroy call of a tool's pp_close_ctx and the message it prints when it fails.
type closeStep struct {
	close func() error
	msg   string
}

// closeAll runs the steps in order and stops at the first failure, as pp_close_ctx does.
func closeAll(stderr io.Writer, steps []closeStep) bool {
	for _, s := range steps {
		if err := s.close(); err != nil {
			fmt.Fprintf(stderr, "%s\n", s.msg)
			return false
		}
	}
	return true
}

// waitCQEvent is the events (-e) step at the top of the loops: wait for the channel, check the CQ, re-arm.
func waitCQEvent(ch *uverbs.CompChannel, cq *uverbs.CQ, stderr io.Writer) bool {
	evcq, err := ch.GetEvent(context.Background())
	if err != nil {
		fmt.Fprintf(stderr, "Failed to get cq_event\n")
		return false
	}
	if evcq != cq {
		fmt.Fprintf(stderr, "CQ event for unknown CQ %p\n", evcq)
		return false
	}
	if err := cq.ReqNotify(false); err != nil {
		fmt.Fprintf(stderr, "Couldn't request CQ notification\n")
		return false
	}
	return true
}

// startRecv is main()'s steps after pp_init_ctx in rc, uc, ud and srq_pingpong: post rx_depth receives (post
// returns how many it posted), arm the CQ with -e, and query the port.
func startRecv(post func(int) int, rxDepth int, ctx *uverbs.Context, cq *uverbs.CQ, o *options,
	stderr io.Writer) (routs int, pa *uverbs.PortAttr, ok bool) {
	routs = post(rxDepth)
	if routs < rxDepth {
		fmt.Fprintf(stderr, "Couldn't post receive (%d)\n", routs)
		return 0, nil, false
	}
	if o.events {
		if err := cq.ReqNotify(false); err != nil {
			fmt.Fprintf(stderr, "Couldn't request CQ notification\n")
			return 0, nil, false
		}
	}
	pa, err := ctx.QueryPort(o.ibPort)
	if err != nil {
		fmt.Fprintf(stderr, "Couldn't get port info\n")
		return 0, nil, false
	}
	return routs, pa, true
}

// pingLoop is the main loop of rc, uc, ud and srq_pingpong: until iters sends and iters receives completed,
// wait for a CQ event (-e) or spin on the CQ, and hand each completion (and how many the poll returned) to
// parse, which counts them. It returns the time the loop took and the number of CQ events to acknowledge.
func pingLoop(o *options, ch *uverbs.CompChannel, cq *uverbs.CQ, wc []uverbs.WC,
	parse func(wc *uverbs.WC, ne int, scnt, rcnt *int) bool, stderr io.Writer) (time.Duration, int, bool) {
	start := time.Now()
	rcnt, scnt, numEvents := 0, 0, 0
	for rcnt < o.iters || scnt < o.iters {
		if o.events {
			if !waitCQEvent(ch, cq, stderr) {
				return 0, 0, false
			}
			numEvents++
		}
		ne := 0
		for {
			var perr error
			ne, perr = cq.Poll(wc)
			if perr != nil {
				fmt.Fprintf(stderr, "poll CQ failed %d\n", -1)
				return 0, 0, false
			}
			if o.events || ne >= 1 {
				break
			}
		}
		for i := 0; i < ne; i++ {
			if !parse(&wc[i], ne, &scnt, &rcnt) {
				return 0, 0, false
			}
		}
	}
	return time.Since(start), numEvents, true
}
