// Small shared helpers: building elements, calling the JSON API, formatting values for display.

/** Create an element: h("p", {class: "x", onclick: fn}, "text", child, [more children]). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") el.addEventListener(name.slice(2), value);
    else if (name === "class") el.className = value;
    else if (name in el && typeof value !== "string") el[name] = value;
    else el.setAttribute(name, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : String(child));
  }
}

/** An API failure, with the server's stable error code and message. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** Call the management API. Mutations send JSON (the API refuses anything else). */
export async function api(method, path, body) {
  const init = {method, credentials: "same-origin", headers: {Accept: "application/json"}};
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  if (response.status === 204) return null;
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    const error = (data && data.error) || {};
    throw new ApiError(response.status, error.code || "http_" + response.status,
      error.message || `The server answered ${response.status}.`);
  }
  return data;
}

export const DASH = "—";

/** Unix seconds → local date and time. */
export function formatTime(seconds) {
  if (seconds === null || seconds === undefined) return DASH;
  return new Date(seconds * 1000).toLocaleString(undefined, {
    year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit",
  });
}

/** Milliseconds → "850 ms" / "2.4 s". */
export function formatMs(ms) {
  if (ms === null || ms === undefined) return DASH;
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

export function formatCount(n) {
  return n === null || n === undefined ? DASH : Number(n).toLocaleString();
}

/** Seconds from now until a Unix time → "1 h 5 min", "42 s". */
export function formatLeft(until) {
  if (until === null || until === undefined) return DASH;
  const left = Math.max(0, Math.round(until - Date.now() / 1000));
  if (left < 60) return `${left} s`;
  const minutes = Math.ceil(left / 60);  // never "4 h 60 min"
  const h = Math.floor(minutes / 60);
  const m = minutes % 60;
  return h ? (m ? `${h} h ${m} min` : `${h} h`) : `${m} min`;
}

/** Announce a short message in the live region. */
export function announce(message) {
  const status = document.getElementById("status");
  status.textContent = "";
  status.classList.toggle("shown", Boolean(message));
  requestAnimationFrame(() => { status.textContent = message; });
  clearTimeout(announce.timer);
  announce.timer = setTimeout(() => { status.textContent = ""; status.classList.remove("shown"); }, 4000);
}

/** Copy text to the clipboard, with a fallback for browsers without the async clipboard. */
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    const area = h("textarea", {class: "offscreen", "aria-hidden": "true"}, text);
    document.body.append(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }
}

/** A button that copies `text`; `label` names what is copied for screen readers. */
export function copyButton(text, label) {
  const button = h("button", {type: "button", class: "copy", "aria-label": `Copy ${label}`, title: `Copy ${label}`,
    "data-copy": text}, "Copy");
  button.addEventListener("click", async () => {
    await copyText(text);
    button.textContent = "Copied";
    announce(`Copied ${label}.`);
    setTimeout(() => { button.textContent = "Copy"; }, 1500);
  });
  return button;
}

/** A labelled form field: field("Name", h("input", {...})). The control gets an id if it has none. */
let fieldCounter = 0;
export function field(label, control, hint) {
  if (!control.id) control.id = `f${++fieldCounter}`;
  const hintEl = hint ? h("small", {id: `${control.id}-hint`, class: "hint"}, hint) : null;
  if (hintEl) control.setAttribute("aria-describedby", hintEl.id);
  return h("div", {class: "field"}, h("label", {for: control.id}, label), control, hintEl);
}

/** A form whose submit handler runs `action(form)` and shows errors inside the form. */
export function form(attrs, children, action) {
  const error = h("p", {class: "error", role: "alert"});
  const el = h("form", attrs, children, error);
  el.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.textContent = "";
    if (!el.reportValidity()) return;
    const buttons = el.querySelectorAll("button[type=submit]");
    buttons.forEach((b) => { b.disabled = true; });
    try {
      await action(el);
    } catch (failure) {
      error.textContent = failure instanceof ApiError ? `${failure.message} (${failure.code})` : String(failure);
    } finally {
      buttons.forEach((b) => { b.disabled = false; });
    }
  });
  return el;
}

export function option(value, label, selected = false) {
  return h("option", {value: String(value), selected}, label);
}

/**
 * A filter form (GET): submitting it reloads the page with the non-empty values as its query,
 * each passed through `value(name, raw)` first; "Clear" drops them all.
 */
export function filterForm(controls, value = (_name, raw) => String(raw).trim()) {
  const filters = h("form", {class: "filters", "aria-label": "Filters", method: "get"}, controls,
    h("div", {class: "filter-actions"},
      h("button", {type: "submit"}, "Apply filters"),
      h("a", {href: location.pathname, class: "button secondary"}, "Clear")));
  filters.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const [name, raw] of new FormData(filters)) {
      const v = value(name, raw);
      if (v) next.set(name, v);
    }
    location.search = next.toString();
  });
  return filters;
}

/**
 * Newer/Older links for a cursor-paged list (50 a page). The cursors of the pages already seen
 * ride along in the `trail` query parameter, so "Newer" can go back without the server's help.
 */
export function pager(params, nextCursor, shown) {
  const current = params.get("cursor") || "";
  const trail = params.get("trail") ? params.get("trail").split(",") : [];
  const pageLink = (cursor, newTrail, label) => {
    const next = new URLSearchParams(params);
    if (cursor) next.set("cursor", cursor); else next.delete("cursor");
    if (newTrail.length) next.set("trail", newTrail.join(",")); else next.delete("trail");
    return h("a", {class: "button secondary", href: `${location.pathname}?${next}`}, label);
  };
  return h("nav", {class: "pager", "aria-label": "Pages"},
    current ? pageLink(trail.at(-1) === "-" ? "" : trail.at(-1), trail.slice(0, -1), "← Newer") : null,
    h("span", {class: "muted"}, `Page ${trail.length + 1} · ${shown} shown (50 per page)`),
    nextCursor ? pageLink(nextCursor, trail.concat(current || "-"), "Older →") : null);
}

/** A page section with a heading. */
export function section(title, ...children) {
  const id = "s-" + title.toLowerCase().replace(/[^a-z0-9]+/g, "-");
  return h("section", {class: "panel", "aria-labelledby": id}, h("h2", {id}, title), children);
}

/** A figure with its label (and a hint below): the tiles of the usage and pool pages. */
export function tile(label, value, hint) {
  return h("div", {class: "tile"}, h("span", {class: "tile-label"}, label), h("strong", {class: "tile-value"}, value),
    hint ? h("small", {class: "muted"}, hint) : null);
}

/** Render a view's content into <main>. */
export function render(title, ...children) {
  const main = document.getElementById("main");
  main.replaceChildren(h("h1", {}, title), ...children.filter((child) => child !== null && child !== undefined));
  document.title = `${title} · SubLane`;
}
