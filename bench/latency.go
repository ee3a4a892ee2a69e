package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emiago/diago"
	diagoaudio "github.com/emiago/diago/audio"
	"github.com/emiago/diago/media"
	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
	"github.com/prometheus/client_golang/prometheus"

	"dialbox/internal/audio"
	"dialbox/internal/config"
	"dialbox/internal/dialer"
	"dialbox/internal/domain"
	"dialbox/internal/llm"
	"dialbox/internal/script"
)

// The latency phase (docs/benchmarks.md#the-listening-bots-latency, issue 24 §5):
// from the end of the callee's speech (the end of the end_silence window)
// to the first RTP packet of the bot's reply, on real SIP calls to a far
// end in this process, with a recognizer and a model that answer after a
// fixed latency. Dialbox's own share is the gap less those latencies.
const (
	asrStubLatency = 100 * time.Millisecond // the recognizer's answer, after the upload
	llmStubLatency = 200 * time.Millisecond // the model's first sentence, after the request
	llmStubRest    = 150 * time.Millisecond // then the rest of its reply
	latencyTarget  = 150 * time.Millisecond // dialbox's share, p95
	turnsPerCall   = 25                     // measured turns a call (an agent step allows 30)

	calleeSpeech  = 400 * time.Millisecond // the callee's utterance each turn
	endSilence    = script.DefaultEndSilence
	replySentence = 200 * time.Millisecond // the stub TTS's audio for one sentence
	// No bot packet for this long: its turn is over (longer than espeak-ng
	// takes to render a sentence on a loaded machine, between two).
	botQuiet = 800 * time.Millisecond
)

// turnTimes are one turn's moments, all on this process's clock: the far
// end's, and the stubs' as each request came and went.
type turnTimes struct {
	end                 time.Time // the last frame of the end_silence window went out
	asrIn, asrOut       time.Time
	llmIn, llmOut       time.Time // the request came; the first sentence went
	ttsIn, ttsOut       time.Time // the first sentence's synthesis
	firstPacket         time.Time
	stubs               time.Duration // the stubs' fixed latencies in this turn
	asrOnce, llm1, tts1 bool          // the stubs' first request of the turn was stamped
	awaiting            bool          // no reply packet yet
}

// latencyRecorder collects the turns of one call at a time.
type latencyRecorder struct {
	mu    sync.Mutex
	cur   *turnTimes
	turns []turnTimes
	agent bool
	// hold: the model's stub writes the rest of a reply only once the far
	// end has heard its first packet (heard), proving that speaking
	// starts before the whole reply is written, whatever the timing.
	hold  bool
	heard chan struct{}
	// espeak: the reply is spoken by espeak-ng, dialbox's default engine,
	// whose cost is dialbox's own, instead of the TTS stub.
	espeak  bool
	replies atomic.Int64 // numbers every reply, so none is in the TTS cache
}

func (r *latencyRecorder) stamp(f func(t *turnTimes, now time.Time)) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur != nil {
		f(r.cur, now)
	}
}

// ended starts a turn: the callee's speech and its end_silence are out.
func (r *latencyRecorder) ended(at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	stubs := asrStubLatency
	if r.agent {
		stubs += llmStubLatency
	}
	r.cur = &turnTimes{end: at, stubs: stubs, awaiting: true}
}

// packet is a bot's RTP packet arriving at the far end: the reply's first
// when the turn's stubs have answered (what came before is not the reply).
func (r *latencyRecorder) packet(at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur != nil && r.cur.awaiting && (r.agent && r.cur.llm1 || !r.agent && r.cur.asrOnce) {
		r.cur.firstPacket, r.cur.awaiting = at, false
		r.turns = append(r.turns, *r.cur)
		r.cur = nil
		select {
		case r.heard <- struct{}{}:
		default:
		}
	}
}

// latencyResult is one kind of turn measured over its calls.
type latencyResult struct {
	Kind  string
	Turns []turnTimes
	Calls int
	Err   string
}

func (r latencyResult) shares() []time.Duration {
	var d []time.Duration
	for _, t := range r.Turns {
		d = append(d, t.firstPacket.Sub(t.end)-t.stubs)
	}
	slices.Sort(d)
	return d
}

