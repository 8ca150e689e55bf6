package wasm

import (
	"math/rand"

	"github.com/tetratelabs/wazero/sys"
)

// fakeEpochNanos is midnight UTC on 2022-01-01, the epoch of wazero's fake
// walltime, kept so that a guest sees the same dates under Assay as under
// wazero's defaults.
const fakeEpochNanos = 1_640_995_200_000_000_000

// fakeClock is a run's deterministic clock. Like wazero's fake clocks it
// starts at a fixed instant and advances 1 ms at every reading, so that a
// guest polling the time makes progress; unlike them, a sleep advances it by
// the time slept and returns at once, so a guest that sleeps for an hour
// neither waits nor spins through an hour of 1 ms readings. One counter
// drives both clocks, so walltime and nanotime agree.
type fakeClock struct{ elapsed int64 }

const clockStep = 1_000_000 // 1 ms

func (c *fakeClock) nanotime() int64 {
	t := c.elapsed
	c.elapsed += clockStep
	return t
}

func (c *fakeClock) walltime() (sec int64, nsec int32) {
	t := fakeEpochNanos + c.nanotime()
	return t / 1e9, int32(t % 1e9)
}

func (c *fakeClock) sleep(ns int64) {
	if ns > 0 {
		c.elapsed += ns
	}
}

// resolution is what clock_res_get reports: the 1 ms step.
const resolution = sys.ClockResolution(clockStep)

// fakeRand is wazero's default random source, made here so that the bytes
// a guest asks for can be charged to its fuel: math/rand seeded with 42,
// the same stream as wazero's own fake source, so outcomes do not change.
// It counts the bytes it gave, so that a snapshot can record its position
// and a replay can continue the stream where _initialize left it. The
// source is seeded on first use: seeding costs more than a trivial
// checker's whole run, and most checkers never ask.
type fakeRand struct {
	r *rand.Rand
	n int64 // bytes read so far
}

func newFakeRand() *fakeRand { return &fakeRand{} }

func (f *fakeRand) Read(p []byte) (int, error) {
	if f.r == nil {
		f.r = rand.New(rand.NewSource(42))
	}
	n, err := f.r.Read(p)
	f.n += int64(n)
	return n, err
}

// skip advances the stream by n bytes: math/rand gives the same bytes
// however the reads are split, so a fresh source that skips n bytes then
// reads what one that gave n bytes would.
func (f *fakeRand) skip(n int64) {
	var buf [512]byte
	for n > 0 {
		k := min(n, int64(len(buf)))
		f.Read(buf[:k])
		n -= k
	}
}
