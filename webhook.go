package main

import (
	"dialbox/internal/config"
	"dialbox/internal/sandbox"
	"dialbox/internal/webhook"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
)

// NewWebhooks makes the deliverer of store's outbox, with cfg's workers,
// share per endpoint, timeout and retries; faults may answer for the
// receivers (nil: none), and selfURL is this node's own address, where a
// webhook URL of the form /sink/{name} is delivered; atShare shows how
// many endpoints are at their share. Its requests name this dialbox's
// version.
func NewWebhooks(store webhook.Outbox, faults *sandbox.Faults, log *slog.Logger, cfg config.WebhooksConfig, selfURL string, atShare prometheus.Gauge) *webhook.Deliverer {
	return webhook.New(store, faults, log, cfg, selfURL, "dialbox/"+versionString(), atShare)
}
