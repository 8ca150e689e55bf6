package meter

import "math"

// Section ids.
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secGlobal    = 6
	secTable     = 4
	secExport    = 7
	secStart     = 8
	secElem      = 9
	secCode      = 10
	secDataCount = 12
)

// order gives each known section id its rank in the order the binary format
// requires (the data count section sits between element and code).
var order = [...]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6, 7: 7, 8: 8, 9: 9, 12: 10, 10: 11, 11: 12}

var header = []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}

// section is one section of the input: its id and its contents, which
// start at offset off in the module.
type section struct {
	id   byte
	off  int
	body []byte
}

// module is what the pass needs to know about the input.
type module struct {
	sections []section
	params   [][]byte // parameter types of each type
	funcs    []uint32 // type index of each defined function
	globals  uint32   // imported and defined globals: the counter's index
	start    int64    // start function index, or -1
	imports  uint32   // imported functions: fuel_slice's index
	imported []uint32 // type index of each imported function
	// perElem maps imported functions whose work grows with an argument
	// to how they are charged for it.
	perElem map[uint32]*perElem
	// slots is how many locals of one type the slice path saves at most
	// (see saveGlobal); set by emitCode.
	slots uint32
}

// fn returns the index that function index i of the input has in the
// output, where fuel_slice sits after the imported functions.
func (m *module) fn(i uint32, off int) (uint32, error) {
	if i < m.imports {
		return i, nil
	}
	if i == math.MaxUint32 {
		return 0, errAt(off, "function index %d out of range", i)
	}
	return i + 1, nil
}

// ref returns the index that a reference to function i of the input
// (ref.func, an element segment, the start function) has in the output:
// an imported function's wrapper, or fn's index. Calls through a table or
// a funcref then pay for a host call as direct calls do.
func (m *module) ref(i uint32, off int) (uint32, error) {
	if i < m.imports {
		return m.wrapper(i), nil
	}
	return m.fn(i, off)
}

// wrapper is the index of imported function i's wrapper: a defined
// function of its type that calls it with its arguments, added after the
// module's own functions.
func (m *module) wrapper(i uint32) uint32 {
	return m.imports + 1 + uint32(len(m.funcs)) + i
}

// Instrument returns module with fuel metering added, as described in the
// package documentation. module is not modified.
//
// # Errors
//
// A *LimitError for a module beyond the limits CheckLimits checks, which
// Instrument calls first. A *DecodeError for anything the pass cannot
// decode: a malformed binary, an instruction or section outside
// WebAssembly 2.0 as wazero enables it by default, an export named
// GlobalExport, StartExport or DepthExport already present, or an import
// from SliceModule. For an input that wazero would reject, Instrument
// either returns an error or returns bytes that wazero rejects too; it
// never panics.
func Instrument(module []byte) ([]byte, error) {
	if err := CheckLimits(module); err != nil {
		return nil, err
	}
	m, err := parse(module)
	if err != nil {
		return nil, err
	}
	return m.emit(len(module))
}

func parse(b []byte) (*module, error) {
	if len(b) < len(header) || string(b[:len(header)]) != string(header) {
		return nil, errAt(0, "not a WebAssembly 1 binary: bad magic or version")
	}
	m := &module{start: -1}
	p := len(header)
	rank := 0
	for p < len(b) {
		id := b[p]
		size, n, err := readU32(b, p+1)
		if err != nil {
			return nil, errAt(p+1, "bad section size: %s", err.(*DecodeError).Reason)
		}
		off := p + 1 + n
		if uint64(size) > uint64(len(b)-off) {
			return nil, errAt(p, "section %d overruns the module", id)
		}
		s := section{id: id, off: off, body: b[off : off+int(size)]}
		if id != secCustom {
			if int(id) >= len(order) || order[id] == 0 {
				return nil, errAt(p, "unknown section id %d", id)
			}
			if order[id] <= rank {
				return nil, errAt(p, "section %d out of order or repeated", id)
			}
			rank = order[id]
		}
		if err := m.read(s); err != nil {
			return nil, err
		}
		if err := checkCounts(s); err != nil {
			return nil, err
		}
		m.sections = append(m.sections, s)
		p = off + int(size)
	}
	return m, nil
}

// reader reads the contents of one section.
type reader struct {
	b   []byte
	p   int
	off int // offset of b in the module
}

func (r *reader) u32() (uint32, error) {
	v, n, err := readU32(r.b, r.p)
	if err != nil {
		return 0, errAt(r.off+r.p, "%s", err.(*DecodeError).Reason)
	}
	r.p += n
	return v, nil
}

