package sipcall

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"dialbox/internal/sipcall/sipcalltest"
	"dialbox/internal/testtool"

	"github.com/emiago/diago"
	"github.com/emiago/diago/media"
	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
	"github.com/pion/rtp"
)

const callee = "+84912345678"

func call(u *UserAgent, ctx context.Context, prompt []int16, edit func(*CallRequest)) CallResult {
	req := CallRequest{Trunk: "pbx", To: callee, Caller: "19001234", Prompt: prompt, RingTimeout: 5 * time.Second}
	if edit != nil {
		edit(&req)
	}
	return u.Call(ctx, req)
}

func checkEnd(t *testing.T, res CallResult, answered bool, by EndReason, status int, outcome string) {
	t.Helper()
	if res.Answered != answered || res.EndedBy != by || res.Status != status || Outcome(res) != outcome {
		t.Fatalf("got answered=%v ended_by=%s status=%d %q outcome=%s err=%v; want answered=%v ended_by=%s status=%d outcome=%s",
			res.Answered, res.EndedBy, res.Status, res.Reason, Outcome(res), res.Err, answered, by, status, outcome)
	}
}

func TestCallAnsweredPlaysPrompt(t *testing.T) {
	t.Parallel()
	for _, codec := range []media.Codec{media.CodecAudioUlaw, media.CodecAudioAlaw} {
		t.Run(codec.Name, func(t *testing.T) {
			t.Parallel()
			got := make(chan heard, 1)
			var request *sip.Request
			fe := newFarEnd(t, false, func(d *diago.DialogServerSession) {
				request = d.InviteRequest
				if err := d.AnswerOptions(diago.AnswerOptions{Codecs: []media.Codec{codec, media.CodecTelephoneEvent8000}}); err != nil {
					t.Error(err)
				}
				got <- listen(t, d, nil)
			})
			u := newTestUA(t, fe.trunk("udp"), nil)
			prompt := tone(1000)

			res := call(u, testCtx(t), prompt, nil)
			checkEnd(t, res, true, EndPromptDone, 200, OutcomeAnswered)
			if res.Err != nil || res.Codec != codec.Name || res.CallID == "" {
				t.Errorf("err=%v codec=%q call id=%q", res.Err, res.Codec, res.CallID)
			}
			if res.AnsweredAt.Before(res.StartedAt) || res.RingTime != res.AnsweredAt.Sub(res.StartedAt) || res.TalkTime != res.EndedAt.Sub(res.AnsweredAt) {
				t.Errorf("times: started %v answered %v ended %v ring %v talk %v",
					res.StartedAt, res.AnsweredAt, res.EndedAt, res.RingTime, res.TalkTime)
			}
			if res.TalkTime < 900*time.Millisecond {
				t.Errorf("talk %v, want the prompt's 1 s", res.TalkTime)
			}

			h := <-got
			t.Logf("far end heard %v in %d packets, RMS %.0f; ring %v, talk %v", h.Duration(), h.Packets, h.RMS(), res.RingTime, res.TalkTime)
			if h.Codec != codec.PayloadType {
				t.Errorf("far end got payload type %d, want %d", h.Codec, codec.PayloadType)
			}
			if d := h.Duration(); d < 900*time.Millisecond || d > 1100*time.Millisecond {
				t.Errorf("far end heard %v of audio (%d packets), want 1 s ± 10%%", d, h.Packets)
			}
			if rms := h.RMS(); rms < 3000 {
				t.Errorf("far end heard RMS %.0f, want the tone's ~5600", rms)
			}
			uri := request.Recipient
			if uri.User != callee || uri.Port != fe.ports["udp"] || request.From().Address.User != "19001234" {
				t.Errorf("INVITE %s from %s", uri.String(), request.From().Value())
			}
		})
	}
}

func TestCallRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status  int
		reason  string
		outcome string
	}{
		{486, "Busy Here", OutcomeBusy},
		{603, "Decline", OutcomeRejected},
		{404, "Not Found", OutcomeInvalidNumber},
		{503, "Service Unavailable", OutcomeFailed},
	} {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			t.Parallel()
			fe := newFarEnd(t, false, func(d *diago.DialogServerSession) {
				d.Ringing()
				d.Respond(tc.status, tc.reason, nil)
			})
			u := newTestUA(t, fe.trunk("udp"), nil)
			res := call(u, testCtx(t), tone(1000), nil)
			checkEnd(t, res, false, EndCallee, tc.status, tc.outcome)
			if res.Reason != tc.reason || res.Err != nil || !res.AnsweredAt.IsZero() || res.TalkTime != 0 ||
				res.RingTime != res.EndedAt.Sub(res.StartedAt) {
				t.Errorf("reason %q err %v answered at %v talk %v ring %v", res.Reason, res.Err, res.AnsweredAt, res.TalkTime, res.RingTime)
			}
		})
	}
}

