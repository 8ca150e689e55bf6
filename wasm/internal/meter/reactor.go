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
)

// ReactorVersion identifies PrepareReactor's output; it is bumped whenever
// the bytes it emits for some input change, as Version is for Instrument.
const ReactorVersion = 1

const secData = 11

// Reactor is what a snapshot of a reactor checker needs: two forms of the
// module, both derived from the module alone.
type Reactor struct {
	// Live is the module with every mutable global it defines exported
	// (under GlobalExportPrefix), so that the host can read their values
	// after _initialize. It behaves exactly as the module does.
	Live []byte
	// Restorable is Live with every active data segment emptied (it stays
	// active, at offset 0, so that every index and the dropped state of
	// active segments after instantiation are as they were) and without a
	// start section: an instance of it starts from a zero memory and the
	// globals' initial values, ready to have a snapshot written over them.
	Restorable []byte
	// Globals are the export names of the mutable globals, in index order.
	Globals []string
	// NoSnapshot says why a snapshot cannot capture the module's state
	// (a mutable reference or v128 global, or code that changes tables or
	// drops segments); empty when it can. Such a module still runs, cold.
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

// PrepareReactor derives the Live and Restorable forms of a reactor module.
// Both are meant to be passed through Instrument afterwards when metered;
// the globals Instrument appends come after every global exported here, so
// the names stay valid.
//
// # Errors
//
// A *DecodeError for anything it cannot decode, or for an export whose name
// starts with GlobalExportPrefix.
func PrepareReactor(module []byte) (*Reactor, error) {
	m, err := parse(module)
	if err != nil {
		return nil, err
	}
	rc := &Reactor{}
	var imported uint32
	for _, s := range m.sections {
		r := &reader{b: s.body, off: s.off}
		switch s.id {
		case secImport:
			if imported, err = r.importedGlobals(); err != nil {
				return nil, err
			}
		case secGlobal:
			n, err := r.count(minGlobal)
			if err != nil {
				return nil, err
			}
			for i := uint32(0); i < n; i++ {
				t, err := r.byte()
				if err != nil {
					return nil, err
				}
				mut, err := r.byte()
				if err != nil {
					return nil, err
				}
				if err := r.constExpr(); err != nil {
					return nil, err
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
				if strings.HasPrefix(name, GlobalExportPrefix) {
					return nil, errAt(at, "export name %q is reserved for snapshots", name)
				}
				r.p += 1 // kind
				if _, err := r.u32(); err != nil {
					return nil, err
				}
			}
		case secCode:
			if why, err := scanCode(s); err != nil {
				return nil, err
			} else if rc.NoSnapshot == "" {
				rc.NoSnapshot = why
			}
		}
	}
	if rc.Live, err = m.emitReactor(len(module), rc.Globals, false); err != nil {
		return nil, err
	}
	if rc.Restorable, err = m.emitReactor(len(module), rc.Globals, true); err != nil {
		return nil, err
	}
	return rc, nil
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

// importedGlobals counts the globals an import section imports.
func (r *reader) importedGlobals() (uint32, error) {
	n, err := r.count(4)
	if err != nil {
		return 0, err
	}
	var globals uint32
	for i := uint32(0); i < n; i++ {
		if _, err := r.name(); err != nil {
			return 0, err
		}
		if _, err := r.name(); err != nil {
			return 0, err
		}
		kind, err := r.byte()
		if err != nil {
			return 0, err
		}
		switch kind {
		case 0x00:
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
			return 0, errAt(r.off+r.p-1, "unsupported import kind %#x", kind)
		}
		if err != nil {
			return 0, err
		}
	}
	return globals, nil
}

// scanCode looks for instructions whose effect a snapshot of memory and
// globals would not capture: table.set and the table and segment
// instructions of bulk memory that change tables or drop segments.
func scanCode(s section) (string, error) {
	r := &reader{b: s.body, off: s.off}
	n, err := r.count(2)
	if err != nil {
		return "", err
	}
	for i := uint32(0); i < n; i++ {
		size, err := r.u32()
		if err != nil {
			return "", err
		}
		if uint64(size) > uint64(len(r.b)-r.p) {
			return "", errAt(r.off+r.p, "function body %d overruns the code section", i)
		}
		body := r.b[r.p : r.p+int(size)]
		base := r.off + r.p
		r.p += int(size)
		p, err := skipLocals(body, base)
		if err != nil {
			return "", err
		}
		d := &decoder{b: body, p: p, base: base}
		for d.p < len(body) {
			in, err := d.next()
			if err != nil {
				return "", err
			}
			switch {
			case in.op == 0x26:
				return "it uses table.set", nil
			case in.op == opMiscPrefix:
				switch in.sub {
				case 9:
					return "it uses data.drop", nil
				case 13:
					return "it uses elem.drop", nil
				case miscTableInit, miscTableCopy, miscTableGrow, miscTableFill:
					return "it changes a table", nil
				}
			}
		}
	}
	return "", nil
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

// emitReactor writes the Live form, or with restorable the Restorable one.
func (m *module) emitReactor(size int, globals []string, restorable bool) ([]byte, error) {
	out := make([]byte, 0, size+64+len(globals)*24)
	out = append(out, header...)
	var extra []byte
	for _, name := range globals {
		idx, _ := strconv.ParseUint(strings.TrimPrefix(name, GlobalExportPrefix), 10, 32)
		extra = appendName(extra, name)
		extra = append(extra, 0x03)
		extra = appendU32(extra, uint32(idx))
	}
	for _, s := range m.sections {
		switch {
		case s.id == secExport:
			n, rest := countAndRest(s)
			total, err := addU32(n, uint32(len(globals)), s.off)
			if err != nil {
				return nil, err
			}
			body := appendU32(nil, total)
			body = append(body, rest...)
			out = appendSection(out, secExport, append(body, extra...))
		case restorable && s.id == secStart:
			// Dropped: a restored instance starts from the snapshot.
		case restorable && s.id == secData:
			body, err := emptyData(s)
			if err != nil {
				return nil, err
			}
			out = appendSection(out, secData, body)
		default:
			out = appendSection(out, s.id, s.body)
		}
	}
	return out, nil
}

// emptyData rewrites a data section so that each active segment is empty
// and at offset 0; passive segments are kept as they are.
func emptyData(s section) ([]byte, error) {
	r := &reader{b: s.body, off: s.off}
	n, err := r.count(2)
	if err != nil {
		return nil, err
	}
	out := appendU32(nil, n)
	for i := uint32(0); i < n; i++ {
		start := r.p
		flags, err := r.u32()
		if err != nil {
			return nil, err
		}
		var mem uint32
		switch flags {
		case 0:
			err = r.constExpr()
		case 1:
		case 2:
			if mem, err = r.u32(); err == nil {
				err = r.constExpr()
			}
		default:
			return nil, errAt(r.off+r.p, "bad data segment flags %d", flags)
		}
		if err != nil {
			return nil, err
		}
		size, err := r.count(1)
		if err != nil {
			return nil, err
		}
		r.p += int(size)
		switch flags {
		case 0:
			out = append(out, 0x00, opI32Const, 0x00, opEnd, 0x00)
		case 1:
			out = append(out, r.b[start:r.p]...)
		case 2:
			out = append(out, 0x02)
			out = appendU32(out, mem)
			out = append(out, opI32Const, 0x00, opEnd, 0x00)
		}
	}
	return out, nil
}
