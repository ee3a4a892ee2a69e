package sipcall

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/emiago/diago"
	"github.com/emiago/diago/media"
	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
	"github.com/pion/rtp"
	"github.com/zaf/g711"
)

// Defaults for a CallRequest's zero timeouts.
const (
	DefaultRingTimeout = 45 * time.Second
	DefaultMaxDuration = 10 * time.Minute
)

// CallRequest is one call to place.
type CallRequest struct {
	// Trunk is the Name of the trunk to call through.
	Trunk string
	// To is the callee's number in E.164; the trunk's NumberFormat writes
	// it into the request-URI sip:<number>@<trunk address>.
	To string
	// Caller is the From user, sip:<Caller>@<trunk host>: the hotline,
	// i.e. the caller ID, as the trunk expects it.
	Caller string
	// Prompt is the audio played on answer: 8 kHz mono samples, sent as
	// the negotiated G.711 in 20 ms packets. It is only read: calls may
	// share one.
	Prompt []int16
	// RingTimeout is how long the call may ring before we CANCEL it (a
	// no-answer); 0 is DefaultRingTimeout.
	RingTimeout time.Duration
	// MaxDuration is the longest an answered call may last; we hang up
	// then whatever is playing. 0 is DefaultMaxDuration.
	MaxDuration time.Duration
	// Talk, when set, runs the answered call instead of playing Prompt: we
	// hang up when it returns. Its ctx ends when the callee hangs up,
	// MaxDuration passes, RTP stops or the call's context ends.
	Talk func(ctx context.Context, l *Line) error
	// Record, when set, is the path of a WAV file (8 kHz mono 16-bit) to
	// record an answered call in: both directions mixed, as long as the
	// call talked, silence where nobody spoke. It is written under the
	// path plus ".part" and renamed when the call ends.
	Record string
}

// EndReason says who or what ended a call.
type EndReason string

const (
	// EndPromptDone: we hung up after playing the whole prompt, or when
	// Talk returned.
	EndPromptDone EndReason = "prompt_done"
	// EndCallee: the far end hung up (BYE) or refused the call (a final
	// non-2xx response).
	EndCallee EndReason = "callee"
	// EndMaxDuration: the call reached its MaxDuration and we hung up.
	EndMaxDuration EndReason = "max_duration"
	// EndNoRTP: no RTP came from the far end for NoRTPTimeout; we hung up.
	EndNoRTP EndReason = "no_rtp"
	// EndRingTimeout: nobody answered within RingTimeout; we cancelled.
	EndRingTimeout EndReason = "ring_timeout"
	// EndCancelled: the call's context (or Close) stopped it: CANCEL while
	// ringing, BYE once answered.
	EndCancelled EndReason = "cancelled"
	// EndError: a transport or protocol error, or a bad request; see Err.
	EndError EndReason = "error"
)

// CallResult is how a call went. Times are wall-clock; RingTime and
// TalkTime are real (monotonic) durations.
type CallResult struct {
	CallID   string
	Answered bool
	// Status and Reason are the final response to the INVITE, the call's
	// cause: 200 when answered, 487 after our CANCEL, 0 when no final
	// response came.
	Status int
	Reason string
	// Codec is the audio codec negotiated on answer: PCMU or PCMA.
	Codec string
	// StartedAt is when the INVITE went out, RingingAt the first 18x (zero
	// if none), AnsweredAt the 200 OK (zero if not answered), EndedAt when
	// the call ended (we decided to hang up, or the far end did).
	StartedAt, RingingAt, AnsweredAt, EndedAt time.Time
	// RingTime runs from the INVITE to the answer, or to the end of a call
	// nobody answered; TalkTime from the answer to the end.
	RingTime, TalkTime time.Duration
	EndedBy            EndReason
	// Digits are the DTMF digits (RFC 4733) the callee pressed, in order.
	Digits string
	// RecordingSize is the size of the WAV file written at
	// CallRequest.Record, 0 when none was (the call was not answered, or
	// RecordingErr says why).
	RecordingSize int64
	RecordingErr  error
	// Err is a transport, protocol or request error, nil otherwise. It
	// never contains a trunk's password.
	Err error
}

