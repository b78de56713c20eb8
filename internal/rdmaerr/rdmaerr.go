// Package rdmaerr holds the one not-supported sentinel every goverbs package re-exports by value
// (uverbs.ErrNotSupported, netlinkrdma.ErrNotSupported, ...), so that one errors.Is test serves the whole module.
package rdmaerr

import "errors"

type notSupported struct{}

func (notSupported) Error() string { return "operation not supported" }

// Is makes errors.Is(ErrNotSupported, errors.ErrUnsupported) hold.
func (notSupported) Is(target error) bool { return target == errors.ErrUnsupported }

// ErrNotSupported is the feature-is-missing sentinel: the device, driver, kernel or goverbs lacks it. Errors
// that carry the kernel's EOPNOTSUPP or EPROTONOSUPPORT match it through their Is methods.
var ErrNotSupported error = notSupported{}
