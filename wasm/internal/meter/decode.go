package meter

// Opcodes the planner treats specially.
const (
	opUnreachable  = 0x00
	opNop          = 0x01
	opBlock        = 0x02
	opLoop         = 0x03
	opIf           = 0x04
	opElse         = 0x05
	opEnd          = 0x0b
	opBr           = 0x0c
	opBrIf         = 0x0d
	opBrTable      = 0x0e
	opReturn       = 0x0f
	opCall         = 0x10
	opCallIndirect = 0x11
	opLocalGet     = 0x20
	opLocalSet     = 0x21
	opLocalTee     = 0x22
	opGlobalGet    = 0x23
	opGlobalSet    = 0x24
	opMemoryGrow   = 0x40
	opI32Const     = 0x41
	opI64Const     = 0x42
	opI32Ne        = 0x47
	opI32GtU       = 0x4b
	opI32Add       = 0x6a
	opI32Sub       = 0x6b
	opI64LtS       = 0x53
	opI64GeS       = 0x59
	opI64Add       = 0x7c
	opI64Sub       = 0x7d
	opI64Mul       = 0x7e
	opI64ExtendU   = 0xad // i64.extend_i32_u
	opRefFunc      = 0xd2
	opMiscPrefix   = 0xfc
	opSIMDPrefix   = 0xfd

	blockEmpty = 0x40
)

// Sub-opcodes of the 0xFC prefix with a dynamic cost.
const (
	miscMemoryInit = 8
	miscMemoryCopy = 10
	miscMemoryFill = 11
	miscTableInit  = 12
	miscTableCopy  = 14
	miscTableGrow  = 15
	miscTableFill  = 17
)

// instr is one decoded instruction: its opcode, its sub-opcode for the 0xFC
// and 0xFD prefixes, and its byte range [pos, end) in the function body.
// Branches carry their label depths in labels (br_table: targets, then the
// default).
type instr struct {
	op       byte
	sub      uint32
	pos, end int
	labels   []uint32
}

// unsupported names opcodes of proposals outside wazero's default feature
// set, for a clearer error than "unknown opcode".
var unsupported = map[byte]string{
	0x06: "try (exception handling)",
	0x07: "catch (exception handling)",
	0x08: "throw (exception handling)",
	0x09: "rethrow (exception handling)",
	0x0a: "throw_ref (exception handling)",
	0x12: "return_call (tail calls)",
	0x13: "return_call_indirect (tail calls)",
	0x14: "call_ref (typed function references)",
	0x15: "return_call_ref (typed function references)",
	0x18: "delegate (exception handling)",
	0x19: "catch_all (exception handling)",
	0x1f: "try_table (exception handling)",
	0xd3: "ref.eq (GC)",
	0xd4: "ref.as_non_null (typed function references)",
	0xd5: "br_on_null (typed function references)",
	0xd6: "br_on_non_null (typed function references)",
	0xfb: "GC prefix",
	0xfe: "atomic prefix (threads)",
}

// simdGaps lists the sub-opcodes below 0x100 that are not SIMD instructions.
var simdGaps = [...]byte{0x9a, 0xa2, 0xa5, 0xa6, 0xaf, 0xb0, 0xb2, 0xb3, 0xb4,
	0xbb, 0xc2, 0xc5, 0xc6, 0xcf, 0xd0, 0xd2, 0xd3, 0xd4, 0xe2, 0xee}

func isValType(b byte) bool {
	switch b {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f: // i32 i64 f32 f64 v128 funcref externref
		return true
	}
	return false
}

// decoder walks the instructions of one function body. base is the body's
// offset in the module, for error offsets.
type decoder struct {
	b      []byte
	p      int
	base   int
	labels []uint32 // reused across instructions
}

func (d *decoder) err(p int, format string, args ...any) *DecodeError {
	return errAt(d.base+p, format, args...)
}