// cancelGrace is how long a call stopped before any response waits for
// one, to CANCEL properly.
const cancelGrace = time.Second

// errStopRinging is the cause that makes sipgo CANCEL a ringing INVITE;
// sipgo.WaitAnswerForceCancelErr instead gives up without a CANCEL.
var errStopRinging = errors.New("stop ringing")

// Call places one call and returns when it has ended. The context stops it
// gracefully: CANCEL while ringing, BYE once answered.
func (u *UserAgent) Call(ctx context.Context, req CallRequest) CallResult {
	if !u.begin() {
		return CallResult{EndedBy: EndError, Err: ErrClosed}
	}
	defer u.calls.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(u.closing, cancel)()

	t, ok := u.trunks[req.Trunk]
	if !ok {
		return failed(fmt.Errorf("sipcall: no trunk named %q", req.Trunk))
	}
	user, err := FormatNumber(req.To, t.numberFormat())
	if err != nil {
		return failed(err)
	}
	if req.Caller == "" || strings.ContainsAny(req.Caller, " <>@;:\"") {
		return failed(fmt.Errorf("sipcall: caller %q is not a SIP user", req.Caller))
	}
	if req.RingTimeout < 0 || req.MaxDuration < 0 {
		return failed(errors.New("sipcall: negative timeout"))
	}
	if req.RingTimeout == 0 {
		req.RingTimeout = DefaultRingTimeout
	}
	if req.MaxDuration == 0 {
		req.MaxDuration = DefaultMaxDuration
	}

	d, err := u.dg.NewDialog(sip.Uri{Scheme: "sip", User: user, Host: t.host, Port: t.port},
		diago.NewDialogOptions{Transport: t.transport()})
	if err != nil {
		return failed(fmt.Errorf("sipcall: %w", err))
	}
	defer d.Close()

	res := u.invite(ctx, d, t, req)
	if res.Answered {
		u.talk(ctx, d, req, &res)
	}
	u.log.Debug("sipcall: call ended", "trunk", t.Name, "call_id", res.CallID, "status", res.Status,
		"ended_by", res.EndedBy, "talk", res.TalkTime, "error", res.Err)
	return res
}

func failed(err error) CallResult {
	return CallResult{EndedBy: EndError, Err: err}
}

