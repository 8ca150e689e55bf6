package meter

import "slices"

// locals are the local indices a rewritten function uses, and the global
// index of the counter.
type locals struct {
	fuel   uint32 // i64: the cached counter
	s, r   uint32 // i32 scratch: operand, result
	o      uint32 // i64 scratch: an operand above a counted argument
	global uint32 // the fuel counter; the depth counter is global+1
	slice  uint32 // fuel_slice's function index
	m      *module
	types  func(uint32) byte // the type of a local
}

// saveTypes are the value types of the globals the slice path saves
// locals in: slot k of type saveTypes[t] is global counter+2+k*7+t.
var saveTypes = [...]byte{0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f}

// zeroExpr is the constant expression of a global of type t's initial
// value.
func zeroExpr(t byte) []byte {
	switch t {
	case 0x7f:
		return []byte{opI32Const, 0, opEnd}
	case 0x7e:
		return []byte{opI64Const, 0, opEnd}
	case 0x7d:
		return []byte{0x43, 0, 0, 0, 0, opEnd}
	case 0x7c:
		return []byte{0x44, 0, 0, 0, 0, 0, 0, 0, 0, opEnd}
	case 0x7b:
		return append(append([]byte{opSIMDPrefix, 0x0c}, make([]byte, 16)...), opEnd)
	}
	return []byte{0xd0, t, opEnd} // ref.null t
}

// appendSaves appends, for each local in saves, local.get and global.set
// into a save slot (load false), or global.get from it and local.set
// (load true).
func appendSaves(b []byte, l *locals, saves []uint32, load bool) []byte {
	var n [len(saveTypes)]uint32
	for _, x := range saves {
		ti := slices.Index(saveTypes[:], l.types(x))
		if ti < 0 {
			continue
		}
		g := l.global + 2 + n[ti]*uint32(len(saveTypes)) + uint32(ti)
		n[ti]++
		if n[ti] > l.m.slots {
			l.m.slots = n[ti]
		}
		if load {
			b = append(b, opGlobalGet)
			b = appendU32(b, g)
			b = append(b, opLocalSet)
			b = appendU32(b, x)
		} else {
			b = append(b, opLocalGet)
			b = appendU32(b, x)
			b = append(b, opGlobalSet)
			b = appendU32(b, g)
		}
	}
	return b
}

// appendSlice appends the path taken when a slice is spent, the else-arm
// of an if with an empty block type: store the counter, call fuel_slice
// (which returns only with the global >= 0, the next slice handed out) and
// reload it. The global then goes back to what it held before, plus the
// fuel handed out: charges since the last sync point stay unsynced, so
// that a trap other than unreachable leaves the global where it would have
// been without the call, and fuel used does not depend on where slices
// end.
//
//	global.get $g; local.get $f; i64.sub     ;; unsynced charges, kept on the stack
//	local.get $f; global.set $g; call $slice
//	global.get $g; local.tee $f; i64.add; global.set $g
//
// Around that, the locals in saves (those the enclosing loops write) are
// copied into globals and back. A loop-carried local live across a call
// is a phi that wazero's compiler spills to the stack on every iteration,
// on the hot path too; copied out and back, none is live across the call.
// The path sits in the else-arm, so that the compiler lays out the
// fall-through (the counter >= 0) as the path it allocates registers for.
func appendSlice(b []byte, l *locals, saves []uint32) []byte {
	b = appendSaves(b, l, saves, false)
	b = append(b, opGlobalGet)
	b = appendU32(b, l.global)
	b = append(b, opLocalGet)
	b = appendU32(b, l.fuel)
	b = append(b, opI64Sub)
	b = appendEdit(b, edit{kind: editStore}, l)
	b = append(b, opCall)
	b = appendU32(b, l.slice)
	b = append(b, opGlobalGet)
	b = appendU32(b, l.global)
	b = append(b, opLocalTee)
	b = appendU32(b, l.fuel)
	b = append(b, opI64Add, opGlobalSet)
	b = appendU32(b, l.global)
	return appendSaves(b, l, saves, true)
}

// appendCheck appends "local.tee $f; i64.const 0; i64.ge_s; if else slice
// end" after an i64.sub that left the new counter on the stack.
func appendCheck(b []byte, l *locals, saves []uint32) []byte {
	b = append(b, opLocalTee)
	b = appendU32(b, l.fuel)
	b = append(b, opI64Const, 0, opI64GeS, opIf, blockEmpty, opElse)
	b = appendSlice(b, l, saves)
	return append(b, opEnd)
}

