// Command tamper does to a stopped court's badger store what a dishonest
// operator might: it deletes one receipt and rewrites another's verdict,
// for the transparency log's tests to catch.
//
// usage: go run ./testdata/tlog/tamper DBDIR GONE_ID CHANGED_ID
package main

import (
	"bytes"
	"context"
	"fmt"
	"os"

	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage"
)

func main() {
	db, err := storage.Open(os.Args[1], storage.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	err = db.Update(context.Background(), func(tx store.Tx) error {
		if err := tx.Delete("receipt/" + os.Args[2]); err != nil {
			return err
		}
		b, err := tx.Get("receipt/" + os.Args[3])
		if err != nil {
			return err
		}
		changed := bytes.Replace(b, []byte(`"verdict":"refund"`), []byte(`"verdict":"release"`), 1)
		if bytes.Equal(changed, b) {
			return fmt.Errorf("receipt %s has no refund verdict to change", os.Args[3])
		}
		return tx.Set("receipt/"+os.Args[3], changed)
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