// invite sends the INVITE and waits for the answer, cancelling it at the
// ring timeout or when ctx ends.
func (u *UserAgent) invite(ctx context.Context, d *diago.DialogClientSession, t trunk, req CallRequest) CallResult {
	var res CallResult
	var provisional atomic.Bool
	gotProvisional := make(chan struct{})
	opts := diago.InviteClientOptions{
		Username: t.Username,
		Password: t.Password,
		// Runs in this goroutine, inside d.Invite.
		OnResponse: func(r *sip.Response) error {
			u.growSocketOf(r)
			switch {
			case r.IsProvisional():
				if !provisional.Swap(true) {
					close(gotProvisional)
				}
				if r.StatusCode > 100 && res.RingingAt.IsZero() {
					res.RingingAt = time.Now()
				}
			case r.IsSuccess():
				res.AnsweredAt = time.Now()
			}
			return nil
		},
	}
	opts.WithCaller("", req.Caller, t.host)

	// sipgo stops waiting for the answer when the INVITE's context ends:
	// with a CANCEL once something came back (RFC 3261 §9.1 forbids one
	// before), at once otherwise, and the cause tells it which. Stopping
	// before any response, we give the far end cancelGrace to send one
	// (it may be on its way), so that a call it set up gets cancelled.
	inviteCtx, stopInvite := context.WithCancelCause(context.Background())
	defer stopInvite(nil)
	var stoppedBy EndReason
	inviteDone, watcherDone := make(chan struct{}), make(chan struct{})
	ring := time.NewTimer(req.RingTimeout)
	defer ring.Stop()
	go func() {
		defer close(watcherDone)
		select {
		case <-inviteDone:
			return
		case <-ring.C:
			stoppedBy = EndRingTimeout
		case <-ctx.Done():
			stoppedBy = EndCancelled
		}
		grace := time.NewTimer(cancelGrace)
		defer grace.Stop()
		select {
		case <-gotProvisional:
		case <-inviteDone:
		case <-grace.C:
		}
		if provisional.Load() {
			stopInvite(errStopRinging)
		} else {
			stopInvite(sipgo.WaitAnswerForceCancelErr)
		}
	}()

	res.StartedAt = time.Now()
	err := d.Invite(inviteCtx, opts)
	close(inviteDone)
	<-watcherDone
	if id := d.InviteRequest.CallID(); id != nil {
		res.CallID = id.Value()
	}

	if err == nil {
		res.Answered, res.Status, res.Reason = true, d.InviteResponse.StatusCode, d.InviteResponse.Reason
		if res.AnsweredAt.IsZero() {
			res.AnsweredAt = time.Now()
		}
		res.RingTime = res.AnsweredAt.Sub(res.StartedAt)
		return res
	}

	res.EndedAt = time.Now()
	res.RingTime = res.EndedAt.Sub(res.StartedAt)
	resp := d.InviteResponse
	if resp != nil && !resp.IsProvisional() {
		res.Status, res.Reason = resp.StatusCode, resp.Reason
	}
	switch {
	case stoppedBy != "":
		res.EndedBy = stoppedBy
		if !errors.Is(err, context.Canceled) {
			res.Err = fmt.Errorf("sipcall: cancel: %w", err)
		}
	case resp != nil && resp.StatusCode >= 300:
		res.EndedBy = EndCallee
	default:
		res.EndedBy, res.Err = EndError, fmt.Errorf("sipcall: INVITE: %w", err)
	}
	// A 200 OK that crossed our CANCEL, or one diago could not use (no
	// SDP), still set up a call at the far end: end it.
	if resp != nil && resp.IsSuccess() && d.LoadState() < sip.DialogStateConfirmed {
		hctx, done := context.WithTimeout(context.Background(), byeTimeout)
		defer done()
		if err := d.Ack(hctx); err == nil {
			_ = d.Hangup(hctx)
		}
	}
	return res
}

