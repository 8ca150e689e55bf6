package meter

import (
	"fmt"
	"strconv"
	"strings"
)

// Names of the reactor form of the checker ABI.
const (
	// CheckExport is the entry point of a reactor: [] -> [i32].
	CheckExport = "assay_check"
	// InitExport is a reactor's optional initialiser: [] -> [].
	InitExport = "_initialize"
	// GlobalExportPrefix prefixes the exports that PrepareReactor adds for
	// the mutable globals a module defines: the prefix, then the global's
	// index in decimal.
	GlobalExportPrefix = "assay_global_"
	// DataExport is the function PrepareReactor adds that writes the
	// module's active data segments into memory, as instantiation would
	// have, and drops them. It is exported when the module has any.
	DataExport = "assay_reactor_data"
	// StartFuncExport is the module's start function, which PrepareReactor
	// exports under this name instead of leaving it in the start section.
	StartFuncExport = "assay_reactor_start"

	reservedPrefix = "assay_reactor_"
)

// ReactorVersion identifies PrepareReactor's output; it is bumped whenever
// the bytes it emits for some input change, as Version is for Instrument.
const ReactorVersion = 1

const secData = 11

// Reactor is a reactor module in the form that lets the host capture its
// state after _initialize and restore it into another instance.
type Reactor struct {
	// Module is the input with three changes, none of which moves an index
	// or changes what the module computes once the host calls its
	// initialisation in order (DataExport, StartFuncExport, _initialize):
	//   - every mutable global it defines is exported (GlobalExportPrefix),
	//     so that the host can read and write it;
	//   - every active data segment is passive, and an added function,
	//     DataExport, writes and drops them as instantiation would;
	//   - the start section is gone, its function exported as
	//     StartFuncExport.
	// An instance of it therefore starts with zero memory and the
	// globals' initial values, ready either to initialise itself or to
	// have a snapshot written over it.
	Module []byte
	// Globals are the export names of the mutable globals, in index order.
	Globals []string
	// NoSnapshot says why a snapshot cannot capture the module's state
	// (a mutable reference or v128 global, or code that changes tables,
	// drops segments or reads a segment that was active); empty when it
	// can. Such a module still runs, cold.
	NoSnapshot string
}

// IsReactor reports whether module exports CheckExport. It reads only the
// section headers and the export section; a module it cannot read is not a
// reactor (the command path reports what is wrong with it).
func IsReactor(module []byte) bool {
	if len(module) < len(header) || string(module[:len(header)]) != string(header) {
		return false
	}
	p := len(header)
	for p < len(module) {
		id := module[p]
		size, n, err := readU32(module, p+1)
		if err != nil {
			return false
		}
		off := p + 1 + n
		if uint64(size) > uint64(len(module)-off) {
			return false
		}
		if id == secExport {
			r := &reader{b: module[off : off+int(size)], off: off}
			cnt, err := r.count(3)
			if err != nil {
				return false
			}
			for i := uint32(0); i < cnt; i++ {
				name, err := r.name()
				if err != nil {
					return false
				}
				if name == CheckExport {
					return true
				}
				if _, err := r.byte(); err != nil {
					return false
				}
				if _, err := r.u32(); err != nil {
					return false
				}
			}
			return false
		}
		p = off + int(size)
	}
	return false
}

