package cli

import (
	"fmt"
	"strings"

	"github.com/benchfleet/benchfleet/internal/topology"
)

// notAdminErr says who may apply the topology, for a refused apply (an
// error that Is topology.ErrNotAdmin).
func (a *app) notAdminErr(err error) error {
	who := "this user"
	if a.user != "" {
		who = fmt.Sprintf("user %q", a.user)
	}
	return usageErr("topology apply: %s may not change the topology (%v): run it as the admin user (--user admin, its password in NATS_PASSWORD or NATS_PASSWORD_FILE; on deploy/nats producers and workers only create what is missing)",
		who, strings.TrimPrefix(err.Error(), topology.ErrNotAdmin.Error()+": "))
}
