package script

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"
)

// Agent talks with the callee through a language model
// (docs/voicebot.md#conversations-the-agent-step): it says Greeting (or,
// without one, lets the model open), then turn after turn hears the callee
// (Listen) and speaks the model's reply sentence by sentence, the model
// being told Prompt and the conversation so far. The model ends the call
// with the tool end_call and one of Results, which becomes the call's
// result, or, when Transfer is set, with the tool transfer, which hands
// the call to that SIP URI. After MaxTurns replies, or when the model
// fails or is too slow (result AgentError) or the callee says nothing
// within Timeout (result NoInput), the bot says Fallback and the agent
// ends. Then the script goes to Next (or ends the call when Next is
// empty). Prompt, Greeting and Fallback take {{field}} placeholders.
type Agent struct {
	Prompt   string   `json:"prompt" toml:"prompt"`
	Greeting string   `json:"greeting,omitempty" toml:"greeting,omitempty"`
	MaxTurns int      `json:"max_turns,omitempty" toml:"max_turns,omitempty"`
	Results  []string `json:"results" toml:"results"`
	Next     string   `json:"next,omitempty" toml:"next,omitempty"`
	Transfer string   `json:"transfer,omitempty" toml:"transfer,omitempty"`
	Fallback string   `json:"fallback,omitempty" toml:"fallback,omitempty"`
	Timeout  string   `json:"timeout,omitempty" toml:"timeout,omitempty"`
}

// An agent's defaults and bounds.
const (
	DefaultMaxTurns      = 8
	maxAgentTurns        = 30
	DefaultAgentTimeout  = 5 * time.Second
	DefaultAgentFallback = "Xin lỗi, chúng tôi sẽ liên hệ lại với anh chị sau. Xin chào."
	maxPromptRunes       = 8000
	// MaxTurnRunes bounds one turn of the transcript: a reply the model
	// makes longer fails (agent_error), a callee's longer answer is cut.
	MaxTurnRunes = 2000
)

var errLongReply = fmt.Errorf("the model's reply is longer than %d characters", MaxTurnRunes)

// The results an agent ends with when the model did not end the call
// (docs/voicebot.md#conversations-the-agent-step).
const (
	AgentError = "agent_error" // max_turns, or the model failing or too slow
	NoInput    = "no_input"    // the callee said nothing
)

// What the model may call to end the conversation.
const (
	ToolEndCall  = "end_call"
	ToolTransfer = "transfer"
)

// Chat is the language model an agent step talks through, implemented by
// the caller over its endpoint.
type Chat interface {
	// Reply continues conv: the model's text goes to sentence a sentence
	// at a time, as it comes, and the reply says whether the model called
	// a tool to end the call.
	Reply(ctx context.Context, conv Conversation, sentence func(string) error) (AgentReply, error)
}

// Conversation is what the model is told: Prompt (its fields filled in),
// the turns so far, and how it may end the call.
type Conversation struct {
	Prompt   string
	Turns    []Turn
	Results  []string // end_call's choices
	Transfer bool     // whether the transfer tool is offered
}

// AgentReply is how one reply of the model, its text already handed to
// sentence, ends: Tool (ToolEndCall, ToolTransfer, or "" to go on) with
// end_call's Result.
type AgentReply struct {
	Tool   string
	Result string
}

// agent runs an agent step and says which step is next.
func (x *run) agent(a *Agent, rec *StepRun) (string, error) {
	if x.chat == nil {
		return "", errors.New("agent: this call has no language model ([llm] url is not set)")
	}
	maxTurns := a.MaxTurns
	if maxTurns == 0 {
		maxTurns = DefaultMaxTurns
	}
	timeout := DefaultAgentTimeout
	if d, err := time.ParseDuration(a.Timeout); err == nil {
		timeout = d
	}
	c := &conversation{run: x, a: a, rec: rec, first: len(x.out.Transcript),
		conv: Conversation{Prompt: x.fill(a.Prompt), Results: a.Results, Transfer: a.Transfer != ""}}
	if a.Greeting != "" {
		if _, err := x.say(a.Greeting, false); err != nil {
			return "", err
		}
	} else if done, err := c.reply(); done || err != nil {
		return a.Next, err // the model opens
	}
	for rec.Attempts < maxTurns {
		h, err := x.call.Listen(x.ctx, ListenOptions{Timeout: timeout, EndSilence: DefaultEndSilence, MaxSpeech: DefaultMaxSpeech})
		if err != nil {
			return "", err
		}
		if h.Text == "" {
			return a.Next, c.end(NoInput, "")
		}
		x.said(SpeakerCallee, h.Text)
		if done, err := c.reply(); done || err != nil {
			return a.Next, err
		}
	}
	return a.Next, c.end(AgentError, fmt.Sprintf("max_turns (%d) replies without the model ending the call", maxTurns))
}

// conversation is an agent step under way.
type conversation struct {
	*run
	a     *Agent
	rec   *StepRun
	conv  Conversation
	first int // the agent's own turns start at Transcript[first]
}

// reply asks the model for one reply and speaks it as it comes; done when
// the agent is over: the model called a tool, or failed.
func (c *conversation) reply() (done bool, err error) {
	c.rec.Attempts++
	c.conv.Turns = slices.Clone(c.out.Transcript[c.first:])
	var callErr error // the call failing under a sentence is the call's, not the model's
	length := 0
	rep, err := c.chat.Reply(c.ctx, c.conv, func(s string) error {
		if length += utf8.RuneCountInString(s); length > MaxTurnRunes {
			return errLongReply
		}
		_, callErr = c.say(s, false)
		return callErr
	})
	switch {
	case callErr != nil:
		return true, callErr
	case c.ctx.Err() != nil:
		return true, c.ctx.Err()
	case err != nil:
		return true, c.end(AgentError, err.Error())
	case rep.Tool == "":
		return false, nil
	case rep.Tool == ToolEndCall && slices.Contains(c.a.Results, rep.Result):
		c.out.Result = rep.Result
		return true, nil
	case rep.Tool == ToolTransfer && c.a.Transfer != "":
		c.transferred = true
		return true, c.call.Transfer(c.ctx, c.a.Transfer)
	}
	return true, c.end(AgentError, fmt.Sprintf("the model called %s with result %q, which this agent does not offer", rep.Tool, rep.Result))
}

// end ends the agent with result, saying the fallback; why, when the model
// is to blame, goes on the step.
func (c *conversation) end(result, why string) error {
	c.out.Result, c.rec.Error = result, why
	fallback := c.a.Fallback
	if fallback == "" {
		fallback = DefaultAgentFallback
	}
	_, err := c.say(fallback, false)
	return err
}
