package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"dialbox/internal/config"
	"dialbox/internal/destinations"
	"dialbox/internal/dnc"
	"dialbox/internal/domain"
	"dialbox/internal/script"
	"dialbox/internal/sqldb"

	"github.com/BurntSushi/toml"
)

// FixtureFile is a declarative set of tenants (docs/design.md#fixtures), applied at every
// start: applications are matched by api_key, scenarios and campaigns by id,
// hotlines by number, webhooks by url.
type FixtureFile struct {
	// DNC is the national do-not-call register's numbers ([dnc]), added to
	// it at every start (docs/compliance.md#fixtures).
	DNC          *FixtureDNC   `toml:"dnc"`
	Applications []*FixtureApp `toml:"applications"`
}

// FixtureDNC is the fixtures' part of the national register: numbers
// written in the file, and a list file (any format `dialbox dnc import`
// reads) named relative to the fixtures file.
type FixtureDNC struct {
	Numbers []string `toml:"numbers"`
	File    string   `toml:"file"`

	numbers []int64 // Numbers as stored (readDNC)
	Path    string  `toml:"-"` // File, resolved
}

// FixtureTenantDNC is the numbers on an application's own list
// ([applications.dnc]).
type FixtureTenantDNC struct {
	Numbers []string `toml:"numbers"`

	numbers []int64 // as stored (readDNC)
}

type FixtureApp struct {
	Name         string             `toml:"name"`
	APIKey       string             `toml:"api_key"`
	APISecret    string             `toml:"api_secret"`
	Wallet       *FixtureWallet     `toml:"wallet"`
	HotlinePools []FixturePool      `toml:"hotline_pools"`
	Scenarios    []*FixtureScenario `toml:"scenarios"`
	Campaigns    []FixtureCampaign  `toml:"campaigns"`
	Webhooks     []FixtureWebhook   `toml:"webhooks"`
	DNC          *FixtureTenantDNC  `toml:"dnc"`
	// Advertising holds the tenant's advertising settings, stricter than
	// the decree's; left out, they stay as they are: the decree's for a new
	// tenant (docs/compliance.md#settings-and-their-bounds).
	Advertising *FixtureAdvertising `toml:"advertising"`
	// Destinations are the tenant's own allow and deny prefixes
	// (docs/compliance.md#destinations); given, they replace both lists,
	// left out they stay as they are.
	Destinations *destinations.Rules `toml:"destinations"`

	isDemo bool
	ID     int64 `toml:"-"` // set once applied
}

type FixtureWallet struct {
	Prepaid        *bool      `toml:"prepaid"` // default true
	Balance        int64      `toml:"balance"`
	ExpiresAt      *time.Time `toml:"expires_at"`
	PricePerCall   int64      `toml:"price_per_call"`
	PricePerMinute int64      `toml:"price_per_minute"`
}

type FixturePool struct {
	Key string `toml:"key"`
	// Trunk names one of sip.trunks; empty: the first.
	Trunk   string   `toml:"trunk"`
	Numbers []string `toml:"numbers"`
}

type FixtureScenario struct {
	ID                 string         `toml:"id"`
	Name               string         `toml:"name"`
	Description        string         `toml:"description"`
	Status             string         `toml:"status"`
	Content            string         `toml:"content"`
	Script             *script.Script `toml:"script"` // [applications.scenarios.script]: run instead of content
	PersonalizedFields []string       `toml:"personalized_fields"`
	CallConfigTOML     toml.Primitive `toml:"call_config"`

	// CallConfig is DefaultCallConfig overlaid with the keys the file sets.
	CallConfig domain.CallConfig `toml:"-"`
}

type FixtureCampaign struct {
	ID         string `toml:"id"`
	Name       string `toml:"name"`
	ScenarioID string `toml:"scenario_id"`
}

type FixtureAdvertising struct {
	MaxCallsPerNumberPerDay *int   `toml:"max_calls_per_number_per_day"` // default: the decree's
	Start                   string `toml:"start"`                        // default: the decree's 08:00
	End                     string `toml:"end"`                          // default: the decree's 17:00
}

