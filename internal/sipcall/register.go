package sipcall

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/emiago/diago"
	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
)

// registerExpires is the lifetime, in seconds, a REGISTER asks for; the
// registrar may grant less (or more), and its grant is what we refresh by.
const registerExpires = 3600

// Registration timing; tests shorten the waits through Options.registerWait.
const (
	// registerTimeout bounds one REGISTER (and its answer to a challenge):
	// a registrar that does not answer is retried, never waited on for good.
	registerTimeout = 10 * time.Second
	// A failed REGISTER is retried after registerRetryMin, doubling after
	// each failure in a row up to registerRetryMax, so that a wrong
	// password or a dead registrar is not hammered.
	registerRetryMin = 5 * time.Second
	registerRetryMax = 5 * time.Minute
)

// Registration is where a trunk's registration (Trunk.Register) stands.
type Registration struct {
	Trunk string
	// Registered: the last REGISTER was accepted; it is refreshed at half
	// the granted lifetime.
	Registered bool
	// ExpiresAt is when the last binding granted lapses unless refreshed;
	// zero before the first success.
	ExpiresAt time.Time
	// Err is why the last REGISTER failed, nil after a success. It never
	// contains the trunk's password.
	Err error
	// Failures counts the REGISTERs failed in a row.
	Failures int
}

// registration keeps one trunk registered: REGISTER, refresh before the
// binding lapses, retry with backoff, and REGISTER with Expires: 0 at the end.
type registration struct {
	u      *UserAgent
	t      trunk
	client *sipgo.Client
	// contact is what a call's dialog puts in Contact (the external IP when
	// set), so the registrar learns the address calls come from.
	contact sip.ContactHeader
	// RFC 3261 §10.2: one Call-ID for every REGISTER to the registrar,
	// CSeq increasing.
	callID, fromTag string
	cseq            uint32

	mu    sync.Mutex
	state Registration
}

func (u *UserAgent) newRegistration(t trunk) (*registration, error) {
	// A dialog that is never used gives the transport's client and Contact,
	// so REGISTER leaves from where calls leave and names the same address.
	d, err := u.dg.NewDialog(sip.Uri{Scheme: "sip", Host: t.host, Port: t.port}, diago.NewDialogOptions{Transport: t.transport()})
	if err != nil {
		return nil, fmt.Errorf("sipcall: trunk %q: %w", t.Name, err)
	}
	defer d.Close()
	contact := *d.UA.ContactHDR.Clone()
	contact.Address.User = t.Username
	if contact.Address.Port == 0 { // listening on a port the system picked
		contact.Address.Port = u.ua.TransportLayer().GetListenPort(t.transport())
	}
	return &registration{u: u, t: t, client: d.UA.Client, contact: contact,
		callID: sip.GenerateTagN(32), fromTag: sip.GenerateTagN(16),
		state: Registration{Trunk: t.Name}}, nil
}

// run registers until ctx ends, then removes the binding it may have left.
func (r *registration) run(ctx context.Context) {
	defer r.unregister()
	retry := registerRetryMin
	for {
		// The registrar counts the lifetime from about when it gets the
		// REGISTER: so do we, not from its answer.
		sent := time.Now()
		granted, retryAfter, err := r.register(ctx, registerExpires)
		if ctx.Err() != nil {
			return
		}
		var wait time.Duration
		if err == nil {
			wait, retry = granted/2, registerRetryMin
		} else {
			wait, retry = retry, min(2*retry, registerRetryMax)
			if retryAfter > 0 { // 503 Service Unavailable with Retry-After
				wait = min(retryAfter, registerRetryMax)
			}
		}
		r.report(sent.Add(granted), err, wait)
		select {
		case <-ctx.Done():
			return
		case <-r.u.registerWait(wait):
		}
	}
}

// report records an attempt's result, tells Options.OnRegistration and
// logs it; expires is when an accepted binding lapses.
func (r *registration) report(expires time.Time, err error, next time.Duration) {
	r.mu.Lock()
	was := r.state.Registered
	r.state.Registered, r.state.Err = err == nil, err
	if err == nil {
		r.state.ExpiresAt, r.state.Failures = expires, 0
	} else {
		r.state.Failures++
	}
	state := r.state
	r.mu.Unlock()
	switch {
	case err != nil:
		r.u.log.Warn("sipcall: REGISTER failed", "trunk", r.t.Name, "err", err, "failures", state.Failures, "retry_in", next)
	case !was:
		r.u.log.Info("sipcall: registered", "trunk", r.t.Name, "expires_at", expires, "refresh_in", next)
	default:
		r.u.log.Debug("sipcall: registration refreshed", "trunk", r.t.Name, "expires_at", expires, "refresh_in", next)
	}
	if r.u.onRegistration != nil {
		r.u.onRegistration(state)
	}
}

func (r *registration) snapshot() Registration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state
}

// unregister removes our binding (Expires: 0) if one may still be current.
func (r *registration) unregister() {
	if !r.snapshot().ExpiresAt.After(time.Now()) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), byeTimeout)
	defer cancel()
	if _, _, err := r.register(ctx, 0); err != nil {
		r.u.log.Warn("sipcall: unREGISTER failed", "trunk", r.t.Name, "err", err)
		return
	}
	r.u.log.Debug("sipcall: unregistered", "trunk", r.t.Name)
}