func TestCallNoAnswerCancelsAtRingTimeout(t *testing.T) {
	t.Parallel()
	cause := make(chan error, 1)
	fe := newFarEnd(t, false, func(d *diago.DialogServerSession) {
		d.Ringing()
		<-d.Context().Done()
		cause <- context.Cause(d.Context())
	})
	u := newTestUA(t, fe.trunk("udp"), nil)
	res := call(u, testCtx(t), tone(1000), func(r *CallRequest) { r.RingTimeout = 300 * time.Millisecond })
	checkEnd(t, res, false, EndRingTimeout, 487, OutcomeNoAnswer)
	if res.Err != nil || res.RingTime < 300*time.Millisecond || res.RingingAt.IsZero() {
		t.Errorf("err %v ring %v ringing at %v", res.Err, res.RingTime, res.RingingAt)
	}
	if err := <-cause; !errors.Is(err, sip.ErrTransactionCanceled) {
		t.Errorf("far end's call ended by %v, want our CANCEL", err)
	}
}

func TestCallCancelledWhileRinging(t *testing.T) {
	t.Parallel()
	ringing, cause := make(chan struct{}), make(chan error, 1)
	fe := newFarEnd(t, false, func(d *diago.DialogServerSession) {
		d.Ringing()
		close(ringing)
		<-d.Context().Done()
		cause <- context.Cause(d.Context())
	})
	u := newTestUA(t, fe.trunk("udp"), nil)
	ctx, stop := context.WithCancel(testCtx(t))
	go func() { <-ringing; stop() }()
	res := call(u, ctx, tone(1000), nil)
	checkEnd(t, res, false, EndCancelled, 487, OutcomeCanceled)
	if err := <-cause; !errors.Is(err, sip.ErrTransactionCanceled) {
		t.Errorf("far end's call ended by %v, want our CANCEL", err)
	}
}

func TestCallCancelledWhileTalkingSendsBye(t *testing.T) {
	t.Parallel()
	talking, got := make(chan struct{}), make(chan heard, 1)
	fe := newFarEnd(t, false, func(d *diago.DialogServerSession) {
		d.Answer()
		got <- listen(t, d, func(n int) bool {
			if n == 5 {
				close(talking)
			}
			return false
		})
	})
	u := newTestUA(t, fe.trunk("udp"), nil)
	ctx, stop := context.WithCancel(testCtx(t))
	go func() { <-talking; stop() }()
	res := call(u, ctx, tone(5000), nil)
	checkEnd(t, res, true, EndCancelled, 200, OutcomeAnswered)
	if res.Err != nil || res.TalkTime >= 4*time.Second {
		t.Errorf("err %v talk %v", res.Err, res.TalkTime)
	}
	// The far end stops hearing us at our BYE, long before the prompt's end.
	if h := <-got; h.Duration() >= 4*time.Second {
		t.Errorf("far end heard %v", h.Duration())
	}
}

func TestCallCloseHangsUp(t *testing.T) {
	t.Parallel()
	talking := make(chan struct{})
	fe := newFarEnd(t, false, func(d *diago.DialogServerSession) {
		d.Answer()
		listen(t, d, func(n int) bool {
			if n == 5 {
				close(talking)
			}
			return false
		})
	})
	u := newTestUA(t, fe.trunk("udp"), nil)
	go func() { <-talking; u.Close() }()
	res := call(u, testCtx(t), tone(5000), nil)
	checkEnd(t, res, true, EndCancelled, 200, OutcomeAnswered)
	if res := call(u, testCtx(t), nil, nil); !errors.Is(res.Err, ErrClosed) {
		t.Errorf("call after Close: %v", res.Err)
	}
}

