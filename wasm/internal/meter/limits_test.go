package meter

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// realModules are the largest modules the project runs: the Python
// runtime and the Go and C checker fixtures.
func realModules(tb testing.TB) map[string][]byte {
	tb.Helper()
	root := filepath.Join("..", "..", "..")
	paths := []string{filepath.Join(root, "checkers", "python", "runtime", "python.wasm")}
	for _, n := range []string{"goreactor", "gocommand", "rows", "oom", "probe", "primes", "squares"} {
		paths = append(paths, filepath.Join(root, "fixtures", "checkers", n+".wasm"))
	}
	mods := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		mods[filepath.Base(p)] = b
	}
	return mods
}

// TestCheckLimits_Real: every real module, and its reactor form, is
// within the limits; the log shows what each measures (the figures in
// the limits' docs).
func TestCheckLimits_Real(t *testing.T) {
	t.Parallel()
	for name, b := range realModules(t) {
		st, err := measure(b)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		t.Logf("%s: %+v", name, *st)
		if IsReactor(b) {
			rc, err := PrepareReactor(b)
			if err != nil {
				t.Fatal(err)
			}
			if err := CheckLimits(rc.Module); err != nil {
				t.Errorf("%s, reactor form: %v", name, err)
			}
		}
	}
}

// Module builders for the limit tests: each returns a module with n of
// what one limit bounds.

// sec appends a section.
func sec(b []byte, id byte, body []byte) []byte { return appendSection(b, id, body) }

// vec is a vector of n copies of entry.
func vec(n int, entry []byte) []byte {
	b := appendU32(make([]byte, 0, 5+n*len(entry)), uint32(n))
	for i := 0; i < n; i++ {
		b = append(b, entry...)
	}
	return b
}

func wasmHeader() []byte { return []byte("\x00asm\x01\x00\x00\x00") }

// funcModule is a module of one function of type [params i32] -> []
// with the given local declarations and code.
func funcModule(params int, decls []byte, code []byte) []byte {
	typ := append([]byte{0x60}, vec(params, []byte{0x7f})...)
	typ = append(typ, 0x00)
	b := sec(wasmHeader(), secType, append(appendU32(nil, 1), typ...))
	b = sec(b, secFunction, []byte{0x01, 0x00})
	body := append(decls, code...)
	code1 := appendU32(nil, uint32(len(body)))
	return sec(b, secCode, append(append([]byte{0x01}, code1...), body...))
}

func brTableModule(n int) []byte {
	code := []byte{opBlock, blockEmpty, opI32Const, 0, opBrTable}
	code = appendU32(code, uint32(n))
	code = append(code, make([]byte, n+1)...) // every target 0
	return funcModule(0, []byte{0x00}, append(code, opEnd, opEnd))
}

func nestModule(n int) []byte {
	code := make([]byte, 0, 3*n+1)
	for i := 0; i < n; i++ {
		code = append(code, opBlock, blockEmpty)
	}
	for i := 0; i <= n; i++ {
		code = append(code, opEnd)
	}
	return funcModule(0, []byte{0x00}, code)
}

// localsModule has params parameters and n-params declared locals in two
// declarations.
func localsModule(params, n int) []byte {
	half := (n - params) / 2
	decls := []byte{0x02}
	decls = append(appendU32(decls, uint32(half)), 0x7e)
	decls = append(appendU32(decls, uint32(n-params-half)), 0x7f)
	return funcModule(params, decls, []byte{opEnd})
}

// spreadModule has functions of type [] -> [], whose bodies body(k) share
// n out between them, at most per each: a module within every limit of a
// function that goes over a limit of the whole module.
func spreadModule(n, per int, body func(k int) []byte) []byte {
	var bodies [][]byte
	for left := n; left > 0; left -= per {
		bodies = append(bodies, body(min(per, left)))
	}
	b := sec(wasmHeader(), secType, []byte{0x01, 0x60, 0x00, 0x00})
	b = sec(b, secFunction, vec(len(bodies), []byte{0x00}))
	code := appendU32(nil, uint32(len(bodies)))
	for _, body := range bodies {
		code = append(appendU32(code, uint32(len(body))), body...)
	}
	return sec(b, secCode, code)
}

