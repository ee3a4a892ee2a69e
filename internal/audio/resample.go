package audio

import (
	"fmt"
	"math"
)

// The low-pass keeps 0 to 85% of the lower rate's Nyquist frequency (3.4 kHz,
// the telephone band, when one side is 8 kHz) and stops from 100% of it on,
// where aliasing would start, by stopbandDB. A Kaiser-windowed sinc meets
// that spanning about 67 samples of the lower rate (8 ms at 8 kHz).
const (
	passEdge   = 0.85
	stopEdge   = 1.0
	stopbandDB = 80.0
)

// Phase tables beyond this many coefficients (rates whose ratio reduces to
// large numbers, e.g. 44101 Hz) are not kept: each output sample computes its
// own row instead, slower but with no memory cliff.
const maxTable = 1 << 18

// Resample converts samples from one rate to another with a windowed-sinc
// polyphase filter: each output sample is a weighted sum of the input
// samples around its exact position, using weights for that position's phase
// among the to/gcd(from, to) possible ones. The filter is both the
// anti-aliasing low-pass (downsampling) and the anti-imaging one
// (upsampling); its weights sum to 1 so DC passes unchanged. Beyond the ends
// the input is taken as silence. The output has round(len*to/from) samples;
// equal rates return a copy.
func Resample(samples []int16, from, to int) ([]int16, error) {
	if from <= 0 || to <= 0 || from > maxRate || to > maxRate {
		return nil, fmt.Errorf("audio: cannot resample from %d Hz to %d Hz", from, to)
	}
	if from == to {
		return append([]int16(nil), samples...), nil
	}
	g := gcd(from, to)
	up, down := to/g, from/g // output n sits at input position n*down/up

	// The kernel, in units of input samples: cutoff midway through the
	// transition band, length from Kaiser's formula.
	lower := float64(min(from, to))
	scale := lower / 2 / float64(from) // the lower Nyquist, in cycles per input sample
	cutoff := (passEdge + stopEdge) / 2 * scale
	width := (stopEdge - passEdge) * scale
	halfLen := (stopbandDB - 7.95) / (2.285 * 2 * math.Pi * width) / 2
	beta := 0.1102 * (stopbandDB - 8.7)
	k := int(math.Ceil(halfLen)) // taps on each side of the position
	taps := 2 * k

	// row fills c with the weights of input samples i0-k+1 .. i0+k for an
	// output at input position i0 + phase/up.
	row := func(c []float64, phase int) {
		frac := float64(phase) / float64(up)
		var sum float64
		for j := range c {
			x := frac - float64(j-k+1) // distance from the output position
			c[j] = 0
			if r := x / halfLen; r > -1 && r < 1 {
				c[j] = 2 * cutoff * sinc(2*cutoff*x) * bessel0(beta*math.Sqrt(1-r*r))
			}
			sum += c[j]
		}
		for j := range c {
			c[j] /= sum
		}
	}
	var table [][]float64
	if up*taps <= maxTable {
		table = make([][]float64, up)
	}
	scratch := make([]float64, taps)

	in := make([]float64, len(samples))
	for i, s := range samples {
		in[i] = float64(s)
	}
	outLen := (int64(len(samples))*int64(to) + int64(from)/2) / int64(from)
	out := make([]int16, outLen)
	for n := range out {
		pos := int64(n) * int64(down)
		i0, phase := int(pos/int64(up)), int(pos%int64(up))
		c := scratch
		if table != nil {
			if table[phase] == nil {
				table[phase] = make([]float64, taps)
				row(table[phase], phase)
			}
			c = table[phase]
		} else {
			row(c, phase)
		}
		first := i0 - k + 1
		lo, hi := max(0, -first), min(taps, len(in)-first)
		var acc float64
		for j := lo; j < hi; j++ {
			acc += c[j] * in[first+j]
		}
		out[n] = toInt16(acc)
	}
	return out, nil
}

// ResampleBuffer returns b at the given rate.
func ResampleBuffer(b Buffer, rate int) (Buffer, error) {
	s, err := Resample(b.Samples, b.Rate, rate)
	if err != nil {
		return Buffer{}, err
	}
	return Buffer{Rate: rate, Samples: s}, nil
}

func sinc(x float64) float64 {
	if x == 0 {
		return 1
	}
	return math.Sin(math.Pi*x) / (math.Pi * x)
}

// bessel0 is the modified Bessel function of the first kind of order 0, by
// its power series, which converges fast for the Kaiser window's arguments.
func bessel0(x float64) float64 {
	sum, term := 1.0, 1.0
	for i := 1; term > 1e-12*sum; i++ {
		h := x / 2 / float64(i)
		term *= h * h
		sum += term
	}
	return sum
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
