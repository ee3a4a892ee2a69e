package tts

import "testing"

func TestRender(t *testing.T) {
	fields := map[string]string{"danh_xung": "Anh", "ho_ten": "Nguyễn Văn A", "so_tien": "1.500.000", "x": "X", "braces": "{{ho_ten}}"}
	for _, c := range []struct{ content, want string }{
		{"Xin chào {{danh_xung}} {{ho_ten}}", "Xin chào Anh Nguyễn Văn A"},
		{"Xin chào {{ danh_xung }} {{  ho_ten\t}}.", "Xin chào Anh Nguyễn Văn A."},
		{"Số tiền {{so_tien}} đồng, hạn {{han_thanh_toan}}.", "Số tiền 1.500.000 đồng, hạn ."},
		{"{{x}}{{x}}{{x}}", "XXX"},
		{"no placeholders", "no placeholders"},
		{"", ""},
		{"open {{x", "open {{x"},
		{"close x}}", "close x}}"},
		{"single {x} braces", "single {x} braces"},
		{"empty {{}} and {{  }}", "empty {{}} and {{  }}"},
		{"{{{x}}}", "{X}"},
		{"{{ {{x}}", "{{ X"},
		{"{{x}} then {{", "X then {{"},
		{"value is not re-read: {{braces}}", "value is not re-read: {{ho_ten}}"},
		{"{{Ho_Ten}} is another field", " is another field"},
	} {
		if got := Render(c.content, fields); got != c.want {
			t.Errorf("Render(%q) = %q, want %q", c.content, got, c.want)
		}
	}
	if got := Render("Xin chào {{ho_ten}}", nil); got != "Xin chào " {
		t.Errorf("nil fields: %q", got)
	}
}