func (r *reader) byte() (byte, error) {
	if r.p >= len(r.b) {
		return 0, errAt(r.off+r.p, "unexpected end of section")
	}
	r.p++
	return r.b[r.p-1], nil
}

func (r *reader) name() (string, error) {
	n, err := r.u32()
	if err != nil {
		return "", err
	}
	if uint64(n) > uint64(len(r.b)-r.p) {
		return "", errAt(r.off+r.p, "name overruns the section")
	}
	r.p += int(n)
	return string(r.b[r.p-int(n) : r.p]), nil
}

// count reads a vector length and checks that the section can hold that
// many entries of at least min bytes each, before anything is allocated.
func (r *reader) count(min int) (uint32, error) {
	n, err := r.u32()
	if err != nil {
		return 0, err
	}
	if uint64(n)*uint64(min) > uint64(len(r.b)-r.p) {
		return 0, errAt(r.off+r.p, "vector of %d entries overruns the section", n)
	}
	return n, nil
}

func (r *reader) limits() error {
	flag, err := r.byte()
	if err != nil {
		return err
	}
	if flag > 1 {
		return errAt(r.off+r.p-1, "unsupported limits flag %#x", flag)
	}
	if _, err := r.u32(); err != nil {
		return err
	}
	if flag == 1 {
		_, err = r.u32()
	}
	return err
}

func (m *module) read(s section) error {
	r := &reader{b: s.body, off: s.off}
	switch s.id {
	case secType:
		n, err := r.count(3)
		if err != nil {
			return err
		}
		m.params = make([][]byte, n)
		for i := range m.params {
			if f, err := r.byte(); err != nil {
				return err
			} else if f != 0x60 {
				return errAt(r.off+r.p-1, "unsupported type form %#x", f)
			}
			for j := 0; j < 2; j++ { // params, results
				c, err := r.count(1)
				if err != nil {
					return err
				}
				at := r.p
				for k := uint32(0); k < c; k++ {
					if t, _ := r.byte(); !isValType(t) {
						return errAt(r.off+r.p-1, "bad value type %#x", t)
					}
				}
				if j == 0 {
					m.params[i] = r.b[at:r.p]
				}
			}
		}
	case secImport:
		n, err := r.count(4)
		if err != nil {
			return err
		}
		for i := uint32(0); i < n; i++ {
			at := r.off + r.p
			mod, err := r.name()
			if err != nil {
				return err
			}
			if mod == SliceModule {
				return errAt(at, "import module %q is reserved for the fuel meter", mod)
			}
			name, err := r.name()
			if err != nil {
				return err
			}
			kind, err := r.byte()
			if err != nil {
				return err
			}
			switch kind {
			case 0x00: // function
				var t uint32
				if t, err = r.u32(); err == nil {
					if uint64(t) < uint64(len(m.params)) {
						if pe, ok := perElemCosts[mod+"."+name]; ok && string(m.params[t]) == pe.sig {
							if m.perElem == nil {
								m.perElem = map[uint32]*perElem{}
							}
							m.perElem[m.imports] = pe
						}
					}
					m.imported = append(m.imported, t)
					m.imports, err = addU32(m.imports, 1, r.off+r.p)
				}
			case 0x01: // table
				if _, err = r.byte(); err == nil {
					err = r.limits()
				}
			case 0x02: // memory
				err = r.limits()
			case 0x03: // global
				if m.globals, err = addU32(m.globals, 1, r.off+r.p); err == nil {
					_, err = r.byte() // value type
					if err == nil {
						_, err = r.byte() // mutability
					}
				}
			default:
				return errAt(r.off+r.p-1, "unsupported import kind %#x", kind)
			}
			if err != nil {
				return err
			}
		}
	case secFunction:
		n, err := r.count(1)
		if err != nil {
			return err
		}
		m.funcs = make([]uint32, n)
		for i := range m.funcs {
			if m.funcs[i], err = r.u32(); err != nil {
				return err
			}
			if uint64(m.funcs[i]) >= uint64(len(m.params)) {
				return errAt(r.off+r.p-1, "function type index %d out of range", m.funcs[i])
			}
		}
	case secGlobal:
		n, err := r.u32()
		if err != nil {
			return err
		}
		if m.globals, err = addU32(m.globals, n, r.off); err != nil {
			return err
		}
		if m.globals >= math.MaxUint32-1 {
			return errAt(r.off, "no room for the meter's globals")
		}
		return nil // the entries are copied as they are
	case secExport:
		n, err := r.count(3)
		if err != nil {
			return err
		}
		for i := uint32(0); i < n; i++ {
			at := r.off + r.p
			name, err := r.name()
			if err != nil {
				return err
			}
			if name == GlobalExport || name == StartExport || name == DepthExport {
				return errAt(at, "export name %q is reserved for the fuel meter", name)
			}
			if _, err := r.byte(); err != nil {
				return err
			}
			if _, err := r.u32(); err != nil {
				return err
			}
		}
	case secStart:
		f, err := r.u32()
		if err != nil {
			return err
		}
		m.start = int64(f)
	default:
		return nil
	}
	if r.p != len(r.b) {
		return errAt(r.off+r.p, "section %d has %d trailing bytes", s.id, len(r.b)-r.p)
	}
	return nil
}

