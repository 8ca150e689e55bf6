// Package layout holds the tests that keep the project's shape: the import
// arrows of DESIGN.md ("api -> runtime -> adjudicate -> checkers -> wasm",
// "storage -> runtime", nothing imports api or cmd; api imports neither
// checkers nor wasm; runtime names only wasm's outcome types and never
// builds or holds a sandbox or a checker runner; api names no concrete
// service type of the runtime and builds none), no test-only package in
// production code, and one package comment per package.
package layout
