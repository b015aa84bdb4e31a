// Package embedded runs an in-process nats-server with JetStream: the
// default for `benchfleet demo` and `benchfleet dev`, and for tests (one
// node, or a three-node cluster for fault tests).
package embedded

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Options for one embedded server.
type Options struct {
	// Dir holds the JetStream data (required).
	Dir string
	// Listen is host:port for clients (default 127.0.0.1 on a random port).
	Listen string
	// Name is the server name (default "benchfleet").
	Name string
	// Cluster, when set, makes the server a cluster member: its own route
	// listen address and every route URL (nats-route://host:port).
	ClusterName   string
	ClusterListen string
	Routes        []string
	// ConfigFile, when set, is loaded first (accounts, users, TLS); Dir and
	// Listen still apply.
	ConfigFile string
	// MaxPayload overrides the largest message the server takes; 0 keeps
	// the config file's or nats-server's default (1 MB), which everything
	// benchfleet sends fits in.
	MaxPayload int32
}

// Start runs a server and waits until it accepts clients.
func Start(o Options) (*server.Server, error) {
	if o.Dir == "" {
		return nil, fmt.Errorf("embedded nats: no data directory")
	}
	opts := &server.Options{}
	if o.ConfigFile != "" {
		var err error
		opts, err = server.ProcessConfigFile(o.ConfigFile)
		if err != nil {
			return nil, fmt.Errorf("embedded nats: config %s: %w", o.ConfigFile, err)
		}
	}
	opts.JetStream = true
	opts.StoreDir = o.Dir
	opts.ServerName = o.Name
	if opts.ServerName == "" {
		opts.ServerName = "benchfleet"
	}
	opts.Host, opts.Port = "127.0.0.1", -1
	if o.Listen != "" {
		host, port, err := net.SplitHostPort(o.Listen)
		if err != nil {
			return nil, fmt.Errorf("embedded nats: listen %q: %w", o.Listen, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			return nil, fmt.Errorf("embedded nats: listen %q: bad port", o.Listen)
		}
		opts.Host, opts.Port = host, p
		if p > 0 {
			// A busy port would only show as "not ready" after the wait
			// below: find it at once and say so.
			l, err := net.Listen("tcp", o.Listen)
			if err != nil {
				if errors.Is(err, syscall.EADDRINUSE) {
					return nil, fmt.Errorf("embedded nats: listen %s: address already in use (another benchfleet dev or nats-server? pick another with --listen)", o.Listen)
				}
				return nil, fmt.Errorf("embedded nats: listen %s: %w", o.Listen, err)
			}
			l.Close()
		}
	}
	opts.NoSigs = true
	if o.MaxPayload > 0 {
		opts.MaxPayload = o.MaxPayload
	}
	if o.ClusterListen != "" {
		host, port, err := net.SplitHostPort(o.ClusterListen)
		if err != nil {
			return nil, fmt.Errorf("embedded nats: cluster listen %q: %w", o.ClusterListen, err)
		}
		p, _ := strconv.Atoi(port)
		if p > 0 {
			// As for the client port: a route port something else holds
			// would only show after the 30 s wait.
			l, err := net.Listen("tcp", o.ClusterListen)
			if err != nil {
				return nil, fmt.Errorf("embedded nats %s: route listen %s: %w", opts.ServerName, o.ClusterListen, errors.Join(errPortTaken, err))
			}
			l.Close()
		}
		opts.Cluster.Name = o.ClusterName
		opts.Cluster.Host, opts.Cluster.Port = host, p
		opts.Routes = server.RoutesFromStr(joinComma(o.Routes))
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	go s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		s.Shutdown()
		return nil, fmt.Errorf("embedded nats %s: %w", opts.ServerName, errNotReady)
	}
	return s, nil
}

// errNotReady is a server that did not take clients within 30 s: most often
// a listen port (client or route) that something else holds.
var errNotReady = errors.New("not ready after 30s (is a listen port taken?)")

// errPortTaken is a route port that could not be listened on just before
// the server was started.
var errPortTaken = errors.New("port taken")

func joinComma(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += ","
		}
		out += s
	}
	return out
}