// PrepareReactor derives the restorable form of a reactor module (see
// Reactor). It is meant to be passed through Instrument afterwards when
// metered: the globals Instrument appends come after every global exported
// here, so the names stay valid.
//
// # Errors
//
// A *LimitError for a module beyond the limits CheckLimits checks, which
// it calls first. A *DecodeError for anything it cannot decode, or for an
// export whose name starts with GlobalExportPrefix or "assay_reactor_".
func PrepareReactor(module []byte) (*Reactor, error) {
	if err := CheckLimits(module); err != nil {
		return nil, err
	}
	m, err := parse(module)
	if err != nil {
		return nil, err
	}
	rc := &Reactor{}
	var (
		importedGlobals, importedFuncs uint32
		ntypes                         uint32
		active                         = map[uint32]bool{}
		inits                          []uint32 // segments that memory.init reads
		dataFns                        [][]byte // bodies of the added functions
		ndata                          uint32
		hasDataCount                   bool
		segRefs                        bool   // code names data segments
		dataSec                        []byte // the data section to write
	)
	for _, s := range m.sections {
		r := &reader{b: s.body, off: s.off}
		switch s.id {
		case secType:
			ntypes = uint32(len(m.params))
		case secImport:
			if importedFuncs, importedGlobals, err = r.importCounts(); err != nil {
				return nil, err
			}
		case secGlobal:
			if err := rc.readGlobals(r, importedGlobals); err != nil {
				return nil, err
			}
		case secExport:
			n, err := r.count(3)
			if err != nil {
				return nil, err
			}
			for i := uint32(0); i < n; i++ {
				at := r.off + r.p
				name, err := r.name()
				if err != nil {
					return nil, err
				}
				if strings.HasPrefix(name, GlobalExportPrefix) || strings.HasPrefix(name, reservedPrefix) {
					return nil, errAt(at, "export name %q is reserved for snapshots", name)
				}
				if _, err := r.byte(); err != nil {
					return nil, err
				}
				if _, err := r.u32(); err != nil {
					return nil, err
				}
			}
		case secDataCount:
			hasDataCount = true
		case secCode:
			why, segs, refs, err := scanCode(s)
			if err != nil {
				return nil, err
			}
			inits, segRefs = segs, refs
			if rc.NoSnapshot == "" {
				rc.NoSnapshot = why
			}
		case secData:
			if ndata, dataFns, dataSec, err = activeData(s, active, importedFuncs+uint32(len(m.funcs)), !segRefs); err != nil {
				return nil, err
			}
		}
	}
	for _, seg := range inits {
		if active[seg] && rc.NoSnapshot == "" {
			rc.NoSnapshot = fmt.Sprintf("it uses memory.init on data segment %d, which is active", seg)
		}
	}
	e := &reactorEmit{
		m:            m,
		globals:      rc.Globals,
		ntypes:       ntypes,
		firstFunc:    importedFuncs + uint32(len(m.funcs)),
		dataFns:      dataFns,
		ndata:        ndata,
		dataSec:      dataSec,
		hasDataCount: hasDataCount,
	}
	if rc.Module, err = e.emit(len(module)); err != nil {
		return nil, err
	}
	return rc, nil
}

// readGlobals reads a global section, naming the exports of its mutable
// globals and noting those a snapshot cannot carry.
func (rc *Reactor) readGlobals(r *reader, imported uint32) error {
	n, err := r.count(minGlobal)
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		t, err := r.byte()
		if err != nil {
			return err
		}
		mut, err := r.byte()
		if err != nil {
			return err
		}
		if err := r.constExpr(); err != nil {
			return err
		}
		if mut != 1 {
			continue
		}
		switch t {
		case 0x7f, 0x7e, 0x7d, 0x7c: // i32 i64 f32 f64
			rc.Globals = append(rc.Globals, GlobalExportPrefix+strconv.FormatUint(uint64(imported+i), 10))
		default:
			if rc.NoSnapshot == "" {
				rc.NoSnapshot = fmt.Sprintf("global %d is a mutable %s", imported+i, typeName(t))
			}
		}
	}
	return nil
}

func typeName(t byte) string {
	switch t {
	case 0x7b:
		return "v128"
	case 0x70:
		return "funcref"
	case 0x6f:
		return "externref"
	}
	return fmt.Sprintf("type %#x", t)
}

// importCounts counts the functions and globals an import section imports.
func (r *reader) importCounts() (funcs, globals uint32, err error) {
	n, err := r.count(4)
	if err != nil {
		return 0, 0, err
	}
	for i := uint32(0); i < n; i++ {
		if _, err := r.name(); err != nil {
			return 0, 0, err
		}
		if _, err := r.name(); err != nil {
			return 0, 0, err
		}
		kind, err := r.byte()
		if err != nil {
			return 0, 0, err
		}
		switch kind {
		case 0x00:
			funcs++
			_, err = r.u32()
		case 0x01:
			if _, err = r.byte(); err == nil {
				err = r.limits()
			}
		case 0x02:
			err = r.limits()
		case 0x03:
			globals++
			if _, err = r.byte(); err == nil {
				_, err = r.byte()
			}
		default:
			return 0, 0, errAt(r.off+r.p-1, "unsupported import kind %#x", kind)
		}
		if err != nil {
			return 0, 0, err
		}
	}
	return funcs, globals, nil
}

