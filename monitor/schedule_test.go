package monitor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestScheduleText(t *testing.T) {
	for text, want := range map[string]string{
		"every 30 minutes":                 "*/30 * * * *",
		"Every  5 Minutes ":                "*/5 * * * *",
		"every 1 minute":                   "* * * * *",
		"every minute":                     "* * * * *",
		"every 15 minutes starting at :07": "7-59/15 * * * *",
		"every 120 minutes":                "0 */2 * * *",
		"every 60 minutes":                 "0 * * * *",
		"hourly":                           "0 * * * *",
		"every hour":                       "0 * * * *",
		"every 2 hours":                    "0 */2 * * *",
		"every 23 hours":                   "0 */23 * * *",
		"daily":                            "0 0 * * *",
		"daily at 9:00":                    "0 9 * * *",
		"daily at 9am":                     "0 9 * * *",
		"daily at 12am":                    "0 0 * * *",
		"daily at 12pm":                    "0 12 * * *",
		"Daily at 5:30 PM":                 "30 17 * * *",
		"daily at 5:30pm":                  "30 17 * * *",
		"daily at 17:30":                   "30 17 * * *",
		"weekly":                           "0 0 * * 0",
		"weekly on monday":                 "0 0 * * 1",
		"weekly on Monday at 9am":          "0 9 * * 1",
		"weekly on fri at 17:15":           "15 17 * * 5",
		"every 2 seconds":                  "*/2 * * * * *",
		"every second":                     "", // not a form: "every N seconds" only
	} {
		s, problem := ParseSchedule(ScheduleSpec{Text: text}, 0)
		if want == "" {
			assert.NotEmpty(t, problem, text)
			continue
		}
		require.Empty(t, problem, text)
		assert.Equal(t, want, s.Cron, text)
	}
	for _, text := range []string{
		"every 0 minutes", "every 90 minutes", "every 24 hours", "every 60 seconds", "every 15 minutes starting at :60",
		"every 2 hours starting at :07", "daily at 25:00", "daily at 9:60", "daily at 13pm", "daily at 0am",
		"weekly on funday", "weekly on mo", "monthly", "now and then",
	} {
		_, problem := ParseSchedule(ScheduleSpec{Text: text}, 0)
		assert.Contains(t, problem, `schedule.text "`+text+`" is not a schedule Trawler reads`, text)
	}
}

func TestScheduleCron(t *testing.T) {
	for expr, want := range map[string]string{
		"0 9 * * 1-5":   "0 9 * * 1-5",
		" 0  9 * * * ":  "0 9 * * *",
		"@hourly":       "@hourly",
		"@daily":        "@daily",
		"@weekly":       "@weekly",
		"@monthly":      "@monthly",
		"*/2 * * * * *": "*/2 * * * * *", // six fields: seconds first
	} {
		s, problem := ParseSchedule(ScheduleSpec{Cron: expr}, time.Second)
		require.Empty(t, problem, expr)
		assert.Equal(t, want, s.Cron)
		assert.Equal(t, "UTC", s.Timezone, "the default zone")
	}
	s, _ := ParseSchedule(ScheduleSpec{Cron: "*/2 * * * * *"}, time.Second)
	assert.Equal(t, time.Date(2026, 5, 1, 10, 0, 2, 0, time.UTC), s.Next(time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)), "strictly after")
	d, _ := ParseSchedule(ScheduleSpec{Cron: "@daily", Timezone: "Asia/Tokyo"}, 0)
	next := d.Next(time.Date(2026, 5, 1, 10, 0, 0, 0, time.Local))
	assert.Equal(t, time.Date(2026, 5, 1, 15, 0, 0, 0, time.UTC), next, "Tokyo's midnight")
	assert.Equal(t, time.UTC, next.Location())
}

