package sipcalltest

import (
	"strconv"
	"sync"
	"time"

	"github.com/emiago/diago"
	"github.com/emiago/sipgo/sip"
)

// NoAnswer, as a Registrar's fault, leaves every REGISTER unanswered.
const NoAnswer = -1

// Registrar plays a trunk's registrar (serve it with NewRegistrarFarEnd):
// it challenges a REGISTER without credentials (401), accepts one that
// answers the challenge as Username with Password, granting each Contact
// Grant seconds (or what the REGISTER asked, when Grant is 0), and records
// every REGISTER it receives. SetFault makes it fail.
type Registrar struct {
	Username, Password string
	Grant              int

	auth       *diago.DigestAuthServer
	mu         sync.Mutex
	fault      int
	retryAfter int
	received   []Received
}

// Received is a REGISTER the registrar got, when, and the status it
// answered (0: none).
type Received struct {
	Req    *sip.Request
	At     time.Time
	Status int
}

// NewRegistrar is a registrar accepting username with password.
func NewRegistrar(username, password string, grant int) *Registrar {
	return &Registrar{Username: username, Password: password, Grant: grant, auth: diago.NewDigestServer()}
}

// SetFault makes every REGISTER from now on answered with status (and
// Retry-After: retryAfter seconds when not 0), or not at all (NoAnswer); 0
// makes the registrar behave again.
func (r *Registrar) SetFault(status, retryAfter int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fault, r.retryAfter = status, retryAfter
}

// Received is every REGISTER received so far, in order.
func (r *Registrar) Received() []Received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Received(nil), r.received...)
}

func (r *Registrar) handle(req *sip.Request, tx sip.ServerTransaction) {
	r.mu.Lock()
	fault, retryAfter := r.fault, r.retryAfter
	// sipgo ends a transaction left unanswered: its retransmissions come
	// here again, and are not new REGISTERs.
	for _, g := range r.received {
		if g.Status == 0 && g.Req.Via().Params.GetOr("branch", "") == req.Via().Params.GetOr("branch", "-") {
			r.mu.Unlock()
			return
		}
	}
	r.mu.Unlock()
	var res *sip.Response
	switch fault {
	case NoAnswer:
	case 0:
		res, _ = r.auth.AuthorizeRequest(req, diago.DigestAuth{Username: r.Username, Password: r.Password, Realm: "registrar"})
		if res.StatusCode == sip.StatusOK {
			r.grant(req, res)
		}
	default:
		res = sip.NewResponseFromRequest(req, fault, "Fault", nil)
		if retryAfter > 0 {
			res.AppendHeader(sip.NewHeader("Retry-After", strconv.Itoa(retryAfter)))
		}
	}
	got := Received{Req: req.Clone(), At: time.Now()}
	if res != nil {
		got.Status = res.StatusCode
	}
	r.mu.Lock()
	r.received = append(r.received, got)
	r.mu.Unlock()
	if res != nil {
		tx.Respond(res)
	}
}

// grant lists the request's Contacts in the 200 with their lifetime.
func (r *Registrar) grant(req *sip.Request, res *sip.Response) {
	asked := 0
	if h := req.GetHeader("Expires"); h != nil {
		asked, _ = strconv.Atoi(h.Value())
	}
	for _, h := range req.GetHeaders("Contact") {
		c, ok := h.(*sip.ContactHeader)
		if !ok {
			continue
		}
		c = c.Clone()
		n := asked
		if r.Grant > 0 && asked > 0 {
			n = r.Grant
		}
		c.Params.Add("expires", strconv.Itoa(n))
		res.AppendHeader(c)
	}
}
