package main

import (
	"context"
	"dialbox/internal/dnc"
	"dialbox/internal/domain"
	"dialbox/internal/store"
	"fmt"
	"math/rand/v2"
	"regexp/syntax"
	"slices"
	"strings"
	"testing"
	"time"
)

// FuzzFastPhones: the fast path for plain digit strings agrees with
// normalizePhone on every input, remembered or not. Each input is read
// twice with one fastPhones, and beside numbers sharing all but its last
// digits, so the memo answers too.
func FuzzFastPhones(f *testing.F) {
	for _, s := range []string{"0912345678", "84912345678", "+84912345678", "0123456789", "+14155550123",
		"0084912345678", "02873000001", "1900123456", "0912", "+849123456789012", "12345678", "0899999999"} {
		f.Add(s, uint16(0))
	}
	f.Fuzz(func(t *testing.T, raw string, tail uint16) {
		fp := domain.NewFastPhones("VN")
		inputs := []string{raw, raw}
		if len(raw) > domain.FastPhonesTail {
			inputs = append(inputs, raw[:len(raw)-domain.FastPhonesTail]+fmt.Sprintf("%04d", tail%10000), raw)
		}
		for _, in := range inputs {
			want, wantErr := domain.StoredNumber(domain.NormalizePhone(in, "VN"))
			got, err := fp.Number(in)
			if got != want || (err == nil) != (wantErr == nil) {
				t.Fatalf("%q: fast path %d %v, normalizePhone %d %v", in, got, err, want, wantErr)
			}
		}
	})
}

// The fast path agrees on a register-like sample: random numbers of every
// Vietnamese prefix, in every form a file holds them, and foreign ones.
func TestFastPhonesAgreeOnARegister(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	fp := domain.NewFastPhones("VN")
	if !fp.Safe {
		t.Fatal("the fast path is off for VN")
	}
	hits := 0
	for i := 0; i < 5000; i++ {
		nsn := fmt.Sprintf("%d%08d", 1+rng.IntN(9), rng.IntN(100000000))
		for _, raw := range []string{"0" + nsn, "84" + nsn, "+84" + nsn, "+1" + nsn, "+44" + nsn} {
			want, wantErr := domain.StoredNumber(domain.NormalizePhone(raw, "VN"))
			_, memo := fp.Memo[domain.MemoKey(raw[:len(raw)-domain.FastPhonesTail])]
			got, err := fp.Number(raw)
			if got != want || (err == nil) != (wantErr == nil) {
				t.Fatalf("%q: fast path %d %v, normalizePhone %d %v", raw, got, err, want, wantErr)
			}
			if memo {
				hits++
			}
		}
	}
	if hits == 0 {
		t.Error("the memo never answered")
	}
	t.Logf("%d of %d answered from the memo", hits, 25000)
}

// anyDigitTail on the shapes of the library's patterns.
func TestAnyDigitTail(t *testing.T) {
	for pattern, want := range map[string]int{
		`\d{9}`: 9, `9\d{7}`: 7, `(?:3\d|5[1689])\d{7}`: 7, `1800\d{4,6}|12(?:0[13]|28)\d{4}`: 4,
		`\d{7}(?:12)?`: 0, `(?:[17]99|80\d)\d{4}|69\d{5,6}`: 4, `12[0-5]`: 0, `[2-9]\d{3}`: 3,
	} {
		if got := domain.AnyDigitTail(mustParseRegexp(t, pattern)); got != want {
			t.Errorf("%s: tail %d, want %d", pattern, got, want)
		}
	}
}

