package process

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"sync"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/dirlock"
	"github.com/benchfleet/benchfleet/internal/embedded"
)

// LocalOptions configure a local fleet: an in-process NATS server with
// JetStream (its data in DataDir/nats), a store (default the file store
// DataDir/store) and one worker process spooling to DataDir/spool, all in
// this process: `benchfleet dev` and `demo`.
type LocalOptions struct {
	// Options are the worker process's; StoreURL defaults to the file
	// store in DataDir, Spool is DataDir/spool, Connect is Dial's.
	Options
	// DataDir holds the server's data, the store and the spool (required);
	// it is locked for the fleet's life.
	DataDir string
	// Listen is the server's client address (default 127.0.0.1 on a free
	// port).
	Listen string
	// Command names the holder in DataDir's lock ("benchfleet dev").
	Command string
	// Dial connects the worker to the server at url (default nats.Connect).
	Dial func(ctx context.Context, url string) (*nats.Conn, error)
}

// Local is a started local fleet.
type Local struct {
	*Process
	// URL is the server's client URL; StoreURL the store the worker
	// writes to.
	URL, StoreURL string
	server        *server.Server
	lock          *dirlock.Lock
	closed        sync.Once
}

// StartLocal starts o's server and worker process. Stop or Kill ends both.
func StartLocal(ctx context.Context, o LocalOptions, log zerolog.Logger) (_ *Local, err error) {
	if err := os.MkdirAll(o.DataDir, 0o755); err != nil {
		return nil, &OptionError{Option: "--data " + o.DataDir, Err: err}
	}
	l := &Local{}
	if l.lock, err = acquire(o.DataDir, cmp.Or(o.Command, "benchfleet local"), "--data"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			l.close()
		}
	}()
	if l.server, err = embedded.Start(embedded.Options{Dir: filepath.Join(o.DataDir, "nats"), Listen: o.Listen}); err != nil {
		return nil, err
	}
	l.URL = l.server.ClientURL()
	if o.StoreURL == "" {
		abs, _ := filepath.Abs(filepath.Join(o.DataDir, "store"))
		o.StoreURL = "file://" + abs
	}
	l.StoreURL = o.StoreURL
	dial := o.Dial
	if dial == nil {
		dial = func(_ context.Context, url string) (*nats.Conn, error) { return nats.Connect(url) }
	}
	o.Connect = func(ctx context.Context) (*nats.Conn, error) { return dial(ctx, l.URL) }
	// Results spool while the store is unreachable (e.g. an s3:// store
	// that is down) and are uploaded when it is back.
	o.Spool = filepath.Join(o.DataDir, "spool")
	if l.Process, err = Start(ctx, o.Options, log); err != nil {
		return nil, err
	}
	return l, nil
}

// Stop drains the worker (running jobs finish, bounded by
// Worker.DrainTimeout and ctx) and stops everything.
func (l *Local) Stop(ctx context.Context) error {
	err := l.Process.Stop(ctx)
	l.close()
	return err
}

// Kill stops the worker at once (running jobs are handed back) and stops
// everything.
func (l *Local) Kill() {
	l.Process.Kill()
	l.close()
}

// close shuts the server down and releases the data directory, once.
func (l *Local) close() {
	l.closed.Do(func() {
		if l.server != nil {
			l.server.Shutdown()
			l.server.WaitForShutdown()
		}
		l.lock.Unlock()
	})
}
