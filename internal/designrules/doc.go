// Package designrules holds the test that checks docs/DESIGN.md's rules on the module's public packages:
// String on every exported integer type, no mutable exported variables but error sentinels, Close on every
// type that holds a kernel resource (and no Destroy/Release without it), an Example in every public package.
// The rules a tool must follow (a row in the README and in cmd/goverbs/internal/README.md) are checked beside the
// registry, in cmd/goverbs.
package designrules
