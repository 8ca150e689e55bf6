package wasm

// Engine names the wazero engine s runs guests on: "interpreter" when
// Config.Interpreter is set, "compiler" otherwise. Outcomes can differ
// between the two for deeply nested guests (see Config.Interpreter), so a
// cache of outcomes keys on it.
func (s *Sandbox) Engine() string {
	if s.cfg.Interpreter {
		return "interpreter"
	}
	return "compiler"
}
