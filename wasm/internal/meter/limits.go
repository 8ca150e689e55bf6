package meter

import "fmt"

// Limits on what a module may ask the compiler and the runtime to build,
// checked by CheckLimits before anything compiles it. wazero allocates for
// the counts a module declares, and its validation and compilation cost
// grows with the sizes below, some faster than linearly: a 1 MB module
// holding one br_table of a million targets, or a million nested blocks,
// kept it validating for minutes at 3.5 GB; one function with a huge
// number of locals took 5.2 GB to compile.
//
// Each limit is set at several times the largest value measured on the
// modules the project runs: checkers/python/runtime/python.wasm (CPython,
// C) and fixtures/checkers/*.wasm (Go: goreactor, gocommand, rows, oom,
// probe; C: primes, squares), as TestCheckLimits_Real prints them. The
// measured maximum is in each constant's doc.
const (
	// MaxBrTableTargets bounds the targets of one br_table (the default
	// not counted). Measured: 3,074 (python.wasm; Go 964). wazero's
	// compiler takes time quadratic in it: 70 ms at 4,096 targets, 0.87 s
	// at 32,768, 7 s at 100,000 (noisy, a loaded machine).
	MaxBrTableTargets = 1 << 14
	// MaxBrTableTargetsTotal bounds the targets of every br_table of the
	// module together, so that many br_tables just under
	// MaxBrTableTargets cannot add up to minutes of compilation.
	// Measured: 76,424 (gocommand.wasm; python.wasm 33,323).
	MaxBrTableTargetsTotal = 1 << 19
	// MaxNesting bounds how deep blocks, loops and ifs nest in a function.
	// Measured: 549 (Go, whose functions open a block per resume point;
	// python.wasm 276). Compiling 4,096 nested blocks took 0.19 s, 16,384
	// took 1.8 s.
	MaxNesting = 1 << 12
	// MaxNestingWork bounds the sum, over every block, loop and if of the
	// module, of how deeply it nests: wazero's compile time grows with it
	// (a block at depth d costs about d), so that many functions nested
	// just under MaxNesting cannot add up to minutes of compilation (50
	// functions of 4,095 nested blocks, 419 million, took 2.6 s).
	// Measured: 2,836,652 (gocommand.wasm; python.wasm 623,722).
	MaxNestingWork = 1 << 25
	// MaxLocals bounds a function's locals, parameters included.
	// Measured: 52 (python.wasm; Go 21).
	MaxLocals = 1 << 12
	// MaxLocalsTotal bounds the locals of every function together,
	// parameters included: wazero's compiler allocates per local, and
	// 65,535 functions of 4,095 locals each, inside every other limit,
	// took 2.2 GiB and 13 s to compile. Measured: 43,318 (python.wasm;
	// Go 11,457).
	MaxLocalsTotal = 1 << 18
	// MaxBodySize bounds one function body's bytes. Measured: 51,680
	// (python.wasm; Go 29,238).
	MaxBodySize = 1 << 20
	// MaxFunctions bounds the functions, imported and defined. Measured:
	// 7,674 (python.wasm; Go 2,251).
	MaxFunctions = 1 << 16
	// MaxCodeSize bounds the code section's bytes. Measured: 3,301,118
	// (python.wasm; Go 2,223,624).
	MaxCodeSize = 1 << 25
	// MaxTableSize bounds a table's initial size, and Instrument lowers a
	// table's declared maximum to it (so that table.grow past it returns
	// -1). Measured: 6,327 (gocommand.wasm; python.wasm 4,191).
	MaxTableSize = 1 << 16
	// MaxTables bounds the tables, imported and defined. Measured: 1.
	MaxTables = 16
	// MaxDataSegments bounds the data segments (and the data count).
	// Measured: 38,405 (gocommand.wasm; python.wasm 2).
	MaxDataSegments = 1 << 18
	// MaxDataBytes bounds the data segments' bytes in all. Measured:
	// 3,339,061 (python.wasm).
	MaxDataBytes = 1 << 25
	// MaxElemSegments bounds the element segments. Measured: 1.
	MaxElemSegments = 1 << 10
	// MaxElemEntries bounds the element segments' entries in all.
	// Measured: 6,327 (gocommand.wasm; python.wasm 4,190).
	MaxElemEntries = 1 << 16
	// MaxTypes bounds the function types. Measured: 79 (python.wasm).
	MaxTypes = 1 << 12
	// MaxParams bounds the parameters, and the results, of one function
	// type. Measured: 18 (python.wasm).
	MaxParams = 1 << 8
	// MaxImports bounds the imports. Measured: 41 (python.wasm).
	MaxImports = 1 << 10
	// MaxExports bounds the exports. Measured: 3 (a C library may export
	// thousands).
	MaxExports = 1 << 14
	// MaxGlobals bounds the globals, imported and defined. Measured: 8
	// (Go).
	MaxGlobals = 1 << 12
)

