package natsconn

import "testing"

// The inbox prefix: the one given wins; a named user gets _INBOX_<user>
// (deploy/nats's convention) unless its name is not one subject token.
func TestInboxPrefix(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{}, "_INBOX"},
		{Options{User: "producer"}, "_INBOX_producer"},
		{Options{User: "untrusted"}, "_INBOX_untrusted"},
		{Options{User: "producer", InboxPrefix: "_INBOX"}, "_INBOX"},
		{Options{User: "producer", InboxPrefix: "_R_ci"}, "_R_ci"},
		{Options{User: "ci.bot"}, "_INBOX"},
		{Options{User: "a b"}, "_INBOX"},
		{Options{Creds: "x.creds"}, "_INBOX"},
	} {
		if got := inboxPrefix(c.o); got != c.want {
			t.Errorf("%+v: %q, want %q", c.o, got, c.want)
		}
	}
}
