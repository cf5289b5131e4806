package monitor

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // schedules name IANA zones; not every host has /usr/share/zoneinfo

	"github.com/robfig/cron/v3"
)

// ScheduleSpec is a monitor's schedule as sent: a cron expression or a
// schedule in words, and the IANA zone it is read in.
type ScheduleSpec struct {
	Cron     string `json:"cron,omitempty"`
	Text     string `json:"text,omitempty"`
	Timezone string `json:"timezone,omitempty"`
}

// Schedule is a validated schedule: its cron expression (a text schedule
// normalized to one, as Firecrawl answers) in its zone.
type Schedule struct {
	Cron     string
	Timezone string
	spec     *cron.SpecSchedule // due times in loc
	wall     *cron.SpecSchedule // the same fields read in UTC: wall-clock time without DST
	loc      *time.Location
	every    time.Duration
}

// parser reads five fields as Firecrawl documents, and a leading seconds
// field (for the short intervals an operator may allow, as tests do).
var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseSchedule validates s against the operator's shortest interval
// (0: none); the problem names its field, "" when s is valid.
func ParseSchedule(s ScheduleSpec, minInterval time.Duration) (Schedule, string) {
	var out Schedule
	expr, text := strings.Join(strings.Fields(s.Cron), " "), strings.TrimSpace(s.Text)
	switch {
	case expr != "" && text != "":
		return out, "schedule: give either cron or text, not both"
	case expr == "" && text == "":
		return out, "schedule: cron or text is required"
	case expr == "":
		var ok bool
		if expr, ok = fromText(text); !ok {
			return out, fmt.Sprintf(`schedule.text %q is not a schedule Trawler reads; say "every 30 minutes", "hourly", "every 2 hours", "daily at 9:00" or "weekly", or give schedule.cron`, s.Text)
		}
	case strings.HasPrefix(expr, "CRON_TZ=") || strings.HasPrefix(expr, "TZ="):
		return out, fmt.Sprintf("schedule.cron %q must not name a time zone; set schedule.timezone", expr)
	case strings.HasPrefix(expr, "@every"):
		// robfig's @every counts from when a process started, not from the clock.
		return out, fmt.Sprintf(`schedule.cron %q is not a cron schedule; give schedule.text "every N minutes"`, expr)
	}
	out.Cron, out.Timezone = expr, strings.TrimSpace(s.Timezone)
	if out.Timezone == "" {
		out.Timezone = "UTC"
	}
	loc, err := time.LoadLocation(out.Timezone)
	if err != nil || out.Timezone == "Local" { // Local is the host's zone, which differs between nodes
		return out, fmt.Sprintf(`schedule.timezone %q is not an IANA time zone (e.g. "Europe/Berlin")`, out.Timezone)
	}
	parsed, err := parser.Parse(expr)
	if err != nil {
		return out, fmt.Sprintf("schedule.cron %q is not a valid cron expression: %v", expr, err)
	}
	spec := parsed.(*cron.SpecSchedule) // @every, the one other kind, is refused above
	wall := *spec
	spec.Location, wall.Location = loc, time.UTC
	out.spec, out.wall, out.loc = spec, &wall, loc
	if out.every = interval(&wall); out.every == 0 {
		return out, fmt.Sprintf("schedule.cron %q never runs", expr)
	}
	if minInterval > 0 && out.every < minInterval {
		return out, fmt.Sprintf("schedule runs every %s; the shortest interval this service allows is %s (TRAWLER_MONITOR_MIN_INTERVAL)", out.every, minInterval)
	}
	return out, ""
}

// Next returns the schedule's first due time strictly after t, in UTC.
// robfig reads the fields in the schedule's zone; around a DST change it
// follows the clock, which would skip a daily 02:30 on the night the clock
// jumps from 02:00 to 03:00 and run it twice on the night 02:00-03:00
// repeats. So, as Vixie cron does, a schedule that names its hours runs a
// skipped time when the clock resumes and a repeated time once; one that
// runs every hour runs by the clock in both cases.
func (s Schedule) Next(t time.Time) time.Time {
	if s.spec == nil {
		return time.Time{}
	}
	const allHours = 1<<24 - 1
	t = t.In(s.loc)
	for {
		n := s.spec.Next(t)
		if n.IsZero() || s.spec.Hour&allHours == allHours {
			return n.UTC()
		}
		if r, ok := s.resumed(t, n); ok {
			return r.UTC()
		}
		if !repeated(n) {
			return n.UTC()
		}
		t = n
	}
}

// resumed returns the instant the clock resumed after skipping a wall-clock
// time the schedule names, if the clock did so after t and before n.
func (s Schedule) resumed(t, n time.Time) (time.Time, bool) {
	for z := t; ; {
		_, end := z.ZoneBounds()
		if end.IsZero() || !end.Before(n) {
			return time.Time{}, false
		}
		_, before := end.Add(-time.Second).Zone()
		_, after := end.Zone()
		if jump := time.Duration(after-before) * time.Second; jump > 0 {
			from := end.UTC().Add(time.Duration(before) * time.Second) // the wall clock as it jumped
			if w := s.wall.Next(from.Add(-time.Second)); !w.IsZero() && w.Before(from.Add(jump)) {
				return end, true
			}
		}
		z = end
	}
}