// settings are the section's settings, the decree's where it sets none.
func (fa *FixtureAdvertising) settings() domain.AdSettings {
	a := domain.LegalAdSettings()
	if fa.MaxCallsPerNumberPerDay != nil {
		a.MaxCallsPerNumberPerDay = *fa.MaxCallsPerNumberPerDay
	}
	if fa.Start != "" {
		a.Start = fa.Start
	}
	if fa.End != "" {
		a.End = fa.End
	}
	return a
}

type FixtureWebhook struct {
	URL     string   `toml:"url"`
	Secret  string   `toml:"secret"`
	Events  []string `toml:"events"`
	Enabled *bool    `toml:"enabled"` // default true
}

func (fa *FixtureApp) walletOrDefault() domain.Wallet {
	if fa.Wallet == nil {
		return domain.Wallet{Prepaid: false} // no wallet section: postpaid, nothing checked
	}
	w := domain.Wallet{
		Prepaid:        fa.Wallet.Prepaid == nil || *fa.Wallet.Prepaid,
		Balance:        fa.Wallet.Balance,
		PricePerCall:   fa.Wallet.PricePerCall,
		PricePerMinute: fa.Wallet.PricePerMinute,
	}
	if fa.Wallet.ExpiresAt != nil {
		t := fa.Wallet.ExpiresAt.UTC()
		w.ExpiresAt = &t
	}
	return w
}

func (fs *FixtureScenario) scenario(appID int64) *domain.Scenario {
	status := fs.Status
	if status == "" {
		status = domain.StatusDraft
	}
	fields := fs.PersonalizedFields
	if fields == nil {
		fields = []string{}
	}
	return &domain.Scenario{AppID: appID, ID: fs.ID, Name: fs.Name, Description: fs.Description, Status: status,
		Content: fs.Content, Script: fs.Script, PersonalizedFields: fields, CallConfig: fs.CallConfig}
}

