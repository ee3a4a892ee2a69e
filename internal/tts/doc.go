// Package tts turns a scenario's content into telephone audio: Render fills
// in a contact's fields, an Engine speaks the text (espeak-ng, any command
// that writes a WAV to stdout, an HTTP service such as OpenTTS or MaryTTS,
// or a server of the /v1/audio/speech protocol), and a Cache keeps each
// rendering on disk so that a text is synthesised once. Every engine answers 8 kHz mono 16-bit PCM, ready for
// G.711; decoding and resampling are internal/audio's.
package tts
