package meter

import "math"

// Section ids.
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
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
	params   []uint32 // parameter count of each type
	funcs    []uint32 // type index of each defined function
	globals  uint32   // imported and defined globals: the counter's index
	start    int64    // start function index, or -1
}

// Instrument returns module with fuel metering added, as described in the
// package documentation. module is not modified.
//
// # Errors
//
// A *DecodeError for anything the pass cannot decode: a malformed binary, an
// instruction or section outside WebAssembly 2.0 as wazero enables it by
// default, or an export named GlobalExport or StartExport already present.
// For an input that wazero would reject, Instrument either returns an error
// or returns bytes that wazero rejects too; it never panics.
func Instrument(module []byte) ([]byte, error) {
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
		m.params = make([]uint32, n)
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
				for k := uint32(0); k < c; k++ {
					if t, _ := r.byte(); !isValType(t) {
						return errAt(r.off+r.p-1, "bad value type %#x", t)
					}
				}
				if j == 0 {
					m.params[i] = c
				}
			}
		}
	case secImport:
		n, err := r.count(4)
		if err != nil {
			return err
		}
		for i := uint32(0); i < n; i++ {
			if _, err := r.name(); err != nil {
				return err
			}
			if _, err := r.name(); err != nil {
				return err
			}
			kind, err := r.byte()
			if err != nil {
				return err
			}
			switch kind {
			case 0x00: // function
				_, err = r.u32()
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
			return errAt(r.off, "no room for two more globals")
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

	// The fuel counter: mut i64, initialised to 0; the depth counter: mut
	// i32, initialised to 0.
	global := []byte{0x7e, 0x01, opI64Const, 0x00, opEnd, 0x7f, 0x01, opI32Const, 0x00, opEnd}
	exports := appendName(nil, GlobalExport)
	exports = append(exports, 0x03)
	exports = appendU32(exports, m.globals)
	exports = appendName(exports, DepthExport)
	exports = append(exports, 0x03)
	exports = appendU32(exports, m.globals+1)
	nexports := uint32(2)
	if m.start >= 0 {
		exports = appendName(exports, StartExport)
		exports = append(exports, 0x00)
		exports = appendU32(exports, uint32(m.start))
		nexports++
	}

	wroteGlobal, wroteExport := false, false
	writeGlobal := func(old []byte, n uint32) {
		body := appendU32(nil, n+2)
		body = append(body, old...)
		out = appendSection(out, secGlobal, append(body, global...))
		wroteGlobal = true
	}
	writeExport := func(old []byte, n uint32) error {
		total, err := addU32(n, nexports, 0)
		if err != nil {
			return err
		}
		body := appendU32(nil, total)
		body = append(body, old...)
		out = appendSection(out, secExport, append(body, exports...))
		wroteExport = true
		return nil
	}

	for _, s := range m.sections {
		if s.id != secCustom {
			// Sections the input lacks go where their rank says.
			if !wroteGlobal && order[s.id] > order[secGlobal] {
				writeGlobal(nil, 0)
			}
			if !wroteExport && order[s.id] > order[secExport] {
				if err := writeExport(nil, 0); err != nil {
					return nil, err
				}
			}
		}
		switch s.id {
		case secGlobal:
			n, rest := countAndRest(s)
			writeGlobal(rest, n)
		case secExport:
			n, rest := countAndRest(s)
			if err := writeExport(rest, n); err != nil {
				return nil, err
			}
		case secStart:
			// Dropped: the host calls StartExport after setting the fuel.
		case secCode:
			var err error
			if out, err = m.emitCode(out, s); err != nil {
				return nil, err
			}
		default:
			out = appendSection(out, s.id, s.body)
		}
	}
	if !wroteGlobal {
		writeGlobal(nil, 0)
	}
	if !wroteExport {
		if err := writeExport(nil, 0); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// emitCode appends the instrumented code section.
func (m *module) emitCode(out []byte, s section) ([]byte, error) {
	r := &reader{b: s.body, off: s.off}
	n, err := r.count(2)
	if err != nil {
		return nil, err
	}
	if int(n) != len(m.funcs) {
		return nil, errAt(s.off, "code section has %d bodies for %d functions", n, len(m.funcs))
	}
	body := make([]byte, 0, len(s.body)*2)
	body = appendU32(body, n)
	for i := uint32(0); i < n; i++ {
		size, err := r.u32()
		if err != nil {
			return nil, err
		}
		if uint64(size) > uint64(len(r.b)-r.p) {
			return nil, errAt(r.off+r.p, "function body %d overruns the code section", i)
		}
		code := r.b[r.p : r.p+int(size)]
		fn, err := rewriteBody(code, m.params[m.funcs[i]], m.globals, r.off+r.p)
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
	if uint64(len(body)) > math.MaxUint32 {
		return nil, errAt(s.off, "instrumented code section is too large")
	}
	return appendSection(out, secCode, body), nil
}
