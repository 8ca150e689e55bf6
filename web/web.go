// Package web holds the operator's console: a page of plain HTML, CSS and
// JavaScript, embedded in the binary, that watches the escrow court's
// activity, the market and the replay metrics through the public HTTP API,
// and verifies a receipt's signature in the browser (Web Crypto Ed25519 over
// RFC 8785 canonical JSON) without asking the server. There is no build
// step and nothing is fetched from elsewhere: the page works offline. It
// imports nothing of the project; api serves it at /console.
package web

import (
	"embed"
	"io/fs"
)

//go:embed console
var files embed.FS

// Console returns the console's files: index.html, console.css and
// console.js at its root.
func Console() fs.FS {
	sub, err := fs.Sub(files, "console")
	if err != nil {
		panic(err) // the embedded directory is fixed at build time
	}
	return sub
}
