// Package script is the voice bot's script language: a short list of named
// steps run on each answered call, saved with a scenario (JSON in the admin
// API, TOML in fixtures) instead of plain content. It knows nothing of
// dialbox: a caller validates a Script when it is saved and runs it with a
// Runner on anything that implements Call.
//
// A step has a name and exactly one kind:
//
//   - say: text, its {{field}} placeholders filled in by the caller; next.
//   - play: a .wav prompt, by a clean relative path under the caller's
//     prompts folder (no leading /, no ..); next.
//   - gather: keys pressed, after an optional prompt (say text or play a
//     path) that a key press interrupts, the key counting as input
//     (barge-in): max_digits (1-32), timeout for each key ("5s", 1s-60s),
//     finish_on_key (one of 0-9 * #, or none), branches from an input to a
//     step, retries (0-5), no_input and no_match. With input ["speech"]
//     (or ["dtmf", "speech"]) it listens for a spoken answer instead
//     (Call.Listen): branches are words matched by Match, with hints,
//     end_silence, max_speech and barge_in (docs/voicebot.md#spoken-answers).
//   - set: a result label (lower-case letters, digits, _), the last one set
//     being the call's result; next.
//   - transfer: hand the call to a sip: or sips: URI; the script ends.
//   - hangup: the script ends.
//
// The script starts at start, or at its first step. A step whose next (or,
// for a gather, whose no_input or no_match) is empty ends the call after
// it, by hanging up.
//
// A gather that gets no input, or one that is none of its branches, asks
// again (its prompt, then the keys) up to retries more times; after the last attempt
// an empty input goes to no_input and any other to no_match.
//
// In JSON:
//
//	{"start": "greet", "steps": [
//	  {"name": "greet", "say": {"text": "Hello {{name}}", "next": "menu"}},
//	  {"name": "menu", "gather": {"prompt": {"say": "Press 1 to confirm"},
//	    "max_digits": 1, "timeout": "5s", "retries": 2,
//	    "branches": {"1": "yes"}, "no_input": "bye"}},
//	  {"name": "yes", "set": {"label": "confirmed", "next": "bye"}},
//	  {"name": "bye", "hangup": {}}]}
//
// In TOML:
//
//	start = "greet"
//	[[steps]]
//	name = "greet"
//	say = { text = "Hello {{name}}", next = "menu" }
//	[[steps]]
//	name = "menu"
//	gather = { prompt = { say = "Press 1 to confirm" }, max_digits = 1, timeout = "5s", retries = 2, branches = { "1" = "yes" }, no_input = "bye" }
//	[[steps]]
//	name = "yes"
//	set = { label = "confirmed", next = "bye" }
//	[[steps]]
//	name = "bye"
//	hangup = {}
//
// # Validation
//
// Validate returns every problem, each naming the step (its index and
// name), the field and the reason, as in
//
//	steps[2] "menu": gather.branches["1"]: no step named "confirm"
//
// Names are non-empty and unique; every step has exactly one kind; every
// next, branch, no_input, no_match and start names a step; every step can be
// reached from the start one, or from the step named voicemail (where a call
// answered by a machine starts, see VoicemailStep); values are in the ranges above, and a branch
// is an input that can be entered (keys 0-9 * #, no longer than max_digits,
// without finish_on_key).
//
// # Loops
//
// The steps, joined by their next, branches, no_input and no_match, may not
// form a cycle: no step can lead back to itself, directly or through others,
// whatever the keys pressed. The only repetition is a gather asking again,
// at most retries (5) times. So a run visits each step at most once and
// makes at most 6 attempts at each gather: every script ends, and a short
// one ends soon, within the call's max_duration anyway. A menu item "press 9
// to hear this again" is a retry (no_match), not a branch back to the menu.
//
// # Running
//
// Runner.Run walks the script on a Call and returns its Outcome: the steps
// taken with their times (from Runner.Now) and, for a gather, its input,
// every key pressed, the last label set, the transcript of what was said
// (the bot's texts filled by Runner.Fill, the callee's answers), and how
// it ended: hung up,
// transferred, canceled (ctx done: max_duration, the callee hung up, which
// stops it at once, in the step it was in) or failed (a call error).
//
// FromContent is the script of a scenario with plain content: say it, then
// hang up.
package script
