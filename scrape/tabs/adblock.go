package tabs

import "strings"

// adHosts are ad-serving and tracking domains blocked when blockAds is on;
// a host matches when it is one of them or a subdomain of one. A short
// built-in list of the networks that dominate the web's ad and tracker
// traffic: no served Go module carries a maintained filter list.
var adHosts = map[string]bool{
	"doubleclick.net": true, "googlesyndication.com": true, "googleadservices.com": true,
	"google-analytics.com": true, "googletagmanager.com": true, "googletagservices.com": true,
	"adservice.google.com": true, "pagead2.googlesyndication.com": true, "imasdk.googleapis.com": true,
	"connect.facebook.net": true, "facebook.com/tr": true, "ads-twitter.com": true, "static.ads-twitter.com": true,
	"amazon-adsystem.com": true, "adnxs.com": true, "adsrvr.org": true, "criteo.com": true, "criteo.net": true,
	"taboola.com": true, "outbrain.com": true, "scorecardresearch.com": true, "quantserve.com": true,
	"hotjar.com": true, "mouseflow.com": true, "fullstory.com": true, "segment.io": true, "segment.com": true,
	"mixpanel.com": true, "amplitude.com": true, "newrelic.com": true, "nr-data.net": true,
	"pubmatic.com": true, "rubiconproject.com": true, "openx.net": true, "casalemedia.com": true,
	"moatads.com": true, "adform.net": true, "smartadserver.com": true, "yieldmo.com": true,
	"media.net": true, "bidswitch.net": true, "teads.tv": true, "sharethrough.com": true,
	"zedo.com": true, "advertising.com": true, "yandex.ru/ads": true, "mc.yandex.ru": true,
	"bat.bing.com": true, "clarity.ms": true, "snap.licdn.com": true, "px.ads.linkedin.com": true,
	"analytics.tiktok.com": true, "ads.pinterest.com": true, "ct.pinterest.com": true,
	"cookielaw.org": true, "onetrust.com": true, "cookiebot.com": true, "consensu.org": true,
	"trustarc.com": true, "quantcast.com": true, "didomi.io": true, "usercentrics.eu": true,
}

func IsAdHost(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for {
		if adHosts[host] {
			return true
		}
		i := strings.IndexByte(host, '.')
		if i < 0 {
			return false
		}
		host = host[i+1:]
		if !strings.Contains(host, ".") {
			return false
		}
	}
}

// hideBannersScript hides the common cookie-consent and newsletter
// overlays (when their scripts were served from the site itself) and
// restores scrolling they may have locked.
const hideBannersScript = `(() => {
  const css = '#onetrust-banner-sdk,#onetrust-consent-sdk,#CybotCookiebotDialog,#cookie-banner,#cookieBanner,' +
    '#cookie-consent,#cookieConsent,.cookie-banner,.cookie-consent,.cookie-notice,.cc-window,.cc-banner,' +
    '#gdpr-banner,.gdpr-banner,[aria-label="cookieconsent"],[id^="sp_message_container"],.fc-consent-root,' +
    '#didomi-host,#usercentrics-root,.qc-cmp2-container,.newsletter-popup,.newsletter-modal' +
    '{display:none!important}html,body{overflow:auto!important}';
  const add = () => { const s = document.createElement('style'); s.textContent = css; (document.head || document.documentElement).appendChild(s); };
  if (document.documentElement) add(); else document.addEventListener('DOMContentLoaded', add);
})();`