// scanCode looks for instructions whose effect a snapshot of memory and
// globals would not capture: table.set and the bulk instructions that
// change tables or drop segments. It also lists the data segments that
// memory.init reads.
func scanCode(s section) (why string, inits []uint32, segRefs bool, err error) {
	r := &reader{b: s.body, off: s.off}
	n, err := r.count(2)
	if err != nil {
		return "", nil, false, err
	}
	for i := uint32(0); i < n; i++ {
		size, err := r.u32()
		if err != nil {
			return "", nil, false, err
		}
		if uint64(size) > uint64(len(r.b)-r.p) {
			return "", nil, false, errAt(r.off+r.p, "function body %d overruns the code section", i)
		}
		body := r.b[r.p : r.p+int(size)]
		base := r.off + r.p
		r.p += int(size)
		p, err := skipLocals(body, base)
		if err != nil {
			return "", nil, false, err
		}
		d := &decoder{b: body, p: p, base: base}
		for d.p < len(body) {
			in, err := d.next()
			if err != nil {
				return "", nil, false, err
			}
			if in.op == opMiscPrefix && (in.sub == miscMemoryInit || in.sub == 9) {
				segRefs = true
			}
			switch {
			case why != "":
			case in.op == 0x26:
				why = "it uses table.set"
			case in.op == opMiscPrefix:
				switch in.sub {
				case miscMemoryInit:
					_, n, _ := readU32(body, in.pos+1) // the sub-opcode, decoded by next
					seg, _, _ := readU32(body, in.pos+1+n)
					inits = append(inits, seg)
				case 9:
					why = "it uses data.drop"
				case 13:
					why = "it uses elem.drop"
				case miscTableInit, miscTableCopy, miscTableGrow, miscTableFill:
					why = "it changes a table"
				}
			}
		}
	}
	return why, inits, segRefs, nil
}

// skipLocals returns the offset of a function body's first instruction.
func skipLocals(body []byte, base int) (int, error) {
	ndecl, p, err := readU32(body, 0)
	if err != nil {
		return 0, errAt(base, "bad local declarations")
	}
	for i := uint32(0); i < ndecl; i++ {
		_, n, err := readU32(body, p)
		if err != nil {
			return 0, errAt(base+p, "bad local declaration")
		}
		p += n + 1
		if p > len(body) {
			return 0, errAt(base+p, "unexpected end of function body")
		}
	}
	return p, nil
}

// dataChunk is how many segments one added function writes: compilers
// slow down on huge functions, and Go's linker emits tens of thousands of
// segments.
const dataChunk = 256

// activeData reads a data section, marks its active segments in active,
// and returns the code that writes and drops them in order, as
// instantiation would, as bodies of functions [] -> []: chunks of
// dataChunk segments, then one that calls the chunks in order (base is the
// index the first of them will have). It also returns the data section to
// write and its segment count: every segment made passive, or, with merge
// (no code names a segment, so their number and order are unobservable),
// one passive segment holding the bytes of every active one, which is
// much cheaper to instantiate than Go's tens of thousands.
func activeData(s section, active map[uint32]bool, base uint32, merge bool) (uint32, [][]byte, []byte, error) {
	r := &reader{b: s.body, off: s.off}
	n, err := r.count(2)
	if err != nil {
		return 0, nil, nil, err
	}
	var (
		chunks  [][]byte
		fn      []byte
		inChunk int
		sec     = appendU32(nil, n)
		blob    []byte
	)
	for i := uint32(0); i < n; i++ {
		flags, err := r.u32()
		if err != nil {
			return 0, nil, nil, err
		}
		exprAt := r.p
		switch flags {
		case 0:
			err = r.constExpr()
		case 1:
		case 2:
			if _, err = r.u32(); err == nil {
				exprAt = r.p
				err = r.constExpr()
			}
		default:
			return 0, nil, nil, errAt(r.off+r.p, "bad data segment flags %d", flags)
		}
		if err != nil {
			return 0, nil, nil, err
		}
		exprEnd := r.p - 1 // without the expression's end
		vecAt := r.p
		size, err := r.count(1)
		if err != nil {
			return 0, nil, nil, err
		}
		r.p += int(size)
		if !merge {
			sec = append(sec, 0x01)
			sec = append(sec, r.b[vecAt:r.p]...)
		}
		if flags == 1 {
			continue
		}
		active[i] = true
		if fn == nil {
			fn = []byte{0x00} // no locals
		}
		// offset; i32.const src; i32.const size; memory.init seg 0; and
		// without merge, data.drop seg.
		seg, src := i, int64(0)
		if merge {
			seg, src = 0, int64(int32(len(blob)))
			blob = append(blob, r.b[r.p-int(size):r.p]...)
		}
		fn = append(fn, r.b[exprAt:exprEnd]...)
		fn = append(fn, opI32Const)
		fn = appendS64(fn, src)
		fn = append(fn, opI32Const)
		fn = appendS64(fn, int64(int32(size)))
		fn = append(fn, opMiscPrefix, miscMemoryInit)
		fn = appendU32(fn, seg)
		fn = append(fn, 0x00)
		if !merge {
			fn = append(fn, opMiscPrefix, 9)
			fn = appendU32(fn, seg)
		}
		if inChunk++; inChunk == dataChunk {
			chunks = append(chunks, append(fn, opEnd))
			fn, inChunk = nil, 0
		}
	}
	if fn != nil {
		chunks = append(chunks, append(fn, opEnd))
	}
	caller := []byte{0x00}
	for k := range chunks {
		caller = append(caller, opCall)
		caller = appendU32(caller, base+uint32(k))
	}
	if merge {
		caller = append(caller, opMiscPrefix, 9, 0x00) // data.drop 0
		n = 1
		sec = appendU32(nil, 1)
		sec = append(sec, 0x01)
		sec = appendU32(sec, uint32(len(blob)))
		sec = append(sec, blob...)
	}
	return n, append(chunks, append(caller, opEnd)), sec, nil
}

