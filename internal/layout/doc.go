// Package layout holds the tests that keep the project's shape: the import
// arrows of DESIGN.md ("api -> runtime -> adjudicate -> checkers -> wasm",
// "storage -> runtime", nothing imports api or cmd), no test-only package in
// production code, and one package comment per package.
package layout