// Every format a list file comes in; bad lines and repeats reported with
// their line numbers, never fatal.
func TestDNCFileFormats(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       []string
		dup, bad   int
		badLines   []int
	}{
		{"one a line, every form", "0912345678\n84912345679\n+84 912 345 670\n(091) 234-5671\ntel:+84912345672\n",
			[]string{"+84912345670", "+84912345671", "+84912345672", "+84912345678", "+84912345679"}, 0, 0, nil},
		{"one a line, repeats and bad lines", "0912345678\nhello\n\n0912345678\n84912345678\n12\n",
			[]string{"+84912345678"}, 2, 2, []int{2, 6}},
		{"CSV with a phone_number header", "\ufeffho_ten,phone_number\nA,0912345678\nB,0912345679\nC,\n",
			[]string{"+84912345678", "+84912345679"}, 0, 1, []int{4}},
		{"CSV with a phone header elsewhere", "id,name,Phone\n1,\"Nguyen, A\",0912345678\n2,B,+84912345679\n",
			[]string{"+84912345678", "+84912345679"}, 0, 0, nil},
		{"CSV without a header", "Nguyen A,0912345678,x\nB,0912345679,y\nC\n",
			[]string{"+84912345678", "+84912345679"}, 0, 1, []int{3}},
		{"a line that is not CSV", "phone\n0912345678\n\"09123\"45679\n0912345670\n",
			[]string{"+84912345670", "+84912345678"}, 0, 1, []int{3}},
		{"a stray quote swallows no later line", "phone,name\n0912345670,\"A\n0912345671,B\n\"0912345672\n0912345673,D\r\n",
			[]string{"+84912345671", "+84912345673"}, 0, 2, []int{2, 4}},
		{"a line too long", "0912345670\n" + strings.Repeat("9", dnc.MaxLine) + "\n0912345671\n" + strings.Repeat("9", dnc.MaxLine),
			[]string{"+84912345670", "+84912345671"}, 0, 2, []int{2, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			numbers, rep, err := dnc.ReadFile(context.Background(), strings.NewReader(tc.file), dnc.Length{Bytes: int64(len(tc.file))}, "VN")
			if err != nil {
				t.Fatal(err)
			}
			got := make([]string, len(numbers))
			for i, n := range numbers {
				got[i] = domain.DNCE164(n)
			}
			var lines []int
			for _, b := range rep.BadLines {
				lines = append(lines, b.Line)
			}
			if !slices.Equal(got, tc.want) || rep.Duplicate != tc.dup || rep.Bad != tc.bad || !slices.Equal(lines, tc.badLines) {
				t.Errorf("numbers %v, report %+v; want %v, %d duplicate, %d bad at %v", got, rep, tc.want, tc.dup, tc.bad, tc.badLines)
			}
		})
	}
	if _, _, err := dnc.ReadFile(context.Background(), strings.NewReader("name,city\nA,B\n"), dnc.Length{}, "VN"); err == nil {
		t.Error("a CSV with no phone column was read")
	}
}

// Appending counts numbers already listed as duplicates; replacing makes
// the file the whole list, and drops the old version's numbers.
func TestDNCLoadAppendAndReplace(t *testing.T) { eachBackend(t, testDNCLoadAppendAndReplace) }

