package main

import (
	"fmt"
	"io"
	"net"
	"strconv"
)

// printServing writes what assay serve says once it listens on addr. The
// first line names every service and ends with the address they are
// served on (the end-to-end tests, and scripts, read the URL at its end);
// the second says where each service's routes are, and what the server
// keeps where. A server listening on every interface is named by
// localhost, the address a browser on the same machine opens.
func printServing(w io.Writer, addr net.Addr, metrics bool, data, store, key string) {
	base := "http://" + addr.String()
	everywhere := false
	if ta, ok := addr.(*net.TCPAddr); ok && ta.IP.IsUnspecified() {
		base = "http://" + net.JoinHostPort("localhost", strconv.Itoa(ta.Port))
		everywhere = true
	}
	fmt.Fprintf(w, "assay: serving the escrow court, the artifact market and judgment matters on %s\n", base)
	where := "the court at /contracts, the market at /market and /mcp, matters at /api/v1/economic/matters, the console at /console"
	if metrics {
		where += ", metrics at /metrics"
	}
	if everywhere {
		where += "; listening on every interface"
	}
	fmt.Fprintf(w, "assay: %s; data %s, store %s, court key %s\n", where, data, store, key)
}
