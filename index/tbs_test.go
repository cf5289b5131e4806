package index

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tbsNow is the end of a 31-day month in a leap year: a month back needs
// clamping to February 29.
var tbsNow = time.Date(2024, time.March, 31, 15, 4, 5, 0, time.UTC)

func TestParseTBS(t *testing.T) {
	t.Parallel()
	at := func(y int, m time.Month, d, h, min, s int) time.Time {
		return time.Date(y, m, d, h, min, s, 0, time.UTC)
	}
	// dayBefore is the exclusive After that keeps all of day y-m-d.
	dayBefore := func(y int, m time.Month, d int) time.Time {
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Add(-time.Nanosecond)
	}
	// endOf is the inclusive Before that ends day y-m-d.
	endOf := func(y int, m time.Month, d int) time.Time {
		return time.Date(y, m, d, 23, 59, 59, 999999999, time.UTC)
	}
	tests := []struct {
		name string
		in   string
		now  time.Time // tbsNow when zero
		want TBS
	}{
		{name: "empty", in: "", want: TBS{}},
		{name: "white space", in: "  ", want: TBS{}},

		{name: "past hour", in: "qdr:h", want: TBS{After: at(2024, 3, 31, 14, 4, 5)}},
		{name: "past day", in: "qdr:d", want: TBS{After: at(2024, 3, 30, 15, 4, 5)}},
		{name: "past week", in: "qdr:w", want: TBS{After: at(2024, 3, 24, 15, 4, 5)}},
		{name: "past month clamps to the shorter month", in: "qdr:m", want: TBS{After: at(2024, 2, 29, 15, 4, 5)}},
		{name: "past year", in: "qdr:y", want: TBS{After: at(2023, 3, 31, 15, 4, 5)}},
		{name: "past two hours", in: "qdr:h2", want: TBS{After: at(2024, 3, 31, 13, 4, 5)}},
		{name: "past three days", in: "qdr:d3", want: TBS{After: at(2024, 3, 28, 15, 4, 5)}},
		{name: "past two weeks", in: "qdr:w2", want: TBS{After: at(2024, 3, 17, 15, 4, 5)}},
		{name: "past three months", in: "qdr:m3", want: TBS{After: at(2023, 12, 31, 15, 4, 5)}},
		{name: "past thirteen months crosses a year", in: "qdr:m13", want: TBS{After: at(2023, 2, 28, 15, 4, 5)}},
		{name: "past two years", in: "qdr:y2", want: TBS{After: at(2022, 3, 31, 15, 4, 5)}},
		{name: "past year from a leap day", in: "qdr:y", now: at(2024, 2, 29, 8, 0, 0), want: TBS{After: at(2023, 2, 28, 8, 0, 0)}},
		{name: "past month from mid-month", in: "qdr:m", now: at(2024, 1, 15, 8, 0, 0), want: TBS{After: at(2023, 12, 15, 8, 0, 0)}},
		{name: "past day counts in hours across a time zone", in: "qdr:d",
			now:  time.Date(2024, 3, 31, 12, 0, 0, 0, time.FixedZone("UTC+2", 2*3600)),
			want: TBS{After: time.Date(2024, 3, 30, 12, 0, 0, 0, time.FixedZone("UTC+2", 2*3600))}},
		{name: "keys and units case-insensitive", in: "QDR:D,SBD:1", want: TBS{After: at(2024, 3, 30, 15, 4, 5), SortByDate: true}},

		{name: "sort by date", in: "sbd:1", want: TBS{SortByDate: true}},
		{name: "no sort by date", in: "sbd:0", want: TBS{}},
		{name: "sort by date with a preset", in: "sbd:1,qdr:w", want: TBS{After: at(2024, 3, 24, 15, 4, 5), SortByDate: true}},
		{name: "spaces around parts", in: " qdr:d , sbd:1 ", want: TBS{After: at(2024, 3, 30, 15, 4, 5), SortByDate: true}},

		{name: "custom range", in: "cdr:1,cd_min:01/02/2024,cd_max:01/31/2024", want: TBS{After: dayBefore(2024, 1, 2), Before: endOf(2024, 1, 31)}},
		{name: "custom range from only", in: "cdr:1,cd_min:12/25/2023", want: TBS{After: dayBefore(2023, 12, 25)}},
		{name: "custom range to only", in: "cdr:1,cd_max:12/25/2023", want: TBS{Before: endOf(2023, 12, 25)}},
		{name: "custom range of one day", in: "cdr:1,cd_min:2/29/2024,cd_max:02/29/2024", want: TBS{After: dayBefore(2024, 2, 29), Before: endOf(2024, 2, 29)}},
		{name: "custom range single-digit month and day", in: "cdr:1,cd_min:1/2/2024", want: TBS{After: dayBefore(2024, 1, 2)}},
		{name: "custom range in any order", in: "cd_max:01/31/2024,sbd:1,cd_min:01/02/2024,cdr:1",
			want: TBS{After: dayBefore(2024, 1, 2), Before: endOf(2024, 1, 31), SortByDate: true}},
		{name: "custom range ignores now's zone", in: "cdr:1,cd_max:01/31/2024", now: time.Date(2024, 3, 1, 0, 0, 0, 0, time.FixedZone("UTC-5", -5*3600)),
			want: TBS{Before: endOf(2024, 1, 31)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			now := tc.now
			if now.IsZero() {
				now = tbsNow
			}
			got, err := ParseTBS(tc.in, now)
			require.NoError(t, err)
			require.True(t, tc.want.After.Equal(got.After), "After: want %v, got %v", tc.want.After, got.After)
			require.True(t, tc.want.Before.Equal(got.Before), "Before: want %v, got %v", tc.want.Before, got.Before)
			require.Equal(t, tc.want.SortByDate, got.SortByDate)
		})
	}
}