// The far end challenges the first INVITE (401, or 407 as a proxy would)
// and accepts the one that answers the challenge with the right password.
func TestCallDigestAuth(t *testing.T) {
	t.Parallel()
	const user, password = "dialbox", "s3cret-Pa55"
	for _, tc := range []struct {
		name     string
		proxy    bool
		password string
		status   int
	}{
		{"401 right password", false, password, 200},
		{"401 wrong password", false, "not-the-" + password, 401},
		{"407 right password", true, password, 200},
		{"407 wrong password", true, "not-the-" + password, 407},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			auth := diago.NewDigestServer()
			creds := "Authorization"
			if tc.proxy {
				creds = "Proxy-Authorization"
			}
			var mu sync.Mutex
			var withCredentials []bool // whether each INVITE carried credentials
			fe := newFarEnd(t, false, func(d *diago.DialogServerSession) {
				req := d.InviteRequest
				h := req.GetHeader(creds)
				mu.Lock()
				withCredentials = append(withCredentials, h != nil)
				mu.Unlock()
				// diago checks the Authorization header only.
				check := req.Clone()
				if h != nil && tc.proxy {
					check.AppendHeader(sip.NewHeader("Authorization", h.Value()))
				}
				res, _ := auth.AuthorizeRequest(check, diago.DigestAuth{Username: user, Password: password, Realm: "pbx"})
				if res.StatusCode != sip.StatusOK {
					if tc.proxy {
						challenge := res.GetHeader("WWW-Authenticate")
						res = sip.NewResponseFromRequest(req, sip.StatusProxyAuthRequired, "Proxy Authentication Required", nil)
						if challenge != nil {
							res.AppendHeader(sip.NewHeader("Proxy-Authenticate", challenge.Value()))
						}
					}
					// diago's AuthorizeDialog would send nothing on bad credentials.
					d.WriteResponse(res)
					return
				}
				d.Answer()
				listen(t, d, nil)
			})
			tr := fe.trunk("udp")
			tr.Username, tr.Password = user, tc.password
			var logs testtool.LockedBuffer
			u := newTestUA(t, tr, func(o *Options) {
				o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			})
			res := call(u, testCtx(t), tone(200), nil)
			if tc.status == 200 {
				checkEnd(t, res, true, EndPromptDone, 200, OutcomeAnswered)
			} else {
				checkEnd(t, res, false, EndCallee, tc.status, OutcomeFailed)
			}
			// The far end noted each INVITE before answering it.
			mu.Lock()
			defer mu.Unlock()
			if fmt.Sprint(withCredentials) != "[false true]" {
				t.Errorf("INVITEs with %s: %v; want the second only", creds, withCredentials)
			}
			out := fmt.Sprintf("%v %+v %#v %s %v", res, res, tr, tr, res.Err) + logs.String()
			if strings.Contains(out, tc.password) {
				t.Errorf("password in output:\n%s", out)
			}
		})
	}
}

// TestCallMaxDuration: MaxDuration cuts a 10 s prompt, while the far
// end's RTP keeps a no-RTP timer shorter than the limit from ending the
// call first. The timer is 50 of the far end's frames long, so that a
// loaded machine's delay in sending them does not fire it.
func TestCallMaxDuration(t *testing.T) {
	t.Parallel()
	got := make(chan heard, 1)
	fe := newFarEnd(t, false, func(d *diago.DialogServerSession) {
		d.Answer()
		go sendSilence(d)
		got <- listen(t, d, nil)
	})
	u := newTestUA(t, fe.trunk("udp"), func(o *Options) { o.NoRTPTimeout = time.Second })
	res := call(u, testCtx(t), tone(10000), func(r *CallRequest) { r.MaxDuration = 2 * time.Second })
	checkEnd(t, res, true, EndMaxDuration, 200, OutcomeAnswered)
	if res.Err != nil || res.TalkTime < 2*time.Second || res.TalkTime >= 10*time.Second {
		t.Errorf("err %v talk %v", res.Err, res.TalkTime)
	}
	if h := <-got; h.Duration() >= 10*time.Second {
		t.Errorf("far end heard %v, the whole prompt", h.Duration())
	}
}

func TestCallCalleeHangsUpMidPrompt(t *testing.T) {
	t.Parallel()
	hungUp := make(chan error, 1)
	fe := newFarEnd(t, false, func(d *diago.DialogServerSession) {
		d.Answer()
		listen(t, d, func(n int) bool { return n == 10 })
		hungUp <- d.Hangup(context.Background())
	})
	u := newTestUA(t, fe.trunk("udp"), nil)
	res := call(u, testCtx(t), tone(5000), nil)
	checkEnd(t, res, true, EndCallee, 200, OutcomeAnswered)
	if res.Err != nil || res.TalkTime > 4*time.Second {
		t.Errorf("err %v talk %v", res.Err, res.TalkTime)
	}
	if err := <-hungUp; err != nil {
		t.Errorf("far end's BYE: %v", err)
	}
}

