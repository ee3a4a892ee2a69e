// Package sipcall places real outbound SIP calls through a call centre's
// trunk or PBX: one INVITE, a recorded prompt played as G.711 on answer,
// then BYE. It is built on diago (and sipgo) and knows nothing of
// dialbox's types; dialbox's SIP Dialer wraps it.
package sipcall

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/emiago/diago"
	"github.com/emiago/diago/media"
	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
)

// DefaultNoRTPTimeout is how long an answered call may go without a single
// RTP packet from the far end when Options.NoRTPTimeout is not set.
const DefaultNoRTPTimeout = 30 * time.Second

// byeTimeout bounds the BYE (or its retransmissions) we send: a far end
// that has vanished must not hold a call, or Close, for Timer F (32 s).
const byeTimeout = 5 * time.Second

// ErrClosed is the error of a call placed on a closed UserAgent.
var ErrClosed = errors.New("sipcall: user agent is closed")

// Options configure a UserAgent.
type Options struct {
	// ListenAddr is the host:port SIP listens on, over UDP, and over TCP
	// as well when a trunk uses TCP. Port 0 picks a free port (tests). An
	// empty host is the address the system reaches the trunks from
	// (127.0.0.1 with no trunk), and every interface only when they are
	// reached from several or a trunk's host does not resolve, with a
	// warning: anyone on a network that need not reach SIP should not.
	ListenAddr string
	// ExternalIP is the public address put in Contact, Via and SDP when
	// dialbox is behind NAT; empty uses the listen (or interface) address.
	ExternalIP string
	// RTPPortMin and RTPPortMax bound the local RTP ports (RTCP uses
	// RTP+1), [min, max). Both 0 lets the system pick. diago keeps the
	// range in package variables: it is process-wide, the last
	// UserAgent's range wins.
	RTPPortMin, RTPPortMax int
	// NoRTPTimeout hangs up an answered call when no RTP has come from
	// the far end for this long; 0 is DefaultNoRTPTimeout.
	NoRTPTimeout time.Duration
	// Trunks are the trunks calls can go through, by Name.
	Trunks []Trunk
	// Logger receives diago's and sipgo's logs, rate-limited and cut
	// (liblog.go), and the lines they write to their package defaults
	// (those of the latest UserAgent); nil is slog.Default().
	Logger *slog.Logger
	// OnRegistration is told where a registering trunk stands after each
	// of its REGISTERs, from the registration's goroutine; nil: nobody.
	OnRegistration func(Registration)

	// Tests step registration's clock: registerTimeout (0: 10 s) bounds
	// one REGISTER, registerWait (nil: time.After) times the next.
	registerTimeout time.Duration
	registerWait    func(time.Duration) <-chan time.Time
}

// Trunk is a SIP trunk or PBX calls are sent to.
type Trunk struct {
	Name string
	// Address is the trunk's host:port (port 5060 when left out).
	Address string
	// Transport is "udp" (the default) or "tcp".
	Transport string
	// Username and Password answer a 401/407 digest challenge; with no
	// Password a challenge fails the call.
	Username string
	Password string
	// Register keeps the trunk registered as sip:<Username>@<host> while
	// the UserAgent runs (see Registrations); Username is required.
	Register bool
	// NumberFormat is how the callee's E.164 number is written in the
	// request-URI: NumberE164 (the default), NumberE164Digits or
	// NumberNational.
	NumberFormat string
}

// String describes the trunk without its password.
func (t Trunk) String() string {
	auth := "no auth"
	if t.Password != "" {
		auth = "auth as " + strconv.Quote(t.Username)
	}
	if t.Register {
		auth += ", registering"
	}
	return fmt.Sprintf("trunk %q %s/%s (%s, numbers %s)", t.Name, t.Address, t.transport(), auth, t.numberFormat())
}

// GoString keeps %#v from printing the password.
func (t Trunk) GoString() string { return t.String() }

// LogValue keeps slog from printing the password.
func (t Trunk) LogValue() slog.Value { return slog.StringValue(t.String()) }

func (t Trunk) transport() string {
	if t.Transport == "" {
		return "udp"
	}
	return t.Transport
}

func (t Trunk) numberFormat() string {
	if t.NumberFormat == "" {
		return NumberE164
	}
	return t.NumberFormat
}

// trunk is a validated Trunk.
type trunk struct {
	Trunk
	host string
	port int
}

// UserAgent places calls. It listens for SIP (a far end's BYE, re-INVITE
// or responses) and rejects every unsolicited INVITE with 403: dialbox
// only dials out.
type UserAgent struct {
	ua           *sipgo.UserAgent
	dg           *diago.Diago
	trunks       map[string]trunk
	listenHost   string
	noRTPTimeout time.Duration
	log          *slog.Logger
	stopServe    context.CancelFunc
	grown        sync.Map // sources of responses whose socket growReadBuffer has had

	// closing is cancelled by Close: every call in progress hangs up.
	closing    context.Context
	closeCalls context.CancelFunc
	mu         sync.Mutex
	closed     bool
	calls      sync.WaitGroup

	registrations   []*registration
	onRegistration  func(Registration)
	registerTimeout time.Duration
	registerWait    func(time.Duration) <-chan time.Time
	stopRegistering context.CancelFunc
	registering     sync.WaitGroup
}

