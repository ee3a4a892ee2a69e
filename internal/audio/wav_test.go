package audio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
)

// header builds a WAV head: RIFF, a 16-byte fmt chunk and the data chunk's
// header declaring dataSize; the caller appends the data.
func header(tag, channels uint16, rate uint32, bits uint16, dataSize uint32) []byte {
	var b bytes.Buffer
	b.WriteString("RIFF")
	binary.Write(&b, binary.LittleEndian, uint32(36+dataSize))
	b.WriteString("WAVEfmt ")
	binary.Write(&b, binary.LittleEndian, uint32(16))
	block := channels * bits / 8
	b.Write(le(tag, channels, rate, rate*uint32(block), block, bits))
	b.WriteString("data")
	binary.Write(&b, binary.LittleEndian, dataSize)
	return b.Bytes()
}

func le(values ...any) []byte {
	var b bytes.Buffer
	for _, v := range values {
		binary.Write(&b, binary.LittleEndian, v)
	}
	return b.Bytes()
}

func wav(tag, channels uint16, rate uint32, bits uint16, data []byte) []byte {
	return append(header(tag, channels, rate, bits, uint32(len(data))), data...)
}

func decode(t *testing.T, b []byte) Buffer {
	t.Helper()
	buf, err := DecodeWAV(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("DecodeWAV: %v", err)
	}
	return buf
}

func expectSamples(t *testing.T, got Buffer, rate int, want ...int16) {
	t.Helper()
	if got.Rate != rate {
		t.Errorf("rate %d, want %d", got.Rate, rate)
	}
	if len(got.Samples) != len(want) {
		t.Fatalf("samples %v, want %v", got.Samples, want)
	}
	for i := range want {
		if got.Samples[i] != want[i] {
			t.Fatalf("samples %v, want %v", got.Samples, want)
		}
	}
}

func TestWAVRoundTrip(t *testing.T) {
	in := Buffer{Rate: 22050, Samples: []int16{0, 1, -1, math.MaxInt16, math.MinInt16, 1234}}
	var b bytes.Buffer
	if err := EncodeWAV(&b, in); err != nil {
		t.Fatal(err)
	}
	if b.Len() != 44+2*len(in.Samples) {
		t.Errorf("%d bytes, want a 44-byte header and the samples", b.Len())
	}
	if !bytes.Equal(b.Bytes()[:44], header(tagPCM, 1, 22050, 16, 12)) {
		t.Errorf("header % x is not the canonical one", b.Bytes()[:44])
	}
	expectSamples(t, decode(t, b.Bytes()), 22050, in.Samples...)

	if err := EncodeWAV(&b, Buffer{Rate: 0}); err == nil {
		t.Error("EncodeWAV accepted a zero sample rate")
	}
}

func TestWAVFormats(t *testing.T) {
	for _, c := range []struct {
		name     string
		file     []byte
		rate     int
		expected []int16
	}{
		{"16-bit stereo is averaged", wav(tagPCM, 2, 44100, 16, le(int16(1000), int16(3000), int16(-4), int16(-1), int16(32767), int16(32767))),
			44100, []int16{2000, -3, 32767}}, // -2.5 rounds away from zero
		{"8-bit is unsigned", wav(tagPCM, 1, 8000, 8, []byte{0, 128, 255, 129}), 8000, []int16{-32768, 0, 32512, 256}},
		{"24-bit", wav(tagPCM, 1, 48000, 24, []byte{0xff, 0xff, 0x7f, 0x00, 0x00, 0x80, 0x00, 0x01, 0x00, 0x80, 0xff, 0xff}),
			48000, []int16{32767, -32768, 1, -1}}, // 0x7fffff clips; -128/256 rounds away from zero
		{"32-bit integer", wav(tagPCM, 1, 16000, 32, le(int32(0x40000000), int32(-0x80000000))), 16000, []int16{16384, -32768}},
		{"32-bit float, clipped", wav(tagFloat, 1, 22050, 32, le(float32(0.5), float32(-1), float32(2), float32(-0.25))),
			22050, []int16{16384, -32768, 32767, -8192}},
		{"64-bit float stereo", wav(tagFloat, 2, 22050, 64, le(0.5, 0.0, float64(math.NaN()), 0.0)), 22050, []int16{8192, 0}},
		{"6 channels", wav(tagPCM, 6, 48000, 16, le(int16(600), int16(0), int16(0), int16(0), int16(0), int16(0))), 48000, []int16{100}},
	} {
		t.Run(c.name, func(t *testing.T) { expectSamples(t, decode(t, c.file), c.rate, c.expected...) })
	}
}

