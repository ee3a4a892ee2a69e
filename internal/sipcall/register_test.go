package sipcall

import (
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"dialbox/internal/sipcall/sipcalltest"
	"dialbox/internal/testtool"

	"github.com/emiago/sipgo/sip"
)

const regUser, regPassword = "1001", "reg-Pa55-w0rd-x9"

// steppedWaits replaces the registration's timer: it records every wait
// asked for, and the wait ends only when the test calls next. Refreshes
// and retries are then checked by what was asked, not by the clock.
type steppedWaits struct {
	mu    sync.Mutex
	waits []time.Duration
	fire  chan time.Time
}

func newSteppedWaits() *steppedWaits { return &steppedWaits{fire: make(chan time.Time)} }

func (s *steppedWaits) wait(d time.Duration) <-chan time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waits = append(s.waits, d)
	return s.fire
}

func (s *steppedWaits) asked() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.waits)
}

// next ends the wait in progress: the next REGISTER goes out.
func (s *steppedWaits) next(t *testing.T) {
	t.Helper()
	select {
	case s.fire <- time.Now():
	case <-time.After(10 * time.Second):
		t.Fatal("the registration is not waiting")
	}
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testtool.WaitFor(t, what, 10*time.Second, cond)
}

// regRig is our user agent registering trunk "pbx" with a registrar.
type regRig struct {
	reg    *sipcalltest.Registrar
	fe     *sipcalltest.FarEnd
	u      *UserAgent
	steps  *steppedWaits
	logs   *testtool.LockedBuffer
	mu     sync.Mutex
	states []Registration // as OnRegistration was told
}

// startRegRig starts a registrar granting grant seconds and a user agent
// registering with password; edit, run before the user agent starts,
// adjusts its options or the registrar.
func startRegRig(t *testing.T, password string, grant int, edit func(*regRig, *Options)) *regRig {
	t.Helper()
	r := &regRig{reg: sipcalltest.NewRegistrar(regUser, regPassword, grant), steps: newSteppedWaits(), logs: &testtool.LockedBuffer{}}
	r.fe = sipcalltest.NewRegistrarFarEnd(t, true, r.reg, nil)
	tr := Trunk{Name: "pbx", Address: r.fe.Address("udp"), Username: regUser, Password: password, Register: true}
	r.u = newTestUA(t, tr, func(o *Options) {
		if edit != nil {
			edit(r, o)
		}
		o.Logger = slog.New(slog.NewTextHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		o.registerWait = r.steps.wait
		o.registerTimeout = time.Second // the no-answer test waits it out
		o.OnRegistration = func(s Registration) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.states = append(r.states, s)
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("user agent log:\n%s", r.logs.String())
		}
	})
	return r
}

// attempts waits for the n-th REGISTER attempt to be over (its wait
// asked for) and returns where the trunk stands.
func (r *regRig) attempts(t *testing.T, n int) Registration {
	t.Helper()
	waitFor(t, fmt.Sprintf("REGISTER attempt %d", n), func() bool { return len(r.steps.asked()) >= n })
	regs := r.u.Registrations()
	if len(regs) != 1 || regs[0].Trunk != "pbx" {
		t.Fatalf("registrations %+v", regs)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.states) != n || fmt.Sprint(r.states[n-1]) != fmt.Sprint(regs[0]) {
		t.Errorf("OnRegistration was told %+v; want %d states, the last %+v", r.states, n, regs[0])
	}
	return regs[0]
}

// noPassword fails if the password shows in the state, its error or the log.
func (r *regRig) noPassword(t *testing.T) {
	t.Helper()
	out := fmt.Sprintf("%v %+v", r.u.Registrations(), r.u.Registrations()) + r.logs.String()
	for _, s := range r.u.Registrations() {
		if s.Err != nil {
			out += s.Err.Error()
		}
	}
	for _, p := range []string{regPassword, "not-" + regPassword} {
		if strings.Contains(out, p) {
			t.Errorf("password in output:\n%s", out)
		}
	}
}

func header(req *sip.Request, name string) string {
	if h := req.GetHeader(name); h != nil {
		return h.Value()
	}
	return ""
}

