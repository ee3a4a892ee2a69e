package cli

import (
	"context"
	"dialbox/internal/dnc"
	"dialbox/internal/domain"
	"dialbox/internal/store"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// `dialbox dnc`: the do-not-call lists on the database directly, also
// while a server runs on it (its engine reads the lists at every dial), as
// the admin API's /dnc routes do (docs/compliance.md#loading-the-national-register).

func runDNC(ctx context.Context, args []string, stdout io.Writer, env []string, p Parts) error {
	if len(args) == 0 {
		return fmt.Errorf("dnc: import, add, remove, check or count\n%s", dncUsage)
	}
	sub, args := args[0], args[1:]
	fs, f := NewFlagSet("dnc " + sub)
	appKey := fs.String("app", "", "API key of the tenant whose list it is (default: the national register)")
	replace := fs.Bool("replace", false, "import: the file becomes the whole list")
	force := fs.Bool("force", false, "import --replace: even when the list would lose more than half of its numbers")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	wantArgs := map[string]int{"import": 1, "add": 1, "remove": 1, "check": 1, "count": 0}
	n, known := wantArgs[sub]
	if !known {
		return fmt.Errorf("dnc: unknown command %q\n%s", sub, dncUsage)
	}
	if len(pos) != n {
		return fmt.Errorf("dnc %s: wrong arguments\n%s", sub, dncUsage)
	}
	if *force && (sub != "import" || !*replace) {
		return fmt.Errorf("dnc %s: --force goes with import --replace only\n%s", sub, dncUsage)
	}
	st, cfg, err := f.openStore(ctx, fs, env, p)
	if err != nil {
		return err
	}
	defer st.Close()
	list, who := domain.NationalList, "the national register"
	if *appKey != "" {
		app, err := appByKey(ctx, st, *appKey)
		if err != nil {
			return err
		}
		list, who = app.ID, "the list of "+app.APIKey
	}
	region := cfg.Phone.DefaultRegion
	if sub == "import" {
		return dncImport(ctx, st, stdout, pos[0], dnc.Load{List: list, Region: region, Replace: *replace, Force: *force})
	}
	if sub == "count" {
		n, _, err := st.CountDNC(ctx, list)
		if err == nil {
			fmt.Fprintf(stdout, "%s: %d numbers\n", who, n)
		}
		return err
	}
	e164, err := domain.NormalizePhone(pos[0], region)
	if err != nil {
		return fmt.Errorf("dnc %s: %q: %w", sub, pos[0], err)
	}
	switch sub {
	case "add":
		added, err := st.AddDNC(ctx, list, []string{e164}, time.Now())
		if err == nil {
			fmt.Fprintf(stdout, "%s: %s %s\n", who, e164, map[bool]string{true: "added", false: "was already listed"}[added == 1])
		}
		return err
	case "remove":
		err := st.RemoveDNC(ctx, list, e164)
		if errors.Is(err, domain.ErrNotFound) {
			return fmt.Errorf("dnc remove: %s is not on %s", e164, who)
		}
		if err == nil {
			fmt.Fprintf(stdout, "%s: %s removed\n", who, e164)
		}
		return err
	}
	lists, err := st.LookupDNC(ctx, list, e164) // check
	if err != nil {
		return err
	}
	if len(lists) == 0 {
		fmt.Fprintf(stdout, "%s: on no list\n", e164)
	}
	for _, l := range lists {
		name := "the national register"
		if l.App != "" {
			name = "the list of " + l.App
		}
		fmt.Fprintf(stdout, "%s: on %s since %s\n", e164, name, l.Since.Format(time.RFC3339))
	}
	return nil
}

// dncImport loads a list file with a progress bar on a terminal (plain
// progress lines otherwise), then prints the report.
func dncImport(ctx context.Context, st Store, stdout io.Writer, path string, load dnc.Load) error {
	in, size, err := openInput("dnc import", path)
	if err != nil {
		return err
	}
	defer in.Close()
	src, bar := progressOf(in, size, "reading")
	var stored func(done, total int)
	if bar != nil {
		stored = func(done, total int) {
			bar.ChangeMax64(int64(total))
			bar.Describe("storing")
			bar.Set(done)
		}
		defer bar.Finish()
	} else {
		stored = func(done, total int) {
			if done%1_000_000 < store.DNCChunkRows || done == total {
				fmt.Fprintf(os.Stderr, "dnc import: %d of %d numbers stored\n", done, total)
			}
		}
	}
	start := time.Now()
	load.Now, load.Stored = start, stored
	rep, err := dnc.Import(ctx, st, src, dnc.Length{Bytes: size}, load)
	if shrink := (*dnc.ShrinkError)(nil); errors.As(err, &shrink) {
		return fmt.Errorf("dnc import: %s: %w; add --force to replace it anyway", path, err)
	}
	if err != nil {
		return fmt.Errorf("dnc import: %s: %w", path, err)
	}
	fmt.Fprintf(stdout, "%s: %d lines, %d numbers loaded, %d duplicate, %d bad (%.1f s)\n",
		path, rep.Lines, rep.Loaded, rep.Duplicate, rep.Bad, time.Since(start).Seconds())
	for _, b := range rep.BadLines {
		fmt.Fprintf(stdout, "  line %d: %s\n", b.Line, b.Reason)
	}
	return nil
}
