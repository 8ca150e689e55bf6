package meter

// An edit is code inserted into a function body before the byte at pos.
// Edits are kept in program order; several at one position run in the
// order they were planned.
type edit struct {
	pos  int
	kind editKind
	// cost is the static charge of an editCharge (0: nothing to emit), or
	// the per-unit cost of an editGrowPost.
	cost int64
}

type editKind uint8

const (
	editLoad     editKind = iota // global.get $g; local.set $f
	editStore                    // local.get $f; global.set $g
	editCharge                   // charge cost from $f, exhaust if below zero
	editBulk                     // charge the i32 on top of the stack, keep it there
	editGrowPre                  // local.tee $s: remember the requested delta
	editGrowPost                 // charge delta*cost if the result is not -1
)

// frame is an entry of the control stack while planning.
type frame struct {
	op       byte // opBlock, opLoop, opIf, or 0 for the function body
	targeted bool // some branch targets this label
}

// plan is the result of planning one function body.
type plan struct {
	edits   []edit
	scratch bool // needs the two i32 scratch locals
}

// planner decides where one function body needs charges and syncs.
type planner struct {
	plan
	stack []frame
	seg   int // index in edits of the current segment's charge
}

// segment starts a new metered segment at pos.
func (pl *planner) segment(pos int) {
	pl.seg = len(pl.edits)
	pl.edits = append(pl.edits, edit{pos: pos, kind: editCharge})
}

func (pl *planner) add(pos int, k editKind, cost int64) {
	pl.edits = append(pl.edits, edit{pos: pos, kind: k, cost: cost})
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
func planBody(body []byte, start, base int) (plan, error) {
	d := &decoder{b: body, p: start, base: base}
	pl := &planner{stack: make([]frame, 1, 16)}
	pl.add(start, editLoad, 0)
	pl.segment(start)
	for len(pl.stack) > 0 {
		in, err := d.next()
		if err != nil {
			return plan{}, err
		}
		switch in.op {
		case opNop, opBlock:
		case opLoop:
			// The header is entered by every iteration: charge inside.
			pl.segment(in.end)
		case opIf:
			pl.edits[pl.seg].cost++
			pl.segment(in.end)
		case opElse:
			top := &pl.stack[len(pl.stack)-1]
			if top.op != opIf {
				return plan{}, d.err(in.pos, "else outside if")
			}
			top.op = opElse
			pl.segment(in.end)
		case opEnd:
			top := pl.stack[len(pl.stack)-1]
			pl.stack = pl.stack[:len(pl.stack)-1]
			switch {
			case len(pl.stack) == 0: // the function's final end
				pl.add(in.pos, editStore, 0)
				if in.end != len(body) {
					return plan{}, d.err(in.end, "bytes after the end of the function body")
				}
			case top.op == opIf, top.op == opElse, top.op == opBlock && top.targeted:
				// Entered from more than one place.
				pl.segment(in.end)
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
			// br_if: its fallthrough pays for itself; br, br_table: what
			// follows is dead.
			pl.segment(in.end)
		case opReturn, opUnreachable:
			pl.edits[pl.seg].cost++
			pl.add(in.pos, editStore, 0)
			pl.segment(in.end)
		case opCall, opCallIndirect:
			pl.edits[pl.seg].cost++
			pl.add(in.pos, editStore, 0)
			pl.add(in.end, editLoad, 0)
		case opMemoryGrow:
			pl.edits[pl.seg].cost++
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
				pl.scratch = true
				pl.add(in.pos, editGrowPre, 0)
				pl.add(in.end, editGrowPost, BulkCost)
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
