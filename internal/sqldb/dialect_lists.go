package sqldb

import "strings"

// In is the condition that col is one of values, and the arguments it
// takes: on PostgreSQL one typed array, col = ANY(?), so the statement's
// text is one whatever the count; on SQLite a placeholder a value,
// col IN (?, ...), which its planner turns into index look-ups. A
// function, not a Dialect method, because the array's element type is
// values' (Go methods take no type parameters).
func In[T any](d Dialect, col string, values []T) (string, []any) {
	if d == Postgres {
		return col + " = ANY(?)", []any{values}
	}
	args := make([]any, len(values))
	for i, v := range values {
		args[i] = v
	}
	return col + " IN (" + strings.TrimPrefix(strings.Repeat(", ?", len(values)), ", ") + ")", args
}