// localsBody is a function body declaring k locals.
func localsBody(k int) []byte {
	return append(append(appendU32([]byte{0x01}, uint32(k)), 0x7f), opEnd)
}

// brTableBody is a function body with one br_table of k targets.
func brTableBody(k int) []byte {
	code := appendU32([]byte{0x00, opBlock, blockEmpty, opI32Const, 0, opBrTable}, uint32(k))
	code = append(code, make([]byte, k+1)...)
	return append(code, opEnd, opEnd)
}

// bodyModule has one function body of exactly n bytes.
func bodyModule(n int) []byte {
	code := make([]byte, n-1)
	for i := range code {
		code[i] = opNop
	}
	code[len(code)-1] = opEnd
	return funcModule(0, []byte{0x00}, code)
}

// funcsModule has n functions of type [] -> [].
func funcsModule(n int) []byte {
	b := sec(wasmHeader(), secType, []byte{0x01, 0x60, 0x00, 0x00})
	b = sec(b, secFunction, vec(n, []byte{0x00}))
	return sec(b, secCode, vec(n, []byte{0x02, 0x00, opEnd}))
}

// codeModule has a code section of exactly n bytes (n about 2^25), in 40
// bodies of nops, each under MaxBodySize and over 2^14 bytes, so that each
// size takes three bytes.
func codeModule(n int) []byte {
	const k = 40
	size := (n - 1 - 3*k) / k
	code := make([]byte, 0, n)
	code = append(code, k)
	for i := 0; i < k; i++ {
		s := size
		if i == k-1 {
			s = n - len(code) - 3
		}
		code = appendU32(code, uint32(s))
		code = append(code, 0x00)
		for j := 0; j < s-2; j++ {
			code = append(code, opNop)
		}
		code = append(code, opEnd)
	}
	b := sec(wasmHeader(), secType, []byte{0x01, 0x60, 0x00, 0x00})
	b = sec(b, secFunction, vec(k, []byte{0x00}))
	return sec(b, secCode, code)
}

// tableModule has one table of initial size n, defined or imported.
func tableModule(n int, imported bool) []byte {
	t := append([]byte{0x70, 0x00}, appendU32(nil, uint32(n))...)
	if imported {
		imp := append(appendName(appendName(nil, "env"), "t"), 0x01)
		return sec(wasmHeader(), secImport, append([]byte{0x01}, append(imp, t...)...))
	}
	return sec(wasmHeader(), secTable, append([]byte{0x01}, t...))
}

func typesModule(n int) []byte {
	return sec(wasmHeader(), secType, vec(n, []byte{0x60, 0x00, 0x00}))
}

func paramsModule(n int, results bool) []byte {
	typ := []byte{0x60}
	if results {
		typ = append(append(typ, 0x00), vec(n, []byte{0x7f})...)
	} else {
		typ = append(append(typ, vec(n, []byte{0x7f})...), 0x00)
	}
	return sec(wasmHeader(), secType, append([]byte{0x01}, typ...))
}

func importsModule(n int) []byte {
	b := sec(wasmHeader(), secType, []byte{0x01, 0x60, 0x00, 0x00})
	imp := append(appendName(appendName(nil, "env"), "f"), 0x00, 0x00)
	return sec(b, secImport, vec(n, imp))
}

func exportsModule(n int) []byte {
	b := sec(wasmHeader(), secGlobal, []byte{0x01, 0x7f, 0x00, opI32Const, 0x00, opEnd})
	return sec(b, secExport, vec(n, []byte{0x00, 0x03, 0x00})) // unnamed, global 0
}

func globalsModule(n int) []byte {
	return sec(wasmHeader(), secGlobal, vec(n, []byte{0x7f, 0x00, opI32Const, 0x00, opEnd}))
}