// TestParseTBSCustomRangeDays checks that a custom range keeps whole days at
// both ends, given that After is exclusive and Before inclusive: a page
// known only by its date is dated at midnight.
func TestParseTBSCustomRangeDays(t *testing.T) {
	t.Parallel()
	tbs, err := ParseTBS("cdr:1,cd_min:01/02/2024,cd_max:01/03/2024", tbsNow)
	require.NoError(t, err)
	in := func(d time.Time) bool { return d.After(tbs.After) && !d.After(tbs.Before) }
	tests := []struct {
		name string
		date time.Time
		want bool
	}{
		{name: "last moment of the day before", date: time.Date(2024, 1, 1, 23, 59, 59, 999999999, time.UTC), want: false},
		{name: "midnight of cd_min", date: time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC), want: true},
		{name: "midnight of cd_max", date: time.Date(2024, 1, 3, 0, 0, 0, 0, time.UTC), want: true},
		{name: "last moment of cd_max", date: time.Date(2024, 1, 3, 23, 59, 59, 999999999, time.UTC), want: true},
		{name: "midnight after cd_max", date: time.Date(2024, 1, 4, 0, 0, 0, 0, time.UTC), want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, in(tc.date))
		})
	}
}

func TestParseTBSErrors(t *testing.T) {
	t.Parallel()
	const units = "must be qdr:h, qdr:d, qdr:w, qdr:m or qdr:y"
	const dCount = "must be qdr:d followed by a count from 1 to 10000, as in qdr:d3"
	const needsDates = "needs cd_min:MM/DD/YYYY, cd_max:MM/DD/YYYY or both"
	tests := []struct {
		name string
		in   string
		want TBSError
	}{
		{name: "unknown unit", in: "qdr:z", want: TBSError{"qdr:z", units}},
		{name: "no unit", in: "qdr:", want: TBSError{"qdr:", units}},
		{name: "count before unit", in: "qdr:3d", want: TBSError{"qdr:3d", units}},
		{name: "zero count", in: "qdr:d0", want: TBSError{"qdr:d0", dCount}},
		{name: "negative count", in: "qdr:d-1", want: TBSError{"qdr:d-1", dCount}},
		{name: "signed count", in: "qdr:d+2", want: TBSError{"qdr:d+2", dCount}},
		{name: "count too large", in: "qdr:d10001", want: TBSError{"qdr:d10001", dCount}},
		{name: "count overflowing", in: "qdr:d99999999999999999999", want: TBSError{"qdr:d99999999999999999999", dCount}},
		{name: "word for a unit", in: "qdr:hour", want: TBSError{"qdr:hour", "must be qdr:h followed by a count from 1 to 10000, as in qdr:h3"}},

		{name: "sbd other than 0 or 1", in: "sbd:2", want: TBSError{"sbd:2", "must be sbd:1 or sbd:0"}},
		{name: "sbd true", in: "sbd:true", want: TBSError{"sbd:true", "must be sbd:1 or sbd:0"}},
		{name: "sbd empty", in: "sbd:", want: TBSError{"sbd:", "must be sbd:1 or sbd:0"}},
		{name: "cdr 0", in: "cdr:0,cd_min:01/02/2024", want: TBSError{"cdr:0", "must be cdr:1"}},

		{name: "cdr without dates", in: "cdr:1", want: TBSError{"cdr:1", needsDates}},
		{name: "cdr with only sbd", in: "sbd:1,cdr:1", want: TBSError{"cdr:1", needsDates}},
		{name: "cd_min without cdr", in: "cd_min:01/02/2024", want: TBSError{"cd_min:01/02/2024", "needs cdr:1"}},
		{name: "cd_max without cdr", in: "cd_max:01/02/2024", want: TBSError{"cd_max:01/02/2024", "needs cdr:1"}},
		{name: "cd_min with qdr and no cdr", in: "qdr:d,cd_min:01/02/2024", want: TBSError{"cd_min:01/02/2024", "needs cdr:1"}},
		{name: "cd_min after cd_max", in: "cdr:1,cd_min:02/01/2024,cd_max:01/31/2024", want: TBSError{"cd_min:02/01/2024", "is after cd_max:01/31/2024"}},
		{name: "qdr with cdr", in: "qdr:d,cdr:1,cd_min:01/02/2024", want: TBSError{"qdr:d", "cannot be combined with cdr:1: use a preset or a custom range"}},

		{name: "ISO date", in: "cdr:1,cd_min:2024-01-02", want: TBSError{"cd_min:2024-01-02", "must be a date as MM/DD/YYYY, for example cd_min:01/31/2024"}},
		{name: "day before month", in: "cdr:1,cd_max:31/01/2024", want: TBSError{"cd_max:31/01/2024", "must be a date as MM/DD/YYYY, for example cd_max:01/31/2024"}},
		{name: "no such day", in: "cdr:1,cd_max:02/30/2024", want: TBSError{"cd_max:02/30/2024", "must be a date as MM/DD/YYYY, for example cd_max:01/31/2024"}},
		{name: "two-digit year", in: "cdr:1,cd_min:01/02/24", want: TBSError{"cd_min:01/02/24", "must be a date as MM/DD/YYYY, for example cd_min:01/31/2024"}},
		{name: "empty date", in: "cdr:1,cd_min:", want: TBSError{"cd_min:", "must be a date as MM/DD/YYYY, for example cd_min:01/31/2024"}},

		{name: "unknown key", in: "qdr:d,lr:lang_en", want: TBSError{"lr:lang_en", "is not a tbs key: use qdr, cdr, cd_min, cd_max or sbd"}},
		{name: "no colon", in: "qdr", want: TBSError{"qdr", "must be a key and a value such as qdr:d or sbd:1"}},
		{name: "trailing comma", in: "qdr:d,", want: TBSError{"", "is empty: separate the parts with single commas"}},
		{name: "double comma", in: "qdr:d,,sbd:1", want: TBSError{"", "is empty: separate the parts with single commas"}},
		{name: "repeated qdr", in: "qdr:d,qdr:w", want: TBSError{"qdr:w", "repeats qdr:d: give each key once"}},
		{name: "repeated sbd", in: "sbd:1,SBD:0", want: TBSError{"SBD:0", "repeats sbd:1: give each key once"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseTBS(tc.in, tbsNow)
			var te *TBSError
			require.ErrorAs(t, err, &te)
			require.Equal(t, tc.want, *te)
			require.Zero(t, got)
		})
	}
}

func TestParseTBSErrorMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
	}{
		{in: "qdr:z", want: `tbs: "qdr:z" must be qdr:h, qdr:d, qdr:w, qdr:m or qdr:y`},
		{in: "cdr:1", want: `tbs: "cdr:1" needs cd_min:MM/DD/YYYY, cd_max:MM/DD/YYYY or both`},
		{in: "cdr:1,cd_min:02/01/2024,cd_max:01/31/2024", want: `tbs: "cd_min:02/01/2024" is after cd_max:01/31/2024`},
		{in: "qdr:w,cdr:1,cd_max:01/31/2024", want: `tbs: "qdr:w" cannot be combined with cdr:1: use a preset or a custom range`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			_, err := ParseTBS(tc.in, tbsNow)
			require.EqualError(t, err, tc.want)
		})
	}
}
