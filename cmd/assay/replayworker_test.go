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
	t.Parallel()
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

// TestReplayBatchTimeout: the bound of a POST /replays batch from the
// environment: the default when unset, and a clear error out of range.
func TestReplayBatchTimeout(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		v       string
		want    time.Duration
		wantErr bool
	}{
		{"", 0, false},
		{"3s", 3 * time.Second, false},
		{replays.BatchTimeout.String(), replays.BatchTimeout, false},
		{"500ms", 0, true},
		{(replays.BatchTimeout + time.Second).String(), 0, true},
		{"soon", 0, true},
	} {
		got, err := replayBatchTimeout(func(k string) string { return map[string]string{"ASSAY_REPLAY_BATCH_TIMEOUT": c.v}[k] })
		switch {
		case c.wantErr && (err == nil || !strings.Contains(err.Error(), "ASSAY_REPLAY_BATCH_TIMEOUT")):
			t.Errorf("%q: %v, want an error naming the variable", c.v, err)
		case !c.wantErr && (err != nil || got != c.want):
			t.Errorf("%q: %v %v, want %v", c.v, got, err, c.want)
		}
	}
}
