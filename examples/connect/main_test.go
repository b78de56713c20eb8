package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// The README's "Using the library" program is this file (without its doc comment).
func TestREADMEShowsThisProgram(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	body := src[bytes.Index(src, []byte("package main")):]
	start := bytes.Index(readme, []byte("```go\npackage main"))
	if start < 0 {
		t.Fatal("README has no Go program")
	}
	block := readme[start+len("```go\n"):]
	block = block[:bytes.Index(block, []byte("```"))]
	if !bytes.Equal(block, body) {
		t.Fatalf("README's program differs from examples/connect/main.go:\n%s", strings.TrimSpace(string(block)))
	}
}
