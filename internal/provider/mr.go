package provider

// MRDriverData is implemented by a Context whose kernel driver wants driver data with every memory
// registration (REG_MR): siw (providers/siw), whose rdma-core provider always sends struct siw_ureq_reg_mr
// and a buffer for struct siw_uresp_reg_mr, and whose kernel driver (siw_reg_user_mr) checks both lengths and
// refuses a registration without them (EINVAL). RegMRData returns the driver request (UHW_IN) and a response
// buffer (UHW_OUT) for one registration; the response needs no reading back (the STag it holds is the core
// response's lkey and rkey).
//
// Why an interface: the provider contract had no part in REG_MR, which no provider before siw needed; uverbs'
// REG_MR sends these buffers when the provider has them.
type MRDriverData interface {
	RegMRData() (uhwIn, uhwOut []byte)
}
