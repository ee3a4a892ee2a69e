package sipcall

import (
	"time"

	pcm "dialbox/internal/audio"
)

// recording taps an answered call's audio into a WAV file
// (CallRequest.Record): what we send as it is sent, what the far end sends
// as it arrives, both placed by the time since the answer. A nil
// *recording records nothing.
type recording struct {
	rec         *pcm.Recorder
	start       time.Time
	sent, heard *pcm.Track
}

func newRecording(path string, answered time.Time) (*recording, error) {
	rec, err := pcm.NewRecorder(path)
	if err != nil {
		return nil, err
	}
	return &recording{rec: rec, start: answered, sent: rec.Track(), heard: rec.Track()}, nil
}

// send records one frame we send.
func (r *recording) send(frame []int16) {
	if r == nil {
		return
	}
	r.sent.Write(time.Since(r.start), frame)
}

// hear records one frame the far end sent, decoded.
func (r *recording) hear(samples []int16) {
	if r == nil {
		return
	}
	r.heard.Write(time.Since(r.start), samples)
}

// finish writes the file, as long as the call talked, into res.
func (r *recording) finish(res *CallResult) {
	if r == nil {
		return
	}
	res.RecordingSize, res.RecordingErr = r.rec.Close(res.TalkTime)
}