// u32 reads an interpreted u32 immediate.
func (d *decoder) u32() (uint32, error) {
	v, n, err := readU32(d.b, d.p)
	if err != nil {
		return 0, d.err(d.p, "%s", err.(*DecodeError).Reason)
	}
	d.p += n
	return v, nil
}

// skip skips a LEB128 immediate that is copied, not interpreted.
func (d *decoder) skip(max int) error {
	n, err := skipLEB(d.b, d.p, max)
	if err != nil {
		return d.err(d.p, "%s", err.(*DecodeError).Reason)
	}
	d.p += n
	return nil
}

func (d *decoder) bytes(n int) error {
	if len(d.b)-d.p < n {
		return d.err(d.p, "unexpected end of function body")
	}
	d.p += n
	return nil
}

// zero reads a reserved memory index byte, which must be 0x00 (one byte,
// as wazero requires).
func (d *decoder) zero() error {
	if d.p >= len(d.b) {
		return d.err(d.p, "unexpected end of function body")
	}
	if d.b[d.p] != 0 {
		return d.err(d.p, "reserved memory index byte %#x is not zero", d.b[d.p])
	}
	d.p++
	return nil
}

func (d *decoder) memarg() error {
	if _, err := d.u32(); err != nil { // alignment
		return err
	}
	_, err := d.u32() // offset
	return err
}

func (d *decoder) blockType() error {
	if d.p >= len(d.b) {
		return d.err(d.p, "unexpected end of function body")
	}
	if c := d.b[d.p]; c == blockEmpty || isValType(c) {
		d.p++
		return nil
	}
	// A type index, as a signed 33-bit LEB128 that must be non-negative.
	start := d.p
	n, err := skipLEB(d.b, d.p, 5)
	if err != nil {
		return d.err(d.p, "bad block type: %s", err.(*DecodeError).Reason)
	}
	last := d.b[d.p+n-1]
	if last&0x40 != 0 || (n == 5 && last&0xf0 != 0) {
		return d.err(start, "bad block type %#x", d.b[start])
	}
	d.p += n
	return nil
}

// next decodes the instruction at d.p. The labels slice of the result is
// only valid until the next call.
func (d *decoder) next() (instr, error) {
	in := instr{pos: d.p}
	if d.p >= len(d.b) {
		return in, d.err(d.p, "unexpected end of function body")
	}
	op := d.b[d.p]
	in.op = op
	d.p++
	var err error
	switch {
	case op == opUnreachable, op == opNop, op == opElse, op == opEnd, op == opReturn:
	case op == opBlock, op == opLoop, op == opIf:
		err = d.blockType()
	case op == opBr, op == opBrIf:
		var l uint32
		if l, err = d.u32(); err == nil {
			d.labels = append(d.labels[:0], l)
			in.labels = d.labels
		}
	case op == opBrTable:
		err = d.brTable(&in)
	case op == opCall:
		_, err = d.u32()
	case op == opCallIndirect:
		if _, err = d.u32(); err == nil { // type index
			_, err = d.u32() // table index
		}
	case op == 0x1a, op == 0x1b: // drop, select
	case op == 0x1c: // select t*
		var n uint32
		if n, err = d.u32(); err == nil {
			if n != 1 {
				err = d.err(in.pos, "select with %d result types", n)
			} else if err = d.bytes(1); err == nil && !isValType(d.b[d.p-1]) {
				err = d.err(d.p-1, "bad value type %#x", d.b[d.p-1])
			}
		}
	case op >= 0x20 && op <= 0x26: // local.*, global.*, table.get, table.set
		_, err = d.u32()
	case op >= 0x28 && op <= 0x3e: // loads and stores
		err = d.memarg()
	case op == 0x3f, op == opMemoryGrow: // memory.size, memory.grow
		err = d.zero()
	case op == opI32Const:
		err = d.skip(5)
	case op == opI64Const:
		err = d.skip(10)
	case op == 0x43:
		err = d.bytes(4)
	case op == 0x44:
		err = d.bytes(8)
	case op >= 0x45 && op <= 0xc4: // numeric, including sign extension
	case op == 0xd0: // ref.null t
		if err = d.bytes(1); err == nil && d.b[d.p-1] != 0x70 && d.b[d.p-1] != 0x6f {
			err = d.err(d.p-1, "bad reference type %#x", d.b[d.p-1])
		}
	case op == 0xd1: // ref.is_null
	case op == opRefFunc:
		_, err = d.u32()
	case op == opMiscPrefix:
		err = d.misc(&in)
	case op == opSIMDPrefix:
		err = d.simd(&in)
	default:
		if name, ok := unsupported[op]; ok {
			return in, d.err(in.pos, "unsupported opcode %#x: %s", op, name)
		}
		return in, d.err(in.pos, "unknown opcode %#x", op)
	}
	if err != nil {
		return in, err
	}
	in.end = d.p
	return in, nil
}