// dataModule has n passive data segments of size bytes each.
func dataModule(n, size int) []byte {
	seg := append([]byte{0x01}, appendU32(nil, uint32(size))...)
	seg = append(seg, make([]byte, size)...)
	return sec(wasmHeader(), secData, vec(n, seg))
}

func dataCountModule(n int) []byte {
	return sec(wasmHeader(), secDataCount, appendU32(nil, uint32(n)))
}

// elemModule has n passive element segments of k function indices.
func elemModule(n, k int) []byte {
	b := sec(wasmHeader(), secType, []byte{0x01, 0x60, 0x00, 0x00})
	b = sec(b, secFunction, []byte{0x01, 0x00})
	seg := append([]byte{0x01, 0x00}, vec(k, []byte{0x00})...)
	b = sec(b, secElem, vec(n, seg))
	return sec(b, secCode, []byte{0x01, 0x02, 0x00, opEnd})
}

func TestCheckLimits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		limit string
		max   uint64
		build func(n int) []byte
	}{
		{"br_table targets", MaxBrTableTargets, brTableModule},
		{"br_table targets of all functions", MaxBrTableTargetsTotal, func(n int) []byte {
			return spreadModule(n, MaxBrTableTargets, brTableBody)
		}},
		{"block nesting depth", MaxNesting, nestModule},
		{"blocks' nesting depths summed", MaxNestingWork, func(n int) []byte {
			// Functions nested 4,096 deep sum 1+...+4,096 each; the last
			// one's depth makes up the rest.
			per := MaxNesting * (MaxNesting + 1) / 2
			return spreadModule(n, per, func(k int) []byte {
				d := MaxNesting
				for d*(d+1)/2 > k {
					d--
				}
				// a depth d, and k - d(d+1)/2 more blocks at depth 1
				code := []byte{0x00}
				for range d {
					code = append(code, opBlock, blockEmpty)
				}
				for range d {
					code = append(code, opEnd)
				}
				for range k - d*(d+1)/2 {
					code = append(code, opBlock, blockEmpty, opEnd)
				}
				return append(code, opEnd)
			})
		}},
		{"locals of a function", MaxLocals, func(n int) []byte { return localsModule(0, n) }},
		{"locals of a function", MaxLocals, func(n int) []byte { return localsModule(10, n) }},
		{"locals of all functions", MaxLocalsTotal, func(n int) []byte { return spreadModule(n, MaxLocals, localsBody) }},
		{"function body bytes", MaxBodySize, bodyModule},
		{"functions", MaxFunctions, funcsModule},
		{"code section bytes", MaxCodeSize, codeModule},
		{"table size", MaxTableSize, func(n int) []byte { return tableModule(n, false) }},
		{"table size", MaxTableSize, func(n int) []byte { return tableModule(n, true) }},
		{"tables", MaxTables, func(n int) []byte {
			return sec(wasmHeader(), secTable, vec(n, []byte{0x70, 0x00, 0x01}))
		}},
		{"data segments", MaxDataSegments, func(n int) []byte { return dataModule(n, 0) }},
		{"data segments", MaxDataSegments, dataCountModule},
		{"bytes of data segments", MaxDataBytes, func(n int) []byte { return dataModule(1, n) }},
		{"element segments", MaxElemSegments, func(n int) []byte { return elemModule(n, 0) }},
		{"element segment entries", MaxElemEntries, func(n int) []byte { return elemModule(1, n) }},
		{"function types", MaxTypes, typesModule},
		{"parameters or results of a function type", MaxParams, func(n int) []byte { return paramsModule(n, false) }},
		{"parameters or results of a function type", MaxParams, func(n int) []byte { return paramsModule(n, true) }},
		{"imports", MaxImports, importsModule},
		{"exports", MaxExports, exportsModule},
		{"globals", MaxGlobals, globalsModule},
	}
	for _, tt := range tests {
		t.Run(tt.limit, func(t *testing.T) {
			if err := CheckLimits(tt.build(int(tt.max))); err != nil {
				t.Errorf("at the limit %d: %v", tt.max, err)
			}
			err := CheckLimits(tt.build(int(tt.max) + 1))
			var le *LimitError
			if !errors.As(err, &le) || le.Limit != tt.limit || le.Max != tt.max || le.Got != tt.max+1 {
				t.Fatalf("over the limit: %v, want a *LimitError on %s", err, tt.limit)
			}
			want := fmt.Sprintf("module exceeds the limit on %s: %d > %d", tt.limit, tt.max+1, tt.max)
			if err.Error() != want {
				t.Errorf("error %q, want %q", err, want)
			}
		})
	}
}