func TestWAVExtensible(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("RIFF\x00\x00\x00\x00WAVEfmt ")
	b.Write(le(uint32(40), uint16(tagExtensible), uint16(2), uint32(16000), uint32(64000), uint16(4), uint16(16),
		uint16(22), uint16(16), uint32(3), uint16(tagFloat))) // cbSize, valid bits, channel mask, GUID start
	b.WriteString("\x00\x00\x00\x00\x10\x00\x80\x00\x00\xaa\x00\x38\x9b\x71") // rest of the GUID
	b.WriteString("data")
	b.Write(le(uint32(8), float32(0.5), float32(0.5)))
	_, err := DecodeWAV(&b)
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "16-bit float") {
		t.Fatalf("16-bit samples under a float sub-format: %v, want 16-bit float unsupported", err)
	}

	// The same with a PCM sub-format and 16-bit stereo.
	var p bytes.Buffer
	p.WriteString("RIFF\x00\x00\x00\x00WAVEfmt ")
	p.Write(le(uint32(40), uint16(tagExtensible), uint16(2), uint32(16000), uint32(64000), uint16(4), uint16(16),
		uint16(22), uint16(16), uint32(3), uint16(tagPCM)))
	p.WriteString("\x00\x00\x00\x00\x10\x00\x80\x00\x00\xaa\x00\x38\x9b\x71")
	p.WriteString("data")
	p.Write(le(uint32(4), int16(100), int16(300)))
	expectSamples(t, decode(t, p.Bytes()), 16000, 200)
}

// Tools writing to a pipe cannot seek back to fill in the sizes: espeak-ng
// --stdout writes 0x7FFFF000, others 0x7FFFFFFF, 0xFFFFFFFF or 0. The data
// then runs to the end of the input, and a cut-off last frame is dropped.
func TestWAVStreamedSizes(t *testing.T) {
	data := le(int16(1), int16(2), int16(3), int16(-4))
	for _, size := range []uint32{0x7FFFF000, 0x7FFFFFFF, 0xFFFFFFFF, 0} {
		f := append(header(tagPCM, 1, 22050, 16, size), data...)
		expectSamples(t, decode(t, f), 22050, 1, 2, 3, -4)
		expectSamples(t, decode(t, append(f, 0x55)), 22050, 1, 2, 3, -4)
	}
	// A stereo stream cut in the middle of a frame.
	f := append(header(tagPCM, 2, 8000, 16, 0x7FFFF000), le(int16(10), int16(20), int16(30))...)
	expectSamples(t, decode(t, f), 8000, 15)
}

func TestWAVSkipsOtherChunks(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("RIFF\x00\x00\x00\x00WAVE")
	b.WriteString("LIST")
	b.Write(le(uint32(3)))
	b.WriteString("abc\x00") // odd size: one pad byte
	full := wav(tagPCM, 1, 8000, 16, le(int16(7), int16(8)))
	b.Write(full[12:])
	b.WriteString("id3 \x04\x00\x00\x00junk") // after data: never read
	expectSamples(t, decode(t, b.Bytes()), 8000, 7, 8)
}

