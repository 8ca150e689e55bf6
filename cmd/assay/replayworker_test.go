package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/assayhq/assay/runtime/replays"
)

// TestReplayWorkerConfig: the worker's settings from the environment,
// with clear errors for slots or leases out of range.
func TestReplayWorkerConfig(t *testing.T) {
	for _, c := range []struct {
		slots, lease string
		wantSlots    int
		wantLease    time.Duration
		wantErr      string
	}{
		{"", "", 0, 0, ""},
		{"-1", "", -1, 0, ""},
		{"8", "30s", 8, 30 * time.Second, ""},
		{strconv.Itoa(replays.MaxSlots), "", replays.MaxSlots, 0, ""},
		{strconv.Itoa(replays.MaxSlots + 1), "", 0, 0, "ASSAY_REPLAY_SLOTS"},
		{"-2", "", 0, 0, "ASSAY_REPLAY_SLOTS"},
		{"many", "", 0, 0, "ASSAY_REPLAY_SLOTS"},
		{"", "10ms", 0, 0, "ASSAY_REPLAY_LEASE"},
		{"", "48h", 0, 0, "ASSAY_REPLAY_LEASE"},
	} {
		env := map[string]string{"ASSAY_REPLAY_SLOTS": c.slots, "ASSAY_REPLAY_LEASE": c.lease}
		slots, lease, err := replayWorkerConfig(func(k string) string { return env[k] })
		switch {
		case c.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%q %q: %v, want an error about %s", c.slots, c.lease, err, c.wantErr)
			}
		case err != nil || slots != c.wantSlots || lease != c.wantLease:
			t.Errorf("%q %q: %d %s %v, want %d %s", c.slots, c.lease, slots, lease, err, c.wantSlots, c.wantLease)
		}
	}
}
