package auth

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/embedded"
	"github.com/benchfleet/benchfleet/internal/natsconn"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
)

// startConf starts one embedded server from config text.
func startConf(t *testing.T, conf string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "server.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := embedded.Start(embedded.Options{Dir: filepath.Join(t.TempDir(), "nats"), ConfigFile: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s.ClientURL()
}

func tlsBlock(p *pki, verify bool) string {
	return fmt.Sprintf("tls { cert_file: %q, key_file: %q, ca_file: %q, verify: %t }\n", p.serverCert, p.serverKey, p.ca, verify)
}

// Token auth over mutual TLS: the token and the client certificate are both
// required.
func TestTokenWithClientCert(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	url := startConf(t, "authorization { token: \"tok-s3cret\" }\n"+tlsBlock(p, true))
	_, js, _ := connectAs(t, natsconn.Options{URL: url, Token: "tok-s3cret", TLSCA: p.ca, TLSCert: p.clientCert, TLSKey: p.clientKey})
	if _, err := topology.Ensure(t.Context(), js, topology.Config{}); err != nil {
		t.Fatalf("ensure with token: %v", err)
	}
	for name, o := range map[string]natsconn.Options{
		"wrong token":    {URL: url, Token: "nope", TLSCA: p.ca, TLSCert: p.clientCert, TLSKey: p.clientKey},
		"no client cert": {URL: url, Token: "tok-s3cret", TLSCA: p.ca},
		"no CA":          {URL: url, Token: "tok-s3cret", TLSCert: p.clientCert, TLSKey: p.clientKey},
		"cert, no key":   {URL: url, Token: "tok-s3cret", TLSCA: p.ca, TLSCert: p.clientCert},
	} {
		o.ConnectTimeout = 2 * time.Second
		if nc, err := natsconn.Connect(t.Context(), o, zerolog.Nop()); err == nil {
			nc.Close()
			t.Errorf("%s: connected", name)
		}
	}
}

// A creds file (user JWT + nkey seed) against an operator-mode server with
// the MEMORY resolver: the JWT's permissions apply.
func TestCredsFileOperatorMode(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	okp, err := nkeys.CreateOperator()
	must(err)
	opub, _ := okp.PublicKey()
	akp, err := nkeys.CreateAccount()
	must(err)
	apub, _ := akp.PublicKey()
	skp, err := nkeys.CreateAccount()
	must(err)
	spub, _ := skp.PublicKey()

	oc := jwt.NewOperatorClaims(opub)
	oc.Name = "benchfleet-test"
	oc.SystemAccount = spub
	opJWT, err := oc.Encode(okp)
	must(err)
	ac := jwt.NewAccountClaims(apub)
	ac.Name = "BENCH"
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
	accJWT, err := ac.Encode(okp)
	must(err)
	sc := jwt.NewAccountClaims(spub)
	sc.Name = "SYS"
	sysJWT, err := sc.Encode(okp)
	must(err)

	// creds writes a creds file for a user of BENCH with perms.
	creds := func(name string, perms func(*jwt.Permissions)) string {
		ukp, err := nkeys.CreateUser()
		must(err)
		upub, _ := ukp.PublicKey()
		useed, _ := ukp.Seed()
		uc := jwt.NewUserClaims(upub)
		uc.Name = name
		perms(&uc.Permissions)
		ujwt, err := uc.Encode(akp)
		must(err)
		data, err := jwt.FormatUserConfig(ujwt, useed)
		must(err)
		path := filepath.Join(t.TempDir(), name+".creds")
		must(os.WriteFile(path, data, 0o600))
		return path
	}
	producerCreds := creds("producer", func(pm *jwt.Permissions) {
		pm.Pub.Allow.Add("$JS.API.>", "bench.jobs.>", "bench.events.>", "$KV.bench-runs.>")
		pm.Pub.Deny.Add("$JS.API.CONSUMER.MSG.NEXT.BENCH_JOBS.>", "$KV.bench-workers.>")
		pm.Sub.Allow.Add("_INBOX.>")
	})
	readerCreds := creds("reader", func(pm *jwt.Permissions) {
		pm.Pub.Allow.Add("$JS.API.INFO", "$JS.API.STREAM.INFO.*")
		pm.Pub.Deny.Add("bench.>")
		pm.Sub.Allow.Add("_INBOX.>")
	})
	opFile := filepath.Join(t.TempDir(), "operator.jwt")
	must(os.WriteFile(opFile, []byte(opJWT), 0o600))
	url := startConf(t, fmt.Sprintf("operator: %q\nsystem_account: %s\nresolver: MEMORY\nresolver_preload: {\n  %s: %q\n  %s: %q\n}\n%s",
		opFile, spub, apub, accJWT, spub, sysJWT, tlsBlock(p, false)))

	_, js, logP := connectAs(t, natsconn.Options{URL: url, Creds: producerCreds, TLSCA: p.ca})
	topo, err := topology.Ensure(t.Context(), js, topology.Config{})
	if err != nil {
		t.Fatalf("ensure with creds: %v", err)
	}
	if _, err := js.Publish(t.Context(), protocol.JobSubject("sim", protocol.PriorityLow), []byte(`{}`)); err != nil {
		t.Fatalf("publish with creds: %v", err)
	}
	if _, err := topo.Workers.Put(shortCtx(t), "w", []byte(`{}`)); err == nil {
		t.Error("the JWT's deny did not apply")
	}
	waitViolation(t, logP, "$KV.bench-workers.w")

	_, jsR, logR := connectAs(t, natsconn.Options{URL: url, Creds: readerCreds, TLSCA: p.ca})
	if _, err := jsR.Stream(t.Context(), protocol.StreamJobs); err != nil {
		t.Fatalf("reader stream info: %v", err)
	}
	if _, err := jsR.Publish(shortCtx(t), protocol.JobSubject("sim", protocol.PriorityLow), []byte(`{}`)); err == nil {
		t.Error("the reader JWT published a job")
	}
	waitViolation(t, logR, "bench.jobs.sim.low")

	// A user signed by an account the operator does not know is refused.
	rogue, err := nkeys.CreateAccount()
	must(err)
	ukp, _ := nkeys.CreateUser()
	upub, _ := ukp.PublicKey()
	useed, _ := ukp.Seed()
	ujwt, err := jwt.NewUserClaims(upub).Encode(rogue)
	must(err)
	data, _ := jwt.FormatUserConfig(ujwt, useed)
	bad := filepath.Join(t.TempDir(), "rogue.creds")
	must(os.WriteFile(bad, data, 0o600))
	_, err = natsconn.Connect(t.Context(), natsconn.Options{URL: url, Creds: bad, TLSCA: p.ca, ConnectTimeout: 3 * time.Second}, zerolog.Nop())
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Errorf("rogue creds: %v", err)
	}
	// A missing creds file is an error naming it.
	if _, err := natsconn.Connect(t.Context(), natsconn.Options{URL: url, Creds: "/nonexistent.creds", TLSCA: p.ca, ConnectTimeout: time.Second}, zerolog.Nop()); err == nil {
		t.Error("a missing creds file connected")
	}
}
