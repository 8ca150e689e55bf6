package api

import (
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/web"
)

// consoleCSP keeps the console to its own files and this server's routes:
// no inline script, nothing from elsewhere.
const consoleCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

var consoleFiles = web.Console()

var consoleTypes = map[string]string{
	".html": fiber.MIMETextHTMLCharsetUTF8,
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
}

// console serves the web console (package web) at /console, and
// consoleFile its files under /console/.
func (s *server) console(c *fiber.Ctx, _ principal.Actor) error {
	return sendConsole(c, consoleFiles, "index.html")
}

func (s *server) consoleFile(c *fiber.Ctx, _ principal.Actor) error {
	return sendConsole(c, consoleFiles, c.Params("file"))
}

// wantsHTML reports whether the request is a browser's asking for a page:
// its Accept names text/html with a quality above zero. Agents, curl and
// anything else keep the markdown. The answer varies by Accept, and says so.
func wantsHTML(c *fiber.Ctx) bool {
	c.Vary(fiber.HeaderAccept)
	for _, part := range strings.Split(c.Get(fiber.HeaderAccept), ",") {
		params := strings.Split(part, ";")
		if !strings.EqualFold(strings.TrimSpace(params[0]), "text/html") {
			continue
		}
		q := 1.0
		for _, p := range params[1:] {
			if k, v, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.EqualFold(k, "q") {
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					q = f
				}
			}
		}
		return q > 0
	}
	return false
}

func sendConsole(c *fiber.Ctx, files fs.FS, name string) error {
	typ, ok := consoleTypes[path.Ext(name)]
	if !ok || !fs.ValidPath(name) {
		return fiber.ErrNotFound
	}
	b, err := fs.ReadFile(files, name)
	if err != nil {
		return fiber.ErrNotFound
	}
	c.Set(fiber.HeaderContentType, typ)
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set("Content-Security-Policy", consoleCSP)
	c.Set("X-Content-Type-Options", "nosniff")
	return c.Send(b)
}
