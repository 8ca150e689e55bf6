// Command tamper does to a stopped court's badger store what a dishonest
// operator might, for the transparency log's tests to catch:
//
//	tamper receipts DBDIR GONE_ID CHANGED_ID
//	    deletes one receipt and rewrites another's verdict;
//	tamper entry DBDIR INDEX
//	    changes the log's entry at INDEX, as its entry bundle serves it,
//	    and nothing else: the tree still holds the entry as it was;
//	tamper rewrite DBDIR INDEX
//	    changes the entry at INDEX and has the log built again from its
//	    entries: every tlog/ key but the pending ones removed, every entry
//	    pending again in its order, so that the server's next round signs
//	    a tree of the same size with another root.
//
// An entry is changed by its issue time, one digit of its year: the
// same length, still an entry.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage"
)

// entryPrefix starts the keys of the log's entries, in order, and
// entryKey is the key of the entry at index i (storage/doc.go).
const entryPrefix = "tlog/entry/"

func entryKey(i int64) string { return fmt.Sprintf("%s%020d/%03d", entryPrefix, i/256, i%256) }

func main() {
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: tamper receipts|entry|rewrite DBDIR ARGS…")
		os.Exit(2)
	}
	db, err := storage.Open(os.Args[2], storage.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	err = db.Update(context.Background(), func(tx store.Tx) error {
		switch os.Args[1] {
		case "receipts":
			return receipts(tx, os.Args[3], os.Args[4])
		case "entry", "rewrite":
			i, err := strconv.ParseInt(os.Args[3], 10, 64)
			if err != nil {
				return err
			}
			if os.Args[1] == "entry" {
				return entry(tx, i)
			}
			return rewrite(tx, i)
		}
		return fmt.Errorf("no mode %q", os.Args[1])
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func receipts(tx store.Tx, gone, changed string) error {
	if err := tx.Delete("receipt/" + gone); err != nil {
		return err
	}
	b, err := tx.Get("receipt/" + changed)
	if err != nil {
		return err
	}
	out := bytes.Replace(b, []byte(`"verdict":"refund"`), []byte(`"verdict":"release"`), 1)
	if bytes.Equal(out, b) {
		return fmt.Errorf("receipt %s has no refund verdict to change", changed)
	}
	return tx.Set("receipt/"+changed, out)
}

// change is entry e with another issue time (its year's last digit
// moved on by one).
func change(e []byte) ([]byte, error) {
	i := bytes.Index(e, []byte("\nissued "))
	if i < 0 {
		return nil, errors.New("the entry has no issued line")
	}
	out := bytes.Clone(e)
	d := i + len("\nissued ") + 3 // the year's last digit
	out[d] = '0' + (out[d]-'0'+1)%10
	return out, nil
}

// entries reads every entry of the log, in order.
func entries(tx store.Tx) ([][]byte, error) {
	var out [][]byte
	err := tx.Scan(entryPrefix, false, func(_ string, e []byte) error {
		out = append(out, bytes.Clone(e))
		return nil
	})
	return out, err
}

func entry(tx store.Tx, i int64) error {
	e, err := tx.Get(entryKey(i))
	if err != nil {
		return err
	}
	if e, err = change(e); err != nil {
		return err
	}
	return tx.Set(entryKey(i), e)
}

func rewrite(tx store.Tx, i int64) error {
	all, err := entries(tx)
	if err != nil {
		return err
	}
	if i >= int64(len(all)) {
		return fmt.Errorf("the log has %d entries", len(all))
	}
	if all[i], err = change(all[i]); err != nil {
		return err
	}
	var keys []string
	if err := tx.Scan("tlog/", false, func(k string, _ []byte) error {
		if !strings.HasPrefix(k, receipt.PendingPrefix) {
			keys = append(keys, k)
		}
		return nil
	}); err != nil {
		return err
	}
	for _, k := range keys {
		if err := tx.Delete(k); err != nil {
			return err
		}
	}
	// Pending again, ordered before anything pending now, in their order.
	for j, e := range all {
		id, err := receipt.ParseEntry(e)
		if err != nil {
			return err
		}
		if err := tx.Set(fmt.Sprintf("%s%020d-%s", receipt.PendingPrefix, j+1, id.ID), e); err != nil {
			return err
		}
	}
	return nil
}