// LimitError reports a module beyond one of the limits above.
type LimitError struct {
	// Limit names what is limited, e.g. "br_table targets".
	Limit string
	// Max is the limit, Got what the module has.
	Max, Got uint64
	// Offset is the byte offset in the module where it is exceeded.
	Offset int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("module exceeds the limit on %s: %d > %d", e.Limit, e.Got, e.Max)
}

// stats are the largest sizes a module has of what the limits bound.
type stats struct {
	brTable, nesting, locals, body, funcs, code    uint64
	brTableTotal, localsTotal, nestingWork         uint64
	table, tables, data, dataBytes, elems, entries uint64
	types, params, imports, exports, globals       uint64

	typeParams []uint32 // parameter count of each type
	funcTypes  []uint32 // type index of each defined function
}

// over checks got against max, recording got in *seen when it is larger.
func over(seen *uint64, limit string, max, got uint64, off int) error {
	if got > *seen {
		*seen = got
	}
	if got > max {
		return &LimitError{Limit: limit, Max: max, Got: got, Offset: off}
	}
	return nil
}

// CheckLimits reports whether module stays within the limits above. It
// reads the module once, allocating nothing per entry of any count it
// declares, so that a hostile module is refused in time proportional to
// its size (a few milliseconds a megabyte) before anything compiles it.
// Instrument and PrepareReactor call it first.
//
// # Errors
//
// A *LimitError naming the first limit exceeded, or a *DecodeError for
// what it cannot decode on the way.
func CheckLimits(module []byte) error {
	_, err := measure(module)
	return err
}

// measure checks module against the limits and returns the largest sizes
// it has of each (up to where it stopped, on an error).
func measure(b []byte) (*stats, error) {
	st := &stats{}
	if len(b) < len(header) || string(b[:len(header)]) != string(header) {
		return st, errAt(0, "not a WebAssembly 1 binary: bad magic or version")
	}
	p := len(header)
	for p < len(b) {
		id := b[p]
		size, n, err := readU32(b, p+1)
		if err != nil {
			return st, errAt(p+1, "bad section size")
		}
		off := p + 1 + n
		if uint64(size) > uint64(len(b)-off) {
			return st, errAt(p, "section %d overruns the module", id)
		}
		r := &reader{b: b[off : off+int(size)], off: off}
		if err := st.section(id, r); err != nil {
			return st, err
		}
		p = off + int(size)
	}
	return st, nil
}

