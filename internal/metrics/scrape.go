package metrics

import (
	"fmt"
	"io"
	"math"
	"sort"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Scrape is one scrape of /metrics, parsed with Prometheus' text-format
// parser: the families by name.
type Scrape map[string]*dto.MetricFamily

// Parse parses a scrape in Prometheus' text format.
//
// # Errors
//
// Whatever the text parser finds wrong, such as a malformed line or a
// family declared twice.
func Parse(r io.Reader) (Scrape, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return Scrape(fams), nil
}

// matches reports whether m has every label in want with its value.
func matches(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(want)
}

// Sum is the sum of the counters or gauges of family name whose labels
// include want (nil: all), or of the counts of its histograms.
func (s Scrape) Sum(name string, want map[string]string) float64 {
	f := s[name]
	if f == nil {
		return 0
	}
	var sum float64
	for _, m := range f.GetMetric() {
		if !matches(m, want) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Untyped != nil:
			sum += m.Untyped.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

// Histogram is a histogram's cumulative counts by upper bound, the last
// bound +Inf.
type Histogram struct {
	Bounds []float64
	Counts []float64 // cumulative
}

// Histogram merges the histograms of family name whose labels include
// want (nil: all).
func (s Scrape) Histogram(name string, want map[string]string) Histogram {
	return s.HistogramWhere(name, func(m *dto.Metric) bool { return matches(m, want) })
}

// LabelValues lists, sorted, the values label takes in family name.
func (s Scrape) LabelValues(name, label string) []string {
	seen := map[string]bool{}
	var vs []string
	if f := s[name]; f != nil {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && !seen[l.GetValue()] {
					seen[l.GetValue()] = true
					vs = append(vs, l.GetValue())
				}
			}
		}
	}
	sort.Strings(vs)
	return vs
}

// HistogramWhere merges the histograms of family name that keep keeps.
func (s Scrape) HistogramWhere(name string, keep func(*dto.Metric) bool) Histogram {
	byBound := map[float64]float64{}
	var total float64
	if f := s[name]; f != nil {
		for _, m := range f.GetMetric() {
			if m.Histogram == nil || !keep(m) {
				continue
			}
			for _, b := range m.Histogram.GetBucket() {
				byBound[b.GetUpperBound()] += float64(b.GetCumulativeCount())
			}
			total += float64(m.Histogram.GetSampleCount())
		}
	}
	byBound[math.Inf(1)] = total
	var h Histogram
	for b := range byBound {
		h.Bounds = append(h.Bounds, b)
	}
	sort.Float64s(h.Bounds)
	for _, b := range h.Bounds {
		h.Counts = append(h.Counts, byBound[b])
	}
	return h
}

// Label returns the value of m's label name, "" when it has none.
func Label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// Add is h and other merged: the observations of both.
func (h Histogram) Add(other Histogram) Histogram {
	byBound := map[float64]float64{}
	for i, b := range h.Bounds {
		byBound[b] += h.Counts[i]
	}
	for i, b := range other.Bounds {
		byBound[b] += other.Counts[i]
	}
	var sum Histogram
	for b := range byBound {
		sum.Bounds = append(sum.Bounds, b)
	}
	sort.Float64s(sum.Bounds)
	for _, b := range sum.Bounds {
		sum.Counts = append(sum.Counts, byBound[b])
	}
	return sum
}

// Sub is h less an earlier scrape of the same histogram: what was
// observed between the two.
func (h Histogram) Sub(earlier Histogram) Histogram {
	before := map[float64]float64{}
	for i, b := range earlier.Bounds {
		before[b] = earlier.Counts[i]
	}
	d := Histogram{Bounds: h.Bounds, Counts: make([]float64, len(h.Counts))}
	for i, b := range h.Bounds {
		d.Counts[i] = h.Counts[i] - before[b]
	}
	return d
}

// Count is how many observations h holds.
func (h Histogram) Count() float64 {
	if len(h.Counts) == 0 {
		return 0
	}
	return h.Counts[len(h.Counts)-1]
}

// Quantile estimates the q-quantile (0 < q < 1) of h as Prometheus'
// histogram_quantile does: linearly within the bucket it falls in, from
// 0 for the first. It returns NaN for an empty histogram, and the highest
// finite bound when the quantile falls in the +Inf bucket.
func (h Histogram) Quantile(q float64) float64 {
	n := h.Count()
	if n == 0 {
		return math.NaN()
	}
	rank := q * n
	lower, below := 0.0, 0.0
	for i, b := range h.Bounds {
		c := h.Counts[i]
		if c >= rank {
			if math.IsInf(b, 1) {
				return lower
			}
			if c == below {
				return b
			}
			return lower + (b-lower)*(rank-below)/(c-below)
		}
		lower, below = b, c
	}
	return lower
}
