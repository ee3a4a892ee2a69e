package audio

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

var (
	// ErrNotWAV means the input does not start like a RIFF/WAVE file.
	ErrNotWAV = errors.New("not a WAV file")
	// ErrUnsupported means a WAV file whose encoding this package does not
	// decode (compressed audio, odd sample sizes, big-endian RIFX, RF64).
	ErrUnsupported = errors.New("unsupported WAV encoding")
	// ErrTruncated means the file ends before its header or its declared
	// data does.
	ErrTruncated = errors.New("truncated WAV file")
)

// WAV format tags (the fmt chunk's first field).
const (
	tagPCM        = 0x0001
	tagFloat      = 0x0003
	tagExtensible = 0xFFFE
)

// Names of the compressed encodings met in practice, for the error message.
var tagNames = map[uint16]string{
	0x0002: "MS ADPCM",
	0x0006: "G.711 A-law",
	0x0007: "G.711 mu-law",
	0x0011: "IMA ADPCM",
	0x0031: "GSM 6.10",
	0x0050: "MPEG",
	0x0055: "MPEG layer 3",
}

// Rates beyond this are not audio anyone sends us and would make the
// resampler's filter absurdly long.
const maxRate = 1_000_000

// Tools that write a WAV to a pipe cannot seek back to fill in the data
// size, so they put a placeholder there: espeak-ng writes 0x7FFFF000, others
// 0x7FFFFFFF, 0xFFFFFFFF or 0. Such sizes mean "until the end of the input".
const streamedSize = 0x7FFF0000

// DecodeWAV reads a whole WAV file: integer PCM of 8 (unsigned), 16, 24 or 32
// bits, or IEEE float of 32 or 64 bits, any number of channels (averaged to
// mono) and any sample rate, kept as is. Chunks other than fmt and data are
// skipped; reading stops at the end of the data chunk.
func DecodeWAV(r io.Reader) (Buffer, error) {
	br := bufio.NewReader(r)
	var hdr [12]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return Buffer{}, fmt.Errorf("wav: empty input: %w", ErrNotWAV)
		}
		return Buffer{}, readErr("RIFF header", err)
	}
	switch string(hdr[:4]) {
	case "RIFF":
	case "RIFX", "RF64", "BW64":
		return Buffer{}, fmt.Errorf("wav: %q container: %w", hdr[:4], ErrUnsupported)
	default:
		return Buffer{}, fmt.Errorf("wav: starts with %q, not RIFF: %w", hdr[:4], ErrNotWAV)
	}
	if string(hdr[8:12]) != "WAVE" {
		return Buffer{}, fmt.Errorf("wav: RIFF form %q, not WAVE: %w", hdr[8:12], ErrNotWAV)
	}

	var f *format
	for {
		var ch [8]byte
		if _, err := io.ReadFull(br, ch[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return Buffer{}, fmt.Errorf("wav: no data chunk: %w", ErrTruncated)
			}
			return Buffer{}, readErr("chunk header", err)
		}
		id, size := string(ch[:4]), binary.LittleEndian.Uint32(ch[4:])
		switch id {
		case "fmt ":
			if size < 16 || size > 1024 {
				return Buffer{}, fmt.Errorf("wav: fmt chunk of %d bytes: %w", size, ErrUnsupported)
			}
			body := make([]byte, size+size%2)
			if _, err := io.ReadFull(br, body); err != nil {
				return Buffer{}, readErr("fmt chunk", err)
			}
			var err error
			if f, err = parseFormat(body[:size]); err != nil {
				return Buffer{}, err
			}
		case "data":
			if f == nil {
				return Buffer{}, fmt.Errorf("wav: data chunk before fmt chunk: %w", ErrUnsupported)
			}
			data, err := readData(br, size)
			if err != nil {
				return Buffer{}, err
			}
			return Buffer{Rate: f.rate, Samples: f.decode(data)}, nil
		default:
			// Chunks are padded to an even size.
			skip := int64(size) + int64(size%2)
			if n, err := io.CopyN(io.Discard, br, skip); err != nil {
				return Buffer{}, fmt.Errorf("wav: %q chunk declares %d bytes, only %d follow: %w", id, size, n, ErrTruncated)
			}
		}
	}
}

func readErr(what string, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("wav: input ends inside the %s: %w", what, ErrTruncated)
	}
	return fmt.Errorf("wav: reading the %s: %w", what, err)
}

func readData(r io.Reader, size uint32) ([]byte, error) {
	if size == 0 || size >= streamedSize {
		data, err := io.ReadAll(r)
		if err != nil {
			return nil, fmt.Errorf("wav: reading the data chunk: %w", err)
		}
		return data, nil
	}
	// Not make([]byte, size): a lying header must not make us allocate 2 GB.
	data, err := io.ReadAll(io.LimitReader(r, int64(size)))
	if err != nil {
		return nil, fmt.Errorf("wav: reading the data chunk: %w", err)
	}
	if len(data) < int(size) {
		return nil, fmt.Errorf("wav: data chunk declares %d bytes, only %d follow: %w", size, len(data), ErrTruncated)
	}
	return data, nil
}

type format struct {
	float    bool
	channels int
	rate     int
	bytes    int // per sample of one channel
}