// The registrar challenges the first REGISTER and accepts the answer to the
// challenge, granting 2 s of the hour asked: the refresh is due at 1 s,
// before the binding lapses, and Close removes the binding.
func TestRegisterChallengedRefreshedAndRemoved(t *testing.T) {
	t.Parallel()
	before := time.Now()
	r := startRegRig(t, regPassword, 2, nil)
	s := r.attempts(t, 1)
	if !s.Registered || s.Err != nil || s.Failures != 0 || s.ExpiresAt.Before(before.Add(2*time.Second)) || s.ExpiresAt.After(time.Now().Add(2*time.Second)) {
		t.Errorf("after the first REGISTER: %+v; want registered, expiring 2 s on", s)
	}
	if w := r.steps.asked()[0]; w != time.Second {
		t.Errorf("refresh due in %v; want 1 s, half the 2 s granted", w)
	}

	got := r.reg.Received()
	if len(got) != 2 || got[0].Status != 401 || got[1].Status != 200 {
		t.Fatalf("registrar answered %v; want a challenge then 200", statuses(got))
	}
	port := strconv.Itoa(r.fe.Ports["udp"])
	ourPort := r.u.ua.TransportLayer().GetListenPort("udp")
	for i, g := range got {
		req := g.Req
		if u := req.Recipient.String(); u != "sip:127.0.0.1:"+port {
			t.Errorf("REGISTER %d: request-URI %s", i, u)
		}
		if to, from := req.To().Address.String(), req.From().Address.String(); to != "sip:1001@127.0.0.1" || from != to {
			t.Errorf("REGISTER %d: To %s From %s; want sip:1001@127.0.0.1", i, to, from)
		}
		if c := req.Contact().Address; c.User != regUser || c.Host != "127.0.0.1" || c.Port != ourPort {
			t.Errorf("REGISTER %d: Contact %s; want 1001@127.0.0.1:%d, where we listen", i, c.String(), ourPort)
		}
		if e := header(req, "Expires"); e != "3600" {
			t.Errorf("REGISTER %d: Expires %q", i, e)
		}
		if req.CallID().Value() != got[0].Req.CallID().Value() {
			t.Errorf("REGISTER %d: a new Call-ID", i)
		}
	}
	if h := header(got[0].Req, "Authorization"); h != "" {
		t.Errorf("the first REGISTER carried credentials: %s", h)
	}
	auth := header(got[1].Req, "Authorization")
	for _, want := range []string{`Digest username="1001"`, `realm="registrar"`, `uri="sip:127.0.0.1:` + port + `"`, "response="} {
		if !strings.Contains(auth, want) {
			t.Errorf("Authorization %q lacks %s", auth, want)
		}
	}

	// The refresh: a new REGISTER, answered the same way, the next CSeq.
	r.steps.next(t)
	if s := r.attempts(t, 2); !s.Registered || s.Failures != 0 {
		t.Errorf("after the refresh: %+v", s)
	}
	got = r.reg.Received()
	if len(got) != 4 || got[3].Status != 200 || got[3].Req.CSeq().SeqNo <= got[1].Req.CSeq().SeqNo {
		t.Fatalf("refresh: registrar answered %v", statuses(got))
	}

	if err := r.u.Close(); err != nil {
		t.Fatal(err)
	}
	got = r.reg.Received()
	last := got[len(got)-1]
	if len(got) != 6 || last.Status != 200 || header(last.Req, "Expires") != "0" || last.Req.Contact().Address.Port != ourPort {
		t.Fatalf("Close: registrar got %v, the last %v; want the binding removed (Expires: 0)", statuses(got), last.Req)
	}
	r.noPassword(t)
}

func statuses(got []sipcalltest.Received) []int {
	var out []int
	for _, g := range got {
		out = append(out, g.Status)
	}
	return out
}

// Behind NAT the registrar must learn the external address, as calls give it.
func TestRegisterExternalIP(t *testing.T) {
	t.Parallel()
	const external = "192.0.2.10"
	r := startRegRig(t, regPassword, 0, func(_ *regRig, o *Options) { o.ExternalIP = external })
	if s := r.attempts(t, 1); !s.Registered {
		t.Fatalf("%+v", s)
	}
	req := r.reg.Received()[0].Req
	if c := req.Contact().Address; c.Host != external || c.Port != r.u.ua.TransportLayer().GetListenPort("udp") {
		t.Errorf("Contact %s; want %s and our port", c.String(), external)
	}
	if h := req.Via().Host; h != external {
		t.Errorf("Via host %s", h)
	}
	if w := r.steps.asked()[0]; w != registerExpires*time.Second/2 {
		t.Errorf("refresh due in %v; want half the hour granted", w)
	}
}

func TestRegisterOverTCP(t *testing.T) {
	t.Parallel()
	r := startRegRig(t, regPassword, 0, func(r *regRig, o *Options) {
		o.Trunks[0].Address, o.Trunks[0].Transport = r.fe.Address("tcp"), "tcp"
	})
	if s := r.attempts(t, 1); !s.Registered {
		t.Fatalf("%+v", s)
	}
	req := r.reg.Received()[1].Req
	if req.Transport() != "TCP" || req.Contact().Address.Port != r.u.ua.TransportLayer().GetListenPort("tcp") {
		t.Errorf("REGISTER over %s, Contact %s; want TCP and our TCP port", req.Transport(), req.Contact().Address.String())
	}
	r.u.Close()
	if got := statuses(r.reg.Received()); !slices.Equal(got, []int{401, 200, 401, 200}) {
		t.Errorf("registrar answered %v", got)
	}
}

