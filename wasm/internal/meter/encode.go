package meter

// locals are the local indices a rewritten function uses, and the global
// index of the counter.
type locals struct {
	fuel   uint32 // i64: the cached counter
	s, r   uint32 // i32 scratch: operand, result
	global uint32 // the fuel counter; the depth counter is global+1
}

// appendExhaust appends the out-of-fuel path: store Exhausted into the
// global and trap. It sits inside an if with an empty block type.
func appendExhaust(b []byte, l *locals) []byte {
	b = append(b, opI64Const)
	b = appendS64(b, Exhausted)
	b = append(b, opGlobalSet)
	b = appendU32(b, l.global)
	return append(b, opUnreachable)
}

// appendCheck appends "local.tee $f; i64.const 0; i64.lt_s; if exhaust end"
// after an i64.sub that left the new counter on the stack.
func appendCheck(b []byte, l *locals) []byte {
	b = append(b, opLocalTee)
	b = appendU32(b, l.fuel)
	b = append(b, opI64Const, 0, opI64LtS, opIf, blockEmpty)
	b = appendExhaust(b, l)
	return append(b, opEnd)
}

func appendEdit(b []byte, e edit, l *locals) []byte {
	switch e.kind {
	case editLoad:
		b = append(b, opGlobalGet)
		b = appendU32(b, l.global)
		b = append(b, opLocalSet)
		b = appendU32(b, l.fuel)
	case editStore:
		b = append(b, opLocalGet)
		b = appendU32(b, l.fuel)
		b = append(b, opGlobalSet)
		b = appendU32(b, l.global)
	case editCallPre:
		// store; global.get $d; i32.const 1; i32.add; global.set $d;
		// global.get $d; i32.const MaxDepth; i32.gt_u;
		// if; i32.const -1; global.set $d; unreachable; end
		b = appendEdit(b, edit{kind: editStore}, l)
		b = appendDepthAdd(b, l, opI32Add)
		b = append(b, opGlobalGet)
		b = appendU32(b, l.global+1)
		b = append(b, opI32Const)
		b = appendS64(b, MaxDepth)
		b = append(b, opI32GtU, opIf, blockEmpty, opI32Const)
		b = appendS64(b, DepthExceeded)
		b = append(b, opGlobalSet)
		b = appendU32(b, l.global+1)
		b = append(b, opUnreachable, opEnd)
	case editCallPost:
		b = appendDepthAdd(b, l, opI32Sub)
		b = appendEdit(b, edit{kind: editLoad}, l)
	case editCharge:
		// local.get $f; i64.const cost; i64.sub; then, to check,
		// local.tee $f; i64.const 0; i64.lt_s; if; i64.const -1;
		// global.set $g; unreachable; end; or else local.set $f
		b = append(b, opLocalGet)
		b = appendU32(b, l.fuel)
		b = append(b, opI64Const)
		b = appendS64(b, e.cost)
		b = append(b, opI64Sub)
		if e.check {
			b = appendCheck(b, l)
		} else {
			b = append(b, opLocalSet)
			b = appendU32(b, l.fuel)
		}
	case editBulk:
		// local.set $s; local.get $f; local.get $s; i64.extend_i32_u;
		// [i64.const BulkCost; i64.mul]; i64.sub; check; local.get $s
		b = append(b, opLocalSet)
		b = appendU32(b, l.s)
		b = append(b, opLocalGet)
		b = appendU32(b, l.fuel)
		b = append(b, opLocalGet)
		b = appendU32(b, l.s)
		b = append(b, opI64ExtendU)
		b = appendMul(b, BulkCost)
		b = append(b, opI64Sub)
		b = appendCheck(b, l)
		b = append(b, opLocalGet)
		b = appendU32(b, l.s)
	case editGrowPre:
		b = append(b, opLocalTee)
		b = appendU32(b, l.s)
	case editGrowPost:
		// local.tee $r; i32.const -1; i32.ne; if; local.get $f;
		// local.get $s; i64.extend_i32_u; i64.const cost; i64.mul; i64.sub;
		// check; end; local.get $r
		b = append(b, opLocalTee)
		b = appendU32(b, l.r)
		b = append(b, opI32Const, 0x7f, opI32Ne, opIf, blockEmpty, opLocalGet)
		b = appendU32(b, l.fuel)
		b = append(b, opLocalGet)
		b = appendU32(b, l.s)
		b = append(b, opI64ExtendU)
		b = appendMul(b, e.cost)
		b = append(b, opI64Sub)
		b = appendCheck(b, l)
		b = append(b, opEnd, opLocalGet)
		b = appendU32(b, l.r)
	}
	return b
}

// appendDepthAdd appends "global.get $d; i32.const 1; op; global.set $d".
func appendDepthAdd(b []byte, l *locals, op byte) []byte {
	b = append(b, opGlobalGet)
	b = appendU32(b, l.global+1)
	b = append(b, opI32Const, 1, op, opGlobalSet)
	return appendU32(b, l.global+1)
}

// appendMul multiplies the i64 on the stack by k, unless k is 1.
func appendMul(b []byte, k int64) []byte {
	if k == 1 {
		return b
	}
	b = append(b, opI64Const)
	b = appendS64(b, k)
	return append(b, opI64Mul)
}

// rewriteBody returns the instrumented form of one function body (without
// its size prefix). nparams is the number of parameters of its type, global
// the counter's index, base the body's offset in the module.
func rewriteBody(body []byte, nparams uint32, global uint32, base int) ([]byte, error) {
	// Local declarations: a vector of (count, type).
	ndecl, n, err := readU32(body, 0)
	if err != nil {
		return nil, errAt(base, "bad local declarations: %s", err.(*DecodeError).Reason)
	}
	p := n
	nlocals := uint64(nparams)
	for i := uint32(0); i < ndecl; i++ {
		c, n, err := readU32(body, p)
		if err != nil {
			return nil, errAt(base+p, "bad local declaration: %s", err.(*DecodeError).Reason)
		}
		p += n
		if p >= len(body) {
			return nil, errAt(base+p, "unexpected end of function body")
		}
		if !isValType(body[p]) {
			return nil, errAt(base+p, "bad local type %#x", body[p])
		}
		p++
		nlocals += uint64(c)
	}
	if nlocals > maxLocals {
		return nil, errAt(base, "too many locals: %d > %d", nlocals, maxLocals)
	}
	pl, err := planBody(body, p, base)
	if err != nil {
		return nil, err
	}
	l := &locals{fuel: uint32(nlocals), s: uint32(nlocals) + 1, r: uint32(nlocals) + 2, global: global}

	out := make([]byte, 0, len(body)+len(pl.edits)*12+16)
	if pl.scratch {
		out = appendU32(out, ndecl+2)
	} else {
		out = appendU32(out, ndecl+1)
	}
	out = append(out, body[n:p]...)
	out = append(out, 1, 0x7e) // one i64: the counter
	if pl.scratch {
		out = append(out, 2, 0x7f) // two i32 scratch locals
	}
	last := p
	for _, e := range pl.edits {
		if e.kind == editCharge && e.cost == 0 {
			continue
		}
		out = append(out, body[last:e.pos]...)
		last = e.pos
		out = appendEdit(out, e, l)
	}
	return append(out, body[last:]...), nil
}