// The far end answers but never sends RTP; a stranger sends RTP (audio and
// DTMF) to our RTP port meanwhile, which must neither keep the call up nor
// count as the callee's digits.
func TestCallNoRTPHangsUp(t *testing.T) {
	t.Parallel()
	fe := newFarEnd(t, false, func(d *diago.DialogServerSession) {
		d.Answer()
		ours := rtpAddrInSDP(t, d.InviteRequest.Body())
		stranger, err := net.DialUDP("udp", nil, ours)
		if err != nil {
			t.Error(err)
			return
		}
		defer stranger.Close()
		go func() {
			audioPkt := rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 0, SSRC: 7}, Payload: make([]byte, 160)}
			dtmfPkt := rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 101, SSRC: 7, Marker: true}, Payload: []byte{1, 10, 0, 0}}
			for i := 0; ; i++ {
				pkt := &audioPkt
				if i%5 == 0 {
					pkt = &dtmfPkt
					dtmfPkt.Timestamp += 800
				}
				pkt.SequenceNumber++
				b, _ := pkt.Marshal()
				if _, err := stranger.Write(b); err != nil {
					return
				}
				select {
				case <-d.Context().Done():
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}()
		listen(t, d, nil)
	})
	u := newTestUA(t, fe.trunk("udp"), func(o *Options) { o.NoRTPTimeout = 300 * time.Millisecond })
	res := call(u, testCtx(t), tone(5000), nil)
	checkEnd(t, res, true, EndNoRTP, 200, OutcomeAnswered)
	if res.Err != nil || res.TalkTime < 300*time.Millisecond || res.TalkTime > 3*time.Second || res.Digits != "" {
		t.Errorf("err %v talk %v digits %q", res.Err, res.TalkTime, res.Digits)
	}
}

// sendDTMF sends one RFC 4733 event the way real senders do: the first
// packet (marker set) with duration 0, two updates, then the end packet
// three times.
func sendDTMF(w *media.RTPPacketWriter, event byte) error {
	packets := []struct {
		end bool
		dur uint16
	}{{false, 0}, {false, 160}, {false, 320}, {true, 480}, {true, 480}, {true, 480}}
	for i, p := range packets {
		ev := media.DTMFEvent{Event: event, EndOfEvent: p.end, Volume: 10, Duration: p.dur}
		var next uint32 // every packet of an event has the event's timestamp
		if i == len(packets)-1 {
			next = 800
		}
		if _, err := w.WriteSamples(media.DTMFEncode(ev), next, i == 0, media.CodecTelephoneEvent8000.PayloadType); err != nil {
			return err
		}
	}
	return nil
}

func TestCallReceivesDTMFStartingWithZeroDuration(t *testing.T) {
	t.Parallel()
	fe := newFarEnd(t, false, func(d *diago.DialogServerSession) {
		d.Answer()
		for _, ev := range []byte{5, 5, 11} { // 5 5 #
			if err := sendDTMF(d.RTPPacketWriter, ev); err != nil {
				t.Error(err)
			}
		}
		listen(t, d, nil)
	})
	u := newTestUA(t, fe.trunk("udp"), nil)
	res := call(u, testCtx(t), tone(600), nil)
	checkEnd(t, res, true, EndPromptDone, 200, OutcomeAnswered)
	if res.Digits != "55#" {
		t.Errorf("digits %q, want 55#", res.Digits)
	}
}

// A far end whose SDP gives another of its addresses than the one its RTP
// comes from, on the same port, as baresip does: its keys are the callee's,
// since its SIP answer came from where its RTP comes from.
func TestCallReceivesDTMFFromTheAnsweringAddress(t *testing.T) {
	t.Parallel()
	fe := sipcalltest.NewFarEndAnnouncing(t, net.IPv4(127, 0, 0, 2), func(d *diago.DialogServerSession) {
		d.Answer()
		for _, ev := range []byte{1, 2} {
			if err := sendDTMF(d.RTPPacketWriter, ev); err != nil {
				t.Error(err)
			}
		}
		listen(t, d, nil)
	})
	u := newTestUA(t, Trunk{Name: "pbx", Address: fe.Address("udp")}, nil)
	res := call(u, testCtx(t), tone(600), nil)
	checkEnd(t, res, true, EndPromptDone, 200, OutcomeAnswered)
	if res.Digits != "12" {
		t.Errorf("digits %q, want 12", res.Digits)
	}
}

