package proto

import (
	"bytes"
	"reflect"
	"testing"
)

func TestEventRoundTrip(t *testing.T) {
	for _, e := range []Event{
		{Kind: EventStart, UptimeNs: 123},
		{Kind: EventExit, Code: 3},
		{Kind: EventExit},
		{Kind: EventSetupError, Step: "create rxe0", Error: "no such file or directory"},
	} {
		line := e.MarshalLine()
		if !bytes.HasSuffix(line, []byte("\n")) || bytes.Count(line, []byte("\n")) != 1 {
			t.Errorf("MarshalLine(%+v) = %q, want one line", e, line)
		}
		got, err := ParseEvent(bytes.TrimSuffix(line, []byte("\n")))
		if err != nil || !reflect.DeepEqual(got, e) {
			t.Errorf("ParseEvent(%q) = %+v, %v; want %+v", line, got, err, e)
		}
	}
}

func TestParseEventErrors(t *testing.T) {
	for _, in := range []string{"", "{", `{"kind":"reboot"}`, `{"kind":"exit","code":"x"}`, "null"} {
		if e, err := ParseEvent([]byte(in)); err == nil {
			t.Errorf("ParseEvent(%q) = %+v, want an error", in, e)
		}
	}
}

func FuzzParseEvent(f *testing.F) {
	f.Add([]byte(`{"kind":"exit","code":1}`))
	f.Add([]byte(`{"kind":"setup-error","step":"s","error":"e"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := ParseEvent(b)
		if err != nil {
			return
		}
		again, err := ParseEvent(bytes.TrimSuffix(e.MarshalLine(), []byte("\n")))
		if err != nil || !reflect.DeepEqual(again, e) {
			t.Fatalf("re-parse of %+v gave %+v, %v", e, again, err)
		}
	})
}
