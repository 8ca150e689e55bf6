package meter

// Adding the fuel_slice import moves every defined function up by one
// index. These rewrite the places outside code that name functions:
// exports, the start function (emit), global initialisers, element
// segments and the name section.

// expr appends the constant expression at r.p, up to and including its
// end, with ref.func renumbered.
func (m *module) expr(r *reader, out []byte) ([]byte, error) {
	d := &decoder{b: r.b, p: r.p, base: r.off}
	last := r.p
	for {
		in, err := d.next()
		if err != nil {
			return nil, err
		}
		switch in.op {
		case opBlock, opLoop, opIf, opElse:
			return nil, d.err(in.pos, "control instruction in a constant expression")
		case opRefFunc:
			i, _, _ := readU32(r.b, in.pos+1) // decoded by next
			j, err := m.ref(i, r.off+in.pos)
			if err != nil {
				return nil, err
			}
			out = append(out, r.b[last:in.pos+1]...)
			out = appendU32(out, j)
			last = in.end
		case opEnd:
			r.p = d.p
			return append(out, r.b[last:d.p]...), nil
		}
	}
}

// funcIndex appends the function index at r.p, renumbered: as a call
// names it, or with ref as a reference does (see module.ref).
func (m *module) funcIndex(r *reader, out []byte, ref bool) ([]byte, error) {
	at := r.off + r.p
	i, err := r.u32()
	if err != nil {
		return nil, err
	}
	renumber := m.fn
	if ref {
		renumber = m.ref
	}
	j, err := renumber(i, at)
	if err != nil {
		return nil, err
	}
	return appendU32(out, j), nil
}

// globalEntries appends n global entries with their initialisers
// renumbered.
func (m *module) globalEntries(r *reader, out []byte, n uint32) ([]byte, error) {
	for i := uint32(0); i < n; i++ {
		at := r.p
		if _, err := r.byte(); err != nil { // value type
			return nil, err
		}
		if _, err := r.byte(); err != nil { // mutability
			return nil, err
		}
		out = append(out, r.b[at:r.p]...)
		var err error
		if out, err = m.expr(r, out); err != nil {
			return nil, err
		}
	}
	return out, r.trailing(secGlobal)
}