// stage is the median of one stage of the turns, from and to picked.
func (r latencyResult) stage(from, to func(t turnTimes) time.Time) time.Duration {
	var d []time.Duration
	for _, t := range r.Turns {
		if a, b := from(t), to(t); !a.IsZero() && !b.IsZero() {
			d = append(d, b.Sub(a))
		}
	}
	return quantile(d, 0.5)
}

// latencyPhase measures an agent conversation and a chain of speech
// gathers, turns turns each, then a conversation spoken by espeak-ng
// (when installed), half as many turns: its replies are longer.
func (h *Harness) latencyPhase() {
	recs := []*latencyRecorder{{agent: true}, {}}
	if _, err := exec.LookPath("espeak-ng"); err == nil {
		recs = append(recs, &latencyRecorder{agent: true, espeak: true})
	} else {
		h.notes = append(h.notes, "latency: no espeak-ng, so no conversation spoken by it was measured")
	}
	for _, rec := range recs {
		turns := h.o.voiceTurns
		if rec.espeak {
			turns = max(1, turns/2)
		}
		rec.heard = make(chan struct{}, 1)
		r := measure(rec, turns)
		if r.Err != "" {
			logf("latency (%s): %s", r.Kind, r.Err)
		} else {
			s := r.shares()
			logf("latency (%s): %d turns, dialbox's share p50 %s, p95 %s", r.Kind, len(s), ms(quantile(s, 0.5)), ms(quantile(s, 0.95)))
		}
		h.latency = append(h.latency, r)
	}
}

// measure places rec's calls, one at a time, until turns turns are
// measured.
func measure(rec *latencyRecorder, turns int) latencyResult {
	agent := rec.agent
	res := latencyResult{Kind: "speech gather"}
	switch {
	case rec.espeak:
		res.Kind = "agent conversation, espeak-ng"
	case agent:
		res.Kind = "agent conversation"
	}
	dir, err := os.MkdirTemp("", "dialbox-latency-")
	if err != nil {
		res.Err = err.Error()
		return res
	}
	defer os.RemoveAll(dir)
	asrSrv := httptest.NewServer(asrStub(rec))
	defer asrSrv.Close()
	llmSrv := httptest.NewServer(llmStub(rec))
	defer llmSrv.Close()
	ttsSrv := httptest.NewServer(ttsStub(rec))
	defer ttsSrv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fe, err := startLatencyFarEnd(ctx, rec)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	cfg := config.DefaultConfig()
	cfg.SIP.Listen, cfg.SIP.RTPPorts = "127.0.0.1:0", ""
	cfg.SIP.Trunks = []config.SIPTrunk{{Name: "main", Address: fe, Transport: "udp", MaxChannels: 10, MaxCPS: 10}}
	cfg.ASR.Engine, cfg.ASR.URL, cfg.ASR.Model = config.ASROpenAI, asrSrv.URL+"/v1/audio/transcriptions", "stub"
	if !rec.espeak {
		cfg.TTS.Engine, cfg.TTS.URL, cfg.TTS.Model = config.TTSOpenAI, ttsSrv.URL+"/v1/audio/speech", "stub"
	}
	gauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "registered"}, []string{"trunk"})
	d, err := dialer.NewSIP(cfg, dir, slog.New(slog.DiscardHandler), gauge)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	defer d.Close()
	d.Chat = llm.Agent{Client: llm.New(llmSrv.URL+"/v1", "stub", "", 30*time.Second)}
	for call := 0; len(rec.turns) < turns; call++ {
		n := min(turnsPerCall, turns-len(rec.turns))
		s := gatherChain(call, n)
		if agent {
			s = agentScript(n)
		}
		before := len(rec.turns)
		cctx, ccancel := context.WithTimeout(ctx, time.Duration(n)*10*time.Second+30*time.Second)
		r := d.Dial(cctx, domain.DialRequest{From: "bench", To: "+84901234567", Attempt: 1, Start: time.Now(),
			Script: &s, Fields: map[string]string{"call": strconv.Itoa(call)}})
		ccancel()
		res.Calls++
		if r.Outcome != domain.OutcomeAnswered || r.Script == nil || r.Script.End == script.EndFailed || len(rec.turns)-before < n ||
			agent && r.Script.Result != "confirmed" {
			res.Err = fmt.Sprintf("call %d: outcome %s, %d of %d turns measured", call, r.Outcome, len(rec.turns)-before, n)
			if r.Script != nil {
				res.Err += ", result " + r.Script.Result
				for _, st := range r.Script.Steps {
					if st.Error != "" {
						res.Err += ": " + st.Error
					}
				}
				if r.Script.Err != nil {
					res.Err += ": " + r.Script.Err.Error()
				}
			}
			break
		}
	}
	res.Turns = rec.turns
	return res
}

