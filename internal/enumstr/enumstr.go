// Package enumstr formats enum and flag values for the String methods of goverbs' public types.
package enumstr

import "strconv"

// Name is names[v], or "Type(v)" for a value without a name.
func Name(names []string, v uint64, typ string) string {
	if v < uint64(len(names)) && names[v] != "" {
		return names[v]
	}
	return typ + "(" + strconv.FormatUint(v, 10) + ")"
}

// Flags joins the names of the set bits with "|" ("0" for none); bits without a name print in hex.
func Flags(names []string, v uint64) string {
	if v == 0 {
		return "0"
	}
	s := ""
	for i, n := range names {
		if n != "" && v&(1<<i) != 0 {
			if s != "" {
				s += "|"
			}
			s += n
			v &^= 1 << i
		}
	}
	if v != 0 {
		if s != "" {
			s += "|"
		}
		s += "0x" + strconv.FormatUint(v, 16)
	}
	return s
}
