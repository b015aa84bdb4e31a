// Package publicapi holds tests of the module's shape, not of its
// behaviour: that the public packages expose only public types.
package publicapi