func TestScheduleProblems(t *testing.T) {
	for _, c := range []struct {
		spec ScheduleSpec
		want string
	}{
		{ScheduleSpec{}, "schedule: cron or text is required"},
		{ScheduleSpec{Cron: " ", Text: " ", Timezone: "UTC"}, "schedule: cron or text is required"},
		{ScheduleSpec{Cron: "0 * * * *", Text: "hourly"}, "schedule: give either cron or text, not both"},
		{ScheduleSpec{Text: "now and then"}, `schedule.text "now and then" is not a schedule Trawler reads; say "every 30 minutes", "hourly", "every 2 hours", "daily at 9:00" or "weekly", or give schedule.cron`},
		{ScheduleSpec{Cron: "61 * * * *"}, `schedule.cron "61 * * * *" is not a valid cron expression: end of range (61) above maximum (59): 61`},
		{ScheduleSpec{Cron: "* * * *"}, `schedule.cron "* * * *" is not a valid cron expression: expected 5 to 6 fields, found 4: [* * * *]`},
		{ScheduleSpec{Cron: "0 0 30 2 *"}, `schedule.cron "0 0 30 2 *" never runs`},
		{ScheduleSpec{Cron: "TZ=UTC 0 * * * *"}, `schedule.cron "TZ=UTC 0 * * * *" must not name a time zone; set schedule.timezone`},
		{ScheduleSpec{Cron: "CRON_TZ=Europe/Berlin 0 * * * *"}, `schedule.cron "CRON_TZ=Europe/Berlin 0 * * * *" must not name a time zone; set schedule.timezone`},
		{ScheduleSpec{Cron: "@every 10m"}, `schedule.cron "@every 10m" is not a cron schedule; give schedule.text "every N minutes"`},
		{ScheduleSpec{Text: "hourly", Timezone: "Mars/Base"}, `schedule.timezone "Mars/Base" is not an IANA time zone (e.g. "Europe/Berlin")`},
		{ScheduleSpec{Text: "hourly", Timezone: "Local"}, `schedule.timezone "Local" is not an IANA time zone (e.g. "Europe/Berlin")`},
		{ScheduleSpec{Cron: "*/1 * * * *"}, "schedule runs every 1m0s; the shortest interval this service allows is 5m0s (TRAWLER_MONITOR_MIN_INTERVAL)"},
		{ScheduleSpec{Text: "every 2 seconds"}, "schedule runs every 2s; the shortest interval this service allows is 5m0s (TRAWLER_MONITOR_MIN_INTERVAL)"},
		// */45 runs at :00 and :45: 15 minutes apart once an hour.
		{ScheduleSpec{Text: "every 45 minutes"}, "schedule runs every 15m0s; the shortest interval this service allows is 5m0s"},
	} {
		_, problem := ParseSchedule(c.spec, 5*time.Minute)
		if c.spec.Text == "every 45 minutes" {
			assert.Empty(t, problem, "15m is above 5m")
			_, problem = ParseSchedule(c.spec, 20*time.Minute)
			c.want = "schedule runs every 15m0s; the shortest interval this service allows is 20m0s (TRAWLER_MONITOR_MIN_INTERVAL)"
		}
		assert.Equal(t, c.want, problem, "%+v", c.spec)
	}
	_, problem := ParseSchedule(ScheduleSpec{Cron: "*/1 * * * *"}, 0)
	assert.Empty(t, problem, "no operator minimum")
}

func TestScheduleInterval(t *testing.T) {
	for _, c := range []struct {
		spec ScheduleSpec
		want time.Duration
	}{
		{ScheduleSpec{Cron: "*/2 * * * * *"}, 2 * time.Second},
		{ScheduleSpec{Text: "every 30 minutes"}, 30 * time.Minute},
		{ScheduleSpec{Text: "every 15 minutes starting at :07"}, 15 * time.Minute},
		{ScheduleSpec{Text: "every 2 hours", Timezone: "America/New_York"}, 2 * time.Hour},
		{ScheduleSpec{Cron: "0 1,3 * * *", Timezone: "Europe/Berlin"}, 2 * time.Hour},
		{ScheduleSpec{Cron: "0,59 0,23 * * *"}, time.Minute}, // 23:59, then 00:00 the next day
		{ScheduleSpec{Text: "daily at 9:00", Timezone: "Europe/Berlin"}, 24 * time.Hour},
		{ScheduleSpec{Cron: "30 2 * * *", Timezone: "Europe/Berlin"}, 24 * time.Hour},
		{ScheduleSpec{Text: "weekly on monday"}, 7 * 24 * time.Hour},
		{ScheduleSpec{Cron: "0 0 1 1,2 *"}, 31 * 24 * time.Hour},
		{ScheduleSpec{Cron: "0 0 29 2 *"}, (4*365 + 1) * 24 * time.Hour},
	} {
		s, problem := ParseSchedule(c.spec, 0)
		require.Empty(t, problem)
		assert.Equal(t, c.want, s.Interval(), "%+v", c.spec)
	}
	// An operator's one run a day takes a daily schedule whatever its zone:
	// the gap is read on the wall clock, not across the 23-hour day.
	_, problem := ParseSchedule(ScheduleSpec{Text: "daily at 9:00", Timezone: "Europe/Berlin"}, 24*time.Hour)
	assert.Empty(t, problem)

	start := time.Now()
	_, problem = ParseSchedule(ScheduleSpec{Cron: "* * * * * *"}, time.Second)
	assert.Empty(t, problem)
	assert.Less(t, time.Since(start), time.Second, "the walk stops at 2000 due times")

	var zero Schedule
	assert.Zero(t, zero.Interval())
	assert.True(t, zero.Next(time.Now()).IsZero())
}

func utc(month time.Month, day, hour, min int) time.Time {
	return time.Date(2026, month, day, hour, min, 0, 0, time.UTC)
}

