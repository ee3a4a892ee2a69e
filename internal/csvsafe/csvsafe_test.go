package csvsafe

import "testing"

func TestCell(t *testing.T) {
	for in, want := range map[string]string{
		"":                        "",
		"Nguyen Van A":            "Nguyen Van A",
		"0912345678":              "0912345678",
		"+84 912 345 678":         "+84 912 345 678",
		"-12.5":                   "-12.5",
		"+84 (91) 234-5678":       "+84 (91) 234-5678",
		"=1+1":                    "'=1+1",
		"=HYPERLINK(\"x\",\"y\")": "'=HYPERLINK(\"x\",\"y\")",
		"+cmd|' /C calc'!A0":      "'+cmd|' /C calc'!A0",
		"-2+3+cmd|' /C calc'!A0":  "'-2+3+cmd|' /C calc'!A0",
		"@SUM(1)":                 "'@SUM(1)",
		"\t=1":                    "'\t=1",
		"\r=1":                    "'\r=1",
		"+":                       "+",
		"a=1":                     "a=1",
	} {
		if got := Cell(in); got != want {
			t.Errorf("Cell(%q) = %q, want %q", in, got, want)
		}
	}
}