func appendSection(b []byte, id byte, body []byte) []byte {
	b = append(b, id)
	b = appendU32(b, uint32(len(body)))
	return append(b, body...)
}

// countAndRest splits a vector section into its length and its entries.
func countAndRest(s section) (uint32, []byte) {
	n, k, _ := readU32(s.body, 0) // read cleanly in parse
	return n, s.body[k:]
}

// emit writes the instrumented module.
func (m *module) emit(size int) ([]byte, error) {
	out := make([]byte, 0, size+size/2+64)
	out = append(out, header...)

	// fuel_slice's type, [] -> [], goes after the module's own types; the
	// import after its own imports.
	sliceImport := appendName(nil, SliceModule)
	sliceImport = appendName(sliceImport, SliceFunc)
	sliceImport = append(sliceImport, 0x00)
	sliceImport = appendU32(sliceImport, uint32(len(m.params)))

	// The code section is written first: it decides how many globals the
	// slice path needs to save locals in.
	codeSec := section{id: secCode}
	for _, s := range m.sections {
		if s.id == secCode {
			codeSec = s
		}
	}
	code, err := m.emitCode(codeSec)
	if err != nil {
		return nil, err
	}
	if uint64(m.globals)+2+uint64(m.slots)*uint64(len(saveTypes)) > math.MaxUint32 {
		return nil, errAt(0, "no room for the meter's globals")
	}

	// The fuel counter: mut i64, initialised to 0; the depth counter: mut
	// i32, initialised to 0; then the globals the slice path saves locals
	// in.
	global := []byte{0x7e, 0x01, opI64Const, 0x00, opEnd, 0x7f, 0x01, opI32Const, 0x00, opEnd}
	for k := uint32(0); k < m.slots; k++ {
		for _, t := range saveTypes {
			global = append(global, t, 0x01)
			global = append(global, zeroExpr(t)...)
		}
	}
	nglobals := 2 + m.slots*uint32(len(saveTypes))
	exports := appendName(nil, GlobalExport)
	exports = append(exports, 0x03)
	exports = appendU32(exports, m.globals)
	exports = appendName(exports, DepthExport)
	exports = append(exports, 0x03)
	exports = appendU32(exports, m.globals+1)
	nexports := uint32(2)
	if m.start >= 0 {
		start, err := m.ref(uint32(m.start), 0)
		if err != nil {
			return nil, err
		}
		exports = appendName(exports, StartExport)
		exports = append(exports, 0x00)
		exports = appendU32(exports, start)
		nexports++
	}

	// extend writes section id with its n entries old, rewritten by
	// rewrite when it is not nil, and then added, the m added entries.
	extend := func(id byte, n uint32, old []byte, off int, rewrite func(*reader, []byte, uint32) ([]byte, error), added []byte, k uint32) error {
		total, err := addU32(n, k, off)
		if err != nil {
			return err
		}
		body := appendU32(make([]byte, 0, len(old)+len(added)+5), total)
		if rewrite != nil {
			if body, err = rewrite(&reader{b: old, off: off}, body, n); err != nil {
				return err
			}
		} else {
			body = append(body, old...)
		}
		out = appendSection(out, id, append(body, added...))
		return nil
	}
	// The wrappers of the imported functions: their types, and a
	// declarative element segment that lets ref.func name them.
	var wrapTypes, declare []byte
	for i, t := range m.imported {
		wrapTypes = appendU32(wrapTypes, t)
		declare = appendU32(declare, m.wrapper(uint32(i)))
	}
	declare = append(append([]byte{0x03, 0x00}, appendU32(nil, m.imports)...), declare...)

	// The sections Instrument adds to, and whether they are written yet:
	// those the input lacks are written where their rank says. Without
	// imports there are no wrappers, and the function, element and code
	// sections keep their entries.
	added := map[byte]bool{secType: false, secImport: false, secGlobal: false, secExport: false}
	if m.imports > 0 {
		added[secFunction], added[secElem], added[secCode] = false, false, false
	}
	write := func(id byte, n uint32, old []byte, off int) error {
		added[id] = true
		switch id {
		case secType:
			return extend(id, n, old, off, nil, []byte{0x60, 0x00, 0x00}, 1)
		case secImport:
			return extend(id, n, old, off, nil, sliceImport, 1)
		case secFunction:
			return extend(id, n, old, off, nil, wrapTypes, m.imports)
		case secGlobal:
			return extend(id, n, old, off, m.globalEntries, global, nglobals)
		case secExport:
			return extend(id, n, old, off, m.exportEntries, exports, nexports)
		case secElem:
			return extend(id, n, old, off, m.elementEntries, declare, 1)
		default: // secCode
			out = appendSection(out, secCode, code)
			return nil
		}
	}
	missing := func(rank int) error {
		for _, id := range []byte{secType, secImport, secFunction, secGlobal, secExport, secElem, secCode} {
			if _, ok := added[id]; ok && !added[id] && order[id] < rank {
				if err := write(id, 0, nil, 0); err != nil {
					return err
				}
			}
		}
		return nil
	}

	for _, s := range m.sections {
		if s.id != secCustom {
			if err := missing(order[s.id]); err != nil {
				return nil, err
			}
		}
		var err error
		switch s.id {
		case secType, secImport, secFunction, secGlobal, secExport, secElem, secCode:
			_, extended := added[s.id]
			switch {
			case extended && s.id == secCode:
				err = write(secCode, 0, nil, 0)
			case extended:
				n, k, _ := readU32(s.body, 0) // read cleanly in parse
				err = write(s.id, n, s.body[k:], s.off+k)
			case s.id == secElem:
				out, err = m.emitElements(out, s)
			case s.id == secCode:
				out = appendSection(out, secCode, code)
			default:
				out = appendSection(out, s.id, s.body)
			}
		case secStart:
			// Dropped: the host calls StartExport after setting the fuel.
		case secTable:
			out, err = m.emitTables(out, s)
		case secCustom:
			out, err = m.emitCustom(out, s)
		default:
			out = appendSection(out, s.id, s.body)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := missing(len(order) + 1); err != nil {
		return nil, err
	}
	return out, nil
}

// emitCode returns the instrumented code section's contents: the
// module's function bodies (s.body is nil when it has none), then the
// imported functions' wrappers.
func (m *module) emitCode(s section) ([]byte, error) {
	var n uint32
	r := &reader{b: s.body, off: s.off}
	if s.body != nil {
		var err error
		if n, err = r.count(2); err != nil {
			return nil, err
		}
	}
	if int(n) != len(m.funcs) {
		return nil, errAt(s.off, "code section has %d bodies for %d functions", n, len(m.funcs))
	}
	total, err := addU32(n, m.imports, s.off)
	if err != nil {
		return nil, err
	}
	body := make([]byte, 0, len(s.body)*2)
	body = appendU32(body, total)
	for i := uint32(0); i < n; i++ {
		size, err := r.u32()
		if err != nil {
			return nil, err
		}
		if uint64(size) > uint64(len(r.b)-r.p) {
			return nil, errAt(r.off+r.p, "function body %d overruns the code section", i)
		}
		code := r.b[r.p : r.p+int(size)]
		fn, err := m.rewriteBody(code, m.params[m.funcs[i]], r.off+r.p)
		if err != nil {
			return nil, err
		}
		r.p += int(size)
		body = appendU32(body, uint32(len(fn)))
		body = append(body, fn...)
	}
	if r.p != len(r.b) {
		return nil, errAt(r.off+r.p, "code section has %d trailing bytes", len(r.b)-r.p)
	}
	for i, t := range m.imported {
		if uint64(t) >= uint64(len(m.params)) {
			return nil, errAt(0, "imported function %d has type index %d out of range", i, t)
		}
		// No locals; local.get of each parameter; call the import.
		w := []byte{0x00}
		for j := range m.params[t] {
			w = append(w, opLocalGet)
			w = appendU32(w, uint32(j))
		}
		w = append(w, opCall)
		w = appendU32(w, uint32(i))
		fn, err := m.rewriteBody(append(w, opEnd), m.params[t], 0)
		if err != nil {
			return nil, err
		}
		body = appendU32(body, uint32(len(fn)))
		body = append(body, fn...)
	}
	if uint64(len(body)) > math.MaxUint32 {
		return nil, errAt(s.off, "instrumented code section is too large")
	}
	return body, nil
}
