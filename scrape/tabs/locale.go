package tabs

import (
	"fmt"
	"strings"
)

// countries maps an ISO 3166-1 alpha-2 code to the timezone and languages
// a visitor from there most likely has. Countries not listed keep the
// browser's timezone and get English.
var countries = map[string]struct {
	tz    string
	langs []string
}{
	"US": {"America/New_York", []string{"en-US", "en"}},
	"CA": {"America/Toronto", []string{"en-CA", "fr-CA"}},
	"MX": {"America/Mexico_City", []string{"es-MX", "es"}},
	"BR": {"America/Sao_Paulo", []string{"pt-BR", "pt"}},
	"AR": {"America/Argentina/Buenos_Aires", []string{"es-AR", "es"}},
	"GB": {"Europe/London", []string{"en-GB", "en"}},
	"IE": {"Europe/Dublin", []string{"en-IE", "en"}},
	"DE": {"Europe/Berlin", []string{"de-DE", "de"}},
	"AT": {"Europe/Vienna", []string{"de-AT", "de"}},
	"CH": {"Europe/Zurich", []string{"de-CH", "fr-CH"}},
	"FR": {"Europe/Paris", []string{"fr-FR", "fr"}},
	"BE": {"Europe/Brussels", []string{"nl-BE", "fr-BE"}},
	"NL": {"Europe/Amsterdam", []string{"nl-NL", "nl"}},
	"ES": {"Europe/Madrid", []string{"es-ES", "es"}},
	"PT": {"Europe/Lisbon", []string{"pt-PT", "pt"}},
	"IT": {"Europe/Rome", []string{"it-IT", "it"}},
	"PL": {"Europe/Warsaw", []string{"pl-PL", "pl"}},
	"SE": {"Europe/Stockholm", []string{"sv-SE", "sv"}},
	"NO": {"Europe/Oslo", []string{"nb-NO", "no"}},
	"DK": {"Europe/Copenhagen", []string{"da-DK", "da"}},
	"FI": {"Europe/Helsinki", []string{"fi-FI", "fi"}},
	"CZ": {"Europe/Prague", []string{"cs-CZ", "cs"}},
	"GR": {"Europe/Athens", []string{"el-GR", "el"}},
	"TR": {"Europe/Istanbul", []string{"tr-TR", "tr"}},
	"UA": {"Europe/Kyiv", []string{"uk-UA", "uk"}},
	"RU": {"Europe/Moscow", []string{"ru-RU", "ru"}},
	"IL": {"Asia/Jerusalem", []string{"he-IL", "he"}},
	"AE": {"Asia/Dubai", []string{"ar-AE", "en"}},
	"SA": {"Asia/Riyadh", []string{"ar-SA", "ar"}},
	"IN": {"Asia/Kolkata", []string{"en-IN", "hi-IN"}},
	"CN": {"Asia/Shanghai", []string{"zh-CN", "zh"}},
	"HK": {"Asia/Hong_Kong", []string{"zh-HK", "en"}},
	"TW": {"Asia/Taipei", []string{"zh-TW", "zh"}},
	"JP": {"Asia/Tokyo", []string{"ja-JP", "ja"}},
	"KR": {"Asia/Seoul", []string{"ko-KR", "ko"}},
	"SG": {"Asia/Singapore", []string{"en-SG", "en"}},
	"ID": {"Asia/Jakarta", []string{"id-ID", "id"}},
	"TH": {"Asia/Bangkok", []string{"th-TH", "th"}},
	"VN": {"Asia/Ho_Chi_Minh", []string{"vi-VN", "vi"}},
	"PH": {"Asia/Manila", []string{"en-PH", "fil"}},
	"AU": {"Australia/Sydney", []string{"en-AU", "en"}},
	"NZ": {"Pacific/Auckland", []string{"en-NZ", "en"}},
	"ZA": {"Africa/Johannesburg", []string{"en-ZA", "en"}},
	"NG": {"Africa/Lagos", []string{"en-NG", "en"}},
	"EG": {"Africa/Cairo", []string{"ar-EG", "ar"}},
	"KE": {"Africa/Nairobi", []string{"en-KE", "sw"}},
}

func countryTimezone(country string) string {
	return countries[strings.ToUpper(country)].tz
}

func DefaultLanguages(country string) []string {
	if c, ok := countries[strings.ToUpper(country)]; ok {
		return c.langs
	}
	return []string{"en-US", "en"}
}

// AcceptLanguage builds an Accept-Language value with falling weights.
func AcceptLanguage(langs []string) string {
	parts := make([]string, len(langs))
	for i, l := range langs {
		parts[i] = l
		if i > 0 {
			parts[i] += fmt.Sprintf(";q=%.1f", max(1.0-0.1*float64(i), 0.1))
		}
	}
	return strings.Join(parts, ",")
}
