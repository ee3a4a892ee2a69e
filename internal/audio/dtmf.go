package audio

import (
	"math"
	"strings"
)

// DTMF is n samples at PhoneRate of a telephone key's two tones (ITU-T
// Q.23), each at a quarter of full scale; nil for a rune that is no key
// (0-9, *, #, A-D).
func DTMF(key rune, n int) []int16 {
	i := strings.IndexRune("123A456B789C*0#D", key)
	if i < 0 || n < 0 {
		return nil
	}
	low := []float64{697, 770, 852, 941}[i/4]
	high := []float64{1209, 1336, 1477, 1633}[i%4]
	out := make([]int16, n)
	for j := range out {
		t := float64(j) / PhoneRate
		out[j] = int16(8000 * (math.Sin(2*math.Pi*low*t) + math.Sin(2*math.Pi*high*t)))
	}
	return out
}
