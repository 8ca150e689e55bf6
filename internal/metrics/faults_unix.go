//go:build unix

package metrics

import (
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
)

// pageFaults reports the process's page faults from getrusage at each
// scrape. On a virtual machine whose faults are slow, first writes to
// fresh memory (a new memtable, a heap that grew or took back pages it had
// returned to the system, a write-ahead log's page after a sync) can take
// a fifth of the server's CPU, and nothing else exported shows it.
type pageFaults struct{}

var pageFaultsDesc = prometheus.NewDesc(PageFaults,
	"Page faults the process has taken, by kind: minor (the page was in memory, or fresh and zeroed by the kernel) and major (read from disk).",
	[]string{"kind"}, nil)

// systemCollectors are the collectors that read the operating system.
func systemCollectors() []prometheus.Collector { return []prometheus.Collector{pageFaults{}} }

func (pageFaults) Describe(ch chan<- *prometheus.Desc) { ch <- pageFaultsDesc }

func (pageFaults) Collect(ch chan<- prometheus.Metric) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		ch <- prometheus.NewInvalidMetric(pageFaultsDesc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(pageFaultsDesc, prometheus.CounterValue, float64(ru.Minflt), "minor")
	ch <- prometheus.MustNewConstMetric(pageFaultsDesc, prometheus.CounterValue, float64(ru.Majflt), "major")
}
