package rsocket_test

import (
	"bytes"
	"crypto/sha256"
	"io"
	"testing"
)

// TestPatternSHA256 checks the digests TestLabCopySHA compares the received bytes with: the SHA-256 of
// patternReader's stream, read in uneven pieces (the stream must not depend on how it is read).
func TestPatternSHA256(t *testing.T) {
	for size, want := range patternSHA256 {
		h := sha256.New()
		buf := make([]byte, 12345)
		if _, err := io.CopyBuffer(h, io.LimitReader(&patternReader{}, size), buf); err != nil {
			t.Fatal(err)
		}
		if got := h.Sum(nil); !bytes.Equal(got, want) {
			t.Errorf("SHA-256 of the pattern's first %d bytes: %x, the table says %x", size, got, want)
		}
	}
}
