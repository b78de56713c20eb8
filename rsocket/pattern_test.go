package rsocket_test

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// TestPatternReader checks the stream TestLabCopyPattern sends and checks against its definition, read in uneven
// pieces (the stream must not depend on how it is read), and that patternChecker names the first wrong byte.
func TestPatternReader(t *testing.T) {
	const size = 3<<20 + 777 // past the 256 distinct blocks, ending inside one
	var got bytes.Buffer
	if _, err := io.CopyBuffer(&got, io.LimitReader(&patternReader{}, size), make([]byte, 12345)); err != nil {
		t.Fatal(err)
	}
	for o, b := range got.Bytes() {
		if want := byte(7*o + o>>12); b != want {
			t.Fatalf("byte %d is %#02x, want %#02x", o, b, want)
		}
	}
	if _, err := io.CopyBuffer(&patternChecker{}, bytes.NewReader(got.Bytes()), make([]byte, 5000)); err != nil {
		t.Fatalf("the pattern itself fails the check: %v", err)
	}
	bad := bytes.Clone(got.Bytes())
	bad[1<<20+5] ^= 1
	_, err := io.CopyBuffer(&patternChecker{}, bytes.NewReader(bad), make([]byte, 5000))
	if err == nil || !strings.Contains(err.Error(), "byte 1048581 ") {
		t.Errorf("a flipped bit at byte 1048581: %v", err)
	}
}
