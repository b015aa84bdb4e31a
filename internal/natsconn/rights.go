package natsconn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// UserInfoSubject is the NATS server's request subject that tells a
// connection its own user, account and permissions (every account imports
// it from the system account; a user needs the right to publish on it,
// which deploy/nats/accounts.conf gives every user).
const UserInfoSubject = "$SYS.REQ.USER.INFO"

// Rights are what the server lets a connection's user publish, as it
// reported them on UserInfoSubject. The zero value knows nothing and
// allows everything (MayPublish is true), so a caller that could not learn
// the rights acts and reports the server's refusal, as before.
type Rights struct {
	// User is the user's name (an nkey user's public key); Account its
	// account. Empty when not Known.
	User, Account string
	// Known is true when the server answered.
	Known bool
	// allow and deny are the user's publish permissions: no allow list
	// allows every subject, deny wins over allow.
	allow, deny []string
}

// ReadRights asks the server for the connection's rights (at most 1 s, or
// ctx's deadline if sooner). A server without a system account or a user
// that may not ask gives an error and the zero Rights.
func ReadRights(ctx context.Context, nc *nats.Conn) (Rights, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	msg, err := nc.RequestWithContext(ctx, UserInfoSubject, nil)
	if err != nil {
		return Rights{}, fmt.Errorf("nats: read this user's rights (%s): %w", UserInfoSubject, err)
	}
	var resp struct {
		Data *struct {
			User        string `json:"user"`
			Account     string `json:"account"`
			Permissions *struct {
				Publish *struct {
					Allow []string `json:"allow"`
					Deny  []string `json:"deny"`
				} `json:"publish"`
			} `json:"permissions"`
		} `json:"data"`
		Error *struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	switch err := json.Unmarshal(msg.Data, &resp); {
	case err != nil:
		return Rights{}, fmt.Errorf("nats: read this user's rights: %w", err)
	case resp.Error != nil:
		return Rights{}, fmt.Errorf("nats: read this user's rights: %s", resp.Error.Description)
	case resp.Data == nil:
		return Rights{}, errors.New("nats: read this user's rights: the server sent none")
	}
	r := Rights{User: resp.Data.User, Account: resp.Data.Account, Known: true}
	if p := resp.Data.Permissions; p != nil && p.Publish != nil {
		r.allow, r.deny = p.Publish.Allow, p.Publish.Deny
	}
	return r, nil
}

// MayPublish reports whether the rights let the user publish on subject
// (a literal subject: a JetStream API call, a KV key, a job's subject).
// Unknown rights allow everything.
func (r Rights) MayPublish(subject string) bool {
	if !r.Known {
		return true
	}
	for _, d := range r.deny {
		if subjectMatch(d, subject) {
			return false
		}
	}
	if len(r.allow) == 0 {
		return true
	}
	for _, a := range r.allow {
		if subjectMatch(a, subject) {
			return true
		}
	}
	return false
}

// subjectMatch reports whether the literal subject matches pattern, with
// NATS wildcards: "*" is one token, ">" one or more to the end.
func subjectMatch(pattern, subject string) bool {
	pt, st := strings.Split(pattern, "."), strings.Split(subject, ".")
	for i, p := range pt {
		switch {
		case p == ">":
			return len(st) > i
		case i >= len(st):
			return false
		case p != "*" && p != st[i]:
			return false
		}
	}
	return len(pt) == len(st)
}
