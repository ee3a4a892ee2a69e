package domain

// Webhook message states (webhook_messages.state):
//
//	pending   -> delivered  a 2xx answer
//	pending   -> pending    any other answer or none: tries+1, next_try_at
//	                        from retry_schedule[tries] (or Retry-After)
//	pending   -> dead       after the last entry of retry_schedule, or 410
//	                        (which also disables the endpoint)
//	dead      -> pending    redelivery (admin API): set state = 'pending',
//	                        tries = 0, next_try_at = now, then call Notify
//
// Pending messages of a disabled endpoint wait until it is enabled again.
// attempts counts every try ever made (webhook_attempts.attempt); tries
// only those since the message was last queued.
const (
	MessagePending   = "pending"
	MessageDelivered = "delivered"
	MessageDead      = "dead"
)

// MessageStates are the states a messages filter may name ("": any).
var MessageStates = map[string]bool{"": true, MessagePending: true, MessageDelivered: true, MessageDead: true}
