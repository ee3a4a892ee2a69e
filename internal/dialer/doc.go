// Package dialer owns what places dialbox's calls: the simulator (Sim:
// outcomes by rule or seeded chance, its scripted callee, in simulated
// time), the SIP dialer (SIP: the prompt rendered, the call through
// internal/sipcall, AMD, the script played on the line) and the trunks'
// capacity the scheduler reserves (TrunkLoads, TrunkUse); see
// docs/calling.md and docs/sip.md.
//
// It may import internal/domain, internal/config and the calling libraries
// under internal/ (script, sipcall, tts, amd, audio), never the root
// package: the engine, its consumer, declares the Dialer interface.
package dialer
