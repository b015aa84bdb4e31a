// Package auth is the end-to-end suite of deploy/nats: the three-node
// configuration with TLS and least-privilege users, loaded into real
// embedded servers and driven by the command line and the real binary,
// and every authentication method of internal/natsconn. It has no code of
// its own.
package auth
