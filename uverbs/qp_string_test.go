package uverbs

import "testing"

func TestQPAttrMaskString(t *testing.T) {
	for m, want := range map[QPAttrMask]string{
		0: "0",
		QPAttrState | QPAttrPKeyIndex | QPAttrPort | QPAttrAccessFlags: "STATE|ACCESS_FLAGS|PKEY_INDEX|PORT",
		QPAttrDestQPN | 1<<30: "DEST_QPN|0x40000000",
	} {
		if got := m.String(); got != want {
			t.Errorf("QPAttrMask(%#x).String() = %q, want %q", uint32(m), got, want)
		}
	}
}