// talk runs an answered call: plays the prompt and hangs up when it has
// played, the callee hangs up, MaxDuration passes, RTP stops, or ctx ends.
func (u *UserAgent) talk(ctx context.Context, d *diago.DialogClientSession, req CallRequest, res *CallResult) {
	end := func(by EndReason, err error) {
		res.EndedAt, res.EndedBy, res.Err = time.Now(), by, err
		res.TalkTime = res.EndedAt.Sub(res.AnsweredAt)
	}
	if err := d.Ack(context.Background()); err != nil {
		end(EndError, fmt.Errorf("sipcall: ACK: %w", err))
		return
	}

	sess := d.MediaSession()
	codec := media.CodecAudioFromSession(sess)
	res.Codec = codec.Name
	var encode func(dst []byte, samples []int16)
	switch codec.PayloadType {
	case media.CodecAudioUlaw.PayloadType:
		encode = encodeUlaw
	case media.CodecAudioAlaw.PayloadType:
		encode = encodeAlaw
	default: // we offer only G.711
		end(EndError, fmt.Errorf("sipcall: far end chose codec %s", codec.Name))
		u.hangup(d, res)
		return
	}
	dtmfPT := -1
	for _, c := range sess.CommonCodecs() {
		if strings.EqualFold(c.Name, media.CodecTelephoneEvent8000.Name) {
			dtmfPT = int(c.PayloadType)
		}
	}
	writer, err := d.AudioWriter()
	if err != nil {
		end(EndError, fmt.Errorf("sipcall: %w", err))
		u.hangup(d, res)
		return
	}

	var rec *recording
	if req.Record != "" {
		if rec, err = newRecording(req.Record, res.AnsweredAt); err != nil {
			res.RecordingErr = err // the call goes on unrecorded
		}
	}

	// The far end's last packet, as time since the answer: readRTP stores
	// it, the no-RTP timer reads it when it fires, so that no packet wakes
	// this goroutine (600 calls: 30,000 packets a second).
	var lastRTP atomic.Int64
	answered := res.AnsweredAt
	since := func() time.Duration { return time.Since(answered) }
	digits := make(chan string, 1)
	var keys chan rune
	var heard *hearing
	if req.Talk != nil {
		keys = make(chan rune, 64)
		heard = &hearing{frames: make(chan []int16, 64)}
	}
	// The host that answered: its RTP may come from another of its
	// addresses than its SDP gave (peerOnly).
	var answeredFrom net.IP
	if host, _, err := net.SplitHostPort(d.InviteResponse.Source()); err == nil {
		answeredFrom = net.ParseIP(host)
	}
	go readRTP(d.RTPPacketReader, answeredFrom, dtmfPT, func() { lastRTP.Store(int64(since())) }, digits, keys, heard, rec)
	stopPrompt, promptDone := make(chan struct{}), make(chan error, 1)
	stopTalk := func() {}
	if req.Talk != nil {
		var talkCtx context.Context
		talkCtx, stopTalk = context.WithCancel(context.Background())
		defer stopTalk()
		l := &Line{d: d, w: writer, encode: encode, keys: keys, heard: heard, rec: rec}
		go func() { promptDone <- req.Talk(talkCtx, l) }()
	} else {
		go func() { promptDone <- playPrompt(writer, encode, req.Prompt, stopPrompt, rec) }()
	}

	maxTimer := time.NewTimer(req.MaxDuration - time.Since(res.AnsweredAt))
	defer maxTimer.Stop()
	noRTP := time.NewTimer(u.noRTPTimeout)
	defer noRTP.Stop()
	prompting := true
loop:
	for {
		select {
		case <-d.Context().Done():
			end(EndCallee, nil)
			break loop
		case err := <-promptDone:
			prompting = false
			switch {
			case d.Context().Err() != nil: // the callee's BYE closed our media
				end(EndCallee, nil)
			case err != nil && req.Talk != nil:
				end(EndError, err)
			case err != nil:
				end(EndError, fmt.Errorf("sipcall: playing prompt: %w", err))
			default:
				end(EndPromptDone, nil)
			}
			break loop
		case <-noRTP.C:
			if quiet := since() - time.Duration(lastRTP.Load()); quiet < u.noRTPTimeout {
				noRTP.Reset(u.noRTPTimeout - quiet)
				continue
			}
			end(EndNoRTP, nil)
			break loop
		case <-maxTimer.C:
			end(EndMaxDuration, nil)
			break loop
		case <-ctx.Done():
			end(EndCancelled, nil)
			break loop
		}
	}
	close(stopPrompt)
	stopTalk()
	if prompting {
		<-promptDone
	}
	if res.EndedBy != EndCallee {
		u.hangup(d, res)
	}
	d.Close() // ends readRTP
	res.Digits = <-digits
	rec.finish(res) // nothing writes to it any more
}

// hangup sends BYE; its error is the call's error if it has none.
func (u *UserAgent) hangup(d *diago.DialogClientSession, res *CallResult) {
	ctx, cancel := context.WithTimeout(context.Background(), byeTimeout)
	defer cancel()
	if err := d.Hangup(ctx); err != nil && res.Err == nil {
		res.Err = fmt.Errorf("sipcall: BYE: %w", err)
	}
}

