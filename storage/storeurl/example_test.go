package storeurl_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/storeurl"
)

// Open a store from its URL (file:// here; s3://bucket/prefix?endpoint=...
// for S3 and VersityGW), write an object once and read it back.
func ExampleOpen() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "benchfleet-store-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	b, err := storeurl.Open(ctx, "file://"+dir, zerolog.Nop())
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	if err := b.Put(ctx, "notes/hello.txt", bytes.NewReader([]byte("hello")), storage.IfAbsent()); err != nil {
		log.Fatal(err)
	}
	// A second write-once put of the same key is refused.
	again := b.Put(ctx, "notes/hello.txt", bytes.NewReader([]byte("other")), storage.IfAbsent())
	rc, err := b.Get(ctx, "notes/hello.txt")
	if err != nil {
		log.Fatal(err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s; again: exists %v\n", data, errors.Is(again, storage.ErrExists))
	// Output: hello; again: exists true
}
