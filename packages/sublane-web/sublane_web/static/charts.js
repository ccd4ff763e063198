// Charts drawn as inline SVG: a daily bar chart and a weekday × hour heatmap (TEAM-5).
// No library: a few functions are enough, nothing is fetched, and the markup passes the page's
// Content-Security-Policy (presentation attributes and classes only, no inline styles). Charts are
// drawn at the width of their container, in CSS pixels, and drawn again when it changes, so their
// labels stay readable from phone to desktop width.
import {h} from "./lib.js";

// The SVG namespace, taken from an element the HTML parser made (no address in the source).
const probe = document.createElement("div");
probe.innerHTML = "<svg></svg>";
const SVG_NS = probe.firstChild.namespaceURI;

/** Create an SVG element: s("rect", {x: 1, class: "bar"}, children…). */
export function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value !== null && value !== undefined && value !== false) el.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

/** 1234 → "1.2k", 5600000 → "5.6M"; for axis labels. */
export function compact(n) {
  if (n === null || n === undefined) return "—";
  const abs = Math.abs(n);
  for (const [size, unit] of [[1e12, "T"], [1e9, "B"], [1e6, "M"], [1e3, "k"]]) {
    if (abs >= size) return `${(n / size).toFixed(abs >= size * 10 ? 0 : 1)}${unit}`;
  }
  return String(Math.round(n));
}

/** A "nice" axis maximum at or above `value` (1, 2 or 5 × a power of ten). */
function niceMax(value) {
  if (value <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) {
    if (value <= step * power) return step * power;
  }
  return 10 * power;
}

/** Redraw `draw(width)` into `holder` now and whenever the holder's width changes. */
export function responsive(holder, draw) {
  let last = -1;
  const paint = () => {
    const width = Math.floor(holder.clientWidth);
    if (width === last || width <= 0) return;
    last = width;
    holder.replaceChildren(draw(width));
  };
  new ResizeObserver(paint).observe(holder);
  requestAnimationFrame(paint);
  return holder;
}

/**
 * A bar chart of one or more stacked series per day.
 * `days`: [{label, title}], `series`: [{name, className, values: [number|null]}].
 */
export function barChart({days, series, height = 170, label, format = compact}) {
  const holder = h("div", {class: "chart"});
  return responsive(holder, (width) => {
    const left = 44, bottom = 22, top = 8, right = 6;
    const plotW = Math.max(10, width - left - right), plotH = height - top - bottom;
    const totals = days.map((_, i) => series.reduce((sum, one) => sum + (one.values[i] || 0), 0));
    const max = niceMax(Math.max(0, ...totals));
    const slot = plotW / Math.max(1, days.length);
    const barW = Math.max(1, Math.min(28, slot * 0.72));
    const y = (v) => top + plotH - (v / max) * plotH;
    const svg = s("svg", {width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": label,
      class: "chart-svg"});
    for (const tick of [0, max / 2, max]) {
      svg.append(s("line", {x1: left, x2: width - right, y1: y(tick), y2: y(tick), class: "grid"}),
        s("text", {x: left - 6, y: y(tick) + 4, class: "axis", "text-anchor": "end"}, format(tick)));
    }
    // Day labels: as many as fit without overlapping (about 44 px each), always the last day.
    const every = Math.max(1, Math.ceil(44 / slot));
    days.forEach((day, i) => {
      const x = left + i * slot + (slot - barW) / 2;
      let base = 0;
      const parts = series.map((one) => {
        const value = one.values[i] || 0;
        const rect = value > 0 ? s("rect", {x, y: y(base + value), width: barW, height: Math.max(0.5, y(base) - y(base + value)),
          class: one.className}) : null;
        base += value;
        return rect;
      });
      const text = `${day.title}: ${series.map((one) => `${one.name} ${one.values[i] === null ? "unknown" : (one.values[i] || 0).toLocaleString()}`).join(", ")}`;
      svg.append(s("g", {class: "day"}, s("title", {}, text),
        s("rect", {x: left + i * slot, y: top, width: slot, height: plotH, class: "hit"}), parts));
      if ((days.length - 1 - i) % every === 0) {
        const last = i === days.length - 1 && days.length > 1;  // kept inside the chart's right edge
        svg.append(s("text", {x: last ? left + (i + 1) * slot : left + i * slot + slot / 2, y: height - 6, class: "axis",
          "text-anchor": last ? "end" : "middle"}, day.label));
      }
    });
    return svg;
  });
}

