// Package bisect finds the commit that made a series slower: the commits
// between a good and a bad one (from git), each measured with its own
// build, the range narrowed until the first bad commit is named.
package bisect
