// Package translog keeps the court's transparency log: every receipt any
// service signs, as an entry (receipt.Entry) of one append-only Merkle log
// that anyone can read, whose signed checkpoints witnesses cosign, so that
// the court cannot show two parties two histories, nor quietly drop or
// rewrite a receipt.
//
// # Formats
//
// The log speaks the field's formats, through the field's code: the Merkle
// tree of RFC 6962 as golang.org/x/mod/sumdb/tlog computes it, stored and
// served as C2SP tlog-tiles (tiles of 256 hashes, entry bundles of
// length-prefixed entries, paths from filippo.io/torchwood); checkpoints as
// C2SP tlog-checkpoint in a C2SP signed note (golang.org/x/mod/sumdb/note)
// signed with the log's Ed25519 key (receipt.LogKey); witnesses asked with
// C2SP tlog-witness, whose Ed25519 cosignatures (C2SP tlog-cosignature)
// the checkpoint carries; a receipt's proof as C2SP tlog-proof text. No
// Merkle arithmetic is written here.
//
// # From a receipt to its proof
//
// receipt.Put writes a receipt's entry under a pending key of its own in
// the transaction that stores the receipt, so that the entry is durable
// exactly when the receipt is, and no two mutations contend over the log.
// An integrator (Log.Run) takes pending entries in batches: one
// transaction gives each the next index, writes the tiles and entry
// bundles that changed, the index by receipt id and the tree's new size
// and root, and deletes the pending keys. It then signs a checkpoint of
// that tree, asks the configured witnesses to cosign it, and publishes it
// once a quorum did. A crash at any point loses nothing: pending keys are
// integrated by the next round, a tree not yet published is signed by it.
//
// Several nodes on one store take turns: the integration transaction reads
// and renews a lease key, so that one node integrates while its lease
// holds, and the store's serialisable transactions refuse a second node's
// integration that overlaps it.
//
// # Keys
//
// storage/doc.go lists the tlog/ keys this package owns.
package translog