/** Legend entries for a chart's series. */
export function legend(series) {
  return h("ul", {class: "legend"}, series.map((one) =>
    h("li", {}, h("span", {class: `swatch ${one.className}`, "aria-hidden": "true"}), one.name)));
}

const WEEKDAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];

/**
 * The 7 × 24 heatmap (UTC weekday × hour); `cells[day][hour]` requests, `tokens` the same shape.
 * Wide containers get a row per weekday; narrow ones (phones) a column per weekday and a row per
 * hour, so the cells stay large enough to see and to tap.
 */
export function heatmap({cells, tokens, label}) {
  const holder = h("div", {class: "chart"});
  const max = Math.max(0, ...cells.flat());
  const level = (v) => (v <= 0 || max <= 0 ? 0 : Math.min(5, Math.ceil((v / max) * 5)));
  return responsive(holder, (width) => {
    const tall = width < 520;
    const left = tall ? 44 : 34, top = 16, gap = 2;
    const columns = tall ? 7 : 24, rows = tall ? 24 : 7;
    const cell = Math.max(6, Math.min(tall ? 36 : 28, Math.floor((width - left) / columns) - gap));
    const step = cell + gap;
    const svgW = left + columns * step, svgH = top + rows * step + 2;
    const svg = s("svg", {width: svgW, height: svgH, viewBox: `0 0 ${svgW} ${svgH}`, role: "img", "aria-label": label,
      class: `chart-svg heatmap ${tall ? "tall" : "wide"}`});
    const hourLabel = (hour) => `${String(hour).padStart(2, "0")}:00`;
    WEEKDAYS.forEach((name, day) => {
      svg.append(tall
        ? s("text", {x: left + day * step + cell / 2, y: top - 4, class: "axis", "text-anchor": "middle"}, name)
        : s("text", {x: left - 6, y: top + day * step + cell * 0.75, class: "axis", "text-anchor": "end"}, name));
    });
    for (let hour = 0; hour < 24; hour += tall ? 3 : 6) {
      svg.append(tall
        ? s("text", {x: left - 6, y: top + hour * step + cell * 0.75, class: "axis", "text-anchor": "end"}, hourLabel(hour))
        : s("text", {x: left + hour * step, y: top - 4, class: "axis"}, hourLabel(hour)));
    }
    WEEKDAYS.forEach((name, day) => {
      for (let hour = 0; hour < 24; hour += 1) {
        const value = cells[day][hour];
        const text = `${name} ${hourLabel(hour)} UTC: ${value.toLocaleString()} requests` +
          (tokens ? `, ${tokens[day][hour].toLocaleString()} tokens` : "");
        const [column, row] = tall ? [day, hour] : [hour, day];
        svg.append(s("rect", {x: left + column * step, y: top + row * step, width: cell, height: cell,
          rx: 2, class: `heat heat-${level(value)}`, "data-day": day, "data-hour": hour, "data-requests": value},
        s("title", {}, text)));
      }
    });
    return svg;
  });
}

/** A scale from none to most, for the heatmap. */
export function heatLegend() {
  return h("div", {class: "legend heat-legend", "aria-hidden": "true"}, "fewer ",
    [0, 1, 2, 3, 4, 5].map((n) => h("span", {class: `swatch heat-${n}`})), " more");
}

/** The busiest weekday and hour of a heatmap, for its text alternative. */
export function busiest(cells) {
  let best = null;
  cells.forEach((row, day) => row.forEach((value, hour) => {
    if (value > 0 && (!best || value > best.value)) best = {day: WEEKDAYS[day], hour, value};
  }));
  return best;
}
