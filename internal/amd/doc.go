// Package amd tells, from the first seconds of audio a callee sends after
// answering, whether a person or an answering machine (voicemail) picked up.
// It takes the decisions of Asterisk's AMD() application, with the same
// parameters and defaults save the word count (MaxWords 4, measured on
// Vietnamese speech: docs/voicebot.md), on 8 kHz mono 16-bit PCM, and knows
// nothing of dialbox's own types: feed it samples, it gives back a Result.
//
// # How it listens
//
// The audio is cut into 20 ms frames. A frame is voice when the mean of its
// absolute sample values reaches SilenceThreshold (256 by default, out of
// 32768), and silence otherwise. That is all it hears: no pitch, no
// spectrum, only loud against quiet over time.
//
// A word is a run of voice lasting at least MinWordLength (100 ms). A gap
// ends a word only once it lasts BetweenWordsSilence (50 ms); shorter dips
// belong to the word around them. A word is counted only after such a gap,
// so voice on the very first frame is not counted as a word (as in
// Asterisk, which starts "inside a word").
//
// # How it decides
//
// A person answering says something short ("Alô?") and waits for the caller.
// A machine either waits to start its recording or talks on: a long
// greeting, many words, or one very long sound. Frame by frame, in this
// order, the first rule that holds decides:
//
//   - The analysis time is up: TotalAnalysisTime (5 s) of audio has been
//     fed. NotSure, cause TOOLONG. The frame that fills it is not looked at.
//   - Still no word, and the silence has lasted InitialSilence (2.5 s):
//     nobody spoke up, as a person would. Machine, cause INITIALSILENCE.
//   - After the first word, silence has lasted AfterGreetingSilence
//     (800 ms): a short greeting, then waiting. Human, cause HUMAN.
//   - One word has gone on for MaxWordLength (5 s, so by default it never
//     comes before the analysis time is up). Machine, cause MAXWORDLENGTH.
//   - MaxWords (4; Asterisk's is 2) words have been counted. Machine,
//     cause MAXWORDS. As in Asterisk's code, the word that reaches the
//     count decides, though Asterisk's documentation says "exceeded".
//   - After the first word, the voice heard so far, every voiced frame
//     added up, has reached Greeting (1.5 s). Machine, cause LONGGREETING.
//
// The Result says which, why (Asterisk's AMDCAUSE word), and At: how much
// audio had been fed when it decided, counted from the first sample and
// always at a frame's end. Asterisk appends numbers to the cause
// ("HUMAN-800-800"); they follow from the Config and At.
//
// # Using it
//
// New validates a Config (a zero field takes its default; anything negative
// or out of range is an error naming the field) and returns a Detector.
// Feed it samples as they arrive, in 20 ms frames or any other lengths; it
// answers ok once it has decided and ignores what comes after. Detect runs
// one over a whole recording. Time is the audio's, never the wall clock's,
// so a detector can be fed faster or slower than real time.
//
// Asterisk also treats frames that never arrived (jitter, comfort noise) as
// silence and reports HANGUP when the call ends first; here the caller
// feeds what it has, and a call that ends undecided is its own to report.
package amd