// reactorEmit writes a Reactor's Module.
type reactorEmit struct {
	m            *module
	globals      []string
	ntypes       uint32   // the added functions' type index
	firstFunc    uint32   // the first added function's index
	dataFns      [][]byte // their bodies, the exported one last; none without a data section
	ndata        uint32
	dataSec      []byte
	hasDataCount bool
}

func (e *reactorEmit) emit(size int) ([]byte, error) {
	out := make([]byte, 0, size+size/8+256)
	out = append(out, header...)
	var extra []byte
	nextra := uint32(0)
	for _, name := range e.globals {
		idx, _ := strconv.ParseUint(strings.TrimPrefix(name, GlobalExportPrefix), 10, 32)
		extra = appendName(extra, name)
		extra = append(extra, 0x03)
		extra = appendU32(extra, uint32(idx))
		nextra++
	}
	if len(e.dataFns) > 0 {
		extra = appendName(extra, DataExport)
		extra = append(extra, 0x00)
		extra = appendU32(extra, e.firstFunc+uint32(len(e.dataFns))-1)
		nextra++
	}
	if e.m.start >= 0 {
		extra = appendName(extra, StartFuncExport)
		extra = append(extra, 0x00)
		extra = appendU32(extra, uint32(e.m.start))
		nextra++
	}
	wrote := map[byte]bool{}
	// Sections the added function needs, written where their rank says
	// when the input lacks them.
	fill := func(rank int) {
		if len(e.dataFns) == 0 {
			return
		}
		for _, id := range []byte{secType, secFunction, secDataCount, secCode} {
			if order[id] < rank && !wrote[id] {
				out = e.section(out, section{id: id}, wrote)
			}
		}
	}
	for _, s := range e.m.sections {
		if s.id != secCustom {
			fill(order[s.id])
		}
		switch s.id {
		case secExport:
			n, rest := countAndRest(s)
			total, err := addU32(n, nextra, s.off)
			if err != nil {
				return nil, err
			}
			body := appendU32(nil, total)
			body = append(body, rest...)
			out = appendSection(out, secExport, append(body, extra...))
		case secStart:
			// Exported instead: the host calls it.
		case secType, secFunction, secCode, secDataCount:
			out = e.section(out, s, wrote)
		case secData:
			out = appendSection(out, secData, e.dataSec)
		default:
			out = appendSection(out, s.id, s.body)
		}
	}
	fill(len(order) + 1) // whatever is still missing goes at the end
	return out, nil
}

// section writes one of the sections the added function extends: the type
// section (its type, [] -> []), the function section, the data count
// section (required by memory.init) and the code section. s.body is nil
// when the input lacks the section.
func (e *reactorEmit) section(out []byte, s section, wrote map[byte]bool) []byte {
	wrote[s.id] = true
	if len(e.dataFns) == 0 {
		return appendSection(out, s.id, s.body)
	}
	var n uint32
	var rest []byte
	if s.body != nil && s.id != secDataCount {
		n, rest = countAndRest(s)
	}
	added := uint32(len(e.dataFns))
	if s.id == secType {
		added = 1
	}
	body := appendU32(nil, n+added)
	body = append(body, rest...)
	switch s.id {
	case secType:
		body = append(body, 0x60, 0x00, 0x00)
	case secFunction:
		for range e.dataFns {
			body = appendU32(body, e.ntypes)
		}
	case secCode:
		for _, fn := range e.dataFns {
			body = appendU32(body, uint32(len(fn)))
			body = append(body, fn...)
		}
	case secDataCount:
		body = appendU32(nil, e.ndata)
	}
	return appendSection(out, s.id, body)
}
