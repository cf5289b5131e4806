// The page side of the branding format (scrape/branding.go). It runs once,
// in an isolated world of the rendered page (the page's own scripts cannot
// see or patch what it uses), and reads what the page shows: computed
// styles of the visible elements in the first four viewport heights, the
// root's custom properties, the head's icons and meta, the readable
// stylesheets' @font-face, @keyframes and reduced-motion rules. It measures
// and aggregates; it chooses only what needs the DOM to choose (the logo,
// the layout). Go ranks the rest (colours, buttons, typography, spacing):
// see brandOf.
//
// Every colour leaves as "#rrggbb", or "rgba(r, g, b, a)" when translucent;
// every URL absolute. The walk stops after maxElements elements or budgetMs
// milliseconds (a huge page is read from its top), and says so in truncated.
(() => {
  'use strict';

  const started = performance.now();
  const budgetMs = 100;
  const maxElements = 12000;
  const d = document;
  const html = d.documentElement;
  const body = d.body || html;
  const vw = innerWidth, vh = innerHeight;
  const sx = scrollX, sy = scrollY;
  const limitY = 4 * vh; // the part of the page whose paint is weighed
  const out = { vw, vh, elements: 0, truncated: false };

  const absURL = (u) => {
    if (!u) return '';
    try {
      const x = new URL(u, d.baseURI);
      return x.protocol === 'http:' || x.protocol === 'https:' || x.protocol === 'data:' ? x.href : '';
    } catch (e) {
      return '';
    }
  };
  const attr = (el, name) => (el.getAttribute && el.getAttribute(name)) || '';

  // Colours: any CSS colour to [r, g, b, a], through a 1x1 canvas for what
  // is not already rgb() (computed styles are, except lab(), oklch() and
  // friends).
  let ctx = null;
  const colours = new Map();
  const rgbRE = /^rgba?\(\s*([\d.]+)[,\s]+([\d.]+)[,\s]+([\d.]+)(?:\s*[,/]\s*([\d.]+)(%?))?\s*\)$/;
  function toRGBA(v) {
    if (!v) return null;
    v = String(v).trim();
    if (colours.has(v)) return colours.get(v);
    let c = null;
    const m = rgbRE.exec(v);
    if (m) {
      let a = m[4] === undefined ? 1 : parseFloat(m[4]) / (m[5] ? 100 : 1);
      c = [Math.round(+m[1]), Math.round(+m[2]), Math.round(+m[3]), Math.min(1, Math.max(0, a))];
    } else if (v.toLowerCase() === 'transparent') {
      c = [0, 0, 0, 0];
    } else if (!/var\(|currentcolor|inherit|initial|unset|revert/i.test(v) && CSS.supports('color', v)) {
      try {
        if (!ctx) ctx = new OffscreenCanvas(1, 1).getContext('2d', { willReadFrequently: true });
        ctx.clearRect(0, 0, 1, 1);
        ctx.fillStyle = v;
        ctx.fillRect(0, 0, 1, 1);
        const p = ctx.getImageData(0, 0, 1, 1).data;
        c = [p[0], p[1], p[2], p[3] / 255];
      } catch (e) {
        c = null;
      }
    }
    colours.set(v, c);
    return c;
  }
  const hex2 = (n) => n.toString(16).padStart(2, '0');
  function css(c) {
    if (!c) return '';
    if (c[3] >= 0.995) return '#' + hex2(c[0]) + hex2(c[1]) + hex2(c[2]);
    return `rgba(${c[0]}, ${c[1]}, ${c[2]}, ${Math.round(c[3] * 100) / 100})`;
  }
  const chroma = (c) => Math.max(c[0], c[1], c[2]) - Math.min(c[0], c[1], c[2]);
  const dist = (a, b) => Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
  const add = (m, k, v) => { if (k) m[k] = (m[k] || 0) + v; };
  const px = (v) => parseFloat(v) || 0;
  const round = (n) => Math.round(n * 100) / 100;
  // len rounds the pixel lengths of a computed value to two decimals.
  const len = (v) => String(v).replace(/(\d+\.\d{3,})px/g, (_, n) => round(+n) + 'px');
  // sideIndex maps a shorthand of 1 to 4 values to its top, right, bottom
  // and left.
  const sideIndex = [[0, 0, 0, 0], [0, 1, 0, 1], [0, 1, 2, 1], [0, 1, 2, 3]];
  const box = (t, r, b, l) => len(t === r && r === b && b === l ? t : t === b && r === l ? `${t} ${r}` : r === l ? `${t} ${r} ${b}` : `${t} ${r} ${b} ${l}`);

  // The canvas: the root's background, else the body's (which CSS
  // propagates to the canvas), else the browser's default for the page's
  // colour scheme.
  const rootCS = getComputedStyle(html);
  const bodyCS = getComputedStyle(body);
  out.scheme = rootCS.colorScheme || '';
  let canvas = toRGBA(rootCS.backgroundColor);
  let bodyPropagated = false;
  if (!canvas || canvas[3] < 0.05) {
    canvas = toRGBA(bodyCS.backgroundColor);
    bodyPropagated = true;
    if (!canvas || canvas[3] < 0.05) {
      canvas = /\bdark\b/.test(out.scheme) && !/\blight\b/.test(out.scheme) ? [18, 18, 18, 1] : [255, 255, 255, 1];
    }
  }
  const docH = Math.max(html.scrollHeight, body.scrollHeight, vh);
  // paints are the backgrounds met, each with the area it shows: its box
  // less the boxes of the painted elements inside it.
  // Those of status elements and code are aside: not the brand's colours.
  const paints = [{ c: canvas, area: vw * Math.min(docH, limitY), aside: false }];

  const borders = {};
  const runs = {};
  const paddings = {};
  const margins = {};
  const radii = {};
  const durations = {};
  const timings = {};
  const icons = { svg: 0, font: 0, image: 0 };
  const buttons = [];
  const logoCandidates = [];
  const widths = [];
  const status = { success: [], warning: [], error: [] };
  let input = null;

  const statusWords = {
    success: 'success', positive: 'success', valid: 'success',
    warning: 'warning', warn: 'warning', caution: 'warning',
    error: 'error', danger: 'error', destructive: 'error', invalid: 'error', critical: 'error', negative: 'error',
  };
  const skip = new Set(['script', 'style', 'noscript', 'template', 'head', 'meta', 'link', 'title', 'iframe', 'object', 'embed', 'br', 'wbr', 'option', 'datalist']);
  const textInputs = new Set(['text', 'email', 'search', 'password', 'url', 'tel', 'number']);
  const buttonWords = /(^|[\s_-])(btn|button|cta)([\s_-]|$)/i;
  // Wrappers of highlighted code (Pygments, Highlight.js, Prism, Shiki,
  // Pandoc), when they hold a <pre>: their chrome (a copy button, a
  // language tab) is the highlighter's, not the brand's.
  const codeBlock = /(^|\s)(highlight(-[\w-]+)?|codehilite|sourceCode|hljs|prism[\w-]*|shiki|code-?block)(\s|$)/;
  const iconFont = /(^|\s)(fa|fas|far|fab|fa-solid|fa-regular|material-icons|material-symbols-\w+|bi|glyphicon|icon)(\s|-|$)/i;

  // sideBorders adds the element's borders to borders (unless aside: in a
  // status element or code) and reports whether it has one all round.
  function sideBorders(cs, r, aside) {
    if (cs.borderWidth === '0px') return false; // one read for the usual case
    let all = true;
    for (const [side, length] of [['Top', r.width], ['Right', r.height], ['Bottom', r.width], ['Left', r.height]]) {
      const w = px(cs['border' + side + 'Width']);
      const st = cs['border' + side + 'Style'];
      const c = w > 0 && st !== 'none' && st !== 'hidden' ? toRGBA(cs['border' + side + 'Color']) : null;
      if (!c || c[3] < 0.05) {
        all = false;
        continue;
      }
      if (!aside) add(borders, css(c), length * w);
    }
    return all;
  }

  // inProse reports whether a link sits in running text: its parent has
  // words of its own around it.
  function inProse(a) {
    let i = 0;
    for (let n = a.parentElement && a.parentElement.firstChild; n && i < 64; n = n.nextSibling, i++) {
      if (n.nodeType === 3 && /[^\s\p{P}]{2}/u.test(n.data)) return true;
    }
    return false;
  }

  function statusOf(el) {
    const cls = attr(el, 'class');
    if (!cls) return '';
    for (const tok of cls.toLowerCase().split(/[^a-z]+/)) {
      if (statusWords[tok]) return statusWords[tok];
    }
    return '';
  }

  // Iterative walk: each entry is an element with its nearest painted
  // ancestor (an index of paints), whether it is inside a status element
  // (an alert, a badge: its colours are success, warning and error, not the
  // brand's) and the role of its text: text, link (a link in running text),
  // navlink (a link standing alone, as in menus), heading, button, code
  // (whose syntax colours are not the brand's either) or status.
  const stack = [[body, 0, false, 'text']];
  while (stack.length) {
    const [el, parentPaint, inStatus, parentRole] = stack.pop();
    if (++out.elements > maxElements || (out.elements % 256 === 0 && performance.now() - started > budgetMs)) {
      out.truncated = true;
      break;
    }
    const tag = el.localName;
    if (skip.has(tag)) continue;
    const cs = getComputedStyle(el);
    if (cs.display === 'none' || cs.opacity === '0') continue;
    const r = el.getBoundingClientRect();
    const fixed = cs.position === 'fixed';
    const top = r.top + (fixed ? 0 : sy), left = r.left + (fixed ? 0 : sx);
    if (top > limitY) continue; // below the part of the page that is read
    const visible = cs.visibility === 'visible' && r.width > 1 && r.height > 1;
    const area = Math.max(0, Math.min(left + r.width, vw) - Math.max(left, 0)) * Math.max(0, Math.min(top + r.height, limitY) - Math.max(top, 0));
    const shown = visible && area > 0;

    let statusOn = inStatus;
    let paint = parentPaint;
    let role = parentRole;
    if (tag === 'code' || tag === 'pre' || tag === 'kbd' || tag === 'samp' || codeBlock.test(attr(el, 'class')) && el.querySelector('pre')) role = 'code';
    if (shown) {
      const kind = statusOf(el);
      if (kind) {
        statusOn = true;
        // The element's most colourful paint: its background, border or
        // text, whichever is most saturated.
        let best = null;
        for (const v of [cs.backgroundColor, px(cs.borderLeftWidth) > 0 ? cs.borderLeftColor : '', px(cs.borderTopWidth) > 0 ? cs.borderTopColor : '', cs.color]) {
          const c = toRGBA(v);
          if (c && c[3] >= 0.5 && (!best || chroma(c) > chroma(best))) best = c;
        }
        if (best && chroma(best) >= 40 && status[kind].length < 8) status[kind].push(css(best));
      }
      if (!(el === body && bodyPropagated)) {
        const bg = toRGBA(cs.backgroundColor);
        if (bg && bg[3] > 0.05) {
          if (paint >= 0) paints[paint].area -= area;
          paints.push({ c: bg, area, aside: statusOn || role === 'code' });
          paint = paints.length - 1;
        }
      }
    }
    const behind = paints[Math.max(parentPaint, 0)].c;
    const ownBg = paint !== parentPaint ? paints[paint].c : null;

    if (shown) {
      const allBorders = sideBorders(cs, r, statusOn || role === 'code');
      if (ownBg || allBorders) add(radii, len(cs.borderTopLeftRadius), 1);
      // The shorthands: one read each, "0px" for most elements.
      for (const [into, v] of [[paddings, cs.padding], [margins, cs.margin]]) {
        if (v === '0px') continue;
        const sides = v.split(' ');
        for (const i of sideIndex[sides.length - 1] || []) {
          const n = Math.round(px(sides[i]));
          if (n >= 1 && n <= 128) add(into, String(n), 1);
        }
      }
      if (cs.maxWidth.endsWith('px') && r.width >= 320 && r.width < vw) widths.push([len(cs.maxWidth), r.width * r.height]);

      // Buttons: <button>, input buttons, role=button, and links that look
      // like one (a box of their own: padded, and filled or outlined).
      let isButton = false;
      if (tag === 'button' || tag === 'input' && /^(submit|button|reset)$/.test(el.type) || attr(el, 'role') === 'button') {
        isButton = !el.disabled;
      } else if (tag === 'a' && el.hasAttribute('href') && cs.display !== 'inline') {
        const padX = px(cs.paddingLeft) + px(cs.paddingRight);
        const filled = ownBg && ownBg[3] >= 0.5 && dist(ownBg, behind) > 12;
        isButton = padX >= 12 && (filled || allBorders) || buttonWords.test(attr(el, 'class')) && (filled || allBorders || padX >= 12);
      }
      if (isButton) {
        role = 'button';
        if (r.width >= 24 && r.width <= 600 && r.height >= 16 && r.height <= 120 && buttons.length < 200) {
          const bw = px(cs.borderTopWidth);
          const bc = bw > 0 && cs.borderTopStyle !== 'none' ? toRGBA(cs.borderTopColor) : null;
          buttons.push({
            bg: css(ownBg || [0, 0, 0, 0]), behind: css(behind), text: css(toRGBA(cs.color)),
            border: bc && bc[3] > 0.05 ? css(bc) : '', borderWidth: bw, radius: len(cs.borderTopLeftRadius),
            padding: box(cs.paddingTop, cs.paddingRight, cs.paddingBottom, cs.paddingLeft),
            w: round(r.width), h: round(r.height), x: round(left), y: round(top),
          });
        }
      } else if (/^h[1-6]$/.test(tag) && role !== 'code') {
        role = 'heading';
      } else if (tag === 'a' && el.hasAttribute('href') && role === 'text') {
        role = inProse(el) ? 'link' : 'navlink';
      }
      if (tag === 'a' || tag === 'button' || tag === 'input' || role === 'button') {
        const dur = cs.transitionDuration.split(',')[0].trim();
        if (dur && px(dur) > 0) {
          add(durations, dur, 1);
          add(timings, cs.transitionTimingFunction.split(/,(?![^(]*\))/)[0].trim(), 1);
        }
      }
      if (!input && (tag === 'input' && textInputs.has(el.type) || tag === 'textarea') && r.width >= 60) {
        const bw = px(cs.borderTopWidth);
        const bc = bw > 0 && cs.borderTopStyle !== 'none' ? toRGBA(cs.borderTopColor) : null;
        input = {
          background: css(ownBg || behind), textColor: css(toRGBA(cs.color)),
          borderColor: bc && bc[3] > 0.05 ? css(bc) : '', borderWidth: bw ? len(cs.borderTopWidth) : '',
          borderRadius: len(cs.borderTopLeftRadius), padding: box(cs.paddingTop, cs.paddingRight, cs.paddingBottom, cs.paddingLeft),
          height: round(r.height) + 'px',
        };
      }

      // Icons and logo candidates.
      const small = r.width >= 8 && r.width <= 40 && r.height >= 8 && r.height <= 40;
      if (tag === 'svg') {
        if (small) icons.svg++;
        logoCandidates.push([el, r, top, left, 'svg']);
      } else if (tag === 'img') {
        if (small) icons.image++;
        logoCandidates.push([el, r, top, left, 'img']);
      } else if ((tag === 'i' || tag === 'span') && small && iconFont.test(attr(el, 'class'))) {
        icons.font++;
      } else if (cs.backgroundImage.startsWith('url(') && /logo|brand/i.test(attr(el, 'class') + ' ' + el.id)) {
        logoCandidates.push([el, r, top, left, 'bg']);
      }

      // The element's own text, weighed by the area it covers; a code
      // block's as a whole (a highlighter's token spans are not read one by
      // one).
      if (cs.visibility === 'visible') {
        let chars = 0;
        if (role === 'code') {
          chars = el.textContent.replace(/\s+/g, ' ').trim().length;
        } else {
          for (let n = el.firstChild; n; n = n.nextSibling) {
            if (n.nodeType === 3) chars += n.data.replace(/\s+/g, ' ').trim().length;
          }
        }
        if (chars > 0) {
          const fs = px(cs.fontSize);
          const key = [statusOn ? 'status' : role, css(toRGBA(cs.color)), cs.fontFamily, len(cs.fontSize), cs.fontWeight, len(cs.lineHeight)].join('\u0001');
          add(runs, key, chars * fs * fs * 0.5);
        }
      }
    }
    if (tag === 'svg' || tag === 'img' || tag === 'select' || tag === 'textarea' || role === 'code') continue;
    // Children in document order: pushed last first.
    const kids = el.children;
    for (let i = kids.length - 1; i >= 0; i--) stack.push([kids[i], paint, statusOn, role]);
  }

  out.paints = {};
  for (const p of paints) if (!p.aside) add(out.paints, css(p.c), Math.max(0, p.area));
  out.canvas = css(canvas);
  out.borders = borders;
  out.runs = Object.entries(runs).map(([k, area]) => {
    const [role, color, family, size, weight, lineHeight] = k.split('\u0001');
    return { role, color, family, size, weight: parseInt(weight, 10) || 400, lineHeight, area: Math.round(area) };
  });
  out.buttons = buttons;
  out.input = input;
  out.paddings = paddings;
  out.margins = margins;
  out.radii = radii;
  out.icons = icons;
  out.status = status;

  // Headings, code and the first paragraph.
  const firstShown = (sel) => {
    for (const el of d.querySelectorAll(sel)) {
      if (el.checkVisibility ? el.checkVisibility({ visibilityProperty: true }) : el.getClientRects().length) return el;
    }
    return null;
  };
  out.headings = {};
  for (const h of ['h1', 'h2', 'h3']) {
    const el = firstShown(h);
    if (!el) continue;
    const cs = getComputedStyle(el);
    out.headings[h] = {
      family: cs.fontFamily, size: len(cs.fontSize), weight: parseInt(cs.fontWeight, 10) || 400, lineHeight: len(cs.lineHeight),
      margin: box(cs.marginTop, cs.marginRight, cs.marginBottom, cs.marginLeft),
    };
  }
  const code = firstShown('code, pre, kbd, samp');
  if (code) out.code = getComputedStyle(code).fontFamily;
  // The first paragraph of prose, in the main content if the page marks it.
  const paragraph = (sel) => {
    let i = 0;
    for (const p of d.querySelectorAll(sel)) {
      if (++i > 200) break;
      if (p.textContent.trim().length >= 40 && p.getClientRects().length) return p;
    }
    return null;
  };
  const para = paragraph('main p, article p, [role=main] p') || paragraph('p');
  if (para) {
    const cs = getComputedStyle(para);
    out.paragraphMargin = box(cs.marginTop, cs.marginRight, cs.marginBottom, cs.marginLeft);
  }

  // The head: theme colour, Open Graph image, icons.
  for (const m of d.querySelectorAll('meta[name="theme-color" i]')) {
    const media = attr(m, 'media');
    if (media && !matchMedia(media).matches) continue;
    const c = toRGBA(attr(m, 'content'));
    if (c) {
      out.themeColor = css(c);
      break;
    }
  }
  const og = d.querySelector('meta[property="og:image" i], meta[property="og:image:url" i], meta[property="og:image:secure_url" i], meta[name="og:image" i]');
  if (og) out.ogImage = absURL(attr(og, 'content'));
  for (const l of d.querySelectorAll('link[rel][href]')) {
    const rels = attr(l, 'rel').toLowerCase().split(/\s+/);
    const href = absURL(attr(l, 'href'));
    if (!href) continue;
    if (rels.includes('icon') && !out.favicon) out.favicon = href;
    if ((rels.includes('apple-touch-icon') || rels.includes('apple-touch-icon-precomposed')) && !out.appleTouchIcon) out.appleTouchIcon = href;
    if (rels.includes('mask-icon') && !out.maskIcon) out.maskIcon = href;
    if (rels.includes('manifest') && !out.manifest) out.manifest = href;
  }

  // The root's custom properties that hold colours (computed styles list
  // them whatever stylesheet set them, cross-origin ones included).
  out.vars = [];
  for (let i = 0; i < rootCS.length && out.vars.length < 400; i++) {
    const name = rootCS[i];
    if (!name.startsWith('--')) continue;
    let v = rootCS.getPropertyValue(name).trim();
    if (!v || v.length > 100) continue;
    // Bare channels, as Tailwind and shadcn/ui write them: "222 47% 11%".
    if (/^-?[\d.]+(deg)?\s+[\d.]+%\s+[\d.]+%$/.test(v)) v = `hsl(${v})`;
    const c = toRGBA(v);
    if (c && c[3] > 0) out.vars.push([name, css(c)]);
  }

  // Readable stylesheets: @font-face families, @keyframes, reduced motion.
  const faces = new Set();
  const keyframes = [];
  let rules = 0;
  const readRules = (list) => {
    for (const rule of list) {
      if (++rules > 20000) return;
      if (rule instanceof CSSFontFaceRule) {
        const f = rule.style.getPropertyValue('font-family').trim().replace(/^["']|["']$/g, '');
        if (f) faces.add(f);
      } else if (rule instanceof CSSKeyframesRule) {
        if (keyframes.length < 20 && !keyframes.includes(rule.name)) keyframes.push(rule.name);
      } else if (rule instanceof CSSImportRule) {
        if (rule.styleSheet) readSheet(rule.styleSheet);
      } else if (rule.cssRules) {
        if (rule instanceof CSSMediaRule && /prefers-reduced-motion/.test(rule.conditionText || '')) out.reducedMotion = true;
        readRules(rule.cssRules);
      }
    }
  };
  const readSheet = (sheet) => {
    let list;
    try {
      list = sheet.cssRules;
    } catch (e) {
      return; // cross-origin without CORS
    }
    if (list) readRules(list);
  };
  for (const sheet of d.styleSheets) readSheet(sheet);
  for (const f of d.fonts || []) {
    if (f.status === 'loaded') faces.add(f.family.replace(/^["']|["']$/g, ''));
  }
  out.fontFaces = [...faces];
  out.keyframes = keyframes;
  out.durations = durations;
  out.timings = timings;

  // The logo: the best-placed image or inline SVG of the page's top, named
  // so or linking home; else the touch icon, the favicon, the Open Graph
  // image.
  const headerish = /(^|[\s_-])(header|navbar|topbar|top-bar|masthead|site-nav|banner|brand)([\s_-]|$)/i;
  const isHome = (a) => {
    try {
      const u = new URL(a.href);
      if (u.origin !== location.origin) return false;
      const p = u.pathname.replace(/index\.html?$/, '');
      return p === '/' || p.endsWith('/') && location.pathname.startsWith(p) && p.split('/').length <= 3;
    } catch (e) {
      return false;
    }
  };
  const words = (el) => el ? [attr(el, 'class'), el.id, attr(el, 'alt'), attr(el, 'aria-label'), attr(el, 'title')].join(' ') : '';
  let best = null;
  for (const [el, r, top, left, kind] of logoCandidates) {
    let url = '';
    if (kind === 'img') url = absURL(el.currentSrc || el.src);
    if (kind === 'bg') {
      const m = /url\(["']?(.*?)["']?\)/.exec(getComputedStyle(el).backgroundImage);
      url = m ? absURL(m[1]) : '';
    }
    if (kind !== 'svg' && !url) continue;
    let s = 0;
    const file = kind === 'img' ? url.split(/[?#]/)[0].split('/').pop() : '';
    const link = el.closest('a[href]');
    if (/logo|brand/i.test(words(el) + ' ' + file)) s += 4;
    else if (/logo|brand/i.test(words(link) + ' ' + words(el.parentElement))) s += 3;
    let inHeader = !!el.closest('header, [role=banner], nav');
    for (let a = el.parentElement, i = 0; a && !inHeader && i < 6; a = a.parentElement, i++) {
      inHeader = headerish.test(attr(a, 'class') + ' ' + a.id);
    }
    if (inHeader) s += 3;
    if (el.closest('footer, [role=contentinfo]')) s -= 4;
    if (el.closest('button, [role=button], form, label')) s -= 3;
    if (link && isHome(link)) s += 2;
    s += top < 200 ? 2 : top < 600 ? 0 : -3;
    if (left < vw / 3) s += 1;
    if (r.width < 12 || r.height < 10 || r.width > 600 || r.height > 300) s -= 4;
    if (s >= 6 && (!best || s > best[0])) best = [s, el, kind, url];
  }
  if (best && best[2] === 'svg') {
    best[3] = svgURL(best[1]);
    if (!best[3]) best = null;
  }
  out.logo = best ? best[3] : '';
  out.logoFrom = best ? best[2] : '';

  // svgURL serialises an inline SVG as a data: URL, with the symbols it
  // <use>s copied in and its text colour fixed (for currentColor).
  function svgURL(svg) {
    const clone = svg.cloneNode(true);
    clone.setAttribute('xmlns', 'http://www.w3.org/2000/svg');
    const r = svg.getBoundingClientRect();
    if (!clone.getAttribute('width')) clone.setAttribute('width', String(Math.round(r.width)));
    if (!clone.getAttribute('height')) clone.setAttribute('height', String(Math.round(r.height)));
    clone.style.color = getComputedStyle(svg).color;
    const seen = new Set();
    let defs = null;
    for (const u of clone.querySelectorAll('use')) {
      const ref = u.getAttribute('href') || u.getAttribute('xlink:href') || '';
      const id = ref.slice(1);
      if (!ref.startsWith('#') || seen.has(id) || clone.querySelector(`[id="${CSS.escape(id)}"]`)) continue;
      seen.add(id);
      const target = d.getElementById(id);
      if (!target) continue;
      if (!defs) {
        defs = d.createElementNS('http://www.w3.org/2000/svg', 'defs');
        clone.insertBefore(defs, clone.firstChild);
      }
      defs.appendChild(target.cloneNode(true));
    }
    const bytes = new TextEncoder().encode(new XMLSerializer().serializeToString(clone));
    if (bytes.length > 65536) return ''; // not a logo: an illustration
    let bin = '';
    for (const b of bytes) bin += String.fromCharCode(b);
    return 'data:image/svg+xml;base64,' + btoa(bin);
  }

  // Layout: the content's max width, the header's height and position.
  widths.sort((a, b) => b[1] - a[1]);
  out.layout = {};
  if (widths.length) out.layout.maxContentWidth = widths[0][0];
  // The page's header and footer: the first as wide as half the window (an
  // article's own <header> is narrower).
  const wide = (sel) => {
    for (const el of d.querySelectorAll(sel)) {
      const r = el.getBoundingClientRect();
      if (r.width >= vw / 2 && r.height > 0) return [el, r];
    }
    return null;
  };
  const header = wide('header, [role=banner]');
  if (header) {
    out.layout.headerHeight = round(header[1].height) + 'px';
    out.layout.headerPosition = getComputedStyle(header[0]).position;
  }
  const footer = wide('footer, [role=contentinfo]');
  if (footer) out.layout.footerHeight = round(footer[1].height) + 'px';
  out.ms = round(performance.now() - started);
  return out;
})()
