package llm

import (
	"context"
	"encoding/json"

	"dialbox/internal/script"
)

// Agent is the language model of a script's agent steps, over a Client.
type Agent struct{ *Client }

// Reply tells the model the agent's prompt (as the system message) and the
// conversation so far (the bot's turns as the assistant's, the callee's as
// the user's), offers end_call (and transfer, when the step has a target),
// and speaks the reply sentence by sentence.
func (a Agent) Reply(ctx context.Context, conv script.Conversation, sentence func(string) error) (script.AgentReply, error) {
	msgs := []Message{{Role: "system", Content: conv.Prompt}}
	for _, t := range conv.Turns {
		role := "user"
		if t.Speaker == script.SpeakerBot {
			role = "assistant"
		}
		msgs = append(msgs, Message{Role: role, Content: t.Text})
	}
	tools := []Tool{{Name: script.ToolEndCall,
		Description: "End the call once the conversation has reached its outcome, with that outcome as result.",
		Parameters: map[string]any{"type": "object", "required": []string{"result"}, "properties": map[string]any{
			"result": map[string]any{"type": "string", "enum": conv.Results, "description": "The outcome of the call."}}}}}
	if conv.Transfer {
		tools = append(tools, Tool{Name: script.ToolTransfer,
			Description: "Hand the call to a human agent, when the callee asks for one or the task needs one.",
			Parameters:  map[string]any{"type": "object", "properties": map[string]any{}}})
	}
	rep, err := a.Chat(ctx, msgs, tools, sentence)
	if err != nil {
		return script.AgentReply{}, err
	}
	var out script.AgentReply
	for _, c := range rep.Calls {
		if c.Name == script.ToolEndCall || c.Name == script.ToolTransfer {
			var args struct {
				Result string `json:"result"`
			}
			_ = json.Unmarshal([]byte(c.Arguments), &args) // bad arguments leave no result: the script refuses it
			out.Tool, out.Result = c.Name, args.Result
			break
		}
	}
	return out, nil
}
