package metrics_test

import (
	"syscall"
	"testing"

	"github.com/assayhq/assay/internal/metrics"
)

// The page fault counter counts the faults of first writes to fresh
// memory: a mapping of its own, kept out of huge pages, one fault a page.
func TestPageFaults(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	before := scrape(t, m)
	const pages = 1024
	size := pages * syscall.Getpagesize()
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(b)
	if err := syscall.Madvise(b, syscall.MADV_NOHUGEPAGE); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < size; i += syscall.Getpagesize() {
		b[i] = 1
	}
	after := scrape(t, m)
	minor := map[string]string{"kind": "minor"}
	if d := after.Sum(metrics.PageFaults, minor) - before.Sum(metrics.PageFaults, minor); d < pages {
		t.Errorf("minor page faults rose by %v over %d fresh pages written, want at least %d", d, pages, pages)
	}
	if got := len(after.LabelValues(metrics.PageFaults, "kind")); got != 2 {
		t.Errorf("%s has %d kinds, want minor and major", metrics.PageFaults, got)
	}
}
