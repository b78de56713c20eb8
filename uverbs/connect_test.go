package uverbs

import (
	"bytes"
	"testing"
)

func FuzzEndpointUnmarshal(f *testing.F) {
	seed, _ := Endpoint{QPN: 0x11, PSN: 0x123456, QKey: DefaultQKey, LID: 3, Port: 1, MTU: MTU4096,
		GID: GID{0xfe, 0x80, 15: 1}}.MarshalBinary()
	f.Add(seed)
	f.Add([]byte{})
	f.Add(make([]byte, EndpointSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		var e Endpoint
		if err := e.UnmarshalBinary(b); err != nil {
			return
		}
		again, err := e.MarshalBinary()
		if err != nil || !bytes.Equal(again[:3], b[:3]) || !bytes.Equal(again[4:16], b[4:16]) ||
			!bytes.Equal(again[16:18], b[16:18]) || !bytes.Equal(again[20:], b[20:]) {
			t.Fatalf("%x decodes to %+v, which encodes to %x", b, e, again)
		}
	})
}

func TestEndpointRejects(t *testing.T) {
	good, _ := Endpoint{QPN: 1}.MarshalBinary()
	for name, b := range map[string][]byte{
		"short":       good[:35],
		"long":        append(append([]byte{}, good...), 0),
		"version":     append([]byte{2}, good[1:]...),
		"wide QPN":    append(append(append([]byte{}, good[:4]...), 0x01, 0, 0, 0), good[8:]...),
		"wide PSN":    append(append(append([]byte{}, good[:8]...), 0x01, 0, 0, 0), good[12:]...),
		"empty input": nil,
	} {
		var e Endpoint
		if err := e.UnmarshalBinary(b); err == nil {
			t.Errorf("%s: accepted as %+v", name, e)
		}
	}
}