// A registrar answering 503 (Retry-After: 7), then nothing at all, is
// retried (after 7 s, then the backoff), and the registration recovers
// when it answers again.
func TestRegisterRetriesAndRecovers(t *testing.T) {
	t.Parallel()
	r := startRegRig(t, regPassword, 0, func(r *regRig, _ *Options) { r.reg.SetFault(503, 7) })
	s := r.attempts(t, 1)
	if s.Registered || s.Err == nil || !strings.Contains(s.Err.Error(), "503") || !s.ExpiresAt.IsZero() {
		t.Errorf("after a 503: %+v", s)
	}
	r.reg.SetFault(sipcalltest.NoAnswer, 0)
	r.steps.next(t)
	s = r.attempts(t, 2)
	if s.Registered || s.Err == nil || !strings.Contains(s.Err.Error(), "no answer") || s.Failures != 2 {
		t.Errorf("after no answer: %+v", s)
	}
	r.reg.SetFault(0, 0)
	r.steps.next(t)
	if s := r.attempts(t, 3); !s.Registered || s.Err != nil || s.Failures != 0 || s.ExpiresAt.IsZero() {
		t.Errorf("after the registrar recovered: %+v", s)
	}
	// After 7 s (Retry-After), then the backoff (doubled since the first
	// failure), then half the hour granted.
	if got, want := r.steps.asked(), []time.Duration{7 * time.Second, 10 * time.Second, 30 * time.Minute}; !slices.Equal(got, want) {
		t.Errorf("waits %v; want %v", got, want)
	}
	if got := statuses(r.reg.Received()); !slices.Equal(got, []int{503, 0, 401, 200}) {
		t.Errorf("registrar answered %v", got)
	}
	r.noPassword(t)
}

// A wrong password is an error state, retried after a doubling backoff up
// to its cap: each attempt is one challenge and one answer, and none goes
// out before its wait has ended. No binding: Close sends nothing.
func TestRegisterWrongPasswordBacksOff(t *testing.T) {
	t.Parallel()
	r := startRegRig(t, "not-"+regPassword, 0, nil)
	const attempts = 9
	for i := 1; i < attempts; i++ {
		r.attempts(t, i)
		if got := len(r.reg.Received()); got != 2*i {
			t.Fatalf("after %d attempts the registrar got %d REGISTERs; want %d", i, got, 2*i)
		}
		r.steps.next(t)
	}
	s := r.attempts(t, attempts)
	if s.Registered || s.Failures != attempts || s.Err == nil || !strings.Contains(s.Err.Error(), "check the trunk's username and password") {
		t.Errorf("state %+v", s)
	}
	want := []time.Duration{5, 10, 20, 40, 80, 160, 300, 300, 300}
	for i := range want {
		want[i] *= time.Second
	}
	if got := r.steps.asked(); !slices.Equal(got, want) {
		t.Errorf("waits %v; want %v", got, want)
	}
	for _, g := range r.reg.Received() {
		if g.Status != 401 {
			t.Errorf("registrar answered %d", g.Status)
		}
	}
	n := len(r.reg.Received())
	r.u.Close()
	if got := len(r.reg.Received()); got != n {
		t.Errorf("Close sent %d REGISTERs with nothing registered", got-n)
	}
	r.noPassword(t)
}

func TestRegisterNeedsUsername(t *testing.T) {
	t.Parallel()
	if u, err := New(Options{ListenAddr: "127.0.0.1:0", Logger: quiet,
		Trunks: []Trunk{{Name: "pbx", Address: "10.0.0.1", Register: true}}}); err == nil {
		u.Close()
		t.Error("a registering trunk without a username was accepted")
	}
}

func TestGrantedExpires(t *testing.T) {
	t.Parallel()
	ours := sip.Uri{Host: "10.0.0.5", Port: 5060}
	for _, tc := range []struct {
		headers []string
		want    int
	}{
		{nil, 3600},
		{[]string{"Expires: 120"}, 120},
		{[]string{"Contact: <sip:a@10.0.0.9:5060>;expires=300, <sip:a@10.0.0.5:5060>;expires=600", "Expires: 120"}, 600},
		{[]string{"Contact: <sip:a@203.0.113.1:4000>;expires=900, <sip:a@10.0.0.7>;expires=450"}, 450},
		{[]string{"Contact: <sip:a@10.0.0.5:5060>"}, 3600},
	} {
		msg := "SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP 10.0.0.5:5060;branch=z9hG4bK1\r\nCall-ID: x\r\nCSeq: 1 REGISTER\r\n" +
			strings.Join(append(tc.headers, ""), "\r\n") + "Content-Length: 0\r\n\r\n"
		m, err := sip.ParseMessage([]byte(msg))
		if err != nil {
			t.Fatal(err)
		}
		if got := grantedExpires(m.(*sip.Response), ours, 3600); got != tc.want {
			t.Errorf("%q: %d, want %d", tc.headers, got, tc.want)
		}
	}
}
