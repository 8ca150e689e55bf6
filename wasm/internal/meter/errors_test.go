package meter

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
)

// oneFunc assembles a minimal module with one function of type [] -> [] and
// the given body code (after the locals).
func oneFunc(code ...byte) []byte {
	body := append([]byte{0x00}, code...) // no locals
	b := []byte("\x00asm\x01\x00\x00\x00")
	b = append(b, 0x01, 0x04, 0x01, 0x60, 0x00, 0x00) // type section
	b = append(b, 0x03, 0x02, 0x01, 0x00)             // function section
	sec := appendU32([]byte{0x01}, uint32(len(body)))
	sec = append(sec, body...)
	b = append(b, 0x0a)
	b = appendU32(b, uint32(len(sec)))
	return append(b, sec...)
}

func TestInstrument_Errors(t *testing.T) {
	t.Parallel()
	// The export section goes between the function and code sections.
	plain := oneFunc(0x0b)
	withExport := append([]byte{}, plain[:18]...)
	withExport = append(withExport, 0x07, 0x0e, 0x01, 0x0a)
	withExport = append(append(withExport, "assay_fuel"...), 0x00, 0x00)
	withExport = append(withExport, plain[18:]...)

	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"ErrEmpty", nil, "offset 0x0: not a WebAssembly 1 binary"},
		{"ErrVersion", []byte("\x00asm\x02\x00\x00\x00"), "not a WebAssembly 1 binary"},
		{"ErrTailCall", oneFunc(0x12, 0x00, 0x0b), "unsupported opcode 0x12: return_call (tail calls)"},
		{"ErrThreads", oneFunc(0xfe, 0x00, 0x0b), "atomic prefix (threads)"},
		{"ErrSIMDUnknown", oneFunc(0xfd, 0xa3, 0x02, 0x0b), "unknown opcode 0xfd 0x123"},
		{"ErrSIMDGap", oneFunc(0xfd, 0x9a, 0x01, 0x0b), "unknown opcode 0xfd 0x9a"},
		{"ErrMisc", oneFunc(0xfc, 0x12, 0x0b), "unknown opcode 0xfc 0x12"},
		{"ErrTruncated", oneFunc(0x41), "unexpected end"},
		{"ErrNoEnd", oneFunc(0x01), "unexpected end of function body"},
		{"ErrTrailing", oneFunc(0x0b, 0x01), "bytes after the end of the function body"},
		{"ErrLabel", oneFunc(0x0c, 0x05, 0x0b), "branch to label 5"},
		{"ErrReservedExport", withExport, `export name "assay_fuel" is reserved`},
		{"ErrSectionOrder", append(oneFunc(0x0b), 0x01, 0x01, 0x00), "out of order"},
		{"ErrSectionSize", append(oneFunc(0x0b), 0x0b, 0x7f), "overruns the module"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Instrument(tt.in)
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("got %v (%d bytes), want a *DecodeError", err, len(out))
			}
			if !strings.HasPrefix(err.Error(), "meter: offset 0x") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestInstrument_ErrorOffset checks that the offset names the bad byte.
func TestInstrument_ErrorOffset(t *testing.T) {
	t.Parallel()
	in := oneFunc(0x01, 0x01, 0x12, 0x00, 0x0b)
	_, err := Instrument(in)
	var de *DecodeError
	if !errors.As(err, &de) {
		t.Fatal(err)
	}
	if in[de.Offset] != 0x12 {
		t.Fatalf("offset %#x holds %#x, want the 0x12 opcode", de.Offset, in[de.Offset])
	}
}

// TestInstrument_Deterministic checks that output depends only on input and
// that the input is left alone.
func TestInstrument_Deterministic(t *testing.T) {
	t.Parallel()
	in := readWasm(t, "blocks")
	keep := bytes.Clone(in)
	a, b := mustInstrument(t, in), mustInstrument(t, in)
	if !bytes.Equal(a, b) {
		t.Fatal("two runs differ")
	}
	if !bytes.Equal(in, keep) {
		t.Fatal("input modified")
	}
}

// TestInstrument_Empty instruments a module with no sections at all: it
// gains a type section and an import section for fuel_slice, a global
// section with the two counters and an export section.
func TestInstrument_Empty(t *testing.T) {
	t.Parallel()
	out := mustInstrument(t, []byte("\x00asm\x01\x00\x00\x00"))
	want := []byte("\x00asm\x01\x00\x00\x00" +
		"\x01\x04\x01\x60\x00\x00" +
		"\x02\x14\x01\x05assay\x0afuel_slice\x00\x00" +
		"\x06\x0b\x02\x7e\x01\x42\x00\x0b\x7f\x01\x41\x00\x0b" +
		"\x07\x1c\x02\x0aassay_fuel\x03\x00\x0bassay_depth\x03\x01")
	if !bytes.Equal(out, want) {
		t.Fatalf("got % x\nwant % x", out, want)
	}
}

// TestInstrument_OnlyImports: a module with imports but no functions of
// its own gains the function, element and code sections of the imports'
// wrappers, each where its rank says (the code before the data section),
// and stays valid.
func TestInstrument_OnlyImports(t *testing.T) {
	t.Parallel()
	b := sec(wasmHeader(), secType, []byte{0x01, 0x60, 0x01, 0x7f, 0x00})
	imp := append(appendName(appendName(nil, "env"), "charge"), 0x00, 0x00)
	b = sec(b, secImport, append([]byte{0x01}, imp...))
	b = sec(b, secExport, append(appendName([]byte{0x01}, "charge"), 0x00, 0x00))
	b = sec(b, secData, []byte{0x01, 0x01, 0x01, 'x'})
	out := mustInstrument(t, b)
	var ids []byte
	for p := len(header); p < len(out); {
		size, n, err := readU32(out, p+1)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, out[p])
		p += 1 + n + int(size)
	}
	if want := []byte{secType, secImport, secFunction, secGlobal, secExport, secElem, secCode, secData}; !bytes.Equal(ids, want) {
		t.Fatalf("sections %v, want %v", ids, want)
	}
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer r.Close(ctx)
	if _, err := r.CompileModule(ctx, out); err != nil {
		t.Fatal(err)
	}
}
