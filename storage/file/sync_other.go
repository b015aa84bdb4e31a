//go:build !linux

package file

// fsFlusher is nil where there is no syncfs(2): Puts fsync their own file
// and directory.
func fsFlusher(string) func() error { return nil }
