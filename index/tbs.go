package index

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// TBS is a parsed tbs time filter of a search request.
type TBS struct {
	// After, unless zero, keeps documents dated strictly after it.
	After time.Time
	// Before, unless zero, keeps documents dated at or before it.
	Before time.Time
	// SortByDate orders results newest first rather than by relevance.
	SortByDate bool
}

// TBSError reports a part of a tbs value that is malformed or that does
// not go with the others. Part is the comma-separated part as written.
type TBSError struct {
	Part string
	Rule string
}

// Error reads like: tbs: "qdr:z" must be qdr:h, qdr:d, qdr:w, qdr:m or
// qdr:y.
func (e *TBSError) Error() string {
	return fmt.Sprintf("tbs: %q %s", e.Part, e.Rule)
}

// maxQDRCount bounds the count of qdr:d3 and the like.
const maxQDRCount = 10000

// ParseTBS parses the tbs field of a search request, with now as the time
// the presets count back from. Parts are separated by commas:
//
//   - qdr:h, qdr:d, qdr:w, qdr:m, qdr:y: the past hour, day (24 hours), week
//     (7 days), calendar month or calendar year; a count repeats the unit,
//     as in qdr:d3 for the past three days.
//   - cdr:1 with cd_min:MM/DD/YYYY, cd_max:MM/DD/YYYY or both: from the start
//     of cd_min's day to the end of cd_max's day, in UTC.
//   - sbd:1 sorts by date; sbd:0 does not.
//
// An empty value is no filter. A malformed part, a part given twice, qdr
// together with cdr, cdr:1 without a date, a date without cdr:1 and a
// cd_min after cd_max are *TBSError.
func ParseTBS(s string, now time.Time) (TBS, error) {
	var t TBS
	if strings.TrimSpace(s) == "" {
		return t, nil
	}
	seen := map[string]string{} // key → the part that gave it
	var minDay, maxDay time.Time
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return TBS{}, &TBSError{Part: part, Rule: "is empty: separate the parts with single commas"}
		}
		key, value, ok := strings.Cut(part, ":")
		if !ok {
			return TBS{}, &TBSError{Part: part, Rule: "must be a key and a value such as qdr:d or sbd:1"}
		}
		key = strings.ToLower(key)
		if prev, dup := seen[key]; dup {
			return TBS{}, &TBSError{Part: part, Rule: fmt.Sprintf("repeats %s: give each key once", prev)}
		}
		seen[key] = part
		switch key {
		case "qdr":
			after, rule := qdrSince(strings.ToLower(value), now)
			if rule != "" {
				return TBS{}, &TBSError{Part: part, Rule: rule}
			}
			t.After = after
		case "sbd":
			switch value {
			case "1":
				t.SortByDate = true
			case "0":
			default:
				return TBS{}, &TBSError{Part: part, Rule: "must be sbd:1 or sbd:0"}
			}
		case "cdr":
			if value != "1" {
				return TBS{}, &TBSError{Part: part, Rule: "must be cdr:1"}
			}
		case "cd_min", "cd_max":
			day, err := time.Parse("1/2/2006", value)
			if err != nil {
				return TBS{}, &TBSError{Part: part, Rule: "must be a date as MM/DD/YYYY, for example " + key + ":01/31/2024"}
			}
			if key == "cd_min" {
				minDay = day
			} else {
				maxDay = day
			}
		default:
			return TBS{}, &TBSError{Part: part, Rule: "is not a tbs key: use qdr, cdr, cd_min, cd_max or sbd"}
		}
	}

	qdr, cdr, cdMin, cdMax := seen["qdr"], seen["cdr"], seen["cd_min"], seen["cd_max"]
	switch {
	case qdr != "" && cdr != "":
		return TBS{}, &TBSError{Part: qdr, Rule: "cannot be combined with " + cdr + ": use a preset or a custom range"}
	case cdr == "" && cdMin != "":
		return TBS{}, &TBSError{Part: cdMin, Rule: "needs cdr:1"}
	case cdr == "" && cdMax != "":
		return TBS{}, &TBSError{Part: cdMax, Rule: "needs cdr:1"}
	case cdr != "" && cdMin == "" && cdMax == "":
		return TBS{}, &TBSError{Part: cdr, Rule: "needs cd_min:MM/DD/YYYY, cd_max:MM/DD/YYYY or both"}
	case cdMin != "" && cdMax != "" && minDay.After(maxDay):
		return TBS{}, &TBSError{Part: cdMin, Rule: "is after " + cdMax}
	}
	if cdMin != "" {
		// After is exclusive, and a document known only by its date is dated
		// at midnight: start one nanosecond earlier so cd_min's day is whole.
		t.After = minDay.Add(-time.Nanosecond)
	}
	if cdMax != "" {
		t.Before = maxDay.AddDate(0, 0, 1).Add(-time.Nanosecond)
	}
	return t, nil
}

// qdrSince returns the start of the qdr preset value ("d", "w3") counted back
// from now, or the rule the value breaks.
func qdrSince(value string, now time.Time) (time.Time, string) {
	const units = "must be qdr:h, qdr:d, qdr:w, qdr:m or qdr:y"
	if value == "" || !strings.Contains("hdwmy", value[:1]) {
		return time.Time{}, units
	}
	n := 1
	if count := value[1:]; count != "" {
		var err error
		n, err = strconv.Atoi(count)
		if err != nil || n < 1 || n > maxQDRCount || count[0] < '0' || count[0] > '9' {
			return time.Time{}, fmt.Sprintf("must be qdr:%s followed by a count from 1 to %d, as in qdr:%s3", value[:1], maxQDRCount, value[:1])
		}
	}
	switch value[0] {
	case 'h':
		return now.Add(-time.Duration(n) * time.Hour), ""
	case 'd':
		return now.Add(-time.Duration(n) * 24 * time.Hour), ""
	case 'w':
		return now.Add(-time.Duration(n) * 7 * 24 * time.Hour), ""
	case 'm':
		return monthsBefore(now, n), ""
	default: // 'y'
		return monthsBefore(now, 12*n), ""
	}
}

// monthsBefore returns t moved n calendar months back, on the same day of
// the month or the last day of a shorter month: a month before March 31 is
// February 28 or 29, where time.AddDate would give March 2 or 3.
func monthsBefore(t time.Time, n int) time.Time {
	y, m, d := t.Date()
	first := time.Date(y, m-time.Month(n), 1, 0, 0, 0, 0, t.Location())
	last := time.Date(first.Year(), first.Month()+1, 0, 0, 0, 0, 0, t.Location()).Day()
	return time.Date(first.Year(), first.Month(), min(d, last),
		t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), t.Location())
}