func testDNCLoadAppendAndReplace(t *testing.T, backend string) {
	s, ids := fixtureStoreOn(t, backend, dncTenant("dnc-a"))
	ctx := context.Background()
	load := func(list int64, file string, replace bool) dnc.Report {
		t.Helper()
		rep, err := dnc.Import(ctx, s, strings.NewReader(file), dnc.Length{}, dnc.Load{List: list, Region: "VN", Replace: replace, Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	dncAdd(t, s, domain.NationalList, "+84912345670")
	if rep := load(domain.NationalList, "0912345670\n0912345671\n0912345671\n", false); rep.Loaded != 1 || rep.Duplicate != 2 || rep.Lines != 3 {
		t.Errorf("append: %+v", rep)
	}
	if rep := load(domain.NationalList, "0912345672\n0912345673\n", true); rep.Loaded != 2 || rep.Duplicate != 0 {
		t.Errorf("replace: %+v", rep)
	}
	if n, _, err := s.CountDNC(ctx, domain.NationalList); err != nil || n != 2 {
		t.Errorf("after the replace the national list holds %d (%v), want 2", n, err)
	}
	if n := queryInt(t, s, `SELECT count(*) FROM dnc_numbers`); n != 2 {
		t.Errorf("%d numbers stored, want the 2 of the new version", n)
	}
	if n := queryInt(t, s, `SELECT count(*) FROM dnc_lists`); n != 1 {
		t.Errorf("%d list versions, want 1", n)
	}
	load(ids[0], "0912345670\n", true)
	listed, err := s.DNCListings(ctx, ids[0], []string{"+84912345670", "+84912345671", "+84912345672"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"+84912345670": domain.ReasonDNCTenant, "+84912345672": domain.ReasonDNCNational}; !mapsEqual(listed, want) {
		t.Errorf("listings %v, want %v", listed, want)
	}
	// Without the national register (a care scenario's calls), the tenant's list alone.
	listed, err = s.DNCListings(ctx, ids[0], []string{"+84912345670", "+84912345671", "+84912345672"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"+84912345670": domain.ReasonDNCTenant}; !mapsEqual(listed, want) {
		t.Errorf("listings without the register %v, want %v", listed, want)
	}
}

func mustParseRegexp(t *testing.T, pattern string) *syntax.Regexp {
	t.Helper()
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		t.Fatal(err)
	}
	return re.Simplify()
}

// `dialbox dnc` on the database a store (as a server would) has open.
func TestDNCCLI(t *testing.T) { eachBackend(t, testDNCCLI) }

func testDNCCLI(t *testing.T, backend string) {
	path := backendDatabase(t, backend)
	s, ids := fixtureStoreIn(t, path, dncTenant("dnc-a"))
	dnc := func(args ...string) string {
		t.Helper()
		var out strings.Builder
		if err := run(context.Background(), append([]string{"dnc"}, append(args, "--database", path)...), &out, nil); err != nil {
			t.Fatalf("dnc %v: %v", args, err)
		}
		return out.String()
	}
	file := writeFile(t, "register.csv", "so_dien_thoai,ten\n0912345678,A\n0912345679,B\n0912345678,C\nxyz,D\n")
	if out := dnc("import", file, "--replace"); !strings.Contains(out, "4 lines, 2 numbers loaded, 1 duplicate, 1 bad") ||
		!strings.Contains(out, "line 5: phone_number must not contain letters") {
		t.Errorf("import: %s", out)
	}
	dnc("add", "0912000001", "--app", "dnc-a")
	if out := dnc("check", "+84912000001", "--app", "dnc-a"); !strings.Contains(out, "on the list of dnc-a since") {
		t.Errorf("check: %s", out)
	}
	if out := dnc("count"); out != "the national register: 2 numbers\n" {
		t.Errorf("count: %q", out)
	}
	dnc("remove", "0912345678")
	listed, err := s.DNCListings(context.Background(), ids[0], []string{"+84912345678", "+84912345679", "+84912000001"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"+84912345679": domain.ReasonDNCNational, "+84912000001": domain.ReasonDNCTenant}; !mapsEqual(listed, want) {
		t.Errorf("the store sees %v, want %v", listed, want)
	}
}

// A replacing load switches at once: until its last commit the screen
// sees the old list whole and none of the new one, after it the new one
// alone (docs/compliance.md#how-lists-are-stored).
func TestDNCReplaceSwitchesAtOnce(t *testing.T) { eachBackend(t, testDNCReplaceSwitchesAtOnce) }

func testDNCReplaceSwitchesAtOnce(t *testing.T, backend string) {
	s, ids := fixtureStoreOn(t, backend, dncTenant("dnc-a"))
	ctx := context.Background()
	const old, replacement = "+84912345670", "+84912345671"
	dncAdd(t, s, domain.NationalList, old)
	n, _ := domain.DNCNumber(replacement)
	listed := func() map[string]string {
		got, err := s.DNCListings(ctx, ids[0], []string{old, replacement}, true)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	stored := 0
	if _, err := s.LoadDNC(ctx, domain.NationalList, []int64{n}, true, time.Now(), func(done int) {
		stored = done
		if got := listed(); !mapsEqual(got, map[string]string{old: domain.ReasonDNCNational}) {
			t.Errorf("while loading, with %d numbers stored: listed %v, want the old list alone", done, got)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if stored != 1 {
		t.Errorf("progress said %d numbers stored, want 1", stored)
	}
	if got := listed(); !mapsEqual(got, map[string]string{replacement: domain.ReasonDNCNational}) {
		t.Errorf("after the load: listed %v, want the new list alone", got)
	}
}

// A replacing load whose new version another replace dropped while its
// numbers were still coming is refused, and leaves none of them behind
// with no list, on either store; the other load's list stands.
func TestDNCReplaceOvertaken(t *testing.T) { eachBackend(t, testDNCReplaceOvertaken) }

func testDNCReplaceOvertaken(t *testing.T, backend string) {
	s, _ := fixtureStoreOn(t, backend)
	ctx := context.Background()
	numbers := make([]int64, store.DNCChunkRows+1) // two commits
	for i := range numbers {
		numbers[i] = 84912000000 + int64(i)
	}
	overtaken := false
	_, err := s.LoadDNC(ctx, domain.NationalList, numbers, true, time.Now(), func(int) {
		if !overtaken {
			overtaken = true
			if _, err := s.LoadDNC(ctx, domain.NationalList, []int64{84900000001}, true, time.Now(), nil); err != nil {
				t.Fatal(err)
			}
		}
	})
	if err == nil || !strings.Contains(err.Error(), "replaced by another load") {
		t.Fatalf("the overtaken load: %v, want it refused", err)
	}
	if n := queryInt(t, s, `SELECT count(*) FROM dnc_numbers WHERE list_id NOT IN (SELECT id FROM dnc_lists)`); n != 0 {
		t.Errorf("%d numbers left with no list", n)
	}
	if n, _, err := s.CountDNC(ctx, domain.NationalList); n != 1 || err != nil {
		t.Errorf("the register holds %d numbers (%v), want the other load's 1", n, err)
	}
}

// A stray " in a list file is one bad line: every later line is still
// read, and lines = loaded + duplicate + bad (docs/compliance.md#list-files).
func TestDNCStrayQuoteIsOneBadLine(t *testing.T) { eachBackend(t, testDNCStrayQuoteIsOneBadLine) }

func testDNCStrayQuoteIsOneBadLine(t *testing.T, backend string) {
	s, _ := fixtureStoreOn(t, backend)
	var file strings.Builder
	for i := range 1000 {
		if i == 1 {
			file.WriteString(`"`)
		}
		fmt.Fprintf(&file, "09120%05d\n", i)
	}
	rep, err := dnc.Import(context.Background(), s, strings.NewReader(file.String()), dnc.Length{}, dnc.Load{List: domain.NationalList, Region: "VN", Replace: true, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Lines != 1000 || rep.Loaded != 999 || rep.Bad != 1 || len(rep.BadLines) != 1 || rep.BadLines[0].Line != 2 {
		t.Errorf("report %+v; want 1000 lines, 999 loaded, line 2 bad", rep)
	}
	if rep.Lines != rep.Loaded+rep.Duplicate+rep.Bad {
		t.Errorf("report %+v: lines are not loaded + duplicate + bad", rep)
	}
	if n, _, err := s.CountDNC(context.Background(), domain.NationalList); err != nil || n != 999 {
		t.Errorf("the list holds %d numbers (%v), want 999", n, err)
	}
}

// A replace that would drop more than half of a list is refused unless
// forced, by the CLI and by the admin API: a truncated file must not
// become the register (docs/compliance.md#loading-the-national-register).
func TestDNCReplaceRefusesToShrinkByHalf(t *testing.T) {
	eachBackend(t, testDNCReplaceRefusesToShrinkByHalf)
}

func testDNCReplaceRefusesToShrinkByHalf(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	var full strings.Builder
	for i := range 10 {
		fmt.Fprintf(&full, "09130%05d\n", i)
	}
	runDNC := func(args ...string) (string, error) {
		var out strings.Builder
		err := run(context.Background(), append([]string{"dnc"}, append(args, "--database", s.db)...), &out, nil)
		return out.String(), err
	}
	count := func() int64 {
		t.Helper()
		n, _, err := s.m.store.CountDNC(context.Background(), domain.NationalList)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if out, err := runDNC("import", writeFile(t, "full.txt", full.String()), "--replace"); err != nil {
		t.Fatalf("first load: %v %s", err, out)
	}
	// Five of ten left is half: allowed. One of five is not.
	half := writeFile(t, "half.txt", "0913000000\n0913000001\n0913000002\n0913000003\n0913000004\n")
	if out, err := runDNC("import", half, "--replace"); err != nil || count() != 5 {
		t.Fatalf("replacing ten by five: %v %s, the list holds %d", err, out, count())
	}
	one := writeFile(t, "one.txt", "0913000000\n")
	if _, err := runDNC("import", one, "--replace"); err == nil || !strings.Contains(err.Error(), "--force") || count() != 5 {
		t.Errorf("replacing five by one: %v, the list holds %d; want a refusal naming --force, the list kept", err, count())
	}
	if _, err := runDNC("import", one, "--force"); err == nil || count() != 5 {
		t.Errorf("--force without --replace: %v, the list holds %d; want a usage error", err, count())
	}
	if out, err := runDNC("import", one, "--replace", "--force"); err != nil || count() != 1 {
		t.Errorf("replacing five by one with --force: %v %s, the list holds %d", err, out, count())
	}

	if out, err := runDNC("import", writeFile(t, "full.txt", full.String()), "--replace"); err != nil || count() != 10 {
		t.Fatalf("growing the list again: %v %s", err, out)
	}
	if e := s.adminFail(t, "PUT", "/dnc/numbers", "0913000000\n", 409); !strings.Contains(e.Message, "force=true") {
		t.Errorf("PUT of one number over ten: %q does not say how to force it", e.Message)
	}
	if count() != 10 {
		t.Errorf("the refused PUT left %d numbers, want 10", count())
	}
	s.adminFail(t, "PUT", "/dnc/numbers?force=yes", "0913000000\n", 400)
	var rep dnc.Report
	s.admin(t, "PUT", "/dnc/numbers?force=true", "0913000000\n", &rep)
	if rep.Loaded != 1 || count() != 1 {
		t.Errorf("forced PUT: %+v, the list holds %d", rep, count())
	}
}
