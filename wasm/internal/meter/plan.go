package meter

import "slices"

// An edit is code inserted into a function body before the byte at pos.
// Edits are kept in program order; several at one position run in the
// order they were planned.
type edit struct {
	pos  int
	kind editKind
	// cost is the static charge of an editCharge (0: nothing to emit), or
	// the per-unit cost of an editGrowPost.
	cost int64
	// check: an editCharge that also calls fuel_slice when the counter
	// went below zero. Only function entries and loop headers check (see
	// planBody).
	check bool
	// loop: a check at the top of a loop without parameters, whose slice
	// path can branch back to the loop's start (see appendCheck).
	loop bool
	// An editHost's charge: how its callee is charged per element.
	host *perElem
	// saves are the locals the enclosing loops write, which a check saves
	// around its call of fuel_slice (see appendSlice).
	saves []uint32
	// An editFunc replaces the instruction body[pos:end], op, with op and
	// the function index fn.
	op  byte
	fn  uint32
	end int
}

type editKind uint8

const (
	editLoad     editKind = iota // global.get $g; local.set $f
	editStore                    // local.get $f; global.set $g
	editCallPre                  // store, then depth++ and trap past MaxDepth
	editCallPost                 // depth--, then load
	editCharge                   // charge cost from $f; if check, fuel_slice below zero
	editFunc                     // call or ref.func with the function index renumbered
	editBulk                     // charge the i32 on top of the stack, keep it there
	editGrowPre                  // local.tee $s: remember the requested delta
	editGrowPost                 // charge delta*cost if the result is not -1
	editHost                     // charge an imported function's count argument
)

// frame is an entry of the control stack while planning.
type frame struct {
	op       byte // opBlock, opLoop, opIf, or 0 for the function body
	targeted bool // some branch targets this label
}

// plan is the result of planning one function body.
type plan struct {
	edits     []edit
	scratch   bool // needs the two i32 scratch locals
	scratch64 bool // needs the i64 scratch local too
}

// planner decides where one function body needs charges and syncs.
type planner struct {
	plan
	stack []frame
	seg   int // index in edits of the current segment's charge
	// While in a loop: the index in edits of the first edit inside the
	// outermost one, how deep the loops are, and the locals they write.
	loopEdit   int
	loops      int
	written    map[uint32]bool
	saveBudget int // locals that checks may still save
}

// Bounds on the locals saved around fuel_slice (see appendSlice), so that
// the output stays within a few times the input: at most maxSaves locals
// at one check, and in all at most one a byte of a function's body. A
// check beyond them saves none, which is correct, only slower.
const maxSaves = 64

// loopEnd gives the checks inside the outermost loop, which just ended,
// the locals it writes, sorted.
func (pl *planner) loopEnd() {
	if len(pl.written) == 0 {
		return
	}
	if len(pl.written) > maxSaves {
		clear(pl.written)
		return
	}
	saves := make([]uint32, 0, len(pl.written))
	for x := range pl.written {
		saves = append(saves, x)
	}
	slices.Sort(saves)
	clear(pl.written)
	for i := pl.loopEdit; i < len(pl.edits); i++ {
		if e := &pl.edits[i]; (e.check || e.kind == editBulk || e.kind == editGrowPost || e.kind == editHost) && pl.saveBudget >= len(saves) {
			e.saves = saves
			pl.saveBudget -= len(saves)
		}
	}
}

// segment starts a new metered segment at pos. check makes its charge also
// test the counter.
func (pl *planner) segment(pos int, check bool) {
	pl.seg = len(pl.edits)
	pl.edits = append(pl.edits, edit{pos: pos, kind: editCharge, check: check})
}

func (pl *planner) add(pos int, k editKind, cost int64) {
	pl.edits = append(pl.edits, edit{pos: pos, kind: k, cost: cost})
}

// noParams reports whether the block type at body[p] takes no parameters.
func (m *module) noParams(body []byte, p int) bool {
	if c := body[p]; c == blockEmpty || isValType(c) {
		return true
	}
	t, _, err := readU32(body, p) // non-negative: checked by the decoder
	return err == nil && uint64(t) < uint64(len(m.params)) && len(m.params[t]) == 0
}

// renumber plans the edit that gives call or ref.func in its function's
// index in the output, when that differs (ref.func of an imported
// function names its wrapper).
func (pl *planner) renumber(m *module, body []byte, in instr) error {
	i, _, _ := readU32(body, in.pos+1) // decoded by next
	j, err := m.fn(i, in.pos)
	if in.op == opRefFunc {
		j, err = m.ref(i, in.pos)
	}
	if err != nil || i == j {
		return err
	}
	pl.edits = append(pl.edits, edit{pos: in.pos, kind: editFunc, op: in.op, fn: j, end: in.end})
	return nil
}

// branch marks the branch targets of in and reports whether one of them is
// the function body's label, which makes the branch a return.
func (pl *planner) branch(d *decoder, in instr) (returns bool, err error) {
	for _, l := range in.labels {
		if uint64(l) >= uint64(len(pl.stack)) {
			return false, d.err(in.pos, "branch to label %d at depth %d", l, len(pl.stack))
		}
		i := len(pl.stack) - 1 - int(l)
		pl.stack[i].targeted = true
		if i == 0 {
			returns = true
		}
	}
	return returns, nil
}