// New starts a UserAgent listening on opts.ListenAddr.
func New(opts Options) (*UserAgent, error) {
	host, portStr, err := net.SplitHostPort(opts.ListenAddr)
	if err != nil {
		return nil, fmt.Errorf("sipcall: listen address %q: %w", opts.ListenAddr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return nil, fmt.Errorf("sipcall: listen address %q: bad port", opts.ListenAddr)
	}
	if host != "" && net.ParseIP(host) == nil {
		return nil, fmt.Errorf("sipcall: listen address %q: host must be an IP address", opts.ListenAddr)
	}
	if opts.ExternalIP != "" && net.ParseIP(opts.ExternalIP) == nil {
		return nil, fmt.Errorf("sipcall: external IP %q is not an IP address", opts.ExternalIP)
	}
	if opts.RTPPortMin != 0 || opts.RTPPortMax != 0 {
		if opts.RTPPortMin < 1024 || opts.RTPPortMax > 65535 || opts.RTPPortMax-opts.RTPPortMin < 2 {
			return nil, fmt.Errorf("sipcall: RTP port range %d-%d: want 1024 <= min, min+2 <= max <= 65535", opts.RTPPortMin, opts.RTPPortMax)
		}
	}
	if opts.NoRTPTimeout < 0 {
		return nil, errors.New("sipcall: negative NoRTPTimeout")
	}
	trunks := make(map[string]trunk, len(opts.Trunks))
	tcp := false
	for _, t := range opts.Trunks {
		vt, err := validateTrunk(t)
		if err != nil {
			return nil, err
		}
		if _, dup := trunks[t.Name]; dup {
			return nil, fmt.Errorf("sipcall: two trunks named %q", t.Name)
		}
		trunks[t.Name] = vt
		tcp = tcp || vt.transport() == "tcp"
	}

	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if host == "" {
		var why error
		if host, why = trunksLocalIP(trunks); why != nil {
			log.Warn("sip: listening on every interface: "+why.Error()+"; set the listen address to pin one", "listen", net.JoinHostPort(host, portStr))
		}
	}
	if opts.RTPPortMin != 0 {
		media.RTPPortStart, media.RTPPortEnd = opts.RTPPortMin, opts.RTPPortMax
	}

	// The libraries' lines, rate-limited and cut; our own go to log as is.
	libLog := slog.New(newLibraryHandler(log.Handler(), time.Now))
	routeLibraryDefaults(libLog)
	ua, err := sipgo.NewUA(sipgo.WithUserAgent("dialbox"),
		sipgo.WithUserAgentTransportLayerOptions(sip.WithTransportLayerLogger(libLog)),
		sipgo.WithUserAgentTransactionLayerOptions(sip.WithTransactionLayerLogger(libLog)))
	if err != nil {
		return nil, fmt.Errorf("sipcall: %w", err)
	}
	transports := []string{"udp"}
	if tcp {
		transports = append(transports, "tcp")
	}
	dopts := []diago.DiagoOption{
		diago.WithLogger(libLog),
		diago.WithServerRequestMiddleware(rejectNewInvites),
	}
	for _, network := range transports {
		t := diago.Transport{Transport: network, BindHost: host, BindPort: port}
		if opts.ExternalIP != "" {
			t.ExternalHost, t.ExternalPort = opts.ExternalIP, port
		}
		dopts = append(dopts, diago.WithTransport(t))
	}
	u := &UserAgent{
		ua:           ua,
		dg:           diago.NewDiago(ua, dopts...),
		trunks:       trunks,
		listenHost:   host,
		noRTPTimeout: opts.NoRTPTimeout,
		log:          log,

		onRegistration:  opts.OnRegistration,
		registerTimeout: cmp.Or(opts.registerTimeout, registerTimeout),
		registerWait:    opts.registerWait,
		stopRegistering: func() {},
	}
	if u.noRTPTimeout == 0 {
		u.noRTPTimeout = DefaultNoRTPTimeout
	}
	if u.registerWait == nil {
		u.registerWait = time.After
	}
	u.closing, u.closeCalls = context.WithCancel(context.Background())

	serveCtx, stopServe := context.WithCancel(context.Background())
	u.stopServe = stopServe
	// The handler never runs: rejectNewInvites answers every new INVITE.
	if err := u.dg.ServeBackground(serveCtx, func(*diago.DialogServerSession) {}); err != nil {
		stopServe()
		ua.Close()
		return nil, fmt.Errorf("sipcall: listen on %s: %w", opts.ListenAddr, err)
	}
	if err := waitUDPListener(ua, host); err != nil {
		u.Close()
		return nil, fmt.Errorf("sipcall: listen on %s: %w", opts.ListenAddr, err)
	}
	if err := u.startRegistrations(opts.Trunks); err != nil {
		u.Close()
		return nil, err
	}
	return u, nil
}

// waitUDPListener waits for sipgo to register the UDP listener, a moment
// after diago's ServeBackground has returned. Requests go out from the
// listener's socket when bound to a specific IP, and a call placed before
// then fails: sipgo tries to bind the same address again.
func waitUDPListener(ua *sipgo.UserAgent, host string) error {
	tp := ua.TransportLayer()
	deadline := time.Now().Add(2 * time.Second)
	for {
		if ports := tp.ListenPorts("udp"); len(ports) > 0 {
			if net.ParseIP(host).IsUnspecified() {
				return nil // diago sends from ephemeral sockets then
			}
			if c, err := tp.GetConnection("udp", net.JoinHostPort(host, strconv.Itoa(ports[0]))); err == nil {
				c.Ref(-1) // GetConnection took a reference
				return growReadBuffer(c)
			}
		}
		if time.Now().After(deadline) {
			return errors.New("UDP listener did not start")
		}
		time.Sleep(time.Millisecond)
	}
}

// trunksLocalIP is the local address the system sends to every trunk from,
// found without sending anything (a UDP socket's connect only picks a
// route). It is "0.0.0.0", with the reason, when there is no one such
// address.
func trunksLocalIP(trunks map[string]trunk) (string, error) {
	local := ""
	for _, t := range trunks {
		c, err := net.Dial("udp", net.JoinHostPort(t.host, strconv.Itoa(t.port)))
		if err != nil {
			return "0.0.0.0", fmt.Errorf("trunk %q: %w", t.Name, err)
		}
		ip := c.LocalAddr().(*net.UDPAddr).IP.String()
		c.Close()
		switch {
		case local == "":
			local = ip
		case local != ip:
			return "0.0.0.0", fmt.Errorf("the trunks are reached from %s and from %s", local, ip)
		}
	}
	if local == "" {
		return "127.0.0.1", nil // no trunk: nothing to reach
	}
	return local, nil
}

func validateTrunk(t Trunk) (trunk, error) {
	if t.Name == "" {
		return trunk{}, errors.New("sipcall: a trunk has no name")
	}
	host, portStr, err := net.SplitHostPort(t.Address)
	if err != nil {
		// A bare host (or IPv6 address) gets the default port.
		host, portStr = strings.Trim(t.Address, "[]"), "5060"
	}
	port, err := strconv.Atoi(portStr)
	if host == "" || strings.ContainsAny(host, " /@;") || err != nil || port < 1 || port > 65535 {
		return trunk{}, fmt.Errorf("sipcall: trunk %q: address %q is not host:port", t.Name, t.Address)
	}
	if t.Register && t.Username == "" {
		return trunk{}, fmt.Errorf("sipcall: trunk %q: registering needs a username", t.Name)
	}
	if tr := t.transport(); tr != "udp" && tr != "tcp" {
		return trunk{}, fmt.Errorf("sipcall: trunk %q: transport %q is not udp or tcp", t.Name, t.Transport)
	}
	switch t.numberFormat() {
	case NumberE164, NumberE164Digits, NumberNational:
	default:
		return trunk{}, fmt.Errorf("sipcall: trunk %q: number format %q is not e164, e164_digits or national", t.Name, t.NumberFormat)
	}
	return trunk{Trunk: t, host: host, port: port}, nil
}

// rejectNewInvites answers an INVITE that starts a dialog with 403 before
// diago allocates anything for it; requests inside our dialogs (a
// re-INVITE carries a To tag) go on to diago.
func rejectNewInvites(next sipgo.RequestHandler) sipgo.RequestHandler {
	return func(req *sip.Request, tx sip.ServerTransaction) {
		if req.IsInvite() {
			if to := req.To(); to == nil || !to.Params.Has("tag") {
				_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusForbidden, "Forbidden", nil))
				return
			}
		}
		next(req, tx)
	}
}

// Close hangs up every call in progress (BYE, or CANCEL while ringing),
// waits for them to end, removes the trunks' registrations (REGISTER with
// Expires: 0), and stops listening.
func (u *UserAgent) Close() error {
	u.mu.Lock()
	u.closed = true
	u.mu.Unlock()
	u.closeCalls()
	u.calls.Wait()
	u.stopRegistering()
	u.registering.Wait()
	u.stopServe()
	return u.ua.Close()
}

// ListenAddr is the address SIP listens on: the IP bound (chosen from the
// trunks when Options.ListenAddr left it out) and the UDP port.
func (u *UserAgent) ListenAddr() string {
	port := 0
	if ports := u.ua.TransportLayer().ListenPorts("udp"); len(ports) > 0 {
		port = ports[0]
	}
	return net.JoinHostPort(u.listenHost, strconv.Itoa(port))
}

// begin registers a call; false once Close has started.
func (u *UserAgent) begin() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return false
	}
	u.calls.Add(1)
	return true
}
