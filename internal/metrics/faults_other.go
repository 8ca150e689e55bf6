//go:build !unix

package metrics

import "github.com/prometheus/client_golang/prometheus"

// systemCollectors are the collectors that read the operating system:
// none where getrusage is not to be had.
func systemCollectors() []prometheus.Collector { return nil }