func (st *stats) section(id byte, r *reader) error {
	var err error
	count := func(seen *uint64, limit string, max uint64) (uint32, error) {
		at := r.off + r.p
		n, err := r.u32()
		if err != nil {
			return 0, err
		}
		return n, over(seen, limit, max, uint64(n), at)
	}
	switch id {
	case secType:
		var n uint32
		if n, err = count(&st.types, "function types", MaxTypes); err != nil {
			return err
		}
		for i := uint32(0); i < n; i++ {
			if _, err := r.byte(); err != nil { // 0x60
				return err
			}
			for j := 0; j < 2; j++ {
				k, err := count(&st.params, "parameters or results of a function type", MaxParams)
				if err != nil {
					return err
				}
				if uint64(k) > uint64(len(r.b)-r.p) {
					return errAt(r.off+r.p, "value types overrun the section")
				}
				r.p += int(k)
				if j == 0 {
					st.typeParams = append(st.typeParams, k)
				}
			}
		}
	case secImport:
		var n uint32
		if n, err = count(&st.imports, "imports", MaxImports); err != nil {
			return err
		}
		for i := uint32(0); i < n; i++ {
			if _, err := r.name(); err != nil {
				return err
			}
			if _, err := r.name(); err != nil {
				return err
			}
			at := r.off + r.p
			kind, err := r.byte()
			if err != nil {
				return err
			}
			switch kind {
			case 0x00:
				st.funcs++
				if err = over(&st.funcs, "functions", MaxFunctions, st.funcs, at); err == nil {
					_, err = r.u32()
				}
			case 0x01:
				st.tables++
				if err = over(&st.tables, "tables", MaxTables, st.tables, at); err == nil {
					if _, err = r.byte(); err == nil {
						err = st.tableType(r)
					}
				}
			case 0x02:
				err = r.limits()
			case 0x03:
				st.globals++
				if err = over(&st.globals, "globals", MaxGlobals, st.globals, at); err == nil {
					_, err = r.byte()
					if err == nil {
						_, err = r.byte()
					}
				}
			default:
				return errAt(at, "unsupported import kind %#x", kind)
			}
			if err != nil {
				return err
			}
		}
	case secFunction:
		at := r.off + r.p
		n, err := r.u32()
		if err != nil {
			return err
		}
		st.funcs += uint64(n)
		if err := over(&st.funcs, "functions", MaxFunctions, st.funcs, at); err != nil {
			return err
		}
		for i := uint32(0); i < n; i++ {
			t, err := r.u32()
			if err != nil {
				return err
			}
			st.funcTypes = append(st.funcTypes, t)
		}
	case secTable:
		at := r.off + r.p
		n, err := r.u32()
		if err != nil {
			return err
		}
		st.tables += uint64(n)
		if err := over(&st.tables, "tables", MaxTables, st.tables, at); err != nil {
			return err
		}
		for i := uint32(0); i < n; i++ {
			if _, err := r.byte(); err != nil {
				return err
			}
			if err := st.tableType(r); err != nil {
				return err
			}
		}
	case secGlobal:
		at := r.off + r.p
		n, err := r.u32()
		if err != nil {
			return err
		}
		st.globals += uint64(n)
		return over(&st.globals, "globals", MaxGlobals, st.globals, at)
	case secExport:
		_, err = count(&st.exports, "exports", MaxExports)
	case secElem:
		return st.elements(r, count)
	case secDataCount:
		_, err = count(&st.data, "data segments", MaxDataSegments)
	case secCode:
		return st.codeSection(r)
	case secData:
		var n uint32
		if n, err = count(&st.data, "data segments", MaxDataSegments); err != nil {
			return err
		}
		for i := uint32(0); i < n; i++ {
			if err := r.dataHeader(); err != nil {
				return err
			}
			at := r.off + r.p
			size, err := r.count(1)
			if err != nil {
				return err
			}
			r.p += int(size)
			st.dataBytes += uint64(size)
			if err := over(&st.dataBytes, "bytes of data segments", MaxDataBytes, st.dataBytes, at); err != nil {
				return err
			}
		}
	}
	return err
}

// tableType checks a table's limits: its initial size (its maximum is
// lowered by Instrument).
func (st *stats) tableType(r *reader) error {
	flag, err := r.byte()
	if err != nil {
		return err
	}
	if flag > 1 {
		return errAt(r.off+r.p-1, "unsupported limits flag %#x", flag)
	}
	at := r.off + r.p
	min, err := r.u32()
	if err != nil {
		return err
	}
	if err := over(&st.table, "table size", MaxTableSize, uint64(min), at); err != nil {
		return err
	}
	if flag == 1 {
		_, err = r.u32()
	}
	return err
}

