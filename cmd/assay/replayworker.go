package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/assayhq/assay/runtime/replays"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage"
	"github.com/assayhq/assay/storage/postgres"
)

// nodeName names this process among the nodes sharing a store: host and
// process id.
func nodeName() string {
	host, err := os.Hostname()
	if err != nil {
		host = "node"
	}
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

// replayWorkerConfig reads the replay worker's settings from the
// environment: ASSAY_REPLAY_SLOTS (replays at once, up to
// replays.MaxSlots; 0, the default, is GOMAXPROCS; -1 runs no worker) and
// ASSAY_REPLAY_LEASE (how long a claimed job stays this node's between
// renewals, a Go duration from replays.MinLease to store.MaxLease; default
// replays.DefaultLease).
func replayWorkerConfig(getenv func(string) string) (slots int, lease time.Duration, err error) {
	if v := getenv("ASSAY_REPLAY_SLOTS"); v != "" {
		if slots, err = strconv.Atoi(v); err != nil || slots < -1 || slots > replays.MaxSlots {
			return 0, 0, fmt.Errorf("ASSAY_REPLAY_SLOTS=%q: want a count up to %d, 0 for one per core, or -1 for none", v, replays.MaxSlots)
		}
	}
	if v := getenv("ASSAY_REPLAY_LEASE"); v != "" {
		if lease, err = time.ParseDuration(v); err != nil || lease < replays.MinLease || lease > store.MaxLease {
			return 0, 0, fmt.Errorf("ASSAY_REPLAY_LEASE=%q: want a duration from %s to %s", v, replays.MinLease, store.MaxLease)
		}
	}
	return slots, lease, nil
}

// replayBatchTimeout reads ASSAY_REPLAY_BATCH_TIMEOUT, the bound of one
// POST /replays batch: a Go duration from a second to
// replays.BatchTimeout, which is the default (0).
func replayBatchTimeout(getenv func(string) string) (time.Duration, error) {
	v := getenv("ASSAY_REPLAY_BATCH_TIMEOUT")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Second || d > replays.BatchTimeout {
		return 0, fmt.Errorf("ASSAY_REPLAY_BATCH_TIMEOUT=%q: want a duration from 1s to %s", v, replays.BatchTimeout)
	}
	return d, nil
}

// queueFor returns the job queue kept in db, badger's or PostgreSQL's.
func queueFor(db store.Store) (store.Queue, error) {
	switch s := db.(type) {
	case *postgres.Store:
		return postgres.NewQueue(s), nil
	case *storage.DB:
		return storage.NewQueue(s, storage.QueueConfig{}), nil
	}
	return nil, fmt.Errorf("no job queue for a store of type %T", db)
}

// newReplayWorker returns this node's replay worker on q, replaying on
// runner (the server's one runner), so that replays any node queues
// (replays.Submit) run here too; nil when ASSAY_REPLAY_SLOTS=-1 turns it
// off.
func newReplayWorker(q store.Queue, runner replays.TaskRunner, log *slog.Logger) (*replays.Worker, error) {
	slots, lease, err := replayWorkerConfig(os.Getenv)
	if err != nil {
		return nil, err
	}
	if slots < 0 {
		log.Info("replay worker off (ASSAY_REPLAY_SLOTS=-1)")
		return nil, nil
	}
	log.Info("replay worker", "queue", replays.QueueName, "name", nodeName(), "slots", cmp.Or(slots, runtime.GOMAXPROCS(0)))
	return replays.NewWorker(replays.WorkerConfig{Queue: q, Runner: runner, Name: nodeName(),
		Slots: slots, Lease: lease, Logger: log}), nil
}

// startReplayWorker runs w until the returned function is called; that
// stops the worker and waits for it, and jobs it holds, run or cut short,
// are released for another node to claim at once. A nil w does nothing.
func startReplayWorker(ctx context.Context, w *replays.Worker, log *slog.Logger) (stop func()) {
	if w == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { w.Run(ctx) })
	return func() {
		cancel()
		wg.Wait()
		st := w.Stats()
		log.Info("replay worker stopped", "claimed", st.Claimed, "completed", st.Completed, "lost", st.Lost, "released", st.Abandoned, "retried", st.Retried, "purged", st.Purged)
	}
}