// walk returns the n due times after t, asserting each moves forward.
func walk(t *testing.T, s Schedule, from time.Time, n int) []time.Time {
	var out []time.Time
	for range n {
		next := s.Next(from)
		require.True(t, next.After(from), "%v after %v", next, from)
		out, from = append(out, next), next
	}
	return out
}

func parse(t *testing.T, spec ScheduleSpec) Schedule {
	s, problem := ParseSchedule(spec, 0)
	require.Empty(t, problem)
	return s
}

// A time of day is wall-clock time in the schedule's zone on both sides of
// a DST change.
func TestScheduleDaylightSaving(t *testing.T) {
	s := parse(t, ScheduleSpec{Text: "daily at 9:00", Timezone: "Europe/Berlin"})
	assert.Equal(t, []time.Time{utc(3, 28, 8, 0), utc(3, 29, 7, 0), utc(3, 30, 7, 0)}, walk(t, s, utc(3, 27, 12, 0), 3), "CET, then CEST from 2026-03-29")
	assert.Equal(t, []time.Time{utc(10, 25, 8, 0), utc(10, 26, 8, 0)}, walk(t, s, utc(10, 24, 12, 0), 2), "back to CET on 2026-10-25")

	// Hourly runs by the clock: every real hour, both 02:00s of the
	// autumn night (CEST, then CET), none twice; in spring 01:00 CET is
	// followed by 03:00 CEST, an hour later.
	h := parse(t, ScheduleSpec{Cron: "0 * * * *", Timezone: "Europe/Berlin"})
	assert.Equal(t, []time.Time{utc(10, 24, 23, 0), utc(10, 25, 0, 0), utc(10, 25, 1, 0), utc(10, 25, 2, 0), utc(10, 25, 3, 0)}, walk(t, h, utc(10, 24, 22, 30), 5))
	assert.Equal(t, []time.Time{utc(3, 29, 0, 0), utc(3, 29, 1, 0), utc(3, 29, 2, 0)}, walk(t, h, utc(3, 28, 23, 30), 3))
	q := parse(t, ScheduleSpec{Cron: "*/30 * * * *", Timezone: "Europe/Berlin"})
	for i, n := range walk(t, q, utc(10, 24, 23, 0), 8) {
		assert.Equal(t, utc(10, 24, 23, 30).Add(time.Duration(i)*30*time.Minute), n, "every real half hour")
	}

	// A schedule naming its hours runs a repeated wall-clock time once:
	// 02:00 CEST, not 02:00 CET again.
	two := parse(t, ScheduleSpec{Text: "every 2 hours", Timezone: "Europe/Berlin"})
	assert.Equal(t, []time.Time{utc(10, 25, 0, 0), utc(10, 25, 3, 0)}, walk(t, two, utc(10, 24, 23, 0), 2))
}

// 02:30 does not happen in New York on 2026-03-08 (02:00 EST is 03:00 EDT)
// and 01:30 happens twice on 2026-11-01 (01:00-01:59 EDT, then EST).
func TestScheduleDaylightSavingNewYork(t *testing.T) {
	s := parse(t, ScheduleSpec{Cron: "30 2 * * *", Timezone: "America/New_York"})
	// robfig alone follows the clock past 02:00 and finds 02:30 the next day:
	// the 8th would have no run.
	assert.Equal(t, utc(3, 9, 6, 30), s.spec.Next(utc(3, 7, 7, 30).In(s.loc)).UTC())
	// Next runs it once on the 8th, at 03:00 EDT, when the clock resumes.
	assert.Equal(t, []time.Time{utc(3, 8, 7, 0), utc(3, 9, 6, 30), utc(3, 10, 6, 30)}, walk(t, s, utc(3, 7, 7, 30), 3))
	assert.Equal(t, utc(3, 9, 6, 30), s.Next(utc(3, 8, 7, 0)), "not again after 03:00 on the 8th")

	f := parse(t, ScheduleSpec{Cron: "30 1 * * *", Timezone: "America/New_York"})
	// robfig alone runs 01:30 EDT and 01:30 EST, an hour apart.
	assert.Equal(t, utc(11, 1, 6, 30), f.spec.Next(utc(11, 1, 5, 30).In(f.loc)).UTC())
	// Next runs it once, the first time.
	assert.Equal(t, []time.Time{utc(11, 1, 5, 30), utc(11, 2, 6, 30)}, walk(t, f, utc(10, 31, 12, 0), 2))
	assert.Equal(t, utc(11, 2, 6, 30), f.Next(utc(11, 1, 6, 0)), "started within the repeated hour")

	// Every minute of the skipped hour comes to the one run at 03:00 EDT.
	m := parse(t, ScheduleSpec{Cron: "*/20 2 * * *", Timezone: "America/New_York"})
	assert.Equal(t, []time.Time{utc(3, 8, 7, 0), utc(3, 9, 6, 0)}, walk(t, m, utc(3, 7, 7, 40), 2))
}
