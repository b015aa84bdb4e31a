// Package e2e holds benchfleet's end-to-end test suites (auth, fault) with
// the kit they share (clitest). Its own test checks the table of internal/
// packages in docs/ARCHITECTURE.md against the packages that exist.
package e2e