// playPrompt sends samples in 20 ms frames; the writer (diago's RTP
// packet writer) paces them on the RTP clock.
func playPrompt(w io.Writer, encode func(dst []byte, samples []int16), samples []int16, stop <-chan struct{}, rec *recording) error {
	out := make([]byte, frameLen)
	for off := 0; off < len(samples); off += frameLen {
		select {
		case <-stop:
			return nil
		default:
		}
		f := samples[off:min(off+frameLen, len(samples))]
		encode(out, f)
		rec.send(f)
		if _, err := w.Write(out[:len(f)]); err != nil {
			return err
		}
	}
	return nil
}

// encodeUlaw and encodeAlaw write samples as G.711, a byte each, into dst,
// from the samples as they are: no copy of a prompt a call plays.
func encodeUlaw(dst []byte, samples []int16) {
	for i, s := range samples {
		dst[i] = g711.EncodeUlawFrame(s)
	}
}

func encodeAlaw(dst []byte, samples []int16) {
	for i, s := range samples {
		dst[i] = g711.EncodeAlawFrame(s)
	}
}

// readRTP reads the far end's RTP until the media is closed, telling
// seen of each packet, each key pressed on keys (when not nil; a full
// buffer drops it), its audio decoded to heard while someone listens
// (when not nil) and to rec (when not nil) and, at the end, the DTMF
// digits it carried on digits.
func readRTP(pr *media.RTPPacketReader, answeredFrom net.IP, dtmfPT int, seen func(), digits chan<- string, keys chan<- rune, heard *hearing, rec *recording) {
	var dtmf DTMFReader
	var got []rune
	buf := make([]byte, media.RTPBufSize)
	for {
		keepPeerOnly(pr, answeredFrom)
		n, err := pr.Read(buf)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
			continue // a malformed packet
		}
		seen()
		listening := heard != nil && heard.on.Load()
		if listening || rec != nil {
			if samples, ok := decodeG711(pr.PacketHeader.PayloadType, buf[:n]); ok {
				rec.hear(samples)
				if listening {
					heard.offer(samples)
				}
			}
		}
		if hdr := pr.PacketHeader; int(hdr.PayloadType) == dtmfPT {
			if digit, ok := dtmf.Feed(hdr, buf[:n]); ok {
				got = append(got, digit)
				if keys != nil {
					select {
					case keys <- digit:
					default:
					}
				}
			}
		}
	}
	digits <- string(got)
}

// peerOnly drops RTP that does not come from the far end: from the address
// its SDP gave, or from that port at the IP its SIP answer came from. diago
// reads from anyone: its only guard, media.RTPSourceLock, is off by default
// and locks onto whichever source first sends 4 packets in sequence.
//
// The second address is a host with several that announces one in its SDP
// and sends from the one its route takes, as baresip on 127.0.0.1 does
// (docs/sip.md#try-it-with-a-softphone): it is the host that answered the
// call, so a stranger gains nothing.
type peerOnly struct {
	s            *media.RTPSession
	answeredFrom net.IP
}

func (p *peerOnly) ReadRTP(buf []byte, pkt *rtp.Packet) (int, error) {
	for {
		n, err := p.s.ReadRTP(buf, pkt)
		if err != nil {
			return n, err
		}
		// ReadRTPFromAddr and Raddr belong to this reading goroutine and to
		// the negotiated session.
		sess := p.s.Sess
		from, ok := sess.ReadRTPFromAddr.(*net.UDPAddr)
		if ok && from.Port == sess.Raddr.Port && (from.IP.Equal(sess.Raddr.IP) || p.answeredFrom != nil && from.IP.Equal(p.answeredFrom)) {
			return n, nil
		}
	}
}

// keepPeerOnly puts peerOnly in front of the packet reader's RTP session,
// again after a re-INVITE has replaced that session.
func keepPeerOnly(pr *media.RTPPacketReader, answeredFrom net.IP) {
	if s, ok := pr.Reader().(*media.RTPSession); ok {
		pr.UpdateReader(&peerOnly{s: s, answeredFrom: answeredFrom})
	}
}