// register sends one REGISTER asking for expires seconds, answering a
// 401/407 challenge with the trunk's credentials. It returns the lifetime
// granted, or the failure and the Retry-After the registrar asked for.
func (r *registration) register(ctx context.Context, expires int) (granted, retryAfter time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, r.u.registerTimeout)
	defer cancel()
	req := r.request(expires)
	res, err := r.client.Do(ctx, req)
	challenged := false
	if err == nil && (res.StatusCode == sip.StatusUnauthorized || res.StatusCode == sip.StatusProxyAuthRequired) && r.t.Password != "" {
		challenged = true
		res, err = r.client.DoDigestAuth(ctx, req, res, sipgo.DigestAuth{Username: r.t.Username, Password: r.t.Password})
	}
	r.cseq = req.CSeq().SeqNo // the answer to a challenge took the next one
	switch {
	case err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return 0, 0, fmt.Errorf("REGISTER to %s: no answer", r.t.Address)
	case err != nil:
		return 0, 0, fmt.Errorf("REGISTER to %s: %w", r.t.Address, err)
	case res.IsSuccess():
		if expires == 0 {
			return 0, 0, nil
		}
		n := grantedExpires(res, r.contact.Address, expires)
		if n <= 0 {
			return 0, 0, fmt.Errorf("REGISTER to %s: %d %s granted no time", r.t.Address, res.StatusCode, res.Reason)
		}
		return time.Duration(n) * time.Second, 0, nil
	case challenged && (res.StatusCode == sip.StatusUnauthorized || res.StatusCode == sip.StatusProxyAuthRequired):
		return 0, 0, fmt.Errorf("REGISTER to %s: %d %s to our credentials: check the trunk's username and password",
			r.t.Address, res.StatusCode, res.Reason)
	case res.StatusCode == sip.StatusUnauthorized || res.StatusCode == sip.StatusProxyAuthRequired:
		return 0, 0, fmt.Errorf("REGISTER to %s: %d %s: the trunk has no password", r.t.Address, res.StatusCode, res.Reason)
	}
	if h := res.GetHeader("Retry-After"); h != nil {
		// "120 (maintenance);duration=3600": the seconds come first.
		v, _, _ := strings.Cut(strings.TrimSpace(h.Value()), ";")
		v, _, _ = strings.Cut(v, "(")
		if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s > 0 {
			retryAfter = time.Duration(s) * time.Second
		}
	}
	return 0, retryAfter, fmt.Errorf("REGISTER to %s: %d %s", r.t.Address, res.StatusCode, res.Reason)
}

// request is a REGISTER of sip:<username>@<trunk host> to the trunk.
func (r *registration) request(expires int) *sip.Request {
	aor := sip.Uri{Scheme: "sip", User: r.t.Username, Host: r.t.host}
	req := sip.NewRequest(sip.REGISTER, sip.Uri{Scheme: "sip", Host: r.t.host, Port: r.t.port})
	req.SetTransport(sip.NetworkToUpper(r.t.transport()))
	from := &sip.FromHeader{Address: aor, Params: sip.NewParams()}
	from.Params.Add("tag", r.fromTag)
	callID := sip.CallIDHeader(r.callID)
	r.cseq++
	exp := sip.ExpiresHeader(expires)
	for _, h := range []sip.Header{from, &sip.ToHeader{Address: aor, Params: sip.NewParams()}, &callID,
		&sip.CSeqHeader{SeqNo: r.cseq, MethodName: sip.REGISTER}, r.contact.Clone(), &exp} {
		req.AppendHeader(h)
	}
	return req
}

// grantedExpires is the lifetime a 200 grants our binding: its Contact's
// expires, else the shortest of the Contacts' (a registrar behind NAT may
// rewrite ours), else the Expires header, else what we asked.
func grantedExpires(res *sip.Response, ours sip.Uri, asked int) int {
	shortest := -1
	for _, h := range res.GetHeaders("Contact") {
		c, ok := h.(*sip.ContactHeader)
		if !ok {
			continue
		}
		v, ok := c.Params.Get("expires")
		n, err := strconv.Atoi(v)
		if !ok || err != nil || n < 0 {
			continue
		}
		if c.Address.Host == ours.Host && c.Address.Port == ours.Port {
			return n
		}
		if shortest < 0 || n < shortest {
			shortest = n
		}
	}
	if shortest >= 0 {
		return shortest
	}
	if h := res.GetHeader("Expires"); h != nil {
		if n, err := strconv.Atoi(strings.TrimSpace(h.Value())); err == nil && n >= 0 {
			return n
		}
	}
	return asked
}

// Registrations is where each registering trunk stands, in Options order.
func (u *UserAgent) Registrations() []Registration {
	out := make([]Registration, 0, len(u.registrations))
	for _, r := range u.registrations {
		out = append(out, r.snapshot())
	}
	return out
}

// startRegistrations starts keeping every trunk with Register registered.
func (u *UserAgent) startRegistrations(trunks []Trunk) error {
	for _, t := range trunks {
		if !t.Register {
			continue
		}
		r, err := u.newRegistration(u.trunks[t.Name])
		if err != nil {
			return err
		}
		u.registrations = append(u.registrations, r)
	}
	ctx, stop := context.WithCancel(context.Background())
	u.stopRegistering = stop
	for _, r := range u.registrations {
		u.registering.Go(func() { r.run(ctx) })
	}
	return nil
}