// repeated reports whether n falls in the second pass of wall-clock time
// the clock turned back over.
func repeated(n time.Time) bool {
	start, _ := n.ZoneBounds()
	if start.IsZero() {
		return false
	}
	_, now := n.Zone()
	_, before := start.Add(-time.Second).Zone()
	return n.Sub(start) < time.Duration(before-now)*time.Second
}

// Interval is the shortest gap between two due times in wall-clock terms:
// a daily schedule's is 24h though the day of a DST change lasts 23h or 25h
// (and an operator's limit of one run a day must not refuse it in Berlin
// yet take it in UTC). 0 for a zero Schedule.
func (s Schedule) Interval() time.Duration { return s.every }

// interval walks spec from a fixed day over 400 days (every month and
// weekday), or its first 2000 due times, whichever comes first: enough to
// meet the shortest gap of the cron fields, cheap for a schedule in seconds.
// 0 when it never runs.
func interval(spec *cron.SpecSchedule) time.Duration {
	t := spec.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if t.IsZero() {
		return 0
	}
	end := t.AddDate(0, 0, 400)
	var gap time.Duration
	for i := 0; i < 2000 && t.Before(end); i++ {
		n := spec.Next(t)
		if n.IsZero() {
			break
		}
		if d := n.Sub(t); gap == 0 || d < gap {
			gap = d
		}
		t = n
	}
	return gap
}

var (
	everyRe = regexp.MustCompile(`^every (\d+) (second|minute|hour)s?(?: starting at :(\d{1,2}))?$`)
	clockRe = regexp.MustCompile(`^(\d{1,2})(?::(\d{2}))? ?(am|pm)?$`)
	days    = []string{"sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"}
)

// fromText reads the schedules in words that Firecrawl documents (and
// seconds, for tests) as a cron expression. Written here: no library
// among the module's dependencies reads these phrases.
func fromText(text string) (string, bool) {
	t := strings.Join(strings.Fields(strings.ToLower(text)), " ")
	switch t {
	case "every minute":
		return "* * * * *", true
	case "hourly", "every hour":
		return "0 * * * *", true
	case "daily", "every day":
		return "0 0 * * *", true
	case "weekly", "every week":
		return "0 0 * * 0", true
	}
	if m := everyRe.FindStringSubmatch(t); m != nil {
		n, _ := strconv.Atoi(m[1])
		unit, at := m[2], m[3]
		if unit == "minute" && at == "" && n >= 60 && n%60 == 0 {
			unit, n = "hour", n/60
		}
		switch {
		case n < 1 || (at != "" && unit != "minute"):
			return "", false
		case unit == "second" && n == 1:
			return "* * * * * *", true
		case unit == "second" && n < 60:
			return fmt.Sprintf("*/%d * * * * *", n), true
		case unit == "minute" && n < 60 && at != "":
			mm, _ := strconv.Atoi(at)
			return fmt.Sprintf("%d-59/%d * * * *", mm, n), mm < 60
		case unit == "minute" && n == 1:
			return "* * * * *", true
		case unit == "minute" && n < 60:
			return fmt.Sprintf("*/%d * * * *", n), true
		case unit == "hour" && n == 1:
			return "0 * * * *", true
		case unit == "hour" && n < 24:
			return fmt.Sprintf("0 */%d * * *", n), true
		}
		return "", false
	}
	if at, ok := strings.CutPrefix(t, "daily at "); ok {
		h, m, ok := clock(at)
		return fmt.Sprintf("%d %d * * *", m, h), ok
	}
	if rest, ok := strings.CutPrefix(t, "weekly on "); ok {
		day, at, _ := strings.Cut(rest, " at ")
		h, m, ok := 0, 0, at == ""
		if !ok {
			h, m, ok = clock(at)
		}
		for d, name := range days {
			if ok && len(day) >= 3 && strings.HasPrefix(name, day) {
				return fmt.Sprintf("%d %d * * %d", m, h, d), true
			}
		}
	}
	return "", false
}

// clock reads "9:00", "17:30", "9am", "5:30 pm".
func clock(at string) (h, m int, ok bool) {
	p := clockRe.FindStringSubmatch(at)
	if p == nil {
		return 0, 0, false
	}
	h, _ = strconv.Atoi(p[1])
	if p[2] != "" {
		m, _ = strconv.Atoi(p[2])
	}
	if p[3] != "" {
		if h < 1 || h > 12 {
			return 0, 0, false
		}
		h %= 12
		if p[3] == "pm" {
			h += 12
		}
	}
	return h, m, h < 24 && m < 60
}