// agentScript is a greeting, then turns replies of the model (which ends
// the call with end_call on the last).
func agentScript(turns int) script.Script {
	return script.Script{Steps: []script.Step{{Name: "talk", Agent: &script.Agent{
		Prompt: "Xác nhận lịch hẹn. Lượt cuối: " + strconv.Itoa(turns), Greeting: "Chào anh, cuộc gọi {{call}}.",
		MaxTurns: turns, Results: []string{"confirmed"}}}}}
}

// gatherChain is n speech gathers in a row, each answer ("Có ạ", heard by
// the stub) leading to the next, whose prompt is the reply measured; the
// last one's answer leads to a goodbye, the last reply measured. Every prompt's text is new, as a
// model's reply would be: none is in the TTS cache.
func gatherChain(call, n int) script.Script {
	var s script.Script
	for i := range n {
		next := "g" + strconv.Itoa(i+1)
		if i == n-1 {
			next = "bye"
		}
		s.Steps = append(s.Steps, script.Step{Name: "g" + strconv.Itoa(i), Gather: &script.Gather{
			Input: []string{script.InputSpeech}, Timeout: "10s",
			Prompt:   &script.Prompt{Say: fmt.Sprintf("Cuộc gọi %d, câu hỏi %d.", call, i)},
			Branches: map[string]string{"có": next}}})
	}
	s.Steps = append(s.Steps, script.Step{Name: "bye", Say: &script.Say{Text: fmt.Sprintf("Cuộc gọi %d, xin chào.", call)}})
	return s
}

// asrStub answers every utterance "Có ạ" asrStubLatency after it came.
func asrStub(rec *latencyRecorder) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		rec.stamp(func(t *turnTimes, now time.Time) {
			if !t.asrOnce {
				t.asrIn = now
			}
		})
		time.Sleep(asrStubLatency)
		rec.stamp(func(t *turnTimes, now time.Time) {
			if !t.asrOnce {
				t.asrOut, t.asrOnce = now, true
			}
		})
		json.NewEncoder(w).Encode(map[string]string{"text": "Có ạ"})
	}
}