func (d *decoder) brTable(in *instr) error {
	n, err := d.u32()
	if err != nil {
		return err
	}
	// Each label takes at least one byte: refuse counts the body cannot hold
	// before allocating for them.
	if int64(n) >= int64(len(d.b)-d.p) {
		return d.err(in.pos, "br_table with %d labels overruns the body", n)
	}
	d.labels = d.labels[:0]
	for i := uint32(0); i <= n; i++ { // n targets and the default
		l, err := d.u32()
		if err != nil {
			return err
		}
		d.labels = append(d.labels, l)
	}
	in.labels = d.labels
	return nil
}

func (d *decoder) misc(in *instr) (err error) {
	if in.sub, err = d.u32(); err != nil {
		return err
	}
	switch in.sub {
	case 0, 1, 2, 3, 4, 5, 6, 7: // saturating truncations
	case miscMemoryInit:
		if _, err = d.u32(); err == nil { // data index
			err = d.zero()
		}
	case 9: // data.drop
		_, err = d.u32()
	case miscMemoryCopy:
		if err = d.zero(); err == nil {
			err = d.zero()
		}
	case miscMemoryFill:
		err = d.zero()
	case miscTableInit, miscTableCopy: // elem/table index, table index
		if _, err = d.u32(); err == nil {
			_, err = d.u32()
		}
	case 13, miscTableGrow, 16, miscTableFill: // elem.drop, table.grow, table.size, table.fill
		_, err = d.u32()
	default:
		return d.err(in.pos, "unknown opcode 0xfc %#x", in.sub)
	}
	return err
}

func (d *decoder) simd(in *instr) (err error) {
	subPos := d.p
	if in.sub, err = d.u32(); err != nil {
		return err
	}
	// wazero reads the SIMD sub-opcode as one byte; the spec's LEB128 form
	// of 0x80..0xff is two bytes ending in 0x01, which wazero then runs as a
	// nop. Accept exactly the canonical encodings, so that both readings
	// agree on where every instruction starts and ends.
	canonical := d.p-subPos == 1 || (d.p-subPos == 2 && d.b[subPos+1] == 0x01)
	if in.sub > 0xff || !canonical {
		return d.err(in.pos, "unknown opcode 0xfd %#x", in.sub)
	}
	s := byte(in.sub)
	for _, g := range simdGaps {
		if s == g {
			return d.err(in.pos, "unknown opcode 0xfd %#x", in.sub)
		}
	}
	switch {
	case s <= 0x0b, s == 0x5c, s == 0x5d: // v128 loads and store
		err = d.memarg()
	case s >= 0x54 && s <= 0x5b: // load/store lane
		if err = d.memarg(); err == nil {
			err = d.bytes(1)
		}
	case s == 0x0c, s == 0x0d: // v128.const, i8x16.shuffle
		err = d.bytes(16)
	case s >= 0x15 && s <= 0x22: // extract/replace lane
		err = d.bytes(1)
	}
	return err
}