func TestCallOverTCP(t *testing.T) {
	t.Parallel()
	got := make(chan heard, 1)
	var transport string
	fe := newFarEnd(t, true, func(d *diago.DialogServerSession) {
		transport = d.Transport()
		d.Answer()
		got <- listen(t, d, nil)
	})
	u := newTestUA(t, fe.trunk("tcp"), nil)
	res := call(u, testCtx(t), tone(300), nil)
	checkEnd(t, res, true, EndPromptDone, 200, OutcomeAnswered)
	if h := <-got; h.Packets < 13 || transport != "TCP" {
		t.Errorf("far end got %d packets over %q", h.Packets, transport)
	}
}

func TestInboundInviteForbidden(t *testing.T) {
	t.Parallel()
	fe := newFarEnd(t, false, nil)
	u := newTestUA(t, fe.trunk("udp"), nil)
	ours := sip.Uri{Scheme: "sip", User: "dialbox", Host: "127.0.0.1", Port: listenPort(t, u.ua, "udp")}
	_, err := fe.dg.Invite(testCtx(t), ours, diago.InviteOptions{})
	var refused *sipgo.ErrDialogResponse
	if !errors.As(err, &refused) || refused.Res.StatusCode != sip.StatusForbidden {
		t.Fatalf("inbound INVITE: %v, want 403", err)
	}
}

func TestCallUnreachableTrunk(t *testing.T) {
	t.Parallel()
	// A TCP trunk nobody listens on: the connection is refused at once.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	u := newTestUA(t, Trunk{Name: "pbx", Address: addr, Transport: "tcp"}, nil)
	res := call(u, testCtx(t), nil, nil)
	checkEnd(t, res, false, EndError, 0, OutcomeFailed)
	if res.Err == nil {
		t.Error("no error")
	}
}

func TestCallBadRequest(t *testing.T) {
	t.Parallel()
	u := newTestUA(t, Trunk{Name: "pbx", Address: "127.0.0.1:5060"}, nil)
	for _, edit := range []func(*CallRequest){
		func(r *CallRequest) { r.Trunk = "nope" },
		func(r *CallRequest) { r.To = "0912345678" },
		func(r *CallRequest) { r.Caller = "" },
		func(r *CallRequest) { r.Caller = "a@b" },
		func(r *CallRequest) { r.RingTimeout = -1 },
	} {
		if res := call(u, testCtx(t), nil, edit); res.Err == nil || res.EndedBy != EndError || Outcome(res) != OutcomeFailed {
			t.Errorf("got %+v", res)
		}
	}
}

// Behind NAT the far end must see the external address in Contact, Via and
// the SDP; responses still reach us through Via's received/rport.
func TestCallExternalIP(t *testing.T) {
	t.Parallel()
	const external = "192.0.2.10"
	invite := make(chan *sip.Request, 1)
	fe := newFarEnd(t, false, func(d *diago.DialogServerSession) {
		invite <- d.InviteRequest
		d.Respond(sip.StatusBusyHere, "Busy Here", nil)
	})
	u := newTestUA(t, fe.trunk("udp"), func(o *Options) { o.ExternalIP = external })
	res := call(u, testCtx(t), nil, nil)
	checkEnd(t, res, false, EndCallee, 486, OutcomeBusy)
	req := <-invite
	if h := req.Contact().Address.Host; h != external {
		t.Errorf("Contact host %s", h)
	}
	if h := req.Via().Host; h != external {
		t.Errorf("Via host %s", h)
	}
	if ip := rtpAddrInSDP(t, req.Body()).IP.String(); ip != external {
		t.Errorf("SDP address %s", ip)
	}
}

// Not parallel: the RTP port range is process-wide (diago's package
// variables), and parallel tests run only after this one has finished.
func TestCallRTPPortRange(t *testing.T) {
	t.Cleanup(func() { media.RTPPortStart, media.RTPPortEnd = 0, 0 })
	invite := make(chan *sip.Request, 1)
	fe := newFarEnd(t, false, func(d *diago.DialogServerSession) {
		invite <- d.InviteRequest
		d.Respond(sip.StatusBusyHere, "Busy Here", nil)
	})
	u := newTestUA(t, fe.trunk("udp"), func(o *Options) { o.RTPPortMin, o.RTPPortMax = 41000, 41200 })
	checkEnd(t, call(u, testCtx(t), nil, nil), false, EndCallee, 486, OutcomeBusy)
	if port := rtpAddrInSDP(t, (<-invite).Body()).Port; port < 41000 || port >= 41200 {
		t.Errorf("RTP port %d outside 41000-41200", port)
	}
}
