package meter

// wazero's decoder allocates for the counts a module declares before it
// reads the entries (a 14-byte element section can make it allocate
// gigabytes). Instrument runs before wazero sees a module, so it refuses
// declared counts the bytes cannot hold, even in sections it otherwise
// copies as they are.

// Minimum encoded sizes of section entries.
const (
	minTable  = 3 // reftype, limits flag, min
	minMemory = 2 // limits flag, min
	minGlobal = 3 // valtype, mutability, at least end
)

// checkCounts checks the vector counts of sections Instrument copies.
func checkCounts(s section) error {
	r := &reader{b: s.body, off: s.off}
	var err error
	switch s.id {
	case 4:
		_, err = r.count(minTable)
	case 5:
		_, err = r.count(minMemory)
	case secGlobal:
		_, err = r.count(minGlobal)
	case 9:
		err = r.elements()
	case 11:
		err = r.data()
	case secCustom:
		err = r.names()
	}
	return err
}

// constExpr skips a constant expression up to and including its end.
func (r *reader) constExpr() error {
	d := &decoder{b: r.b, p: r.p, base: r.off}
	for {
		in, err := d.next()
		if err != nil {
			return err
		}
		switch in.op {
		case opBlock, opLoop, opIf, opElse:
			return d.err(in.pos, "control instruction in a constant expression")
		case opEnd:
			r.p = d.p
			return nil
		}
	}
}

// elemHeader reads an element segment's flags and what they say follows
// before its items: a table index, an offset expression, an element kind
// or reference type. It returns the flags.
func (r *reader) elemHeader() (uint32, error) {
	flags, err := r.u32()
	if err != nil {
		return 0, err
	}
	if flags > 7 {
		return 0, errAt(r.off+r.p, "bad element segment flags %d", flags)
	}
	if flags&3 == 2 { // explicit table index
		if _, err := r.u32(); err != nil {
			return 0, err
		}
	}
	if flags&1 == 0 { // active: offset expression
		if err := r.constExpr(); err != nil {
			return 0, err
		}
	}
	if flags&3 != 0 { // element kind or reference type
		if _, err := r.byte(); err != nil {
			return 0, err
		}
	}
	return flags, nil
}

func (r *reader) elements() error {
	n, err := r.count(3)
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		flags, err := r.elemHeader()
		if err != nil {
			return err
		}
		min := 1 // function indices
		if flags&4 != 0 {
			min = 2 // expressions
		}
		c, err := r.count(min)
		if err != nil {
			return err
		}
		if err := r.elemItems(c, flags&4 != 0); err != nil {
			return err
		}
	}
	return nil
}

// elemItems reads an element segment's c items: constant expressions when
// exprs, else function indices.
func (r *reader) elemItems(c uint32, exprs bool) error {
	for j := uint32(0); j < c; j++ {
		var err error
		if exprs {
			err = r.constExpr()
		} else {
			_, err = r.u32()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// dataHeader reads a data segment's flags and, for an active segment, its
// memory index and offset expression: all but its bytes.
func (r *reader) dataHeader() error {
	flags, err := r.u32()
	if err != nil {
		return err
	}
	switch flags {
	case 0:
		return r.constExpr()
	case 1:
		return nil
	case 2:
		if _, err := r.u32(); err != nil {
			return err
		}
		return r.constExpr()
	}
	return errAt(r.off+r.p, "bad data segment flags %d", flags)
}

func (r *reader) data() error {
	n, err := r.count(2)
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		if err := r.dataHeader(); err != nil {
			return err
		}
		size, err := r.count(1)
		if err != nil {
			return err
		}
		r.p += int(size)
	}
	return nil
}

// names checks the counts of the function and local names subsections of
// the "name" custom section, which wazero decodes. Other custom sections
// and subsections are not looked at.
func (r *reader) names() error {
	name, err := r.name()
	if err != nil || name != "name" {
		return nil // not ours to judge; wazero reads custom names alone
	}
	for r.p < len(r.b) {
		id, err := r.byte()
		if err != nil {
			return err
		}
		size, err := r.count(1)
		if err != nil {
			return err
		}
		sub := &reader{b: r.b[r.p : r.p+int(size)], off: r.off + r.p}
		r.p += int(size)
		switch id {
		case 1: // function names: vec(index name)
			err = sub.nameMap()
		case 2: // local names: vec(index vec(index name))
			var n uint32
			if n, err = sub.count(2); err != nil {
				return err
			}
			for i := uint32(0); i < n && err == nil; i++ {
				if _, err = sub.u32(); err == nil {
					err = sub.nameMap()
				}
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (r *reader) nameMap() error {
	n, err := r.count(2)
	for i := uint32(0); i < n && err == nil; i++ {
		if _, err = r.u32(); err == nil {
			_, err = r.name()
		}
	}
	return err
}
