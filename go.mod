module github.com/assayhq/assay

go 1.26

require (
	github.com/expr-lang/expr v1.17.8 // indirect
	github.com/gowebpki/jcs v1.0.2 // indirect
	github.com/mr-tron/base58 v1.3.0 // indirect
	github.com/tetratelabs/wazero v1.12.0 // indirect
	golang.org/x/sys v0.44.0 // indirect
)
