package main

// The `bench sip-caller` subcommand: dialbox's SIP user agent
// (internal/sipcall) in a process of its own, so its CPU and memory can be
// read from /proc while it places the calls of a SIP step. It starts, says
// "ready" on stdout, places its calls when it gets SIGUSR1, writes how they
// went to a JSON file, and waits to be stopped.

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"dialbox/internal/audio"
	"dialbox/internal/sipcall"
)

// sipPlaced is how a caller's calls went, as the caller itself saw them.
type sipPlaced struct {
	Calls    int            `json:"calls"`
	Outcomes map[string]int `json:"outcomes"` // "ANSWERED/prompt_done" and the like
	FirstErr string         `json:"first_error,omitempty"`
	Elapsed  time.Duration  `json:"elapsed"`
	// Began: when the first contact was offered, for a caller whose
	// offer starts before its first INVITE (dialbox, through operation
	// A); zero when the first INVITE is the offer's start.
	Began time.Time `json:"began,omitzero"`
}

func runSIPCaller(args []string) error {
	fs := flag.NewFlagSet("sip-caller", flag.ContinueOnError)
	trunk := fs.String("trunk", "", "callee host:port (127.0.0.1 only)")
	calls := fs.Int("calls", 100, "calls to place")
	rate := fs.Float64("rate", 100, "calls started per second")
	prompt := fs.Duration("prompt", 5*time.Second, "length of the prompt every call plays")
	rtp := fs.String("rtp", "", "RTP port range MIN-MAX")
	out := fs.String("out", "", "file the result is written to")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := checkLoopback(*trunk); err != nil {
		return err
	}
	if *calls < 1 || *rate <= 0 || *prompt <= 0 || *out == "" {
		return errors.New("-calls, -rate, -prompt and -out must be positive")
	}
	opts := sipcall.Options{
		ListenAddr: "127.0.0.1:0",
		Trunks:     []sipcall.Trunk{{Name: "bench", Address: *trunk}},
		Logger:     slog.New(slog.DiscardHandler),
	}
	if lo, hi, ok := strings.Cut(*rtp, "-"); ok {
		opts.RTPPortMin, _ = strconv.Atoi(lo)
		opts.RTPPortMax, _ = strconv.Atoi(hi)
	}
	ua, err := sipcall.New(opts)
	if err != nil {
		return err
	}
	defer ua.Close()
	pcm, err := audio.DecodePCM16(tonePCM(*prompt))
	if err != nil {
		return err
	}

	start := make(chan os.Signal, 1)
	signal.Notify(start, syscall.SIGUSR1)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	fmt.Println("ready")
	select {
	case <-start:
	case <-stop:
		return nil
	}

	// Calls start at the offered rate, each in its own goroutine, as
	// dialbox's engine starts them; none outlives the prompt by much.
	ctx, cancel := context.WithTimeout(context.Background(), *prompt+time.Duration(float64(*calls)/(*rate)*float64(time.Second))+time.Minute)
	defer cancel()
	res := sipPlaced{Calls: *calls, Outcomes: map[string]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	began := time.Now()
	interval := time.Duration(float64(time.Second) / *rate)
	for i := range *calls {
		if d := time.Until(began.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := ua.Call(ctx, sipcall.CallRequest{Trunk: "bench", To: fmt.Sprintf("+8491%07d", i), Caller: "19001234",
				Prompt: pcm, RingTimeout: 30 * time.Second})
			mu.Lock()
			defer mu.Unlock()
			res.Outcomes[sipcall.Outcome(r)+"/"+string(r.EndedBy)]++
			if r.Err != nil && res.FirstErr == "" {
				res.FirstErr = r.Err.Error()
			}
		}()
	}
	wg.Wait()
	res.Elapsed = time.Since(began)
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	if err := os.WriteFile(*out+".tmp", b, 0o644); err != nil {
		return err
	}
	if err := os.Rename(*out+".tmp", *out); err != nil {
		return err
	}
	// Stay until stopped: the harness reads this process's /proc first.
	<-stop
	return nil
}

// tonePCM is d of a 440 Hz tone, 8 kHz 16-bit PCM: a prompt.
func tonePCM(d time.Duration) []byte {
	n := int(d.Seconds() * 8000)
	pcm := make([]byte, 2*n)
	for i := range n {
		s := int16(8000 * math.Sin(2*math.Pi*440*float64(i)/8000))
		binary.LittleEndian.PutUint16(pcm[2*i:], uint16(s))
	}
	return pcm
}