func parseFormat(b []byte) (*format, error) {
	tag := binary.LittleEndian.Uint16(b[0:])
	channels := int(binary.LittleEndian.Uint16(b[2:]))
	rate := binary.LittleEndian.Uint32(b[4:])
	bits := int(binary.LittleEndian.Uint16(b[14:]))
	if tag == tagExtensible {
		// WAVEFORMATEXTENSIBLE: the real tag opens the sub-format GUID.
		if len(b) < 40 {
			return nil, fmt.Errorf("wav: extensible fmt chunk of %d bytes: %w", len(b), ErrUnsupported)
		}
		tag = binary.LittleEndian.Uint16(b[24:])
	}
	if tag != tagPCM && tag != tagFloat {
		name := tagNames[tag]
		if name == "" {
			name = "compressed"
		}
		return nil, fmt.Errorf("wav: format tag 0x%04X (%s); only PCM and IEEE float are decoded: %w", tag, name, ErrUnsupported)
	}
	if channels == 0 {
		return nil, fmt.Errorf("wav: zero channels: %w", ErrUnsupported)
	}
	if rate == 0 || rate > maxRate {
		return nil, fmt.Errorf("wav: sample rate %d Hz: %w", rate, ErrUnsupported)
	}
	f := &format{float: tag == tagFloat, channels: channels, rate: int(rate), bytes: bits / 8}
	ok := bits%8 == 0 && (f.float && (bits == 32 || bits == 64) || !f.float && bits >= 8 && bits <= 32)
	if !ok {
		kind := "integer"
		if f.float {
			kind = "float"
		}
		return nil, fmt.Errorf("wav: %d-bit %s samples: %w", bits, kind, ErrUnsupported)
	}
	return f, nil
}

// decode converts the data chunk to mono 16-bit samples. A partial frame at
// the end (a cut-off stream) is dropped.
func (f *format) decode(data []byte) []int16 {
	frame := f.channels * f.bytes
	out := make([]int16, len(data)/frame)
	if f.channels == 1 && !f.float && f.bytes == 2 {
		for i := range out {
			out[i] = int16(binary.LittleEndian.Uint16(data[2*i:]))
		}
		return out
	}
	for i := range out {
		var sum float64
		for c := 0; c < f.channels; c++ {
			sum += f.sample(data[i*frame+c*f.bytes:])
		}
		out[i] = toInt16(sum / float64(f.channels))
	}
	return out
}

// sample is one channel's sample scaled to the 16-bit range.
func (f *format) sample(b []byte) float64 {
	switch {
	case f.float && f.bytes == 4:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b))) * 32768
	case f.float:
		return math.Float64frombits(binary.LittleEndian.Uint64(b)) * 32768
	case f.bytes == 1:
		return float64(int(b[0])-128) * 256 // 8-bit WAV is unsigned
	}
	// Signed little-endian integer of 2 to 4 bytes: build it in the top of an
	// int32 so the sign extends, then scale to 16 bits.
	var v int32
	for i := 0; i < f.bytes; i++ {
		v |= int32(b[i]) << (8 * (4 - f.bytes + i))
	}
	return float64(v) / 65536
}

// toInt16 rounds and clips to the 16-bit range.
func toInt16(v float64) int16 {
	v = math.Round(v)
	switch {
	case v > math.MaxInt16:
		return math.MaxInt16
	case v < math.MinInt16:
		return math.MinInt16
	case v != v: // NaN from a float file
		return 0
	}
	return int16(v)
}

// EncodeWAV writes b as a canonical 44-byte-header WAV file of mono 16-bit
// PCM.
func EncodeWAV(w io.Writer, b Buffer) error {
	if b.Rate <= 0 || b.Rate > maxRate {
		return fmt.Errorf("wav: cannot write a sample rate of %d Hz", b.Rate)
	}
	dataSize := 2 * len(b.Samples)
	if dataSize >= streamedSize {
		return fmt.Errorf("wav: %d samples do not fit a WAV file", len(b.Samples))
	}
	hdr := append(make([]byte, 0, 44+dataSize), wavHeader(b.Rate, dataSize)...)
	for _, s := range b.Samples {
		hdr = binary.LittleEndian.AppendUint16(hdr, uint16(s))
	}
	_, err := w.Write(hdr)
	return err
}

// wavHeader is the 44-byte header of a WAV file of mono 16-bit PCM at rate
// holding dataSize bytes of samples.
func wavHeader(rate, dataSize int) []byte {
	hdr := make([]byte, 44)
	copy(hdr[0:], "RIFF")
	binary.LittleEndian.PutUint32(hdr[4:], uint32(36+dataSize))
	copy(hdr[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(hdr[16:], 16)
	binary.LittleEndian.PutUint16(hdr[20:], tagPCM)
	binary.LittleEndian.PutUint16(hdr[22:], 1) // channels
	binary.LittleEndian.PutUint32(hdr[24:], uint32(rate))
	binary.LittleEndian.PutUint32(hdr[28:], uint32(2*rate)) // bytes per second
	binary.LittleEndian.PutUint16(hdr[32:], 2)              // block align
	binary.LittleEndian.PutUint16(hdr[34:], 16)             // bits per sample
	copy(hdr[36:], "data")
	binary.LittleEndian.PutUint32(hdr[40:], uint32(dataSize))
	return hdr
}