// exportEntries appends n exports with function exports renumbered.
func (m *module) exportEntries(r *reader, out []byte, n uint32) ([]byte, error) {
	for i := uint32(0); i < n; i++ {
		at := r.p
		if _, err := r.name(); err != nil {
			return nil, err
		}
		kind, err := r.byte()
		if err != nil {
			return nil, err
		}
		out = append(out, r.b[at:r.p]...)
		if kind == 0x00 {
			out, err = m.funcIndex(r, out, false)
		} else {
			at = r.p
			if _, err = r.u32(); err == nil {
				out = append(out, r.b[at:r.p]...)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return out, r.trailing(secExport)
}

func (r *reader) trailing(id byte) error {
	if r.p != len(r.b) {
		return errAt(r.off+r.p, "section %d has %d trailing bytes", id, len(r.b)-r.p)
	}
	return nil
}

// emitElements appends the element section with every function index and
// ref.func renumbered, in all eight segment forms.
func (m *module) emitElements(out []byte, s section) ([]byte, error) {
	r := &reader{b: s.body, off: s.off}
	n, err := r.count(3)
	if err != nil {
		return nil, err
	}
	body, err := m.elementEntries(r, appendU32(make([]byte, 0, len(s.body)+16), n), n)
	if err != nil {
		return nil, err
	}
	return appendSection(out, secElem, body), nil
}

// elementEntries appends n element segments with every function index
// and ref.func renumbered as references.
func (m *module) elementEntries(r *reader, body []byte, n uint32) ([]byte, error) {
	for i := uint32(0); i < n; i++ {
		at := r.p
		flags, err := r.u32()
		if err != nil {
			return nil, err
		}
		if flags > 7 {
			return nil, errAt(r.off+r.p, "bad element segment flags %d", flags)
		}
		if flags&3 == 2 { // explicit table index
			if _, err := r.u32(); err != nil {
				return nil, err
			}
		}
		body = append(body, r.b[at:r.p]...)
		if flags&1 == 0 { // active: offset expression
			if body, err = m.expr(r, body); err != nil {
				return nil, err
			}
		}
		at = r.p
		if flags&3 != 0 { // element kind or reference type
			if _, err := r.byte(); err != nil {
				return nil, err
			}
		}
		min := 1 // function indices
		if flags&4 != 0 {
			min = 2 // expressions
		}
		c, err := r.count(min)
		if err != nil {
			return nil, err
		}
		body = append(body, r.b[at:r.p]...)
		for j := uint32(0); j < c; j++ {
			if flags&4 != 0 {
				body, err = m.expr(r, body)
			} else {
				body, err = m.funcIndex(r, body, true)
			}
			if err != nil {
				return nil, err
			}
		}
	}
	return body, r.trailing(secElem)
}

// emitCustom appends a custom section: the name section with the function
// indices of its function, local and label names renumbered, any other
// custom section as it is.
func (m *module) emitCustom(out []byte, s section) ([]byte, error) {
	r := &reader{b: s.body, off: s.off}
	name, err := r.name()
	if err != nil || name != "name" {
		return appendSection(out, secCustom, s.body), nil
	}
	body := append(make([]byte, 0, len(s.body)+16), s.body[:r.p]...)
	for r.p < len(r.b) {
		id, err := r.byte()
		if err != nil {
			return nil, err
		}
		size, err := r.count(1)
		if err != nil {
			return nil, err
		}
		sub := &reader{b: r.b[r.p : r.p+int(size)], off: r.off + r.p}
		old := sub.b
		r.p += int(size)
		var n uint32
		switch id {
		case 1, 2, 3: // function, local and label names, keyed by function
			if n, err = sub.count(2); err != nil {
				return nil, err
			}
			nb := appendU32(make([]byte, 0, len(old)+8), n)
			for i := uint32(0); i < n; i++ {
				if nb, err = m.funcIndex(sub, nb, false); err != nil {
					return nil, err
				}
				at := sub.p
				if id == 1 {
					_, err = sub.name()
				} else {
					err = sub.nameMap()
				}
				if err != nil {
					return nil, err
				}
				nb = append(nb, sub.b[at:sub.p]...)
			}
			if sub.p != len(sub.b) {
				return nil, errAt(sub.off+sub.p, "name subsection %d has %d trailing bytes", id, len(sub.b)-sub.p)
			}
			old = nb
		}
		body = append(body, id)
		body = appendU32(body, uint32(len(old)))
		body = append(body, old...)
	}
	return appendSection(out, secCustom, body), nil
}

// emitTables appends the table section with every table's maximum
// lowered to MaxTableSize, or set to it when the table has none, so that
// wazero refuses table.grow past it (CheckLimits refused larger initial
// sizes). Imported tables are left alone: the sandbox provides none.
func (m *module) emitTables(out []byte, s section) ([]byte, error) {
	r := &reader{b: s.body, off: s.off}
	n, err := r.count(minTable)
	if err != nil {
		return nil, err
	}
	body := appendU32(make([]byte, 0, len(s.body)+int(n)*4), n)
	for i := uint32(0); i < n; i++ {
		t, err := r.byte()
		if err != nil {
			return nil, err
		}
		flag, err := r.byte()
		if err != nil {
			return nil, err
		}
		if flag > 1 {
			return nil, errAt(r.off+r.p-1, "unsupported limits flag %#x", flag)
		}
		initial, err := r.u32()
		if err != nil {
			return nil, err
		}
		max := uint32(MaxTableSize)
		if flag == 1 {
			if max, err = r.u32(); err != nil {
				return nil, err
			}
			max = min(max, MaxTableSize)
		}
		body = append(body, t, 0x01)
		body = appendU32(body, initial)
		body = appendU32(body, max)
	}
	if err := r.trailing(secTable); err != nil {
		return nil, err
	}
	return appendSection(out, secTable, body), nil
}
