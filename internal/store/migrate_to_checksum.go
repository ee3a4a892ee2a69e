package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash"
	"math/bits"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The checksum `dialbox migrate-to` compares (docs/postgres.md#moving-from-sqlite):
// each row's values as text, normalized where SQLite and PostgreSQL
// legitimately write one value differently, hashed with SHA-256, and the
// row hashes added up as 128-bit numbers. The sum does not depend on the
// order rows are read in, so neither side sorts (and text collations,
// which differ between the two, never matter); a changed, missing or extra
// row changes it.

type rowsChecksum struct{ hi, lo uint64 }

func (c *rowsChecksum) Add(sum []byte) {
	var carry uint64
	c.lo, carry = bits.Add64(c.lo, binary.BigEndian.Uint64(sum[8:16]), 0)
	c.hi, _ = bits.Add64(c.hi, binary.BigEndian.Uint64(sum[0:8]), carry)
}

// String is the first 48 bits, enough to tell two sums apart on screen;
// comparisons use all 128.
func (c rowsChecksum) String() string { return fmt.Sprintf("%012x", c.hi>>16) }

// rowHasher hashes one row's normalized values.
type rowHasher struct {
	h   hash.Hash
	buf []byte
	sum []byte
}

func newRowHasher() *rowHasher { return &rowHasher{h: sha256.New()} }

// value adds one value: NULL, or the value's text, length-prefixed so
// that no two rows of different values write the same bytes.
func (r *rowHasher) value(null bool, text []byte) {
	if null {
		r.buf = append(r.buf, 'N')
		return
	}
	r.buf = append(r.buf, 'V')
	r.buf = binary.AppendUvarint(r.buf, uint64(len(text)))
	r.buf = append(r.buf, text...)
}

// row adds a row of n values to c: value(i) is the i-th as read (or
// NULL), normalized for column i's PostgreSQL type in types.
func (r *rowHasher) row(c *rowsChecksum, types []string, n int, value func(i int) (text []byte, null bool)) error {
	for i := range n {
		raw, null := value(i)
		if null {
			r.value(true, nil)
			continue
		}
		text, err := normalize(types[i], raw)
		if err != nil {
			return err
		}
		r.value(false, text)
	}
	r.end(c)
	return nil
}

func (r *rowHasher) end(c *rowsChecksum) {
	r.h.Reset()
	r.h.Write(r.buf)
	r.sum = r.h.Sum(r.sum[:0])
	c.Add(r.sum)
	r.buf = r.buf[:0]
}

// normalize writes a value's text as both sides agree on it, for a
// column of PostgreSQL type typ: flags as 1/0 (SQLite has no booleans),
// JSON re-encoded (jsonb rewrites the text it was given), floating point
// in Go's shortest form.
func normalize(typ string, text []byte) ([]byte, error) {
	switch typ {
	case "boolean":
		switch string(text) {
		case "true", "t", "1":
			return []byte("1"), nil
		case "false", "f", "0":
			return []byte("0"), nil
		}
		return text, nil // left as it is, so that it differs
	case "json", "jsonb":
		d := json.NewDecoder(bytes.NewReader(text))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			return text, nil
		}
		return json.Marshal(v)
	case "double precision", "real":
		f, err := strconv.ParseFloat(string(text), 64)
		if err != nil {
			return text, nil
		}
		return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
	}
	return text, nil
}

// sqliteText is a value as the SQLite driver read it, as text.
func sqliteText(v any) []byte {
	switch x := v.(type) {
	case int64:
		return strconv.AppendInt(nil, x, 10)
	case float64:
		return strconv.AppendFloat(nil, x, 'g', -1, 64)
	case string:
		return []byte(x)
	case []byte:
		return x
	case bool:
		return []byte(strconv.FormatBool(x))
	}
	return fmt.Append(nil, v)
}

// sqliteChecksum reads t's rows from SQLite as the copy read them.
func sqliteChecksum(ctx context.Context, db *sql.DB, t copyTable) (int64, rowsChecksum, error) {
	var sum rowsChecksum
	rows, err := db.QueryContext(ctx, t.sqliteSelect())
	if err != nil {
		return 0, sum, err
	}
	defer rows.Close()
	vals := make([]any, len(t.cols))
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	h := newRowHasher()
	var n int64
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return 0, sum, err
		}
		err := h.row(&sum, t.pgTypes, len(vals), func(i int) ([]byte, bool) {
			if vals[i] == nil {
				return nil, true
			}
			return sqliteText(vals[i]), false
		})
		if err != nil {
			return 0, sum, err
		}
		n++
	}
	return n, sum, rows.Err()
}

// postgresChecksum reads t's copy from PostgreSQL, every column as text.
func postgresChecksum(ctx context.Context, tx pgx.Tx, t copyTable) (int64, rowsChecksum, error) {
	var sum rowsChecksum
	cols := make([]string, len(t.cols))
	for i, c := range t.cols {
		cols[i] = pgx.Identifier{c}.Sanitize() + "::text"
	}
	rows, err := tx.Query(ctx, `SELECT `+strings.Join(cols, ", ")+` FROM `+pgx.Identifier{t.name}.Sanitize())
	if err != nil {
		return 0, sum, err
	}
	defer rows.Close()
	h := newRowHasher()
	var n int64
	for rows.Next() {
		raw := rows.RawValues()
		if err := h.row(&sum, t.pgTypes, len(raw), func(i int) ([]byte, bool) { return raw[i], raw[i] == nil }); err != nil {
			return 0, sum, err
		}
		n++
	}
	return n, sum, rows.Err()
}
