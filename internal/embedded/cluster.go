package embedded

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Cluster is a set of embedded servers routed to each other, with
// JetStream clustered over them (for fault tests: kill a node, see that
// clients and streams carry on).
type Cluster struct {
	// Servers are the nodes, named <name>-1 ... <name>-n.
	Servers []*server.Server
}

// StartCluster runs n servers (n ≥ 3 for JetStream quorum) as the cluster
// "benchfleet" on loopback, each with its JetStream data in dir/node-<i>,
// and waits until the JetStream meta group has a leader and every node is
// current. Client ports are random; route ports are free ports chosen now.
// A route port is free when chosen but released before its server binds
// it, so a test running beside this one can take it in between: the node
// then never becomes ready. Such a start is tried again on new ports (up to
// three times), in fresh data directories. On error nothing is left running.
func StartCluster(n int, dir string) (*Cluster, error) {
	if n < 1 {
		return nil, fmt.Errorf("embedded nats: cluster of %d nodes", n)
	}
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		var c *Cluster
		var retry bool
		c, retry, err = startCluster(n, dir)
		if err == nil {
			return c, nil
		}
		if !retry {
			return nil, err
		}
		for i := range n {
			if rerr := os.RemoveAll(filepath.Join(dir, fmt.Sprintf("node-%d", i+1))); rerr != nil {
				return nil, fmt.Errorf("%w (and clearing its data for another try: %v)", err, rerr)
			}
		}
	}
	return nil, fmt.Errorf("%w (3 tries, each on new ports)", err)
}

// startCluster is one try of StartCluster; retry says whether a node's port
// was taken between choosing and binding it (or it did not become ready).
func startCluster(n int, dir string) (c *Cluster, retry bool, err error) {
	ports, err := freePorts(n)
	if err != nil {
		return nil, false, err
	}
	routes := make([]string, n)
	for i, p := range ports {
		routes[i] = fmt.Sprintf("nats-route://127.0.0.1:%d", p)
	}
	c = &Cluster{}
	for i := range n {
		s, err := Start(Options{
			Dir:           filepath.Join(dir, fmt.Sprintf("node-%d", i+1)),
			Name:          fmt.Sprintf("benchfleet-%d", i+1),
			ClusterName:   "benchfleet",
			ClusterListen: fmt.Sprintf("127.0.0.1:%d", ports[i]),
			Routes:        routes,
		})
		if err != nil {
			c.Shutdown()
			return nil, errors.Is(err, errNotReady) || errors.Is(err, errPortTaken), err
		}
		c.Servers = append(c.Servers, s)
	}
	if err := c.waitJetStream(60 * time.Second); err != nil {
		c.Shutdown()
		return nil, false, err
	}
	return c, false, nil
}

// freePorts chooses n free loopback ports, holding every one until all are
// chosen so two nodes never get the same one.
func freePorts(n int) ([]int, error) {
	ports := make([]int, n)
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("embedded nats: free port: %w", err)
		}
		listeners = append(listeners, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}

// waitJetStream waits until one running node leads the JetStream meta group
// and every running node is current with it.
func (c *Cluster) waitJetStream(d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		leader, current := false, true
		for _, s := range c.Running() {
			leader = leader || s.JetStreamIsLeader()
			current = current && s.JetStreamIsCurrent()
		}
		if leader && current {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("embedded nats: cluster JetStream not ready after %s", d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Running returns the nodes that have not been shut down.
func (c *Cluster) Running() []*server.Server {
	var out []*server.Server
	for _, s := range c.Servers {
		if s.Running() {
			out = append(out, s)
		}
	}
	return out
}

// ClientURLs is every node's client URL, comma-separated, for clients that
// should fail over between nodes.
func (c *Cluster) ClientURLs() string {
	urls := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		urls[i] = s.ClientURL()
	}
	return strings.Join(urls, ",")
}

// Server returns the node named name, or nil.
func (c *Cluster) Server(name string) *server.Server {
	for _, s := range c.Servers {
		if s.Name() == name {
			return s
		}
	}
	return nil
}

// Shutdown stops every node and waits for them.
func (c *Cluster) Shutdown() {
	for _, s := range c.Servers {
		s.Shutdown()
	}
	for _, s := range c.Servers {
		s.WaitForShutdown()
	}
}
