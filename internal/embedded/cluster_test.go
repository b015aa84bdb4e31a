package embedded

import (
	"errors"
	"net"
	"testing"
)

// A route port something else holds is found before the server starts, not
// after a 30 s wait, and is the kind of failure StartCluster tries again.
func TestTakenRoutePortFailsAtOnceAndIsRetried(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = Start(Options{Dir: t.TempDir(), Name: "taken", ClusterName: "c",
		ClusterListen: l.Addr().String(), Routes: []string{"nats-route://" + l.Addr().String()}})
	if !errors.Is(err, errPortTaken) {
		t.Fatalf("start on a taken route port: %v, want errPortTaken", err)
	}
}

func TestStartClusterHasQuorum(t *testing.T) {
	c, err := StartCluster(3, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	if len(c.Running()) != 3 {
		t.Fatalf("%d nodes running, want 3", len(c.Running()))
	}
}
