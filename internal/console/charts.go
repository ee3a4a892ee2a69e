package console

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"time"

	"dialbox/internal/domain"
)

// Charts (docs/console.md#charts): a scenario's or a campaign's calls per
// minute, answer rate and outcome mix, and each tenant's sparkline on the
// overview, drawn as SVG by the templates (charts.tmpl) from the store's
// per-minute counts. Geometry is computed here, so the templates only
// place numbers; each chart has a text alternative beside it.

// Chart sizes, in the SVG's own units (the stylesheet scales them).
const (
	chartWindow   = 3 * time.Hour // what a scenario's or a campaign's charts cover
	chartMinutes  = int(chartWindow / time.Minute)
	chartSlot     = 4 // units per minute
	chartWidth    = chartMinutes * chartSlot
	chartHeight   = 120
	rateBucket    = 15 * time.Minute // the answer rate's bars
	sparkWindow   = time.Hour        // the overview's sparkline
	sparkMinutes  = int(sparkWindow / time.Minute)
	sparkWidth    = sparkMinutes * 2
	sparkHeight   = 24
	mixWidth      = 720
	mixHeight     = 28
	chartTimeForm = "15:04"
)

// chartBar is one rectangle of a chart, with what it stands for in words
// (its <title>).
type chartBar struct {
	X, Y, W, H float64
	Class      string
	Label      string
}

// chartMixPart is one outcome of the calls' outcome mix.
type chartMixPart struct {
	Outcome string
	N       int64
	Pct     string
	Class   string
}

// chartsView is what a scenario's or a campaign's charts draw.
type chartsView struct {
	Of             string // "scenario Name" or "campaign Name", for titles
	From, To       time.Time
	Width, Height  int
	Mid            int   // the answer rate's 50% line
	Started, Ended int64 // in the window
	Peak           int64 // the most calls started or ended in one minute
	PeakAt         time.Time
	Minutes        []chartBar // started and ended, per minute with calls
	Rate           []chartBar // answered of ended, per rateBucket
	Answered       int64
	AnswerRate     string // "—" with no call ended
	Mix            []chartMixPart
	MixBars        []chartBar
	MixWidth       int
	MixHeight      int
}

// outcomeClasses are the stylesheet's colours of the outcomes; any other
// outcome the data holds is drawn as "o-other".
var outcomeClasses = map[string]string{
	domain.OutcomeAnswered: "o-answered", domain.OutcomeBusy: "o-busy", domain.OutcomeNoAnswer: "o-noanswer",
	domain.OutcomeFailed: "o-failed", domain.OutcomeRejected: "o-rejected", domain.OutcomeVoiceMail: "o-voicemail",
	domain.OutcomeInvalidNumber: "o-invalid", domain.OutcomeCanceled: "o-canceled", domain.OutcomeDoNotCall: "o-dnc",
}

func outcomeClass(outcome string) string { return cmp.Or(outcomeClasses[outcome], "o-other") }

// pct is n of all as a percentage with one decimal.
func pct(n, all int64) string {
	return strconv.FormatFloat(100*float64(n)/float64(all), 'f', 1, 64) + "%"
}

// charts reads and lays out the charts of a scenario (campaignID "") or
// of a campaign, over the chartWindow up to now.
func (c *Console) charts(ctx context.Context, appID int64, scenarioID, campaignID, of string, now time.Time) (*chartsView, error) {
	to := now.UTC().Truncate(time.Minute).Add(time.Minute) // the current minute included
	from := to.Add(-chartWindow)
	counts, err := c.reads.CallCounts(ctx, appID, scenarioID, campaignID, from)
	if err != nil {
		return nil, err
	}
	return layoutCharts(counts, of, from, to), nil
}

