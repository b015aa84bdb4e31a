// Package report is what a run looks like to people and to CI: the
// results table, results as CSV and JSON, JUnit, Markdown, the gate's
// table, the gate's notices and commit statuses, the runs, dead-letter and
// fleet lists, and the progress bar of a wait.
package report
