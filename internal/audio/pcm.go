package audio

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

const (
	// PhoneRate is the sample rate of G.711 telephone audio.
	PhoneRate = 8000
	// PhoneFrame is the number of samples in one 20 ms RTP packet at PhoneRate.
	PhoneFrame = PhoneRate / 50
)

// Buffer is mono signed 16-bit PCM at Rate samples per second.
type Buffer struct {
	Rate    int
	Samples []int16
}

// Duration is how long the buffer plays; zero when Rate is not positive.
func (b Buffer) Duration() time.Duration {
	if b.Rate <= 0 {
		return 0
	}
	return time.Duration(int64(len(b.Samples)) * int64(time.Second) / int64(b.Rate))
}

// RMS is the root mean square of the samples, in sample units (0 to 32768);
// zero for no samples.
func RMS(samples []int16) float64 {
	if len(samples) == 0 {
		return 0
	}
	var sum float64
	for _, s := range samples {
		v := float64(s)
		sum += v * v
	}
	return math.Sqrt(sum / float64(len(samples)))
}

// MeanAbs is the mean absolute amplitude of the samples, in sample units;
// zero for no samples. Cheaper than RMS and less swayed by a few clicks.
func MeanAbs(samples []int16) float64 {
	if len(samples) == 0 {
		return 0
	}
	return float64(SumAbs(samples)) / float64(len(samples))
}

// SumAbs is the sum of the samples' absolute amplitudes, exact in
// integers: a mean compared as a sum never rounds.
func SumAbs(samples []int16) int64 {
	var sum int64
	for _, s := range samples {
		v := int64(s)
		if v < 0 {
			v = -v
		}
		sum += v
	}
	return sum
}

// ToneLevel is the amplitude, in sample units, of the freq Hz component of
// samples at rate (the Goertzel algorithm): about A for a sine of
// amplitude A at that frequency, near 0 for silence or other tones.
func ToneLevel(samples []int16, rate int, freq float64) float64 {
	if len(samples) == 0 || rate <= 0 {
		return 0
	}
	w := 2 * math.Pi * freq / float64(rate)
	coeff := 2 * math.Cos(w)
	var s1, s2 float64
	for _, v := range samples {
		s0 := float64(v) + coeff*s1 - s2
		s2, s1 = s1, s0
	}
	re := s1 - s2*math.Cos(w)
	im := s2 * math.Sin(w)
	return 2 * math.Hypot(re, im) / float64(len(samples))
}

// EncodePCM16 returns the samples as little-endian 16-bit bytes, the layout
// of a WAV data chunk and the input G.711 encoders expect.
func EncodePCM16(samples []int16) []byte {
	out := make([]byte, 2*len(samples))
	for i, s := range samples {
		binary.LittleEndian.PutUint16(out[2*i:], uint16(s))
	}
	return out
}

// DecodePCM16 reads little-endian 16-bit samples; an odd number of bytes is
// an error because the last sample would be cut in half.
func DecodePCM16(b []byte) ([]int16, error) {
	if len(b)%2 != 0 {
		return nil, fmt.Errorf("audio: %d bytes is not a whole number of 16-bit samples", len(b))
	}
	out := make([]int16, len(b)/2)
	for i := range out {
		out[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return out, nil
}

// Frames splits samples into frames of size samples (PhoneFrame for 20 ms at
// 8 kHz). The last frame is padded with silence so that every frame is full,
// as an RTP packet must be. Frames share memory with samples except a padded
// last one. A size below 1 gives no frames.
func Frames(samples []int16, size int) [][]int16 {
	if size < 1 || len(samples) == 0 {
		return nil
	}
	frames := make([][]int16, 0, (len(samples)+size-1)/size)
	for len(samples) >= size {
		frames = append(frames, samples[:size:size])
		samples = samples[size:]
	}
	if len(samples) > 0 {
		last := make([]int16, size)
		copy(last, samples)
		frames = append(frames, last)
	}
	return frames
}