func (st *stats) elements(r *reader, count func(*uint64, string, uint64) (uint32, error)) error {
	n, err := count(&st.elems, "element segments", MaxElemSegments)
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		flags, err := r.elemHeader()
		if err != nil {
			return err
		}
		at := r.off + r.p
		c, err := r.u32()
		if err != nil {
			return err
		}
		st.entries += uint64(c)
		if err := over(&st.entries, "element segment entries", MaxElemEntries, st.entries, at); err != nil {
			return err
		}
		if err := r.elemItems(c, flags&4 != 0); err != nil {
			return err
		}
	}
	return nil
}

func (st *stats) codeSection(r *reader) error {
	if err := over(&st.code, "code section bytes", MaxCodeSize, uint64(len(r.b)), r.off); err != nil {
		return err
	}
	n, err := r.u32()
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		at := r.off + r.p
		size, err := r.u32()
		if err != nil {
			return err
		}
		if err := over(&st.body, "function body bytes", MaxBodySize, uint64(size), at); err != nil {
			return err
		}
		if uint64(size) > uint64(len(r.b)-r.p) {
			return errAt(r.off+r.p, "function body %d overruns the code section", i)
		}
		var params uint64
		if i < uint32(len(st.funcTypes)) && st.funcTypes[i] < uint32(len(st.typeParams)) {
			params = uint64(st.typeParams[st.funcTypes[i]])
		}
		if err := st.body1(r.b[r.p:r.p+int(size)], r.off+r.p, params); err != nil {
			return err
		}
		r.p += int(size)
	}
	return nil
}

// body1 checks one function body: its locals (params of them are its
// parameters), how deep its blocks nest, and its br_tables.
func (st *stats) body1(body []byte, base int, params uint64) error {
	ndecl, p, err := readU32(body, 0)
	if err != nil {
		return errAt(base, "bad local declarations")
	}
	locals := params
	if err := over(&st.locals, "locals of a function", MaxLocals, locals, base); err != nil {
		return err
	}
	for i := uint32(0); i < ndecl; i++ {
		c, n, err := readU32(body, p)
		if err != nil {
			return errAt(base+p, "bad local declaration")
		}
		locals += uint64(c)
		if err := over(&st.locals, "locals of a function", MaxLocals, locals, base+p); err != nil {
			return err
		}
		p += n + 1
	}
	if err := over(&st.localsTotal, "locals of all functions", MaxLocalsTotal, st.localsTotal+locals, base); err != nil {
		return err
	}
	d := &decoder{b: body, p: p, base: base}
	depth := uint64(1)
	for d.p < len(body) {
		if body[d.p] == opBrTable {
			k, _, err := readU32(body, d.p+1)
			if err != nil {
				return d.err(d.p+1, "bad br_table")
			}
			if err := over(&st.brTable, "br_table targets", MaxBrTableTargets, uint64(k), base+d.p); err != nil {
				return err
			}
			if err := over(&st.brTableTotal, "br_table targets of all functions", MaxBrTableTargetsTotal, st.brTableTotal+uint64(k), base+d.p); err != nil {
				return err
			}
		}
		in, err := d.next()
		if err != nil {
			return err
		}
		switch in.op {
		case opBlock, opLoop, opIf:
			depth++
			if err := over(&st.nesting, "block nesting depth", MaxNesting, depth-1, base+in.pos); err != nil {
				return err
			}
			if err := over(&st.nestingWork, "blocks' nesting depths summed", MaxNestingWork, st.nestingWork+depth-1, base+in.pos); err != nil {
				return err
			}
		case opEnd:
			if depth--; depth == 0 {
				return nil // what follows is the planner's to refuse
			}
		}
	}
	return nil
}
