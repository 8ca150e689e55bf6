package escrow

func deref(r *Reply) Reply {
	if r == nil {
		return Reply{}
	}
	return *r
}