// LoadFixtures reads and checks a fixtures file; every problem names the
// file, line and key.
func LoadFixtures(path string) (*FixtureFile, error) {
	var ff FixtureFile
	var md toml.MetaData
	data, err := config.DecodeTOMLFile(path, &ff, func(m toml.MetaData) error {
		md = m
		for ai, fa := range ff.Applications {
			for si, sc := range fa.Scenarios {
				sc.CallConfig = domain.DefaultCallConfig()
				if err := md.PrimitiveDecode(sc.CallConfigTOML, &sc.CallConfig); err != nil {
					return &config.ConfigError{Key: fmt.Sprintf("applications[%d].scenarios[%d].call_config", ai, si), Msg: err.Error()}
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := ff.Validate(); err != nil {
		err.File = path
		err.Line = config.KeyLine(data, err.Key)
		return nil, err
	}
	return &ff, nil
}

func (ff *FixtureFile) Validate() *config.ConfigError {
	bad := func(key, format string, args ...any) *config.ConfigError {
		return &config.ConfigError{Key: key, Msg: fmt.Sprintf(format, args...)}
	}
	keys := map[string]bool{}
	for ai, fa := range ff.Applications {
		at := fmt.Sprintf("applications[%d]", ai)
		switch {
		case fa.APIKey == "":
			return bad(at+".api_key", "is required")
		case domain.APIKeyProblem(fa.APIKey) != "":
			return bad(at+".api_key", "%q %s", fa.APIKey, domain.APIKeyProblem(fa.APIKey))
		case keys[fa.APIKey]:
			return bad(at+".api_key", "%q is used by an earlier application", fa.APIKey)
		case fa.APISecret == "":
			return bad(at+".api_secret", "is required")
		}
		keys[fa.APIKey] = true
		if fa.Name == "" {
			fa.Name = fa.APIKey
		}
		if w := fa.Wallet; w != nil {
			switch {
			case w.Balance < 0:
				return bad(at+".wallet.balance", "must not be negative")
			case w.PricePerCall < 0:
				return bad(at+".wallet.price_per_call", "must not be negative")
			case w.PricePerMinute < 0:
				return bad(at+".wallet.price_per_minute", "must not be negative")
			}
		}
		if fa.Advertising != nil {
			if err := fa.Advertising.settings().Check(); err != nil {
				return bad(at+".advertising."+err.Field, "%s", err.Reason)
			}
		}
		if fa.Destinations != nil {
			if fe := fa.Destinations.Validate(); fe != nil {
				return bad(at+".destinations."+fe.Field, "%s", fe.Message)
			}
		}
		pools := map[string]bool{}
		for pi, p := range fa.HotlinePools {
			key := fmt.Sprintf("%s.hotline_pools[%d]", at, pi)
			if p.Key == "" {
				return bad(key+".key", "is required")
			}
			for _, n := range p.Numbers {
				if strings.TrimSpace(n) == "" {
					return bad(key+".numbers", "must not hold an empty number")
				}
			}
			pools[p.Key] = true
		}
		scenarios := map[string]bool{}
		for si, sc := range fa.Scenarios {
			key := fmt.Sprintf("%s.scenarios[%d]", at, si)
			sc.CallConfig.Normalize()
			if err := domain.CheckScenarioFields(sc.ID, sc.Status, sc.PersonalizedFields, sc.CallConfig); err != nil {
				return bad(key+"."+err.Field, "%s", err.Reason)
			}
			if sc.Script != nil {
				if err := sc.Script.Validate(); err != nil {
					// The first problem, with its line; the admin API lists them all.
					p := domain.ScriptProblems(key+".script", err)[0]
					return bad(p.Field, "%s", p.Reason)
				}
			}
			if scenarios[sc.ID] {
				return bad(key+".id", "%q is used by an earlier scenario", sc.ID)
			}
			scenarios[sc.ID] = true
		}
		campaigns := map[string]bool{}
		for ci, c := range fa.Campaigns {
			key := fmt.Sprintf("%s.campaigns[%d]", at, ci)
			switch {
			case c.ID == "":
				return bad(key+".id", "is required")
			case campaigns[c.ID]:
				return bad(key+".id", "%q is used by an earlier campaign", c.ID)
			case !scenarios[c.ScenarioID]:
				return bad(key+".scenario_id", "%q is not a scenario of this application", c.ScenarioID)
			}
			campaigns[c.ID] = true
		}
		for wi, wh := range fa.Webhooks {
			key := fmt.Sprintf("%s.webhooks[%d]", at, wi)
			if err := domain.CheckWebhookURL(wh.URL); err != nil {
				return bad(key+".url", "%s", err)
			}
			if err := domain.CheckWebhookSecret(wh.Secret); err != nil {
				return bad(key+".secret", "%s", err)
			}
			for _, e := range wh.Events {
				if e != domain.EventCallCompleted && e != domain.EventContactCompleted {
					return bad(key+".events", "%q is not an event (call.completed, contact.completed)", e)
				}
			}
		}
	}
	return nil
}

// readDNC reads the fixtures' do-not-call numbers with operation A's
// rules in the phone region, and resolves [dnc]'s file against the
// fixtures file's folder; a bad number is an error of the file at its line
// and key. The list file itself is read when it is applied, at start
// (applyFixtureRegister).
func (ff *FixtureFile) ReadDNC(path, region string) error {
	bad := func(key, msg string) error {
		data, _ := os.ReadFile(path)
		return &config.ConfigError{File: path, Line: config.KeyLine(data, key), Key: key, Msg: msg}
	}
	read := func(key string, raws []string) ([]int64, error) {
		out := make([]int64, 0, len(raws))
		for i, raw := range raws {
			e164, err := domain.NormalizePhone(raw, region)
			n, ok := domain.DNCNumber(e164)
			if err != nil || !ok {
				return nil, bad(fmt.Sprintf("%s[%d]", key, i), fmt.Sprintf("%q is not a phone number", raw))
			}
			out = append(out, n)
		}
		slices.Sort(out)
		return slices.Compact(out), nil
	}
	var err error
	if d := ff.DNC; d != nil {
		if d.numbers, err = read("dnc.numbers", d.Numbers); err != nil {
			return err
		}
		if d.File != "" {
			d.Path = d.File
			if !filepath.IsAbs(d.Path) {
				d.Path = filepath.Join(filepath.Dir(path), d.Path)
			}
		}
	}
	for ai, fa := range ff.Applications {
		if fa.DNC != nil {
			if fa.DNC.numbers, err = read(fmt.Sprintf("applications[%d].dnc.numbers", ai), fa.DNC.Numbers); err != nil {
				return err
			}
		}
	}
	return nil
}

// applyFixtureRegister adds the fixtures' [dnc] numbers and file to the
// national register, as `dialbox dnc import` without --replace does; the
// report counts the file's lines. It runs at start, not at a reset: the
// register is not tenant data, and a reset leaves it as it is
// (docs/compliance.md#fixtures).
func ApplyFixtureRegister(ctx context.Context, s dncLoader, d *FixtureDNC, region string, now time.Time) (dnc.Report, error) {
	var rep dnc.Report
	if d == nil {
		return rep, nil
	}
	numbers := d.numbers
	if d.Path != "" {
		f, err := os.Open(d.Path)
		if err != nil {
			return rep, &config.ConfigError{Key: "dnc.file", Msg: err.Error()}
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return rep, err
		}
		var fromFile []int64
		fromFile, rep, err = dnc.ReadFile(ctx, f, dnc.Length{Bytes: st.Size()}, region)
		var fileErr *dnc.FileError
		if errors.As(err, &fileErr) {
			return rep, &config.ConfigError{Key: "dnc.file", Msg: d.Path + ": " + fileErr.Error()}
		}
		if err != nil {
			return rep, fmt.Errorf("dnc.file %s: %w", d.Path, err)
		}
		numbers = append(slices.Clip(numbers), fromFile...) // a new slice: d.numbers stays as read
		slices.Sort(numbers)
		numbers = slices.Compact(numbers)
	}
	gained, err := s.LoadDNC(ctx, domain.NationalList, numbers, false, now, nil)
	rep.Loaded = gained
	return rep, err
}

// dncLoader is the one write applyFixtureRegister makes.
type dncLoader interface {
	LoadDNC(ctx context.Context, list int64, numbers []int64, replace bool, now time.Time, progress func(int)) (int, error)
}

// ApplyFixtures upserts every application of the file in one transaction.
func (s *SQLite) ApplyFixtures(ctx context.Context, apps []*FixtureApp, now time.Time) error {
	return s.Write(ctx, func(tx sqldb.SQLQueryer) error {
		for _, fa := range apps {
			if err := applyFixtureApp(ctx, sqldb.SQLShared(tx), fa, now); err != nil {
				return err
			}
		}
		return nil
	})
}

// Demo tenant names, stable so the printed curl lines keep working.
const (
	demoAPIKey     = "demo-key"
	DemoScenarioID = "demo-scenario"
	DemoCampaignID = "demo-campaign"
)

// demoFixture is the tenant a first run creates so `go run .` has something
// to call: a prepaid wallet, a pool of three hotlines, an ACTIVE scenario
// that accepts repeated phones (so the printed curl lines can be rerun) and
// a campaign.
func DemoFixture(now time.Time) *FixtureApp {
	cc := domain.DefaultCallConfig()
	cc.AllowDuplicatePhone = true
	cc.MaxConcurrent = 3
	cc.ReCall = domain.ReCall{Times: 1, Delay: 60, IsBusy: true, IsNoAnswer: true}
	cc.CallWindow.Start, cc.CallWindow.End = "00:00", "24:00"
	expires := now.AddDate(1, 0, 0).UTC().Truncate(time.Second)
	prepaid := true
	return &FixtureApp{
		Name:      "Demo tenant",
		APIKey:    demoAPIKey,
		APISecret: domain.RandomHex(24),
		Wallet: &FixtureWallet{Prepaid: &prepaid, Balance: 10_000_000, ExpiresAt: &expires,
			PricePerCall: 1000, PricePerMinute: 800},
		HotlinePools: []FixturePool{{Key: "POOL_SYSTEM", Numbers: []string{"02873000001", "02873000002", "02873000003"}}},
		Scenarios: []*FixtureScenario{{
			ID: DemoScenarioID, Name: "Payment reminder", Description: "Reminds customers of a due payment",
			Status: domain.StatusActive, Content: "Xin chào {{danh_xung}} {{ho_ten}}, đây là cuộc gọi nhắc thanh toán.",
			PersonalizedFields: []string{"danh_xung", "ho_ten"}, CallConfig: cc,
		}},
		Campaigns: []FixtureCampaign{{ID: DemoCampaignID, Name: "Demo campaign", ScenarioID: DemoScenarioID}},
		isDemo:    true,
	}
}
