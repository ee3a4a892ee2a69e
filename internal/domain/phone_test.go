package domain

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// FuzzFastPhone: NormalizePhone's fast path gives the phone library's
// answers, E.164 number and error, on every input. Each input is read
// twice, beside a number sharing all but its last digits (so the memo
// answers), and with a separator put between two of its characters.
func FuzzFastPhone(f *testing.F) {
	for _, s := range []string{"0912345678", "84912345678", "+84912345678", "0912 345 678", "+84 912 345 678",
		"091.234.5678", "091-234-5678", " 0912345678 ", "0912  345678", "0912345678-", "-0912345678", "+ 84912345678",
		"+84-912-345-678", "0084912345678", "00 84 912 345 678", "02873000001", "028 7300 0001", "1900123456",
		"1800 1234", "0912", "+849123456789012", "12345678", "0899999999", "+14155550123", "+1 415 555 0123",
		"+44 20 7946 0958", "84 912 345 678", "0912.345.678.", "09123456789", "+840912345678", "840912345678"} {
		f.Add(s, uint16(0), uint8(0))
	}
	f.Fuzz(func(t *testing.T, raw string, tail uint16, at uint8) {
		inputs := []string{raw, raw}
		if len(raw) > FastPhonesTail {
			inputs = append(inputs, raw[:len(raw)-FastPhonesTail]+fmt.Sprintf("%04d", tail%10000))
		}
		if len(raw) > 1 {
			i := 1 + int(at)%(len(raw)-1)
			inputs = append(inputs, raw[:i]+string(" .-"[int(at)%3])+raw[i:])
		}
		for _, in := range inputs {
			checkFastPhone(t, in)
		}
	})
}

func checkFastPhone(t *testing.T, raw string) {
	t.Helper()
	want, wantErr := parsePhone(raw, "VN")
	got, err := NormalizePhone(raw, "VN")
	if got != want || err != wantErr {
		t.Fatalf("%q: NormalizePhone %q %v, the library %q %v", raw, got, err, want, wantErr)
	}
}

// The fast path answers the forms Vietnamese contacts come in, and agrees
// with the library on a sample of every prefix in each of them.
func TestFastPhoneAgreesOnVietnameseForms(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	fast := 0
	for i := 0; i < 3000; i++ {
		nsn := fmt.Sprintf("%d%08d", 1+rng.IntN(9), rng.IntN(100000000))
		spaced := nsn[:2] + " " + nsn[2:5] + " " + nsn[5:]
		for _, raw := range []string{"0" + nsn, "84" + nsn, "+84" + nsn, "+84 " + spaced, "0" + spaced,
			"0" + nsn[:2] + "." + nsn[2:5] + "." + nsn[5:], "0" + nsn[:2] + "-" + nsn[2:5] + "-" + nsn[5:], "+1" + nsn} {
			checkFastPhone(t, raw)
			if _, _, ok := fastPhone(raw, "VN"); ok {
				fast++
			}
		}
	}
	if fast != 3000*8 {
		t.Errorf("%d of %d inputs took the fast path", fast, 3000*8)
	}
}

// A memo with a limit stops growing there and still answers exactly.
func TestFastPhonesLimit(t *testing.T) {
	fp := NewFastPhones("VN")
	fp.limit = 10
	for i := 0; i < 100; i++ {
		raw := fmt.Sprintf("09%02d%06d", i, i)
		want, wantErr := StoredNumber(parsePhone(raw, "VN"))
		got, err := fp.Number(raw)
		if got != want || err != wantErr {
			t.Fatalf("%q: %d %v, the library %d %v", raw, got, err, want, wantErr)
		}
	}
	if len(fp.Memo) != 10 {
		t.Errorf("memo holds %d entries, want its limit 10", len(fp.Memo))
	}
}

// What a number costs, through the fast path and through the library.
func BenchmarkNormalizePhone(b *testing.B) {
	for _, c := range []struct {
		name  string
		parse func(string, string) (string, error)
	}{{"fast", NormalizePhone}, {"library", parsePhone}} {
		b.Run(c.name, func(b *testing.B) {
			for i := range b.N {
				if _, err := c.parse(fmt.Sprintf("0912 %03d %03d", i%1000, i%997), "VN"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