// appendLoopCheck is appendCheck at the top of a loop without parameters,
// after the charge of cost: "local.tee $f; i64.const 0; i64.lt_s; if
// slice; (give cost back); br 1 end". Once the slice is handed out, the
// path gives the loop's charge back and starts the iteration again, which
// charges it anew: the fuel used is the same, and the path never merges
// into the code after the test, so the compiler lays that out as if the
// path were not there, as when it trapped.
func appendLoopCheck(b []byte, l *locals, cost int64, saves []uint32) []byte {
	b = append(b, opLocalTee)
	b = appendU32(b, l.fuel)
	b = append(b, opI64Const, 0, opI64LtS, opIf, blockEmpty)
	b = appendSlice(b, l, saves)
	b = append(b, opLocalGet)
	b = appendU32(b, l.fuel)
	b = append(b, opI64Const)
	b = appendS64(b, cost)
	b = append(b, opI64Add, opLocalSet)
	b = appendU32(b, l.fuel)
	return append(b, opBr, 1, opEnd)
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
		// local.tee $f; i64.const 0; i64.ge_s; if; else; (appendSlice);
		// end; or else local.set $f
		b = append(b, opLocalGet)
		b = appendU32(b, l.fuel)
		b = append(b, opI64Const)
		b = appendS64(b, e.cost)
		b = append(b, opI64Sub)
		if e.loop {
			b = appendLoopCheck(b, l, e.cost, e.saves)
		} else if e.check {
			b = appendCheck(b, l, e.saves)
		} else {
			b = append(b, opLocalSet)
			b = appendU32(b, l.fuel)
		}
	case editFunc:
		b = append(b, e.op)
		b = appendU32(b, e.fn)
	case editHost:
		// The count is the third argument: the ones above it go to
		// scratch locals (the i32 last, the i64 before it), the count is
		// charged as a bulk operand is, and they come back.
		b = append(b, opLocalSet)
		b = appendU32(b, l.r)
		if len(e.host.sig) > 4 {
			b = append(b, opLocalSet)
			b = appendU32(b, l.o)
		}
		b = appendCharge(b, l, e.host.cost, e.saves)
		if len(e.host.sig) > 4 {
			b = append(b, opLocalGet)
			b = appendU32(b, l.o)
		}
		b = append(b, opLocalGet)
		b = appendU32(b, l.r)
	case editBulk:
		// local.set $s; local.get $f; local.get $s; i64.extend_i32_u;
		// [i64.const BulkCost; i64.mul]; i64.sub; check; local.get $s
		b = appendCharge(b, l, BulkCost, e.saves)
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
		b = appendCheck(b, l, e.saves)
		b = append(b, opEnd, opLocalGet)
		b = appendU32(b, l.r)
	}
	return b
}

// appendCharge charges the i32 on top of the stack times cost, with a
// check, and leaves it there:
//
//	local.set $s; local.get $f; local.get $s; i64.extend_i32_u;
//	[i64.const cost; i64.mul]; i64.sub; check; local.get $s
func appendCharge(b []byte, l *locals, cost int64, saves []uint32) []byte {
	b = append(b, opLocalSet)
	b = appendU32(b, l.s)
	b = append(b, opLocalGet)
	b = appendU32(b, l.fuel)
	b = append(b, opLocalGet)
	b = appendU32(b, l.s)
	b = append(b, opI64ExtendU)
	b = appendMul(b, cost)
	b = append(b, opI64Sub)
	b = appendCheck(b, l, saves)
	b = append(b, opLocalGet)
	return appendU32(b, l.s)
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

// localTypes returns the type of a local, given the parameter types and
// the local declarations (decls, read cleanly by rewriteBody), or 0 for an
// index out of range (wazero rejects the module).
func localTypes(params, decls []byte) func(uint32) byte {
	return func(x uint32) byte {
		if uint64(x) < uint64(len(params)) {
			return params[x]
		}
		i := uint64(x) - uint64(len(params))
		ndecl, p, _ := readU32(decls, 0)
		for ; ndecl > 0; ndecl-- {
			c, n, _ := readU32(decls, p)
			if i < uint64(c) {
				return decls[p+n]
			}
			i -= uint64(c)
			p += n + 1
		}
		return 0
	}
}

// rewriteBody returns the instrumented form of one function body (without
// its size prefix). params are the parameter types of its type, base the
// body's offset in the module.
func (m *module) rewriteBody(body []byte, params []byte, base int) ([]byte, error) {
	// Local declarations: a vector of (count, type).
	ndecl, n, err := readU32(body, 0)
	if err != nil {
		return nil, errAt(base, "bad local declarations: %s", err.(*DecodeError).Reason)
	}
	p := n
	nlocals := uint64(len(params))
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
	if nlocals > MaxLocals {
		return nil, &LimitError{Limit: "locals of a function", Max: MaxLocals, Got: nlocals, Offset: base}
	}
	pl, err := m.planBody(body, p, base)
	if err != nil {
		return nil, err
	}
	l := &locals{fuel: uint32(nlocals), s: uint32(nlocals) + 1, r: uint32(nlocals) + 2, o: uint32(nlocals) + 3,
		global: m.globals, slice: m.imports, m: m,
		types: localTypes(params, body[:p])}

	out := make([]byte, 0, len(body)+len(pl.edits)*12+16)
	added := uint32(1)
	if pl.scratch {
		added++
	}
	if pl.scratch64 {
		added++
	}
	out = appendU32(out, ndecl+added)
	out = append(out, body[n:p]...)
	out = append(out, 1, 0x7e) // one i64: the counter
	if pl.scratch {
		out = append(out, 2, 0x7f) // two i32 scratch locals
	}
	if pl.scratch64 {
		out = append(out, 1, 0x7e) // an i64 scratch local
	}
	last := p
	for _, e := range pl.edits {
		if e.kind == editCharge && e.cost == 0 {
			continue
		}
		out = append(out, body[last:e.pos]...)
		last = e.pos
		out = appendEdit(out, e, l)
		if e.kind == editFunc {
			last = e.end // the edit replaces the instruction
		}
	}
	return append(out, body[last:]...), nil
}
