// Package csvsafe owns the cells dialbox writes into CSV files meant to be
// opened in a spreadsheet (the skipped-rows file of `dialbox import`, the
// results export of docs/admin.md#results-as-csv): a
// cell a spreadsheet would run as a formula is written as text instead
// (docs/operations.md#bulk-import-from-a-file).
package csvsafe

import "strings"

// formulaStarts are the first characters that make a spreadsheet read a
// cell as a formula (or, tab and carriage return, hide one that follows).
const formulaStarts = "=+-@\t\r"

// plainNumber is what a phone number or a signed number may be made of:
// at worst arithmetic, never a function call or a link, so such a cell is
// left as it was and a number written +84... is read again unchanged.
const plainNumber = "0123456789 +-()."

// Cell returns s as a spreadsheet shows it as text: with a leading single
// quote when it starts like a formula, unless it is a plain number.
func Cell(s string) string {
	if s == "" || !strings.ContainsRune(formulaStarts, rune(s[0])) {
		return s
	}
	if strings.Trim(s, plainNumber) == "" {
		return s
	}
	return "'" + s
}

// Row applies Cell to each cell of row, in place, and returns it.
func Row(row []string) []string {
	for i, c := range row {
		row[i] = Cell(c)
	}
	return row
}