// llmStub streams a reply of two sentences, the first llmStubLatency after
// the request, the second llmStubRest later; when the callee has spoken
// as many times as the system prompt's last number says, with end_call.
func llmStub(rec *latencyRecorder) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []llm.Message `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, "bad request", 400)
			return
		}
		rec.stamp(func(t *turnTimes, now time.Time) {
			if !t.llm1 {
				t.llmIn = now
			}
		})
		prompt := req.Messages[0].Content
		last, _ := strconv.Atoi(prompt[strings.LastIndexByte(prompt, ' ')+1:])
		users := 0
		for _, m := range req.Messages {
			if m.Role == "user" {
				users++
			}
		}
		n := rec.replies.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		event := func(delta map[string]any) {
			b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"delta": delta}}})
			fmt.Fprintf(w, "data: %s\n\n", b)
			w.(http.Flusher).Flush()
		}
		time.Sleep(llmStubLatency)
		rec.stamp(func(t *turnTimes, now time.Time) {
			if !t.llm1 {
				t.llmOut, t.llm1 = now, true
			}
		})
		event(map[string]any{"role": "assistant", "content": fmt.Sprintf("Dạ, em ghi nhận lượt %d. ", n)})
		if rec.hold {
			select {
			case <-rec.heard:
			case <-time.After(20 * time.Second): // within the client's 30 s
				fmt.Fprint(w, `data: {"error":{"message":"the first sentence was not heard before the rest of the reply was written"}}`+"\n\n")
				return
			}
		} else {
			time.Sleep(llmStubRest)
		}
		if users >= last {
			event(map[string]any{"content": "Em cảm ơn anh."})
			event(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": "c1", "type": "function",
				"function": map[string]any{"name": script.ToolEndCall, "arguments": `{"result":"confirmed"}`}}}})
		} else {
			event(map[string]any{"content": fmt.Sprintf("Anh còn cần gì nữa không, lượt %d?", n)})
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
}

// ttsStub answers at once replySentence of a tone, whatever the text.
func ttsStub(rec *latencyRecorder) http.HandlerFunc {
	n := int(replySentence / (time.Second / audio.PhoneRate))
	samples := make([]int16, n)
	for i := range samples {
		samples[i] = int16(8000 * math.Sin(2*math.Pi*440*float64(i)/audio.PhoneRate))
	}
	var wav bytes.Buffer
	if err := audio.EncodeWAV(&wav, audio.Buffer{Rate: audio.PhoneRate, Samples: samples}); err != nil {
		panic(err) // a fixed buffer that always encodes
	}
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		rec.stamp(func(t *turnTimes, now time.Time) {
			if !t.tts1 {
				t.ttsIn = now
			}
		})
		w.Header().Set("Content-Type", "audio/wav")
		w.Write(wav.Bytes())
		rec.stamp(func(t *turnTimes, now time.Time) {
			if !t.tts1 {
				t.ttsOut, t.tts1 = now, true
			}
		})
	}
}

// startLatencyFarEnd starts the callee on 127.0.0.1 and says its address:
// it answers, then, each time the bot has spoken and gone quiet, says a
// word of calleeSpeech and keeps silent; the far end notes when the last
// frame of the end_silence window after it goes out, and when the bot's
// next packet arrives.
func startLatencyFarEnd(ctx context.Context, rec *latencyRecorder) (string, error) {
	quiet := slog.New(slog.DiscardHandler)
	ua, err := sipgo.NewUA(sipgo.WithUserAgent("latency-farend"),
		sipgo.WithUserAgentTransportLayerOptions(sip.WithTransportLayerLogger(quiet)),
		sipgo.WithUserAgentTransactionLayerOptions(sip.WithTransactionLayerLogger(quiet)))
	if err != nil {
		return "", err
	}
	context.AfterFunc(ctx, func() { ua.Close() })
	dg := diago.NewDiago(ua, diago.WithLogger(quiet), diago.WithTransport(diago.Transport{Transport: "udp", BindHost: "127.0.0.1"}))
	if err := dg.ServeBackground(ctx, func(d *diago.DialogServerSession) { farEndCall(d, rec) }); err != nil {
		return "", err
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if ports := ua.TransportLayer().ListenPorts("udp"); len(ports) > 0 {
			addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
			if c, err := ua.TransportLayer().GetConnection("udp", addr); err == nil {
				c.Ref(-1) // GetConnection took a reference
				return addr, nil
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("the far end's UDP listener did not start")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// farEndCall is the callee of one call.
func farEndCall(d *diago.DialogServerSession, rec *latencyRecorder) {
	if err := d.Answer(); err != nil {
		return
	}
	r, err := d.AudioReader()
	if err != nil {
		return
	}
	w, err := d.AudioWriter()
	if err != nil {
		return
	}
	var mu sync.Mutex
	var last time.Time // the bot's last packet; zero: it has not spoken since the callee did
	go func() {
		buf := make([]byte, media.RTPBufSize)
		for {
			if _, err := r.Read(buf); err != nil {
				return
			}
			now := time.Now()
			if pt := d.RTPPacketReader.PacketHeader.PayloadType; pt != media.CodecAudioUlaw.PayloadType && pt != media.CodecAudioAlaw.PayloadType {
				continue
			}
			rec.packet(now)
			mu.Lock()
			last = now
			mu.Unlock()
		}
	}()
	encode := diagoaudio.EncodeUlawTo
	if media.CodecAudioFromSession(d.MediaSession()).PayloadType == media.CodecAudioAlaw.PayloadType {
		encode = diagoaudio.EncodeAlawTo
	}
	const frame = 20 * time.Millisecond
	tone, silence := make([]byte, 160), make([]byte, 160)
	pcm := make([]byte, 320)
	for i := range 160 {
		binary.LittleEndian.PutUint16(pcm[2*i:], uint16(int16(8000*math.Sin(2*math.Pi*440*float64(i)/8000))))
	}
	encode(tone, pcm) // 440 Hz repeats every 20 ms at 8 kHz: one frame serves
	encode(silence, make([]byte, 320))
	voiced, silent := int(calleeSpeech/frame), int(endSilence/frame)
	left := -1 // frames of the utterance and its end_silence still to send; -1: none under way
	for {
		f := silence
		if left < 0 {
			mu.Lock()
			if !last.IsZero() && time.Since(last) >= botQuiet {
				left, last = voiced+silent, time.Time{}
			}
			mu.Unlock()
		}
		if left > silent {
			f = tone
		}
		// diago sends the packet at once, then waits for the next 20 ms
		// tick: the end_silence window is over when its last frame goes.
		if left == 1 {
			rec.ended(time.Now())
		}
		if _, err := w.Write(f); err != nil {
			return
		}
		if left >= 0 {
			left--
		}
	}
}

// latencySection reports the phase against its target.
func (h *Harness) latencySection(w func(string, ...any)) {
	w("\n### Listening latency\n\n")
	if len(h.latency) == 0 {
		w("Not run: %s.\n", h.latencySkip)
		return
	}
	w("From the end of the callee's speech (the last frame of the %s end_silence window leaving the far end) to the first RTP packet of the reply arriving there, on real SIP calls on 127.0.0.1; the recognizer answers %s after the upload, the model its first sentence %s after the request, the TTS at once. Dialbox's share is the gap less those. Stages are medians.\n\n",
		endSilence, asrStubLatency, llmStubLatency)
	w("| Turns | Calls | Gap p50 | Share p50 | Share p95 | Share max | Heard → recognizer | Recognizer → model | Model → TTS | TTS → first packet |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range h.latency {
		if r.Err != "" && len(r.Turns) == 0 {
			w("| %s | %d | failed: %s | | | | | | | |\n", r.Kind, r.Calls, r.Err)
			continue
		}
		s := r.shares()
		gap := r.stage(func(t turnTimes) time.Time { return t.end }, func(t turnTimes) time.Time { return t.firstPacket })
		toModel, modelToTTS := "n/a", "n/a"
		if r.Kind == "agent conversation, espeak-ng" {
			toModel = ms(r.stage(func(t turnTimes) time.Time { return t.asrOut }, func(t turnTimes) time.Time { return t.llmIn }))
			modelToTTS = "model → first packet " + ms(r.stage(func(t turnTimes) time.Time { return t.llmOut }, func(t turnTimes) time.Time { return t.firstPacket }))
		} else if r.Kind == "agent conversation" {
			toModel = ms(r.stage(func(t turnTimes) time.Time { return t.asrOut }, func(t turnTimes) time.Time { return t.llmIn }))
			modelToTTS = ms(r.stage(func(t turnTimes) time.Time { return t.llmOut }, func(t turnTimes) time.Time { return t.ttsIn }))
		} else {
			modelToTTS = "recognizer → TTS " + ms(r.stage(func(t turnTimes) time.Time { return t.asrOut }, func(t turnTimes) time.Time { return t.ttsIn }))
		}
		ttsToPacket := "n/a"
		if r.Kind != "agent conversation, espeak-ng" {
			ttsToPacket = ms(r.stage(func(t turnTimes) time.Time { return t.ttsOut }, func(t turnTimes) time.Time { return t.firstPacket }))
		}
		w("| %s, %d | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Kind, len(s), r.Calls, ms(gap),
			ms(quantile(s, 0.5)), ms(quantile(s, 0.95)), ms(s[len(s)-1]),
			ms(r.stage(func(t turnTimes) time.Time { return t.end }, func(t turnTimes) time.Time { return t.asrIn })),
			toModel, modelToTTS, ttsToPacket)
	}
	w("\n")
	for _, r := range h.latency {
		if len(r.Turns) == 0 {
			w("- **MISS** %s: not measured: %s\n", r.Kind, r.Err)
			continue
		}
		p95 := quantile(r.shares(), 0.95)
		w("- %s %s: dialbox's share at most %s at p95: %s over %d turns\n", verdict(p95 <= latencyTarget && r.Err == ""), r.Kind, ms(latencyTarget), ms(p95), len(r.Turns))
		if r.Err != "" {
			w("  (cut short: %s)\n", r.Err)
		}
	}
}
