package rstream

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/rsocket"
	"golang.org/x/sys/unix"
)

// riostream (librdmacm/examples/riostream.c, v44) shares rstream's options,
// size table, result rows and connection set-up, with an iomap of one entry
// (RDMA_IOMAPSIZE 1). Each test maps the first size bytes of the buffer at
// offset 0 (riomap), syncs with a 16-byte message each way (client first),
// then per iteration one side riowrites the buffer count times into the
// peer's mapping, the last time with the running marker in its last byte
// (and, with -T v, the counter pattern in the rest), and waits for the
// peer's answer by polling the last byte of its own buffer.

// sendIO is riostream's send_xfer: riowrite the buffer to the peer's offset 0.
func (s *state) sendIO(c *rsocket.Conn, size int) error {
	if _, err := c.IOWrite(s.buf[:size], 0); err != nil {
		s.perror("riowrite", err)
		return err
	}
	return nil
}

// recvIO is riostream's recv_xfer: wait for the marker in the poll byte,
// then (-T v) check the size-1 bytes before it. The C tool spins for ever on
// a dead peer; here the wait ends with the connection's error.
func (s *state) recvIO(c *rsocket.Conn, size int, marker byte) error {
	if err := c.WaitIOByte(s.buf, size-1, marker); err != nil {
		// The C tool never gets here (it spins for ever), so the line is ours: the errno as the
		// other failures print it (a peer that closed is ECONNRESET, as in recv_msg), and then what
		// rsocket said, so that a failed completion shows its status rather than only EIO.
		errno := cstd.ErrnoOf(err, unix.EIO)
		if errors.Is(err, io.EOF) {
			errno = unix.ECONNRESET
		}
		fmt.Fprintf(s.stderr, "poll byte: %s (%v)\n", cstd.Strerror(errno), err)
		return err
	}
	if s.verify {
		return s.check(s.buf[:size-1])
	}
	return nil
}

// runIOTest is riostream's run_test.
func (s *state) runIOTest() error {
	c, ok := s.conn.(*rsocket.Conn)
	if !ok {
		return errors.New("riostream needs rsockets")
	}
	size := s.size
	if size > 0 {
		s.buf[size-1] = 0xff
	}
	if _, err := c.IOMap(s.buf[:max(size, 0)], 0); err != nil {
		s.perror("riomap", err)
		return err
	}
	client := s.dst != ""
	first, second := s.recvMsg, s.sendMsg
	if client {
		first, second = s.sendMsg, s.recvMsg
	}
	if err := first(16); err != nil {
		return err
	}
	if err := second(16); err != nil {
		return err
	}
	var marker byte
	send := func() error {
		for range s.count - 1 {
			if err := s.sendIO(c, size); err != nil {
				return err
			}
		}
		s.buf[size-1] = marker
		marker++
		if s.verify {
			s.format(s.buf[:size-1])
		}
		return s.sendIO(c, size)
	}
	start := time.Now()
	for range s.iterations {
		if client {
			if err := send(); err != nil {
				return err
			}
			if err := s.recvIO(c, size, marker); err != nil {
				return err
			}
			marker++
		} else {
			if err := s.recvIO(c, size, marker); err != nil {
				return err
			}
			marker++
			if err := send(); err != nil {
				return err
			}
		}
	}
	s.showPerf(time.Since(start))
	if err := c.IOUnmap(s.buf[:size]); err != nil {
		s.perror("riounmap", err)
		return err
	}
	return nil
}

// MainRiostream runs riostream: prog is argv[0], args the rest; the result
// is the exit status (0, 1 for usage, 255 when a step failed).
func MainRiostream(prog string, args []string, stdout, stderr io.Writer) int {
	return mainRS(prog, args, stdout, stderr, true)
}
