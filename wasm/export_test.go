package wasm

// SnapshotsTaken is how many reactor snapshots s has started to take, for
// tests that wait for one to be under way.
func SnapshotsTaken(s *Sandbox) int64 { return s.snaps.taken.Load() }
