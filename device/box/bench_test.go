//go:build linux

package box

import (
	"os/exec"
	"testing"
)

// BenchmarkRoom is the box's cost per job: Open, start /bin/true, wait,
// Close and Remove, in each kill mode, with and without a user switch;
// "unboxed" is /bin/true alone.
func BenchmarkRoom(b *testing.B) {
	b.Run("unboxed", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, m := range modes {
		for _, u := range []struct{ name, spec string }{{"nobody", ""}, {"none", UserNone}} {
			b.Run(m.name+"/"+u.name, func(b *testing.B) {
				if u.spec == "" {
					needRoot(b)
				}
				box := newBox(b, u.spec, m.cgroup)
				for b.Loop() {
					r, err := box.Open("bench")
					if err != nil {
						b.Fatal(err)
					}
					cmd := r.Cmd([]string{"/bin/true"}, nil)
					if err := r.Start(cmd); err != nil {
						b.Fatal(err)
					}
					if err := r.Wait(cmd); err != nil {
						b.Fatal(err)
					}
					if err := r.Remove(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