func TestWAVBadInput(t *testing.T) {
	good := wav(tagPCM, 1, 8000, 16, le(int16(1), int16(2), int16(3), int16(4)))
	fmtFirst := func(tag, channels uint16, rate uint32, bits uint16) []byte {
		return wav(tag, channels, rate, bits, make([]byte, 16))
	}
	for _, c := range []struct {
		name string
		file []byte
		err  error
		says string
	}{
		{"empty", nil, ErrNotWAV, "empty"},
		{"mp3", []byte("ID3\x04\x00\x00\x00\x00\x00\x00\x00\x00"), ErrNotWAV, `"ID3\x04"`},
		{"RIFF of another form", []byte("RIFF\x00\x00\x00\x00AVI LIST"), ErrNotWAV, "AVI"},
		{"big-endian RIFX", append([]byte("RIFX"), good[4:]...), ErrUnsupported, "RIFX"},
		{"cut in the RIFF header", good[:7], ErrTruncated, "RIFF header"},
		{"cut in the fmt chunk", good[:30], ErrTruncated, "fmt chunk"},
		{"cut in a chunk header", good[:40], ErrTruncated, "chunk header"},
		{"no data chunk", good[:36], ErrTruncated, "no data chunk"},
		{"data shorter than declared", good[:47], ErrTruncated, "declares 8 bytes, only 3"},
		{"skipped chunk cut", append(append([]byte{}, good[:12]...), "LIST\xff\x00\x00\x00ab"...), ErrTruncated, `"LIST" chunk`},
		{"data before fmt", append([]byte("RIFF\x00\x00\x00\x00WAVEdata\x02\x00\x00\x00"), 1, 2), ErrUnsupported, "before fmt"},
		{"IMA ADPCM", fmtFirst(0x11, 1, 8000, 4), ErrUnsupported, "IMA ADPCM"},
		{"mu-law", fmtFirst(7, 1, 8000, 8), ErrUnsupported, "mu-law"},
		{"MP3 in WAV", fmtFirst(0x55, 2, 44100, 0), ErrUnsupported, "MPEG layer 3"},
		{"unknown codec", fmtFirst(0x1234, 1, 8000, 16), ErrUnsupported, "0x1234 (compressed)"},
		{"12-bit", fmtFirst(tagPCM, 1, 8000, 12), ErrUnsupported, "12-bit integer"},
		{"40-bit", fmtFirst(tagPCM, 1, 8000, 40), ErrUnsupported, "40-bit integer"},
		{"16-bit float", fmtFirst(tagFloat, 1, 8000, 16), ErrUnsupported, "16-bit float"},
		{"no channels", fmtFirst(tagPCM, 0, 8000, 16), ErrUnsupported, "zero channels"},
		{"zero rate", fmtFirst(tagPCM, 1, 0, 16), ErrUnsupported, "0 Hz"},
		{"absurd rate", fmtFirst(tagPCM, 1, 5_000_000, 16), ErrUnsupported, "5000000 Hz"},
		{"short fmt", []byte("RIFF\x00\x00\x00\x00WAVEfmt \x0e\x00\x00\x00"), ErrUnsupported, "fmt chunk of 14 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeWAV(bytes.NewReader(c.file))
			if !errors.Is(err, c.err) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("error %v, want %v saying %q", err, c.err, c.says)
			}
		})
	}
}

// A header whose data size is a lie, but not a streaming placeholder, must
// not make the decoder allocate what it declares (1.8 GB here).
func TestWAVLyingSizeDoesNotAllocate(t *testing.T) {
	f := append(header(tagPCM, 1, 8000, 16, 0x70000000), 1, 2)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := DecodeWAV(bytes.NewReader(f))
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTruncated) {
		t.Fatalf("error %v, want truncated", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("decoding allocated %d bytes", n)
	}
}

// Whatever the bytes, DecodeWAV answers samples or an error, never a panic,
// and what it answers writes back as a WAV that decodes to the same.
func FuzzDecodeWAV(f *testing.F) {
	f.Add(wav(tagPCM, 1, 8000, 16, le(int16(1), int16(-2))))
	f.Add(wav(tagPCM, 2, 44100, 8, []byte{1, 2, 3}))
	f.Add(wav(tagFloat, 1, 22050, 32, le(float32(0.5))))
	f.Add(append(header(tagPCM, 1, 22050, 16, 0x7FFFF000), 1, 2, 3))
	f.Add([]byte("RIFF\x00\x00\x00\x00WAVELIST\x01\x00\x00\x00a\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := DecodeWAV(bytes.NewReader(data))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := EncodeWAV(&out, b); err != nil {
			t.Fatalf("decoded %d samples at %d Hz that do not encode: %v", len(b.Samples), b.Rate, err)
		}
		back, err := DecodeWAV(&out)
		if err != nil || back.Rate != b.Rate || len(back.Samples) != len(b.Samples) {
			t.Fatalf("re-encoded WAV decodes to %d samples at %d Hz (%v), want %d at %d", len(back.Samples), back.Rate, err, len(b.Samples), b.Rate)
		}
	})
}