// planBody decodes the instructions of body[start:] (the expression after
// the locals) and plans its edits. base is body's offset in the module.
//
// A segment is straight-line code entered only at its top: the function
// entry, a loop header, an if's arms, and the continuation after an end
// that a branch or an if can reach. Its whole static cost is charged at its
// top, so a br_if that leaves it early has paid for the rest (an overcharge
// that is the same on every run); the fallthrough of a br_if is not a new
// segment.
//
// Every segment decrements the counter, but only function entries and loop
// headers test it, as wasmtime's fuel does: every unbounded execution passes
// one of them again and again (a backward branch can only target a loop; a
// recursion enters a function), so nothing runs unpaid, and code between
// two tests is acyclic and short. The counter may therefore dip below zero
// briefly before a test ends the run; the host reads a negative counter at
// the end of a run as exhaustion, so the outcome is the same.
func (m *module) planBody(body []byte, start, base int) (plan, error) {
	d := &decoder{b: body, p: start, base: base}
	pl := &planner{stack: make([]frame, 1, 16), saveBudget: len(body)}
	pl.add(start, editLoad, 0)
	pl.segment(start, true)
	for len(pl.stack) > 0 {
		in, err := d.next()
		if err != nil {
			return plan{}, err
		}
		switch in.op {
		case opNop, opBlock:
		case opLoop:
			if pl.loops == 0 {
				pl.loopEdit = len(pl.edits)
			}
			pl.loops++
			// The header is entered by every iteration: charge inside.
			pl.segment(in.end, true)
			pl.edits[pl.seg].loop = m.noParams(body, in.pos+1)
		case opIf:
			pl.edits[pl.seg].cost++
			pl.segment(in.end, false)
		case opElse:
			top := &pl.stack[len(pl.stack)-1]
			if top.op != opIf {
				return plan{}, d.err(in.pos, "else outside if")
			}
			top.op = opElse
			pl.segment(in.end, false)
		case opEnd:
			top := pl.stack[len(pl.stack)-1]
			pl.stack = pl.stack[:len(pl.stack)-1]
			if top.op == opLoop {
				if pl.loops--; pl.loops == 0 {
					pl.loopEnd()
				}
			}
			switch {
			case len(pl.stack) == 0: // the function's final end
				pl.add(in.pos, editStore, 0)
				if in.end != len(body) {
					return plan{}, d.err(in.end, "bytes after the end of the function body")
				}
			case top.op == opIf, top.op == opElse, top.op == opBlock && top.targeted:
				// Entered from more than one place.
				pl.segment(in.end, false)
			}
			// The end of a loop or of an untargeted block is entered only by
			// falling through, so the current segment goes on.
		case opBr, opBrIf, opBrTable:
			pl.edits[pl.seg].cost++
			ret, err := pl.branch(d, in)
			if err != nil {
				return plan{}, err
			}
			if ret {
				pl.add(in.pos, editStore, 0)
			}
			// br, br_table: what follows is dead until the next end, and
			// gets a segment of its own that never runs. br_if: the
			// segment goes on.
			if in.op != opBrIf {
				pl.segment(in.end, false)
			}
		case opReturn, opUnreachable:
			pl.edits[pl.seg].cost++
			pl.add(in.pos, editStore, 0)
			pl.segment(in.end, false)
		case opCall, opCallIndirect:
			pl.edits[pl.seg].cost++
			if in.op == opCall {
				if callee, _, _ := readU32(body, in.pos+1); callee < m.imports {
					pl.edits[pl.seg].cost += HostCallCost
					if pe, ok := m.perElem[callee]; ok {
						pl.scratch = true
						pl.scratch64 = pl.scratch64 || len(pe.sig) > 4
						pl.edits = append(pl.edits, edit{pos: in.pos, kind: editHost, host: pe})
					}
				}
			}
			pl.add(in.pos, editCallPre, 0)
			if in.op == opCall {
				if err := pl.renumber(m, body, in); err != nil {
					return plan{}, err
				}
			}
			pl.add(in.end, editCallPost, 0)
		case opRefFunc:
			pl.edits[pl.seg].cost++
			if err := pl.renumber(m, body, in); err != nil {
				return plan{}, err
			}
		case opMemoryGrow:
			pl.edits[pl.seg].cost += 1 + GrowCost
			pl.scratch = true
			pl.add(in.pos, editGrowPre, 0)
			pl.add(in.end, editGrowPost, PageCost)
		case opMiscPrefix:
			pl.edits[pl.seg].cost++
			switch in.sub {
			case miscMemoryInit, miscMemoryCopy, miscMemoryFill,
				miscTableInit, miscTableCopy, miscTableFill:
				pl.scratch = true
				pl.add(in.pos, editBulk, 0)
			case miscTableGrow:
				pl.edits[pl.seg].cost += GrowCost
				pl.scratch = true
				pl.add(in.pos, editGrowPre, 0)
				pl.add(in.end, editGrowPost, BulkCost)
			}
		case opLocalSet, opLocalTee:
			pl.edits[pl.seg].cost++
			if pl.loops > 0 {
				x, _, _ := readU32(body, in.pos+1) // decoded by next
				if pl.written == nil {
					pl.written = map[uint32]bool{}
				}
				pl.written[x] = true
			}
		default:
			pl.edits[pl.seg].cost++
		}
		switch in.op {
		case opBlock, opLoop, opIf:
			pl.stack = append(pl.stack, frame{op: in.op})
		}
	}
	return pl.plan, nil
}
