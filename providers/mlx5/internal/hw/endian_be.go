//go:build !(386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm)

package hw

// nativeLittle is a constant so that byte-order conversions compile to a single BSWAP/REV or to nothing.
const nativeLittle = false