// TestCheckLimits_Bombs: the uploads of issues 16 and 24 are refused, by
// Instrument and PrepareReactor too, in well under a second, naming the
// limit.
func TestCheckLimits_Bombs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, limit string
		module      []byte
	}{
		{"a br_table of a million targets", "br_table targets", brTableModule(1_000_000)},
		{"300,000 nested blocks (900 KB)", "block nesting depth", nestModule(300_000)},
		{"2^32-1 locals", "locals of a function", funcModule(0, []byte{0x01, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x7e}, []byte{opEnd})},
		{"a table of 2^32-1 entries", "table size", tableModule(math.MaxUint32, false)},
		{"a million functions", "functions", funcsModule(1_000_000)},
		{"a million types declared in 10 bytes", "function types", sec(wasmHeader(), secType, []byte{0xc0, 0x84, 0x3d})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for fn, f := range map[string]func([]byte) error{
				"CheckLimits":    CheckLimits,
				"Instrument":     func(b []byte) error { _, err := Instrument(b); return err },
				"PrepareReactor": func(b []byte) error { _, err := PrepareReactor(b); return err },
			} {
				start := time.Now()
				err := f(tt.module)
				took := time.Since(start)
				var le *LimitError
				if !errors.As(err, &le) || le.Limit != tt.limit {
					t.Fatalf("%s: %v, want a *LimitError on %s", fn, err, tt.limit)
				}
				if took > 200*time.Millisecond {
					t.Errorf("%s took %v on %d bytes", fn, took, len(tt.module))
				}
				t.Logf("%s: refused %d bytes in %v", fn, len(tt.module), took)
			}
		})
	}
}

// TestInstrument_TableMax: every table's maximum is lowered to
// MaxTableSize, so that table.grow past it returns -1 and is not charged,
// on both engines; growing to it succeeds, charged per element.
func TestInstrument_TableMax(t *testing.T) {
	t.Parallel()
	metered := mustInstrument(t, readWasm(t, "tablegrow"))
	for _, e := range engines {
		for _, tt := range []struct {
			fn       string
			n        uint64
			want     int32
			grownFee int64
		}{
			{"grow", MaxTableSize, -1, 0}, // 1 + 65536 entries
			{"grow", 1_000_000, -1, 0},    // past it by far
			{"grow", MaxTableSize - 1, 1, MaxTableSize - 1},
			{"growu", MaxTableSize - 1, -1, 0}, // 2 + 65535
			{"growu", MaxTableSize - 2, 2, MaxTableSize - 2},
		} {
			m, err := newInstance(t, e.cfg(), metered, true, bigFuel)
			if err != nil {
				t.Fatal(err)
			}
			got := m.call(t, tt.fn, tt.n)
			if got.err != nil || int32(got.results[0]) != tt.want {
				t.Fatalf("%s: %s(%d) = %v, %v; want %d", e.name, tt.fn, tt.n, got.results, got.err, tt.want)
			}
			// local.get, ref.null, table.grow: 3, and GrowCost granted or not.
			if want := 3 + GrowCost + tt.grownFee*BulkCost; got.used != want {
				t.Errorf("%s: %s(%d) used %d, want %d", e.name, tt.fn, tt.n, got.used, want)
			}
		}
	}
}
