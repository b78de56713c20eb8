// Package cpio writes archives in the "newc" (SVR4, no CRC) cpio format, the
// format the Linux kernel unpacks as an initramfs.
//
// Only what an initramfs needs is supported: directories, regular files,
// symbolic links and character/block device nodes. Inode numbers are
// assigned sequentially so that no two entries of one archive are taken for
// hard links of each other.
package cpio

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// Mode bits of the newc header (the same values as the st_mode bits).
const (
	TypeMask    = 0o170000
	TypeDir     = 0o040000
	TypeRegular = 0o100000
	TypeSymlink = 0o120000
	TypeChar    = 0o020000
	TypeBlock   = 0o060000
)

// Trailer is the name of the entry that ends every archive.
const Trailer = "TRAILER!!!"

// magic identifies a newc header.
const magic = "070701"

// headerLen is the size of a newc header: the magic and 13 eight-digit hex fields.
const headerLen = 6 + 13*8

// Header describes one archive entry.
type Header struct {
	Name     string // path inside the archive, without a leading "/"
	Mode     uint32 // type and permission bits, e.g. TypeRegular|0o755
	UID, GID uint32
	Mtime    uint32 // seconds since the epoch; 0 makes archives reproducible
	Size     int64  // length of the data that follows (regular files and symlink targets)
	DevMajor uint32 // for TypeChar and TypeBlock entries
	DevMinor uint32
}

// ErrWriteTooLong is returned when more data is written to an entry than its
// header's Size announced.
var ErrWriteTooLong = errors.New("cpio: write too long")

// Writer writes a newc archive to an underlying io.Writer. Call WriteHeader
// for each entry, write exactly Size bytes of data, and Close at the end.
type Writer struct {
	w         io.Writer
	off       int64 // bytes written to w so far
	remaining int64 // data bytes still owed for the current entry
	ino       uint32
	closed    bool
	err       error
}

// NewWriter returns a Writer that writes an archive to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// WriteHeader finishes the previous entry and starts a new one.
// It fails if the previous entry's data was short.
func (cw *Writer) WriteHeader(h *Header) error {
	if cw.err != nil {
		return cw.err
	}
	if cw.closed {
		return errors.New("cpio: write header after close")
	}
	if cw.remaining != 0 {
		return fmt.Errorf("cpio: previous entry is missing %d bytes of data", cw.remaining)
	}
	if err := cw.pad(); err != nil {
		return err
	}
	name := strings.TrimPrefix(h.Name, "/")
	if name == "" || strings.IndexByte(name, 0) >= 0 {
		return fmt.Errorf("cpio: invalid entry name %q", h.Name)
	}
	if h.Size < 0 || h.Size > 0xffffffff {
		return fmt.Errorf("cpio: entry %q: size %d out of range", name, h.Size)
	}
	switch h.Mode & TypeMask {
	case TypeRegular, TypeSymlink:
	case TypeDir, TypeChar, TypeBlock:
		if h.Size != 0 {
			return fmt.Errorf("cpio: entry %q: size %d for an entry without data", name, h.Size)
		}
	default:
		return fmt.Errorf("cpio: entry %q: unsupported mode %#o", name, h.Mode)
	}
	cw.ino++
	nlink := uint32(1)
	if h.Mode&TypeMask == TypeDir {
		nlink = 2
	}
	if err := cw.writeRaw(h, cw.ino, nlink, name); err != nil {
		return err
	}
	cw.remaining = h.Size
	return nil
}

func (cw *Writer) writeRaw(h *Header, ino, nlink uint32, name string) error {
	fields := [13]uint32{
		ino, h.Mode, h.UID, h.GID, nlink, h.Mtime, uint32(h.Size),
		0, 0, // device of the file itself
		h.DevMajor, h.DevMinor,
		uint32(len(name) + 1), // name size, including the NUL
		0,                     // check (unused by newc)
	}
	buf := make([]byte, 0, headerLen+len(name)+1+3)
	buf = append(buf, magic...)
	for _, f := range fields {
		buf = fmt.Appendf(buf, "%08x", f)
	}
	buf = append(buf, name...)
	buf = append(buf, 0)
	if err := cw.write(buf); err != nil {
		return err
	}
	return cw.pad()
}

// Write writes data of the current entry.
func (cw *Writer) Write(p []byte) (int, error) {
	if cw.err != nil {
		return 0, cw.err
	}
	if int64(len(p)) > cw.remaining {
		return 0, ErrWriteTooLong
	}
	if err := cw.write(p); err != nil {
		return 0, err
	}
	cw.remaining -= int64(len(p))
	return len(p), nil
}

// Close finishes the last entry and writes the trailer. It does not close
// the underlying writer.
func (cw *Writer) Close() error {
	if cw.closed {
		return cw.err
	}
	if cw.err == nil && cw.remaining != 0 {
		cw.err = fmt.Errorf("cpio: last entry is missing %d bytes of data", cw.remaining)
	}
	if cw.err == nil {
		if err := cw.pad(); err == nil {
			_ = cw.writeRaw(&Header{}, 0, 1, Trailer)
		}
	}
	cw.closed = true
	return cw.err
}

// pad aligns the output to four bytes, as newc requires after names and data.
func (cw *Writer) pad() error {
	if n := (4 - cw.off%4) % 4; n != 0 {
		return cw.write(make([]byte, n))
	}
	return nil
}

func (cw *Writer) write(p []byte) error {
	n, err := cw.w.Write(p)
	cw.off += int64(n)
	if err != nil {
		cw.err = fmt.Errorf("cpio: %w", err)
		return cw.err
	}
	return nil
}

// WriteFile is a convenience that writes a regular file entry with data.
func (cw *Writer) WriteFile(name string, mode uint32, data []byte) error {
	if err := cw.WriteHeader(&Header{Name: name, Mode: TypeRegular | mode&0o7777, Size: int64(len(data))}); err != nil {
		return err
	}
	_, err := cw.Write(data)
	return err
}

// WriteDir is a convenience that writes a directory entry.
func (cw *Writer) WriteDir(name string, mode uint32) error {
	return cw.WriteHeader(&Header{Name: name, Mode: TypeDir | mode&0o7777})
}
