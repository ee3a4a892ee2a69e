// Package audio holds the signal-processing pieces a real call needs to turn
// a text-to-speech rendering into telephone audio: reading and writing WAV
// files, resampling between any two rates with an anti-aliasing low-pass
// (8 kHz for G.711), and small helpers on 16-bit PCM: duration, energy,
// little-endian byte conversion and 20 ms framing. A Recorder streams a
// call's audio, its directions mixed on the call's timeline, to a WAV file.
//
// Everything works on mono signed 16-bit samples held in a Buffer; decoding
// downmixes and converts whatever PCM the WAV holds. It is pure Go, without
// cgo, and knows nothing of dialbox's own types.
package audio
