package netlinkrdma

import (
	"errors"
	"fmt"
)

// request is one request the fake kernel saw.
type request struct {
	msgType, flags uint16
	attrs          []byte
}

// fakeKernel is a transport that answers from a function; it stands in for
// the kernel in unit tests (the real socket is exercised in the lab).
type fakeKernel struct {
	reqs   []request
	answer func(r request) ([][]byte, error)
}

func (f *fakeKernel) execute(msgType, flags uint16, attrs []byte, fn func([]byte) error) error {
	r := request{msgType, flags, append([]byte(nil), attrs...)}
	f.reqs = append(f.reqs, r)
	msgs, err := f.answer(r)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if err := fn(m); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeKernel) close() error { return nil }

func newFakeConn(answer func(r request) ([][]byte, error)) (*Conn, *fakeKernel) {
	fk := &fakeKernel{answer: answer}
	return &Conn{t: fk}, fk
}

// encode builds an attribute payload.
func encode(fn func(e *attrEncoder)) []byte {
	var e attrEncoder
	fn(&e)
	return e.Encode()
}

// decodeAll lists the (type, payload) pairs of an attribute run, for
// checking requests.
func decodeAll(b []byte) ([]string, error) {
	var out []string
	ad := newAttrDecoder(b)
	for ad.Next() {
		out = append(out, fmt.Sprintf("%d=%x", ad.Type(), ad.val))
	}
	return out, ad.Err()
}

var errNoAnswer = errors.New("fake kernel: no answer")