func layoutCharts(counts []domain.CallCount, of string, from, to time.Time) *chartsView {
	v := &chartsView{Of: of, From: from, To: to, Width: chartWidth, Height: chartHeight, Mid: chartHeight / 2, AnswerRate: "—",
		MixWidth: mixWidth, MixHeight: mixHeight}
	started := make([]int64, chartMinutes)
	ended := make([]int64, chartMinutes)
	buckets := int(chartWindow / rateBucket)
	bucketEnded := make([]int64, buckets)
	bucketAnswered := make([]int64, buckets)
	byOutcome := map[string]int64{}
	for _, cc := range counts {
		i := int(cc.Minute.Sub(from) / time.Minute)
		if i < 0 || i >= chartMinutes {
			continue // a call dated past now, by a clock moved back
		}
		if !cc.Ended {
			started[i] += cc.N
			v.Started += cc.N
			continue
		}
		ended[i] += cc.N
		v.Ended += cc.N
		outcome := cmp.Or(cc.Outcome, "unknown")
		byOutcome[outcome] += cc.N
		b := i / (chartMinutes / buckets)
		bucketEnded[b] += cc.N
		if cc.Outcome == domain.OutcomeAnswered {
			bucketAnswered[b] += cc.N
			v.Answered += cc.N
		}
	}
	for i := range chartMinutes {
		if n := max(started[i], ended[i]); n > v.Peak {
			v.Peak, v.PeakAt = n, from.Add(time.Duration(i)*time.Minute)
		}
	}
	scale := func(n int64) float64 {
		return float64(n) * (chartHeight - 10) / float64(max(v.Peak, 1))
	}
	for i := range chartMinutes {
		at := from.Add(time.Duration(i) * time.Minute).Format(chartTimeForm)
		x := float64(i * chartSlot)
		if n := started[i]; n > 0 {
			h := scale(n)
			v.Minutes = append(v.Minutes, chartBar{X: x, Y: chartHeight - h, W: chartSlot / 2, H: h, Class: "up",
				Label: at + ": " + thousands(n) + " started"})
		}
		if n := ended[i]; n > 0 {
			h := scale(n)
			v.Minutes = append(v.Minutes, chartBar{X: x + chartSlot/2, Y: chartHeight - h, W: chartSlot / 2, H: h, Class: "end",
				Label: at + ": " + thousands(n) + " ended"})
		}
	}
	bucketWidth := float64(chartWidth / buckets)
	for b := range buckets {
		if bucketEnded[b] == 0 {
			continue
		}
		at := from.Add(time.Duration(b) * rateBucket)
		h := float64(bucketAnswered[b]) * chartHeight / float64(bucketEnded[b])
		v.Rate = append(v.Rate, chartBar{X: float64(b)*bucketWidth + 1, Y: chartHeight - h, W: bucketWidth - 2, H: h, Class: "rate",
			Label: at.Format(chartTimeForm) + "–" + at.Add(rateBucket).Format(chartTimeForm) + ": " + thousands(bucketAnswered[b]) +
				" of " + thousands(bucketEnded[b]) + " answered (" + pct(bucketAnswered[b], bucketEnded[b]) + ")"})
	}
	if v.Ended > 0 {
		v.AnswerRate = pct(v.Answered, v.Ended)
	}
	for o, n := range byOutcome {
		v.Mix = append(v.Mix, chartMixPart{Outcome: o, N: n, Pct: pct(n, v.Ended), Class: outcomeClass(o)})
	}
	slices.SortFunc(v.Mix, func(a, b chartMixPart) int { return cmp.Or(cmp.Compare(b.N, a.N), cmp.Compare(a.Outcome, b.Outcome)) })
	x := 0.0
	for _, m := range v.Mix {
		w := float64(m.N) * mixWidth / float64(v.Ended)
		v.MixBars = append(v.MixBars, chartBar{X: x, W: w, H: mixHeight, Class: m.Class,
			Label: m.Outcome + ": " + thousands(m.N) + " (" + m.Pct + ")"})
		x += w
	}
	return v
}

// sparkView is a tenant's calls started per minute over the last hour, on
// the overview.
type sparkView struct {
	Points        string // the polyline's
	Width, Height int
	Started, Peak int64
}

func (c *Console) sparkline(ctx context.Context, appID int64, now time.Time) (*sparkView, error) {
	to := now.UTC().Truncate(time.Minute).Add(time.Minute)
	from := to.Add(-sparkWindow)
	counts, err := c.reads.CallCounts(ctx, appID, "", "", from)
	if err != nil {
		return nil, err
	}
	started := make([]int64, sparkMinutes)
	v := &sparkView{Width: sparkWidth, Height: sparkHeight}
	for _, cc := range counts {
		i := int(cc.Minute.Sub(from) / time.Minute)
		if cc.Ended || i < 0 || i >= sparkMinutes {
			continue
		}
		started[i] += cc.N
		v.Started += cc.N
		v.Peak = max(v.Peak, started[i])
	}
	var pts []byte
	for i, n := range started {
		y := float64(sparkHeight-1) - float64(n)*float64(sparkHeight-2)/float64(max(v.Peak, 1))
		pts = strconv.AppendInt(pts, int64(i*sparkWidth/(sparkMinutes-1)), 10)
		pts = append(pts, ',')
		pts = strconv.AppendFloat(pts, y, 'f', 1, 64)
		pts = append(pts, ' ')
	}
	v.Points = string(pts[:len(pts)-1])
	return v, nil
}
