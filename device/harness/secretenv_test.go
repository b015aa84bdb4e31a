package harness_test

import (
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device/harness"
	"github.com/benchfleet/benchfleet/device/harness/harnesstest"
)

// The worker config's env reaches pull requests' code: a variable that
// looks like a secret is refused at start, naming it.
func TestConfigEnvRefusesSecrets(t *testing.T) {
	for name, want := range map[string]bool{
		"HF_TOKEN": true, "AWS_SECRET_ACCESS_KEY": true, "NATS_PASSWORD": true, "WANDB_API_KEY": true,
		"GITHUB_TOKEN": true, "MY_PRIVATE_KEY": true, "DB_PASSWD": true, "AWS_REGION": true,
		"HF_HOME": false, "HF_HUB_OFFLINE": false, "TT_METAL_HOME": false, "LOGURU_LEVEL": false,
	} {
		if got := harness.SecretName(name); got != want {
			t.Errorf("SecretName(%q) = %v, want %v", name, got, want)
		}
	}
	c := harnesstest.NewCheckout(t, "forge", "", false)
	_, err := harness.New(harness.Forge{}, harness.Config{Workdir: c.Workdir, Python: c.Python, TempDir: t.TempDir(),
		Env: map[string]string{"HF_TOKEN": "hf_abc"}}, zerolog.Nop())
	if err == nil || !strings.Contains(err.Error(), "HF_TOKEN looks like a secret") {
		t.Fatalf("a secret in the config env: %v", err)
	}
}
